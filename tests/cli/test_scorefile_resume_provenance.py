"""``gymkit score-file`` resumes only what this run's environment scored: an output whose cards
came from another market (or split, environment, archive) is refused in one line and left
byte for byte as it was, instead of being completed with cards of another fingerprint."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("own_gymkit_cache")


@pytest.fixture(scope="module")
def market(eight_stock_csv):
    return eight_stock_csv()


def _answers(path, formulas):
    path.write_text("".join(json.dumps({"id": f"a{i}", "formula": f}) + "\n"
                            for i, f in enumerate(formulas)), encoding="utf-8")
    return path


FIRST = ["rank(-ts_sum(returns, 5))", "rank(ts_std(volume, 20) / ts_mean(volume, 20))"]
MORE = [*FIRST, "rank(-ts_delta(close, 3))", "rank(ts_mean(returns, 10))"]


@pytest.mark.parametrize("out_name", ["cards.jsonl", "cards.parquet"])
def test_resume_on_another_market_is_refused_and_the_file_kept(market, tmp_path, cli, out_name):
    out = tmp_path / out_name
    rc, _, err = cli("score-file", str(_answers(tmp_path / "first.jsonl", FIRST)), "--out", str(out),
                     "--market", str(market), "--workers", "1", "--no-progress")
    assert rc == 0, err
    before = out.read_bytes()
    more = _answers(tmp_path / "more.jsonl", MORE)
    # the same answers file with more rows, but on the default market: refused, nothing written
    rc, _, err = cli("score-file", str(more), "--out", str(out), "--workers", "1", "--no-progress")
    assert rc != 0
    line = err.strip().splitlines()[-1]
    assert "another environment" in line and "--restart" in line and str(out) in line
    assert out.read_bytes() == before
    if out_name.endswith(".parquet"):
        assert not out.with_name(out.name + ".partial.jsonl").exists()
    # on the same market it resumes: two more cards, all four of one environment
    rc, _, err = cli("score-file", str(more), "--out", str(out), "--market", str(market),
                     "--workers", "1", "--no-progress")
    assert rc == 0, err
    assert "2 scored" in err and "2 already in" in err
    if out_name.endswith(".jsonl"):
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert out.read_bytes().startswith(before)
    else:
        import polars as pl

        rows = [json.loads(c) for c in pl.read_parquet(out)["card_json"]]
    assert [r["id"] for r in rows] == ["a0", "a1", "a2", "a3"]
    assert len({r["env_fingerprint"] for r in rows}) == 1
    # --restart starts over on the default market
    rc, _, err = cli("score-file", str(more), "--out", str(out), "--restart", "--workers", "1",
                     "--no-progress")
    assert rc == 0 and "4 scored" in err


def test_workers_on_a_user_market_write_the_serial_bytes_without_reading_the_file(market, tmp_path,
                                                                                  cli):
    """``--market FILE --workers 2``: the bytes of ``--workers 1``.  The workers get the panel
    the command loaded (pickled once each), not the path: they neither read nor validate the
    file again, and a file changed or gone after the start cannot split the run's data."""
    import argparse
    import pickle
    import shutil

    from gymkit.cli.options import make_env
    from gymkit.scorefile import market_env_factory

    src = _answers(tmp_path / "in.jsonl", MORE)
    outs = []
    for w in ("1", "2"):
        out = tmp_path / f"w{w}.jsonl"
        rc, _, err = cli("score-file", str(src), "--out", str(out), "--market", str(market),
                         "--workers", w, *(("--no-progress",) if w == "1" else ()))
        assert rc == 0, err
        outs.append(out.read_bytes())
    # what the seconds before the first card are spent on is said (a wide file's load and each
    # worker's start: a new user saw nothing for 20 s), and the summary names the pool
    lines = err.splitlines()
    assert lines[0] == f"score-file: loading the market {market}"
    assert "score-file: starting 2 workers" in lines
    assert lines[-1].startswith("score-file: 4 scored (") and ", 2 workers; " in lines[-1]
    assert outs[0] == outs[1] and outs[0].count(b"\n") == len(MORE)
    mine = shutil.copy(market, tmp_path / "mine.csv")
    args = argparse.Namespace(env=None, market=str(mine), lenient=False, columns=None,
                              adjust=False, split=None)
    env = make_env(args)
    factory = pickle.loads(pickle.dumps(market_env_factory(args, env)))  # as the pool sends it
    (tmp_path / "mine.csv").unlink()
    worker_env = factory()
    assert worker_env.fingerprint == env.fingerprint
    assert not worker_env.market.close.flags.writeable


def test_a_pickled_panel_is_the_panel(market):
    """What a worker receives: the same data and fingerprint, read-only, derived fields rebuilt."""
    import pickle

    import numpy as np

    from gymkit.data import load_panel

    p = load_panel(market)
    ret = p.field("returns")
    q = pickle.loads(pickle.dumps(p))
    assert q.fingerprint == p.fingerprint and q.tickers == p.tickers
    assert all(not getattr(q, f).flags.writeable for f in ("open", "high", "low", "close", "volume"))
    assert np.array_equal(q.field("returns"), ret, equal_nan=True)
