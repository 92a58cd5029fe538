"""``gymkit score-file``: formats in and out, ids, groups, resume after a crash, progress."""

from __future__ import annotations

import io
import json
import warnings

import polars as pl
import pytest

from gymkit.cli import main
from gymkit.scorefile import Progress, read_records, score_file

FORMULAS = ["rank(-ts_sum(returns, 5))", "rank(ts_std(volume, 20))", "rank(close", "rank(-returns)",
            "rank(ts_mean(close, 250))", "rank(ts_delta(volume, 3))"]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def answers(tmp_path):
    return _jsonl(tmp_path / "answers.jsonl",
                  [{"id": f"a{i}", "completion": f"<alpha>{f}</alpha>"} for i, f in enumerate(FORMULAS)])


def test_jsonl_out_matches_env_score(answers, tmp_path, shared_env):
    out = tmp_path / "cards.jsonl"
    counts = score_file(answers, out, progress=False)
    assert counts == {"total": 6, "skipped": 0, "scored": 6, "valid": 4, "bad": 0, "workers": 1}
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"a{i}" for i in range(6)]
    env = shared_env()
    assert {k: v for k, v in rows[0].items() if k not in ("id", "answer_digest")} == env.score(
        f"<alpha>{FORMULAS[0]}</alpha>").to_dict(timings=False)


def test_resume_after_a_crash_gives_the_same_bytes(answers, tmp_path):
    full = tmp_path / "full.jsonl"
    score_file(answers, full, progress=False)
    part = tmp_path / "part.jsonl"
    lines = full.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(lines[:2]) + lines[2][:25])  # died while writing row 3
    counts = score_file(answers, part, progress=False)
    assert counts["skipped"] == 2 and counts["scored"] == 4
    assert part.read_bytes() == full.read_bytes()
    again = score_file(answers, part, progress=False)
    assert again["scored"] == 0 and part.read_bytes() == full.read_bytes()


def test_parquet_in_and_out_with_resume(answers, tmp_path):
    src = tmp_path / "in.parquet"
    pl.DataFrame({"id": [f"a{i}" for i in range(6)], "formula": FORMULAS}).write_parquet(src)
    out = tmp_path / "cards.parquet"
    score_file(src, out, progress=False)
    df = pl.read_parquet(out)
    assert df["id"].to_list() == [f"a{i}" for i in range(6)]
    assert df["valid"].to_list() == [True, True, False, True, False, True]
    assert {"reward", "ch_cpcv", "sharpe", "cpcv_score", "card_json", "error_code"} <= set(df.columns)
    assert df.filter(pl.col("id") == "a2")["error_code"].item() == "syntax"
    # interrupted run: two rows in the sidecar, no parquet yet -> resume scores the other four
    out2 = tmp_path / "resumed.parquet"
    side = tmp_path / "resumed.parquet.partial.jsonl"
    side.write_text("\n".join(df["card_json"].to_list()[:2]) + "\n")
    counts = score_file(src, out2, progress=False)
    assert counts["skipped"] == 2 and not side.exists()
    assert pl.read_parquet(out2).equals(df)


