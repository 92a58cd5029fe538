"""The quant figures of the tear sheet: each statistic recovers what was planted, agrees with the
scoring code it mirrors (R2, the train costs, the card), and the page shows it honestly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gymkit.report.analysis import study_formula
from gymkit.report.build import formula_page
from gymkit.report.quant import (
    break_even_bps,
    holding_period,
    quantile_returns,
    rank_drop_by_split,
    return_stats,
    rolling_betas,
    sharpe_at_cost,
    worst_drawdowns,
)

PLANTED = "rank(-ts_sum(returns, 5))"


@pytest.fixture(scope="module")
def study(env):
    return study_formula(env, PLANTED, holdout=False)


@pytest.fixture(scope="module")
def page(study, env):
    return formula_page(study, env.notes)


def _section(page: str, sid: str) -> str:
    m = re.search(rf'<section id="{sid}".*?</section>', page, re.S)
    assert m, f"section {sid} missing"
    return m.group(0)


def test_quantiles_climb_with_a_signal_that_sees_the_return():
    rng = np.random.default_rng(1)
    fwd = rng.standard_normal((300, 40)) * 0.01
    w = fwd + rng.standard_normal(fwd.shape) * 0.01  # a noisy look at the next return
    q = np.nanmean(quantile_returns(w, np.ones_like(w, dtype=bool), fwd, 5), axis=0)
    assert np.all(np.diff(q) > 0)
    assert q[-1] - q[0] > 0.005
    thin = quantile_returns(w[:, :6], np.ones((300, 6), dtype=bool), fwd[:, :6], 5)
    assert np.isnan(thin).all()  # fewer than 10 names a day: no buckets


def test_worst_drawdowns_find_the_planted_falls_in_depth_order():
    r = np.zeros(100)
    r[10], r[20] = -0.10, 0.20  # -10% from day 9, recovered by day 20
    r[50], r[51] = -0.2, -0.1   # -28% from day 49, never recovered
    dds = worst_drawdowns(r, 5)
    assert [round(d.depth, 4) for d in dds] == [-0.28, -0.1]
    deep, shallow = dds
    assert (deep.peak, deep.trough, deep.end) == (49, 51, None)
    assert (shallow.peak, shallow.trough, shallow.end, shallow.days) == (9, 10, 20, 11)


def test_break_even_cost_zeroes_the_sharpe_and_the_train_cost_gives_the_cards(study, env):
    tr = study.train
    be = break_even_bps(tr.gross, tr.turnover)
    assert be > 0
    assert abs(sharpe_at_cost(tr.gross, tr.turnover, [be])[0]) < 1e-9
    bps = env.setup.costs.bps_per_turnover
    assert sharpe_at_cost(tr.gross, tr.turnover, [bps])[0] == pytest.approx(tr.metrics.sharpe, rel=1e-9)
    assert np.isnan(break_even_bps(tr.gross, np.zeros_like(tr.turnover)))


def test_rolling_betas_recover_planted_exposures():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((400, 3))
    beta = np.where(np.arange(400)[:, None] < 200, [0.5, -1.0, 0.0], [0.0, 2.0, 1.0])
    y = (x * beta).sum(axis=1) + 0.001 * rng.standard_normal(400)
    b = rolling_betas(y, x, 60)
    assert np.isnan(b[:59]).all()
    np.testing.assert_allclose(b[150], [0.5, -1.0, 0.0], atol=0.01)
    np.testing.assert_allclose(b[399], [0.0, 2.0, 1.0], atol=0.01)


def test_stats_helpers():
    s = return_stats(np.array([-0.02, 0.01, 0.01, 0.0]))
    assert s["worst"] == -0.02 and s["best"] == 0.01 and s["positive"] == 0.5
    np.testing.assert_array_equal(holding_period(np.array([0.5, 0.0, 2.0])), [4.0, np.nan, 1.0])


def test_rank_drop_is_what_r2_gives_in_a_group(env):
    """Scored as a group, each card's R2 equals rank_drop_by_split against the others."""
    forms = ["rank(-ts_sum(returns, 5))", "rank(ts_std(volume, 20) / ts_mean(volume, 20))",
             "rank(-ts_delta(close, 3))", "rank(ts_corr(close, volume, 10))"]
    cards = env.score_group([f"<alpha>{f}</alpha>" for f in forms])
    assert all(c.valid for c in cards)
    is_ = np.array([c.metrics["cpcv"]["is_sharpes"] for c in cards])
    te = np.array([c.metrics["cpcv"]["test_sharpes"] for c in cards])
    got = []
    for i, c in enumerate(cards):
        others = [j for j in range(len(cards)) if j != i]
        rd = rank_drop_by_split(is_[i], te[i], is_[others], te[others], scale=env.setup.params.pbo_scale)
        assert rd.group == len(cards)
        assert rd.mean_penalty == pytest.approx(c.channels["pbo"], abs=1e-15)
        got.append(rd.mean_penalty)
    assert min(got) < 0  # someone in the group did drop


