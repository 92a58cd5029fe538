"""The warm start's brief-directed formulas: they meet their brief and carry no edge."""

from __future__ import annotations

import numpy as np
import pytest

import gymkit
from gymkit.briefs import check_compliance, generate_briefs, split_briefs
from gymkit.dsl import parse
from gymkit.dsl.analysis import node_count
from gymkit.train.grammar import alpha101_canonicals, brief_formula, warm_start_pairs


def test_every_directed_formula_meets_every_checkable_facet_of_its_brief():
    rng = np.random.default_rng(0)
    briefs = generate_briefs()
    found = 0
    for b in briefs:
        f = brief_formula(rng, b)
        if f is None:
            continue
        found += 1
        expr = parse(f)
        assert check_compliance(expr, b).failed == [], (b.facets, f)
        assert node_count(expr) <= 16
    assert found >= 0.9 * len(briefs)


def test_directed_pairs_differ_by_brief_and_avoid_the_paper_alphas():
    from gymkit.dsl import canonical

    texts = [b.text for b in split_briefs(generate_briefs(), "train")[:40]]
    pairs = warm_start_pairs(texts, 400, seed=3, per_brief=2, directed=True)
    by_brief: dict[str, set[str]] = {}
    for b, f in pairs:
        by_brief.setdefault(b, set()).add(f)
    assert len({f for fs in by_brief.values() for f in fs}) >= 60  # not one mode for all briefs
    banned = alpha101_canonicals()
    assert not any(canonical(parse(f)) in banned for _, f in pairs)
    again = warm_start_pairs(texts, 400, seed=3, per_brief=2, directed=True)
    assert again == pairs


@pytest.mark.parametrize("seed", [0])
def test_directed_formulas_have_no_edge_on_average(seed):
    """Coin-flip signs: the mean gross Sharpe of 120 directed formulas is near 0."""
    env = gymkit.make("us46-default")
    rng = np.random.default_rng(seed)
    briefs = split_briefs(generate_briefs(), "train")
    sharpes = []
    for b in briefs[:160]:
        f = brief_formula(rng, b)
        if f is None:
            continue
        c = env.score(f"<alpha>{f}</alpha>")
        if c.valid:
            sharpes.append(c.metrics["gross_sharpe"])
        if len(sharpes) == 120:
            break
    assert len(sharpes) == 120
    se = float(np.std(sharpes)) / np.sqrt(len(sharpes))
    assert abs(float(np.mean(sharpes))) < 3 * se


def test_a_brief_whose_directed_formulas_are_all_refused_falls_back_to_the_grammar():
    """``accept`` refusing every directed draw (e.g. all longer than the answer budget) must not
    loop forever: after DIRECTED_TRIES the brief gets plain grammar formulas."""
    texts = [b.text for b in split_briefs(generate_briefs(), "train")[:5]]
    pairs = warm_start_pairs(texts, 20, seed=1, per_brief=1, directed=True,
                             accept=lambda f: len(f) <= 14)
    assert len(pairs) == 20 and all(len(f) <= 14 for _, f in pairs)