def test_group_field_adds_zero_sum_advantages(tmp_path):
    rows = [{"id": i, "prompt": i // 3, "formula": f} for i, f in enumerate(FORMULAS)]
    src = _jsonl(tmp_path / "g.jsonl", rows)
    out = tmp_path / "g-out.jsonl"
    score_file(src, out, group_field="prompt", progress=False)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    for g in ("0", "1"):
        adv = [r["advantage"] for r in got if r["group"] == g]
        assert len(adv) == 3 and abs(sum(adv)) < 1e-9
    assert all(r["advantage"] <= 0 for r in got if not r["valid"])


def test_plain_lines_and_bad_inputs(tmp_path):
    txt = tmp_path / "f.txt"
    txt.write_text("rank(close)\n\n<alpha>rank(open)</alpha>\n")
    recs = read_records(txt)
    assert [(r.id, r.completion) for r in recs] == [("0", "<alpha>rank(close)</alpha>"),
                                                    ("1", "<alpha>rank(open)</alpha>")]
    dup = _jsonl(tmp_path / "dup.jsonl", [{"id": 1, "formula": "x"}, {"id": 1, "formula": "y"}])
    with pytest.raises(ValueError, match=r"id '1' appears twice \(lines 1 and 2;"):
        read_records(dup)
    # a line that is not JSON takes its row number as id: the clash names both lines
    clash = tmp_path / "clash.jsonl"
    clash.write_text('{"id": 1, "formula": "x"}\nnot json\n{"id": 0, "formula": "y"}\n')
    from gymkit.scorefile import scan_records

    with pytest.raises(ValueError, match=r"id '1' appears twice \(lines 1 and 2; a record "
                                         r"without a readable id takes its row number\)"):
        scan_records(clash)
    bad = _jsonl(tmp_path / "bad.jsonl", [{"formula": "x"}, {"text": "y"}])
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: no string 'completion'"):
        read_records(bad)
    with pytest.raises(ValueError, match=r"must end in \.jsonl or \.parquet"):
        score_file(txt, tmp_path / "out.csv", progress=False)


def test_cli_progress_and_summary(answers, tmp_path, capsys):
    rc = main(["score-file", str(answers), "--out", str(tmp_path / "c.jsonl")])
    _, err = capsys.readouterr()
    assert rc == 0
    assert "answers/s" in err and "6/6" in err
    assert "score-file: 6 scored (4 valid), 0 already in" in err
    assert ", 6 in all, 1 worker; " in err  # 6 answers: the default pool is one process (below)
    rc = main(["score-file", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "c.jsonl")])
    _, err = capsys.readouterr()
    assert rc == 1 and err.strip() == f"gymkit score-file: error: input file {tmp_path / 'nope.jsonl'} not found"


def test_progress_line_counts_and_rate():
    buf = io.StringIO()
    bar = Progress(total=10, done=4, stream=buf)
    bar.update(3, 2, final=True)
    line = buf.getvalue()
    # resumed at 4: the valid share is of this run's 3 answers, and the line says so (a new
    # user read "10/10 … valid 88%" as the share of all ten)
    assert "7/10" in line and "70%" in line and "valid 67% of 3 new" in line and line.endswith("\n")
    fresh = io.StringIO()
    Progress(total=5, done=0, stream=fresh).update(5, 4, final=True)
    assert "valid 80%" in fresh.getvalue() and "new" not in fresh.getvalue()


def test_the_default_pool_gives_each_worker_enough_answers_to_pay_its_start(monkeypatch):
    """A new user's 10 answers on a 3,000-stock market took 26.7 s on the default pool and
    20.4 s on one process: each worker's start costs tens of cards.  By default a worker
    needs MIN_BATCHES_PER_WORKER batches; an explicit --workers is obeyed."""
    from gymkit.scorefile import MIN_BATCHES_PER_WORKER as K
    from gymkit.scorefile import pool_size

    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert [pool_size(None, None, n) for n in (1, 10, K, K + 1, 3 * K, 100 * K)] == [1, 1, 1, 2, 3, 8]
    assert pool_size(4, None, 10) == 4 and pool_size(4, None, 2) == 2 and pool_size(None, None, 0) == 1


def test_the_summary_names_the_workers_and_a_wide_load_is_announced(answers, tmp_path, capsys):
    rc = main(["score-file", str(answers), "--out", str(tmp_path / "c.jsonl"), "--workers", "2"])
    _, err = capsys.readouterr()
    assert rc == 0 and "score-file: starting 2 workers" in err
    assert ", 6 in all, 2 workers; " in err


def test_a_worker_leaves_ctrl_c_to_the_command(monkeypatch):
    """Ctrl-C during a pool's start printed each worker's KeyboardInterrupt traceback ("Exception
    in initializer") above the command's one-line "interrupted"."""
    import signal

    from gymkit import scorefile

    seen = []
    monkeypatch.setattr(signal, "signal", lambda sig, handler: seen.append((sig, handler)))
    monkeypatch.setattr(scorefile, "_WORKER_ENV", None)  # restored after the test
    parents = []  # the spawned worker also ends with the command (recorded, not requested here)
    monkeypatch.setattr(scorefile, "die_with_parent", parents.append)
    scorefile._init_worker(lambda: "env", 123)
    assert seen == [(signal.SIGINT, signal.SIG_IGN)] and scorefile._WORKER_ENV == "env"
    assert parents == [123]


def test_answers_that_name_their_brief_are_scored_with_it(tmp_path, capsys, shared_env) -> None:
    """Rollouts of a briefed trainer carry brief_id (and the text): score-file scored them
    without the brief, so its numbers differed from the trainer's.  Now a default brief (by id),
    a seed-1 brief (by its text), an unknown id (an error row) and --no-brief, through the CLI,
    serial and on two workers, byte-identical."""
    from gymkit.briefs import generate_briefs, split_briefs

    env = shared_env()
    b0 = split_briefs(generate_briefs(), "train")[0]
    b1 = split_briefs(generate_briefs(40, 1), "train")[0]
    ans = "<alpha>rank(ts_std(volume, 8))</alpha>"
    src = _jsonl(tmp_path / "rollouts.jsonl", [
        {"id": "d", "brief_id": b0.brief_id, "completion": ans},
        {"id": "s1", "brief_id": b1.brief_id, "brief": b1.text, "completion": ans},
        {"id": "x", "brief_id": "deadbeefdeadbeef", "completion": ans},
        {"id": "none", "completion": ans}])
    outs = []
    for w in ("1", "2"):
        out = tmp_path / f"cards{w}.jsonl"
        assert main(["score-file", str(src), "--out", str(out), "--workers", w,
                     "--no-progress"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    rows = {r["id"]: r for r in map(json.loads, outs[0].decode().splitlines())}
    for rid, brief in (("d", b0.text), ("s1", b1.text), ("none", None)):
        want = env.score(ans, brief=brief).to_dict(timings=False)
        assert {k: v for k, v in rows[rid].items() if k not in ("id", "answer_digest")} == want, rid
    assert rows["d"]["channels"]["brief_compliance"] < 0  # the brief was really used
    assert rows["x"]["reward"] is None and rows["x"]["error"]["code"] == "bad_record"
    assert "unknown brief_id 'deadbeefdeadbeef'" in rows["x"]["error"]["message"]
    plain = tmp_path / "plain.jsonl"
    assert main(["score-file", str(src), "--out", str(plain), "--no-brief", "--no-progress"]) == 0
    assert all(json.loads(x)["reward"] == env.score(ans).reward
               for x in plain.read_text().splitlines())
    capsys.readouterr()


def test_a_group_of_one_is_not_a_low_signal_warning(tmp_path, capsys) -> None:
    """A group of one answer has advantage 0 by definition; score-file printed a raw
    RuntimeWarning with a source path in the middle of its progress line."""
    src = _jsonl(tmp_path / "one.jsonl", [{"id": "a", "g": "x", "completion": "<alpha>rank(close)</alpha>"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["score-file", str(src), "--out", str(tmp_path / "o.jsonl"), "--group-field",
                     "g", "--no-progress", "--workers", "1"]) == 0
    row = json.loads((tmp_path / "o.jsonl").read_text())
    assert row["advantage"] == 0.0 and "RuntimeWarning" not in capsys.readouterr().err
