"""The 101 alphas as a conformance corpus: all parse, print round-trips, canonical is stable."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from gymkit.dsl import DSLError, canonical, canonical_key, lookback, parse, to_text
from gymkit.dsl.analysis import depth, levels_used

ROWS = list(csv.DictReader(
    resources.files("gymkit.dsl").joinpath("alpha101.tsv").open(encoding="ascii"),
    delimiter="\t"))
PANEL_FIELDS = {"open", "high", "low", "close", "volume", "returns", "vwap", "cap"}


def test_all_101_present():
    assert [int(r["id"]) for r in ROWS] == list(range(1, 102))


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_alpha_parses_and_is_stable(row):
    expr = parse(row["formula"], fields=PANEL_FIELDS, levels={"sector", "industry"})
    assert to_text(expr) == row["formula"]          # the file holds printed text
    assert parse(to_text(expr)) == expr
    assert lookback(expr) <= 252 and depth(expr) <= 16
    canon = canonical(expr)
    assert canonical(canon) == canon
    assert parse(to_text(canon), limits=False) == canon
    assert canonical_key(parse(canonical_key(expr))) == canonical_key(expr)


def test_group_alphas_need_groups():
    needs = [r["id"] for r in ROWS if levels_used(parse(r["formula"]))]
    # the paper's IndNeutralize alphas
    assert needs == "48 58 59 63 67 69 70 76 79 80 82 87 89 90 91 93 97 100".split()
    with pytest.raises(DSLError) as info:
        parse(ROWS[47]["formula"], levels=())
    assert info.value.code == "group_unavailable"


def test_alpha101_canonical_forms_are_distinct():
    keys = {canonical_key(parse(r["formula"])) for r in ROWS}
    assert len(keys) == 101


def test_min_max_conventions():
    ops = {r["id"]: r["formula"] for r in ROWS}
    assert ops["29"].startswith("ts_min(")
    for n in "71 73 76 77 82 87 88 92 96".split():
        tree = parse(ops[n])
        top = tree.args[0] if tree.op == "mul" else tree
        assert top.op in {"min", "max"} and len(top.args) == 2, n
