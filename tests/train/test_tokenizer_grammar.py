"""Tokenizer and warm-start grammar: formulas survive the round trip, the 101 stay out."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.dsl import canonical, lookback, parse
from gymkit.train.grammar import alpha101_canonicals, sample_formula, warm_start_pairs
from gymkit.train.tokenizer import UNK, Tokenizer, build_tokenizer


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return build_tokenizer()


def test_grammar_formulas_parse_within_limits_and_are_seeded() -> None:
    a = [sample_formula(np.random.default_rng(7)) for _ in range(1)]
    rng1, rng2 = np.random.default_rng(3), np.random.default_rng(3)
    f1 = [sample_formula(rng1) for _ in range(150)]
    assert f1 == [sample_formula(rng2) for _ in range(150)]
    assert a == [sample_formula(np.random.default_rng(7))]
    for f in f1:
        assert lookback(parse(f)) <= 252  # parse() enforces every DSL limit
    assert len({canonical(parse(f)) for f in f1}) > 120  # random, not one template


def test_warm_start_keeps_the_paper_alphas_out() -> None:
    banned = alpha101_canonicals()
    assert len(banned) >= 95
    pairs = warm_start_pairs([f"b{i}" for i in range(80)], 600, seed=1, per_brief=3)
    assert len({b for b, _ in pairs}) == 80
    assert not {canonical(parse(f)) for _, f in pairs} & banned
    by_brief: dict[str, set[str]] = {}
    for b, f in pairs:
        by_brief.setdefault(b, set()).add(f)
    assert max(len(v) for v in by_brief.values()) <= 3  # each brief has formulas of its own
    assert len({f for v in by_brief.values() for f in v}) > 150
    assert pairs == warm_start_pairs([f"b{i}" for i in range(80)], 600, seed=1, per_brief=3)


def test_formula_round_trip_and_save_load(tok: Tokenizer, tmp_path) -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        f = sample_formula(rng)
        ids = tok.encode_answer(f)
        assert tok.unk_id not in ids
        text = tok.decode(ids)
        assert text.startswith("<alpha>") and text.endswith("</alpha>")
        assert canonical(parse(text[7:-8])) == canonical(parse(f))
    tok.save(tmp_path / "t.json")
    again = Tokenizer.load(tmp_path / "t.json")
    assert again.tokens == tok.tokens == build_tokenizer().tokens  # reproducible ids


def test_brief_is_six_facet_tokens_and_unknown_text_is_words(tok: Tokenizer) -> None:
    from gymkit.briefs import generate_briefs

    b = generate_briefs()[0]
    ids = tok.encode_brief(b.text)
    assert len(ids) == 8 and tok.unk_id not in ids
    assert tok.tokens[ids[1]] == f"mechanism={b.facets['mechanism']}"
    other = tok.encode_brief("buy the zorblax stocks")
    assert tok.ids[UNK] in other and tok.ids["stocks"] in other


def test_decode_keeps_whatever_the_policy_wrote(tok: Tokenizer) -> None:
    # unconstrained: brief words and stray tags decode as text the gate must reject
    ids = [tok.ids["<alpha>"], tok.ids["rank"], tok.ids["("], tok.ids["stocks"], tok.eos_id,
           tok.ids["close"]]
    assert tok.decode(ids) == "<alpha>rank(stocks"