def test_cpcv_section_shows_fifteen_slices_and_distinct_paths_only(study, page):
    body = _section(page, "cpcv")
    assert "cpcv-paths" not in page  # the chart of five identical lines is gone
    assert body.count('aria-label="cpcv-slices"') == 1 and 'aria-label="cpcv-distribution"' in body
    paths = np.unique(np.round(study.train.cpcv.path_sharpes, 12))
    assert "5 paths, 1 distinct" in body and paths.size == 1
    assert f"{paths[0]:+.2f}" in body
    assert body.count("<tr><td>B") == 6  # the six blocks


def test_rank_drop_section_uses_the_archive_and_says_what_the_card_has(study, page, env):
    body = _section(page, "rank-drop")
    rd = study.extras.rank_drop
    assert rd.group == len(env.archive) + 1 - int(env.archive.contains(study.card.canonical))
    assert f"{rd.mean_penalty:+.4f}" in body
    assert "R2 on the card" in body and "+0.0000" in body  # scored alone: 0
    assert "in-sample vs test Sharpe" not in page


def test_why_this_reward_is_the_cards_channel_breakdown(study, page, env):
    body = _section(page, "channels")
    assert "Why this reward" in body
    card = env.score(f"<alpha>{PLANTED}</alpha>")
    for name, v in card.channels.items():
        pr = env.config.priorities[name]
        assert re.search(rf"<code>{name}</code></td><td[^>]*>{re.escape(f'{v:+.3f}')}</td>"
                         rf"<td[^>]*>{pr:g}</td><td[^>]*>{re.escape(f'{pr * v:+.3f}')}</td>", body), name
    assert f"<b>{card.reward:+.3f}</b>" in body


def test_header_is_one_compact_line_with_the_headline_numbers(study, page):
    head = re.search(r"<header>.*?</header>", page, re.S).group(0)
    c, m = study.card, study.train.metrics
    for text in (f"reward <b>{c.reward:+.3f}</b>", f"R1 <b>{c.channels['cpcv']:+.2f}</b>",
                 f"net Sharpe <b>{m.sharpe:+.2f}</b>", c.env_fingerprint[:10], "train only"):
        assert text in head, text
    assert len(re.sub(r"<[^>]+>", "", head)) < 400


def test_quant_sections_have_their_plots_and_numbers(study, page):
    for sid, plot in (("quantiles", "quantile-returns"), ("returns", "return-distribution"),
                      ("turnover", "turnover"), ("break-even", "break-even"), ("legs", "legs"),
                      ("factor-exposure", "factor-exposure")):
        assert f'aria-label="{plot}"' in _section(page, sid), sid
    be = break_even_bps(study.train.gross, study.train.turnover)
    assert f"{be:.2f} bps per unit of turnover" in _section(page, "break-even")
    ic = _section(page, "ic")
    assert all(f"<th class=\"num\">{h}</th>" in ic for h in (1, 2, 5, 10, 21))
    assert _section(page, "worst-drawdowns").count("<tr><td>train</td>") == 5


def test_answers_page_header_matches_the_formula_pages_style(env):
    from gymkit.report.analysis import study_group
    from gymkit.report.build import answers_page

    g = study_group(env, ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "no tag"], holdout=False)
    head = re.search(r"<header>.*?</header>", answers_page(g), re.S).group(0)
    assert "1 / 2 valid" in head and f"best reward <b>{g.cards[0].reward:+.3f}</b>" in head
    assert "train only" in head and g.cards[0].env_fingerprint[:10] in head
