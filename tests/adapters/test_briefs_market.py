"""``gymkit briefs`` on another market, as a user types it: the prompts name the fields and group
levels of the environment's market (``--env X.toml`` or ``--market FILE``), answers written in
that vocabulary are valid there, and verl's ``data_source`` names the environment stably."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

import gymkit

OWN_VOCAB = "Fields: open high low close vwap returns volume. Group levels: none."
DEFAULT_VOCAB = "Fields: open high low close vwap returns volume cap. Group levels: sector industry."


pytestmark = pytest.mark.usefixtures("own_gymkit_cache")


@pytest.fixture(scope="module")
def market(eight_stock_csv):
    """A vendor-style CSV (``Name`` tickers) of 8 embedded stocks: no cap, sector or industry."""
    return eight_stock_csv("Name")


def _system(row: dict) -> str:
    return row["prompt"][0]["content"]


def test_verl_rows_follow_the_env_s_market_and_name_it_stably(market, tmp_path, cli,
                                                             monkeypatch):
    from gymkit.adapters import verl as gverl

    mine = tmp_path / "mine.toml"
    mine.write_text(f'env_id = "mine"\nmarket = "{market}"\n')
    (tmp_path / "sub").mkdir()
    sources = []
    for cwd, ref in ((tmp_path / "sub", "../mine.toml"), (tmp_path, "mine.toml")):
        monkeypatch.chdir(cwd)
        rc, out, err = cli("briefs", "--env", ref, "--split", "probe", "--format",
                           "verl-parquet", "--out", "v.parquet")
        rows = pq.read_table(cwd / "v.parquet").to_pylist()
        assert rc == 0 and len(rows) == 50
        # a file gets a receipt on stderr (it was silent on success); stdout stays empty
        assert out == "" and "wrote 50 briefs (split probe) to v.parquet" in err
        assert all(OWN_VOCAB in _system(r) for r in rows), _system(rows[0])[:400]
        sources.append({r["data_source"] for r in rows})
    assert sources[0] == sources[1] == {f"gymkit/{mine.resolve()}"}
    # verl's reward function scores the row on the TOML's own market (before: refused by name)
    answer = "<alpha>rank(-ts_delta(close, 3))</alpha>"
    got = gverl.compute_score(sources[0].pop(), answer, "", {})
    card = gymkit.make(mine).score_group([answer])[0]
    assert card.valid and got["score"] == card.reward and got["internal_error"] == 0.0
    assert gymkit.make(mine).market.fingerprint != gymkit.make("us46-default").market.fingerprint


def test_market_flag_gives_the_market_s_vocabulary_and_its_answers_are_valid(market, tmp_path,
                                                                            cli):
    renamed = tmp_path / "renamed.csv"
    pd.read_csv(market).rename(columns={"Name": "Instrument"}).to_csv(renamed, index=False)
    rc, out, err = cli("briefs", "--market", str(renamed), "--columns",
                       "ticker=Instrument", "--split", "probe")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and len(rows) == 50 and all(OWN_VOCAB in _system(r) for r in rows)
    assert "split adapted to the panel" in err
    rc, _, _ = cli("briefs", "--market", str(market), "--split", "train", "--format",
                   "verl-parquet", "--out", str(tmp_path / "t.parquet"))
    row = pq.read_table(tmp_path / "t.parquet").to_pylist()[0]
    assert rc == 0 and OWN_VOCAB in _system(row)
    assert row["data_source"] == f"gymkit/us46-default@{market.resolve()}"
    # verl rows are refused where the file, loaded strictly (as verl's reward function loads a
    # row's data_source), is not the market the prompts were written for ...
    rc, _, err = cli("briefs", "--market", str(renamed), "--columns", "ticker=Instrument",
                     "--split", "train", "--format", "verl-parquet", "--out",
                     str(tmp_path / "r.parquet"))
    assert rc != 0 and f"'gymkit market clean {renamed} OUT'" in err
    assert not (tmp_path / "r.parquet").exists()
    # ... and written where it is (a needless --lenient)
    rc, _, err = cli("briefs", "--market", str(market), "--lenient", "--split", "train",
                     "--format", "verl-parquet", "--out", str(tmp_path / "l.parquet"))
    assert rc == 0 and (tmp_path / "l.parquet").exists() and "market clean" not in err

    from gymkit.adapters import verl as gverl

    source = f"gymkit/us46-default@{renamed.resolve()}"  # such a row, had it been written
    with pytest.raises(ValueError, match=r"^sample 3: data_source 'gymkit/us46-default@.*"
                                         r"renamed\.csv'.*gymkit market clean"):
        gverl.compute_score(source, "<alpha>rank(-returns)</alpha>", "", {"index": 3})
    # a missing market file and a file that is no panel are told apart from a typo
    with pytest.raises(ValueError, match=r"^data_source 'gymkit/us46-default@nope\.parquet': "
                                         r"environment 'us46-default' names the market file "
                                         r"'nope\.parquet', which does not exist here, resolved "
                                         r"against the working directory"):
        gverl.compute_score("gymkit/us46-default@nope.parquet", "<alpha>rank(-returns)</alpha>")
    toml = tmp_path / "x.toml"
    toml.write_text('env_id = "x"\n')
    with pytest.raises(ValueError) as info:
        gverl.compute_score(f"gymkit/us46-default@{toml}", "<alpha>rank(-returns)</alpha>")
    assert "unsupported panel file type 'x.toml'" in str(info.value)
    assert "market clean" not in str(info.value)
    # every field the prompt names scores on that market; the default prompt's cap would not
    fields = OWN_VOCAB.split(". ")[0].removeprefix("Fields: ").split()
    rc, out, _ = cli("score", *(f"rank(-ts_delta({f}, 3) / ts_std({f}, 20))" for f in fields),
                     "rank(cap)", "--market", str(market), "--json")
    cards = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [c["valid"] for c in cards] == [True] * len(fields) + [False]
    assert cards[-1]["error"]["code"] == "field_unavailable"


def test_the_default_vocabulary_and_data_source_are_unchanged(tmp_path, cli):
    rc, out, _ = cli("briefs", "--split", "probe")
    assert rc == 0 and DEFAULT_VOCAB in _system(json.loads(out.splitlines()[0]))
    rc, _, _ = cli("briefs", "--split", "probe", "--env", "us46-harsh", "--format",
                   "verl-parquet", "--out", str(tmp_path / "h.parquet"))
    row = pq.read_table(tmp_path / "h.parquet").to_pylist()[0]
    assert rc == 0 and row["data_source"] == "gymkit/us46-harsh" and DEFAULT_VOCAB in _system(row)


def test_no_brief_asks_for_a_field_or_group_level_a_market_may_lack():
    """Only ``cap`` and the group levels can be missing from a market, and no facet asks for
    them: the one mention is the ``no_cap`` prohibition, met by any formula without cap.  So
    ``gymkit briefs`` keeps every brief on such a market; a facet that needs them would have to
    be filtered there (this test then fails first)."""
    import re

    from gymkit.briefs import FACETS, FORBIDDEN
    from gymkit.dsl.operators import FIELDS, LEVELS
    from gymkit.dsl.parser import parse

    optional = {n for n, s in FIELDS.items() if s.optional} | set(LEVELS) | {"group", "neutral"}
    hits = [(facet, o.key) for facet, opts in FACETS.items() for o in opts
            if optional & set(re.findall(r"[a-z]+", o.text.lower()))]
    assert hits == [("forbidden", "no_cap")]
    no_cap = next(o for o in FORBIDDEN if o.key == "no_cap")
    assert no_cap.check(parse("rank(-ts_sum(returns, 5))"))
