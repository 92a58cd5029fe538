"""Tear-sheet content: every section, determinism, self-containment, and numbers that match scoring."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from gymkit.report import ANSWERS_SECTIONS, FORMULA_SECTIONS, read_answers
from gymkit.report.analysis import (
    drawdown,
    equity,
    ic_by_horizon,
    rolling_sharpe,
    study_formula,
    study_group,
)
from gymkit.report.build import answers_page, formula_page
from gymkit.verifiers.metrics import max_drawdown, sharpe
from gymkit.verifiers.portfolio import equal_weight_book

PLANTED = "rank(-ts_sum(returns, 5))"
GROUP = (
    ("reversal", "<alpha>rank(-ts_sum(returns, 5))</alpha>"),
    ("volume", "<alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20))</alpha>"),
    ("jitter", "<alpha>rank(-ts_sum(returns, 4))</alpha>"),
    ("static", "<alpha>rank(ts_mean(close, 250))</alpha>"),
    ("no tag", "go long losers: rank(-returns)"),
    ("syntax", "<alpha>rank(close</alpha>"),
)


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.ids: list[str] = []
        self.tags: set[str] = set()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "section":
            self.sections.append(a.get("id", ""))
        if "id" in a:
            self.ids.append(a["id"])
        for k in ("src", "href", "xlink:href"):
            if k in a:
                self.refs.append((tag, a[k]))


def _parse(html: str) -> _Ids:
    p = _Ids()
    p.feed(html)
    return p


@pytest.fixture(scope="module")
def study(env):
    return study_formula(env, PLANTED, holdout=True)


@pytest.fixture(scope="module")
def page(study, env):
    return formula_page(study, env.notes)


@pytest.fixture(scope="module")
def group(env):
    return study_group(env, [c for _, c in GROUP], [lb for lb, _ in GROUP], holdout=True)


def test_formula_page_has_every_section_in_order(page):
    assert _parse(page).sections == [sid for sid, _ in FORMULA_SECTIONS]


def test_page_is_self_contained_and_ids_unique(page):
    p = _parse(page)
    assert "script" not in p.tags  # nothing to run, nothing to fetch
    external = [r for r in p.refs if not r[1].startswith("#")]
    assert external == [], external
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", page)
    dup = {i for i in p.ids if p.ids.count(i) > 1}
    assert not dup, f"duplicate element ids (inline SVGs would share clip paths): {sorted(dup)[:5]}"
    assert page.count("<svg") >= 10


def test_formula_page_is_deterministic_and_timestamp_optional(study, env, page):
    assert formula_page(study, env.notes) == page
    assert "Generated" not in page
    stamped = formula_page(study, env.notes, generated_at="2026-01-02 03:04:05 UTC")
    assert "Generated 2026-01-02 03:04:05 UTC" in stamped
    assert stamped.replace('<div class="generated">Generated 2026-01-02 03:04:05 UTC</div>', "") == page


def test_train_series_are_what_scoring_saw(study):
    card, tr = study.card, study.train
    np.testing.assert_array_equal(tr.net, card.pnl)
    assert tr.cpcv.score == pytest.approx(card.metrics["cpcv"]["score"], abs=0)
    assert tr.costs["name"] == "train"


def test_holdout_is_realistic_costs_on_holdout_days_only(study, env):
    ho = study.holdout
    assert ho is not None and ho.costs["name"] == "realistic"
    assert str(ho.dates[0]) >= env.config.split["holdout_start"]
    assert str(study.train.dates[-1]) <= env.config.split["train_end"]
    assert ho.metrics.sharpe != study.train.metrics.sharpe


def test_train_only_is_the_default_and_leaves_the_holdout_out(env):
    s = study_formula(env, PLANTED)
    assert s.holdout is None and np.isnan(s.ic_decay_holdout).all()
    html = formula_page(s)
    assert "Holdout not shown: train figures only" in html
    assert _parse(html).sections == [sid for sid, _ in FORMULA_SECTIONS]


def test_ic_decay_horizon_one_is_the_cards_ic(study):
    assert study.ic_decay_train[0] == pytest.approx(study.card.metrics["ic"], abs=1e-12)
    assert study.ic_decay_holdout[0] == pytest.approx(study.holdout.metrics.ic, abs=1e-12)
    assert np.isfinite(study.ic_decay_train).all()


def test_ic_by_horizon_recovers_a_planted_lag():
    rng = np.random.default_rng(0)
    t, n = 400, 30
    fwd = rng.standard_normal((t, n))
    values = np.zeros((t, n))
    values[:-2] = fwd[2:]  # weights of day t see the return of horizon 3 (fwd[t + 2])
    w = values - values.mean(axis=1, keepdims=True)
    ic = ic_by_horizon(values, w[10:300], fwd, 10, horizons=(1, 2, 3, 4))
    assert ic[2] == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.abs(ic[[0, 1, 3]]) < 0.1)


def test_series_helpers_match_the_verifier_metrics(study):
    net = np.asarray(study.train.net)
    assert drawdown(net).min() == pytest.approx(max_drawdown(net), abs=1e-12)
    assert equity(net)[-1] == pytest.approx(np.prod(1 + net) - 1, rel=1e-10)
    rs = rolling_sharpe(net, 126)
    assert np.isnan(rs[:125]).all()
    assert rs[500] == pytest.approx(sharpe(net[375:501]), rel=1e-8)


def test_neighbours_are_the_most_correlated_archive_entries(study, env):
    nb = study.neighbours
    assert len(nb) == 5
    corr = np.abs([c for _, c in nb])
    assert np.all(np.diff(corr) <= 0)
    top = env.archive.nearest(study.card.pnl)
    assert nb[0] == (top.form, pytest.approx(top.corr))


def test_channel_reasons_quote_the_numbers_behind_the_values(study, env):
    card, why = study.card, study.reasons
    assert set(why) == set(card.channels)
    m = re.search(r"= ([+-]\d+\.\d+)$", why["cpcv"])
    assert m and float(m.group(1)) == pytest.approx(card.channels["cpcv"], abs=0.006)
    t = card.metrics["turnover"]
    assert f"{t:.1%}" in why["turnover"]
    expect = "above" if t > env.setup.params.turnover_cap else "free"
    assert expect in why["turnover"]
    assert f"{card.metrics['structure']['node_count']} expression nodes" in why["complexity"]
    quoted = re.search(r"× (\d+\.\d+)$", why["factor_neutrality"])
    assert quoted, why["factor_neutrality"]
    r4 = -env.setup.params.factor_scale * float(quoted.group(1))
    assert r4 == pytest.approx(card.channels["factor_neutrality"], abs=0.003)


def _every_channel(card):
    """``card`` carrying every channel of the table (the values it has, 0.0 for the others)."""
    from dataclasses import replace

    from gymkit.verifiers.channels import CHANNELS

    return replace(card, channels={c.name: card.channels.get(c.name, 0.0) for c in CHANNELS})


@pytest.mark.parametrize("text", [PLANTED, "rank(close"], ids=["valid", "invalid"])
def test_every_channel_of_the_table_has_its_why_line_in_the_report(study, env, text):
    """Each row of the channel table explains itself (``Channel.why``) and the tear sheet
    shows that line: a channel added without an explanation fails here."""
    from gymkit.report.html import esc
    from gymkit.verifiers.channels import CHANNELS

    scored = study.card if text == PLANTED else env.score(f"<alpha>{text}</alpha>")
    full = _every_channel(scored)
    s = study_formula(env, text, card=full)
    html = formula_page(s, env.notes)
    assert list(s.reasons) == [c.name for c in CHANNELS]
    for c in CHANNELS:
        line = c.why(full, env.setup.params)
        assert isinstance(line, str) and line.strip(), c.id
        assert s.reasons[c.name] == line
        assert esc(line) in html, (c.id, line)


def test_stress_section_shows_each_world_when_the_card_has_them(study, env):
    from dataclasses import replace

    from gymkit.report.build import _stress
    from gymkit.report.why import channel_reasons

    card = study.card
    base = card.channels["cpcv"]
    stressed = replace(card, channels={**card.channels, "jepa_stress": -0.25},
                       metrics={**card.metrics, "stress": {"world_cpcv": {"dispersion": base - 0.5,
                                                                          "trend_flip": base - 1.5},
                                                           "mean_drop": 1.0}})
    body, _ = _stress("stress worlds 'default'", stressed)
    assert "dispersion" in body and "trend_flip" in body and "+0.50" in body and "+1.50" in body
    assert "mean CPCV drop 1.00 over 2 worlds" in channel_reasons(stressed, env.setup.params)["jepa_stress"]
    plain = replace(card, metrics={k: v for k, v in card.metrics.items() if k != "stress"})
    body, _ = _stress("no stress worlds configured", plain)
    assert "No stress worlds configured." in body


def test_invalid_answer_still_gets_every_section(env):
    s = study_formula(env, "rank(ts_mean(close, 250))")  # static tilt: below the turnover floor
    assert not s.card.valid and s.train is None
    html = formula_page(s, env.notes)
    assert _parse(html).sections == [sid for sid, _ in FORMULA_SECTIONS]
    assert "turnover_floor" in html and "No backtest" in html


def test_answers_page_sections_books_and_advantages(group, env):
    html = answers_page(group, env.notes)
    assert _parse(html).sections == [sid for sid, _ in ANSWERS_SECTIONS]
    valid = [i for i, c in enumerate(group.cards) if c.valid]
    assert list(group.valid_idx) == valid and len(valid) == 3
    assert set(group.capped_idx) <= set(valid)
    assert all(group.advantages[i] <= 0 for i, c in enumerate(group.cards) if not c.valid)
    train = group.books[0]
    pnl = np.stack([group.cards[i].pnl for i in valid], axis=1)
    np.testing.assert_allclose(train.equal_weight, equal_weight_book(pnl))
    assert train.stats[0].members == 3
    assert 1.0 <= train.stats[0].effective_bets <= 3.0
    # the jittered copy trades the same book as the reversal: the cap keeps one of them
    assert not {0, 2} <= set(group.capped_idx)
    assert "missing_tag" in html and "syntax" in html


def test_read_answers_jsonl_and_plain(tmp_path):
    j = tmp_path / "a.jsonl"
    j.write_text('{"completion": "<alpha>rank(close)</alpha>", "label": "x"}\n'
                 '{"formula": "rank(open)"}\n\n', encoding="utf-8")
    assert read_answers(j) == (["x", "line 2"], ["<alpha>rank(close)</alpha>", "<alpha>rank(open)</alpha>"])
    t = tmp_path / "a.txt"
    t.write_text("rank(close)\n\n<alpha>rank(open)</alpha>\n", encoding="utf-8")
    assert read_answers(t)[1] == ["<alpha>rank(close)</alpha>", "<alpha>rank(open)</alpha>"]
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"completion": "x"}\n{"text": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"b\.jsonl:2: .*'completion' or 'formula'"):
        read_answers(bad)
