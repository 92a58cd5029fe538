"""The single-formula tear sheet's quant sections: each returns ``(body HTML, one-line intro)``.

Quantile returns, worst drawdowns, the return distribution, turnover and holding period,
the break-even cost, long and short legs, factor exposure over time, CPCV test slices with
the distinct recombined paths, and the R2 rank drop per split.  Numbers come from the
study (:mod:`.analysis`) and :mod:`.quant`; plots from :mod:`.figures`.
"""

from __future__ import annotations

import numpy as np

from . import figures as fg
from .analysis import FormulaStudy, rolling_nanmean
from .html import esc, fmt, kv_table, table
from .quant import (
    break_even_bps,
    holding_period,
    return_stats,
    rolling_betas,
    sharpe_at_cost,
    worst_drawdowns,
)

__all__ = [
    "breakeven_section",
    "cpcv_section",
    "distribution_section",
    "exposure_section",
    "legs_section",
    "quantiles_section",
    "rank_drop_section",
    "turnover_section",
    "worst_drawdowns_section",
]

_P = fg.PALETTE
ROLL_TURNOVER = 21
ROLL_BETA = 126
_FACTOR_COLOURS = ("#1f4e79", "#c55a11", "#2e7d32", "#6a3d9a", "#7f7f7f", "#b8860b")


def _none(s: FormulaStudy) -> str:
    e = s.card.error
    why = f"[{e.code}] {e.message}" if e else "no backtest"
    return f'<p class="note">No backtest: the answer is invalid ({esc(why)}).</p>'


def _bps(x: float, spec: str = "+.2f") -> str:
    return fmt(x * 1e4, spec) if np.isfinite(x) else "–"


# ------------------------------------------------------------------ quantiles
def quantiles_section(s: FormulaStudy) -> tuple[str, str]:
    """Mean next-day return per weight quintile and the cumulative top-minus-bottom spread."""
    intro = ("Each day the names are cut into five equal buckets by their weight in the book "
             "(Q1 most short, Q5 most long) and each bucket's mean open-to-open return over the "
             "next session is taken. A working signal climbs from Q1 to Q5; the spread Q5 − Q1 "
             "is what a long-short book of the extremes would earn before costs.")
    ex, tr, ho = s.extras, s.train, s.holdout
    if tr is None or ex is None or ex.quantiles_train is None:
        return _none(s), intro
    labels = [f"Q{q + 1}" for q in range(ex.quantiles_train.shape[1])]
    mean_tr = np.nanmean(ex.quantiles_train, axis=0)
    bars = [(mean_tr * 1e4, "train", _P["train"])]
    spread_tr = ex.quantiles_train[:, -1] - ex.quantiles_train[:, 0]
    lines = [(np.cumsum(np.nan_to_num(spread_tr)), "train", _P["train"], "-")]
    panels = [{"title": "spread Q5 − Q1, cumulative (train)", "x": tr.dates, "pct": True,
               "lines": lines, "hline": 0.0}]
    rows = [["train", *(_bps(v) for v in mean_tr), _bps(float(np.nanmean(spread_tr))),
             fmt(_t_stat(spread_tr), "+.1f")]]
    if ho is not None and ex.quantiles_holdout is not None:
        mean_ho = np.nanmean(ex.quantiles_holdout, axis=0)
        spread_ho = ex.quantiles_holdout[:, -1] - ex.quantiles_holdout[:, 0]
        bars.append((mean_ho * 1e4, "holdout", _P["holdout"]))
        panels.append({"title": "holdout", "x": ho.dates, "pct": True, "hline": 0.0,
                       "lines": [(np.cumsum(np.nan_to_num(spread_ho)), "holdout", _P["holdout"], "-")]})
        rows.append(["holdout", *(_bps(v) for v in mean_ho), _bps(float(np.nanmean(spread_ho))),
                     fmt(_t_stat(spread_ho), "+.1f")])
    svg = fg.bar_svg("quantile-returns", [{"title": "mean next-day return by weight quintile (bps)",
                                           "labels": labels, "bars": bars}], height=2.4)
    svg += fg.series_svg("quantile-spread", panels, height=2.4,
                         widths=[3, 1.3] if len(panels) == 2 else None)
    tab = table(["window", *(f"{q} (bps/day)" for q in labels), "Q5 − Q1 (bps/day)", "t-stat"], rows,
                [False, *([True] * (len(labels) + 2))])
    return svg + tab, intro


def _t_stat(x: np.ndarray) -> float:
    v = np.asarray(x, dtype=np.float64)
    v = v[np.isfinite(v)]
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return float(v.mean() / sd * np.sqrt(v.size)) if sd > 0 else float("nan")


# ------------------------------------------------------------------ drawdowns
def worst_drawdowns_section(s: FormulaStudy) -> tuple[str, str]:
    """The five deepest drawdowns of the net train equity (and the holdout's, when shown)."""
    intro = ("The five deepest peak-to-trough falls of the compounded net equity: when each "
             "started, bottomed and recovered, and how many sessions it took.")
    tr, ho = s.train, s.holdout
    if tr is None:
        return _none(s), intro
    rows = []
    for name, bt in (("train", tr), ("holdout", ho)):
        if bt is None:
            continue
        for k, d in enumerate(worst_drawdowns(bt.net, 5)):
            rows.append([name, k + 1, fmt(d.depth, "+.1%"), str(bt.dates[d.peak]), str(bt.dates[d.trough]),
                         str(bt.dates[d.end]) if d.end is not None else "not recovered",
                         d.trough - d.peak, d.days if d.days is not None else "–"])
    return table(["window", "#", "depth (net)", "peak", "trough", "recovered", "sessions to trough",
                  "sessions to recovery"], rows,
                 [False, True, True, False, False, False, True, True]), intro


# --------------------------------------------------------------- distribution
def distribution_section(s: FormulaStudy) -> tuple[str, str]:
    """Histogram of daily net returns with the 5% VaR, and the moments table."""
    intro = ("Daily net returns: the histogram with its 5% value at risk (dashed), then the "
             "moments and tails. Fat tails (excess kurtosis well above 0) or a negative skew mean "
             "the Sharpe understates the risk.")
    tr, ho = s.train, s.holdout
    if tr is None:
        return _none(s), intro
    st_tr = return_stats(tr.net)
    panels = [{"title": "daily net return, train", "pct": True, "bins": 60,
               "series": [(tr.net, "", _P["train"])],
               "vlines": [(st_tr["var5"], f"5% VaR {st_tr['var5']:+.2%}", _P["neg"])]}]
    stats = [("train", st_tr)]
    if ho is not None:
        st_ho = return_stats(ho.net)
        panels.append({"title": "holdout", "pct": True, "bins": 30, "series": [(ho.net, "", _P["holdout"])],
                       "vlines": [(st_ho["var5"], f"5% VaR {st_ho['var5']:+.2%}", _P["neg"])]})
        stats.append(("holdout", st_ho))
    svg = fg.hist_svg("return-distribution", panels, widths=[3, 1.3] if ho is not None else None)
    keys = (("mean", "mean", "+.3%"), ("std", "std", ".3%"), ("skew", "skew", "+.2f"),
            ("kurtosis", "excess kurtosis", "+.2f"), ("var5", "5% VaR", "+.2%"),
            ("cvar5", "5% CVaR (mean beyond VaR)", "+.2%"), ("best", "best day", "+.2%"),
            ("worst", "worst day", "+.2%"), ("positive", "positive days", ".1%"))
    rows = [[label, *(fmt(st[k], spec) for _, st in stats)] for k, label, spec in keys]
    return svg + table(["", *(n for n, _ in stats)], rows, [False, *([True] * len(stats))]), intro


# ------------------------------------------------------------------ turnover
def turnover_section(s: FormulaStudy) -> tuple[str, str]:
    """Turnover and holding period over time, and the cost they paid."""
    intro = ("Share of the book traded per day (Σ|Δw| with gross exposure 1, 21-day mean), the "
             "holding period it implies (2 / turnover sessions: replacing the whole book trades "
             "2), and the cumulative cost paid as a fraction of gross exposure.")
    tr, ho = s.train, s.holdout
    if tr is None:
        return _none(s), intro
    wins = [("train", tr, _P["train"])] + ([("holdout", ho, _P["holdout"])] if ho is not None else [])
    x = np.concatenate([bt.dates for _, bt, _ in wins])
    sizes = [bt.dates.size for _, bt, _ in wins]

    def _padded(k: int, y: np.ndarray) -> np.ndarray:
        out = np.full(x.size, np.nan)
        lo = sum(sizes[:k])
        out[lo:lo + sizes[k]] = y
        return out

    turn = [(_padded(k, rolling_nanmean(bt.turnover, ROLL_TURNOVER)), n, c, "-")
            for k, (n, bt, c) in enumerate(wins)]
    hold = [(_padded(k, rolling_nanmean(holding_period(bt.turnover), ROLL_TURNOVER)), n, c, "-")
            for k, (n, bt, c) in enumerate(wins)]
    cost = [(_padded(k, np.cumsum(bt.cost)), n, c, "-") for k, (n, bt, c) in enumerate(wins)]
    svg = fg.series_svg("turnover", [
        {"title": "turnover / day (21d)", "x": x, "pct": True, "lines": turn},
        {"title": "holding period (sessions)", "x": x, "lines": hold},
        {"title": "cost paid, cumulative", "x": x, "pct": True, "lines": cost}])
    rows = []
    for name, bt, _ in wins:
        m = bt.metrics
        rows.append([name, bt.costs.get("name"), fmt(m.turnover, ".1%"),
                     fmt(float(np.nanmean(holding_period(bt.turnover))), ".1f"),
                     fmt(float(bt.cost.mean() * 252), ".2%"), fmt(m.gross_sharpe, "+.2f"),
                     fmt(m.sharpe, "+.2f")])
    return svg + table(["window", "costs", "turnover / day", "holding period (sessions)",
                        "cost / year", "gross Sharpe", "net Sharpe"], rows,
                       [False, False, True, True, True, True, True]), intro


# ------------------------------------------------------------------ break-even
def breakeven_section(s: FormulaStudy) -> tuple[str, str]:
    """Net Sharpe as a function of a linear cost per unit turnover; the cost where it is 0."""
    intro = ("Net Sharpe if every unit of turnover cost c bps (gross − c·turnover): the "
             "break-even cost is where the line crosses 0. Compare it with what you would pay; "
             "the train window charges the environment's linear cost (dotted).")
    tr = s.train
    if tr is None:
        return _none(s), intro
    be = break_even_bps(tr.gross, tr.turnover)
    train_bps = float(np.mean(tr.cost) / np.mean(tr.turnover) * 1e4) if np.mean(tr.turnover) > 0 else 0.0
    hi = max(2.0 * be if np.isfinite(be) and be > 0 else 0.0, 4.0 * max(train_bps, 1.0))
    grid = np.linspace(0.0, hi, 81)
    sr = sharpe_at_cost(tr.gross, tr.turnover, grid)
    vlines = [train_bps] + ([be] if np.isfinite(be) and be > 0 else [])
    svg = fg.series_svg("break-even", [{
        "title": "train net Sharpe vs cost (bps per unit of turnover)", "x": grid, "hline": 0.0,
        "vlines": vlines, "lines": [(sr, "net Sharpe", _P["train"], "-")]}], height=2.4)
    pairs = [("break-even cost (train)", f"{be:.2f} bps per unit of turnover" if np.isfinite(be) else "–"),
             ("train cost charged", f"{train_bps:.2f} bps per unit of turnover"),
             ("net Sharpe at the train cost", fmt(float(sharpe_at_cost(tr.gross, tr.turnover, [train_bps])[0]),
                                                  "+.2f")),
             ("headroom", f"{be / train_bps:.1f}× the train cost" if train_bps > 0 and np.isfinite(be) else "–")]
    if s.holdout is not None:
        ho = s.holdout
        pairs.append(("break-even cost (holdout, gross)", f"{break_even_bps(ho.gross, ho.turnover):.2f} bps"))
    return svg + kv_table(pairs), intro


# ---------------------------------------------------------------------- legs
def legs_section(s: FormulaStudy) -> tuple[str, str]:
    """Cumulative contribution of the long and the short leg (gross) next to the market."""
    intro = ("What the long names and the short names each contributed (cumulative, before "
             "costs). A book that earns only on one leg is a tilt; the short leg earns when its "
             "names fall.")
    tr, ho = s.train, s.holdout
    if tr is None:
        return _none(s), intro
    panels = [{"title": "train", "x": tr.dates, "pct": True, "hline": 0.0, "lines": [
        (np.cumsum(tr.long), "long leg", _P["capped"], "-"),
        (np.cumsum(tr.short), "short leg", _P["neg"], "-"),
        (np.cumsum(tr.gross), "book (gross)", _P["train"], "-")]}]
    rows = [["train", fmt(float(tr.long.mean() * 252), "+.2%"), fmt(float(tr.short.mean() * 252), "+.2%"),
             fmt(float(np.corrcoef(tr.long, tr.short)[0, 1]), "+.2f")]]
    if ho is not None:
        panels.append({"title": "holdout", "x": ho.dates, "pct": True, "hline": 0.0, "lines": [
            (np.cumsum(ho.long), "long", _P["capped"], "-"), (np.cumsum(ho.short), "short", _P["neg"], "-")]})
        rows.append(["holdout", fmt(float(ho.long.mean() * 252), "+.2%"),
                     fmt(float(ho.short.mean() * 252), "+.2%"),
                     fmt(float(np.corrcoef(ho.long, ho.short)[0, 1]), "+.2f")])
    svg = fg.series_svg("legs", panels, widths=[3, 1.3] if ho is not None else None)
    return svg + table(["window", "long leg / year", "short leg / year", "corr(long, short)"], rows,
                       [False, True, True, True]), intro


# ------------------------------------------------------------------ exposures
def exposure_section(s: FormulaStudy) -> tuple[str, str]:
    """Trailing 126-day multivariate betas of the gross P&L on each factor (train)."""
    intro = (f"The factor betas of the factor table, re-estimated on a trailing {ROLL_BETA}-session "
             "window (OLS of the daily gross P&L on all factors at once): a neutral book's lines stay "
             "near 0; a drifting line is an exposure that comes and goes.")
    tr = s.train
    if tr is None or s.factor_returns is None:
        return _none(s), intro
    betas = rolling_betas(tr.gross, s.factor_returns, ROLL_BETA)
    lines = [(betas[:, k], n, _FACTOR_COLOURS[k % len(_FACTOR_COLOURS)], "-")
             for k, n in enumerate(s.factor_names)]
    svg = fg.series_svg("factor-exposure", [{"title": f"rolling {ROLL_BETA}-session factor betas, train",
                                             "x": tr.dates, "lines": lines, "hline": 0.0,
                                             "legend": "center right"}], height=2.8)
    rows = [[n, fmt(float(np.nanmin(betas[:, k])), "+.3f"), fmt(float(np.nanmedian(betas[:, k])), "+.3f"),
             fmt(float(np.nanmax(betas[:, k])), "+.3f"), fmt(float(betas[-1, k]), "+.3f")]
            for k, n in enumerate(s.factor_names)]
    return svg + table(["factor", "min", "median", "max", "last"], rows,
                       [False, True, True, True, True]), intro


# ----------------------------------------------------------------------- CPCV
def cpcv_section(s: FormulaStudy) -> tuple[str, str]:
    """The 15 test-slice Sharpes and the distribution of the distinct recombined path Sharpes."""
    intro = ("The train window cut into 6 blocks; each pair of blocks is one test slice (15), with "
             "10 sessions purged before and 5 embargoed after each test block. R1 = mean − 0.5·std "
             "of the 15 test Sharpes. A formula fits nothing, so each of the 5 recombined CPCV paths "
             "is the whole window: the page shows their distinct Sharpes (one), not five copies.")
    tr = s.train
    if tr is None:
        return _none(s), intro
    from gymkit.verifiers.cpcv import CPCV

    cv = CPCV(**{k: int(v) for k, v in tr.cpcv_params.items() if k != "name"})
    pairs = [f"{a}+{b}" for a, b in cv.test_blocks]
    test = np.asarray(tr.cpcv.test_sharpes)
    paths = np.asarray(tr.cpcv.path_sharpes)
    distinct = np.unique(np.round(paths, 12))
    bars = fg.bar_svg("cpcv-slices", [{
        "title": "test-slice Sharpe by block pair (blocks a+b)", "legend_above": True, "labels": pairs,
        "fontsize": 7.5,
        "bars": [(test, "test Sharpe", [_P["train"] if v >= 0 else _P["neg"] for v in test])],
        "hlines": [(float(tr.cpcv.score), f"R1 {tr.cpcv.score:+.2f}", "#2e7d32"),
                   (float(test.mean()), f"mean {test.mean():+.2f}", "#888888")],
    }], height=2.8)
    hist = fg.hist_svg("cpcv-distribution", [{
        "title": f"15 test-slice Sharpes and the {distinct.size} distinct path Sharpe"
                 f"{'s' if distinct.size != 1 else ''}", "bins": 12,
        "series": [(test, "test slices", _P["train_gross"])],
        "vlines": [(float(v), f"path Sharpe {v:+.2f}" if k == 0 else "", _P["holdout"])
                   for k, v in enumerate(distinct)]}], height=2.4)
    blocks = cv.blocks(tr.net.size)
    block_sr = [float(np.mean(tr.net[lo:hi]) / np.std(tr.net[lo:hi], ddof=1) * np.sqrt(252.0))
                if np.std(tr.net[lo:hi]) > 0 else 0.0 for lo, hi in blocks]
    brows = [[f"B{b}", str(tr.dates[lo]), str(tr.dates[hi - 1]), hi - lo, fmt(block_sr[b], "+.2f")]
             for b, (lo, hi) in enumerate(blocks)]
    summary = kv_table([
        ("test-slice Sharpes", f"mean {test.mean():+.2f}, std {test.std():.2f}, min {test.min():+.2f}, "
                               f"max {test.max():+.2f}"),
        ("R1 (CPCV score)", fmt(float(tr.cpcv.score), "+.3f")),
        ("recombined paths", f"{paths.size} paths, {distinct.size} distinct: "
                             + ", ".join(f"{v:+.2f}" for v in distinct)),
    ])
    return (bars + hist + summary + table(["block", "first day", "last day", "days", "block Sharpe"], brows,
                                          [False, False, False, True, True])), intro


# ------------------------------------------------------------------ rank drop
def rank_drop_section(s: FormulaStudy) -> tuple[str, str]:
    """R2's rank drop per CPCV split, with the novelty archive as the group."""
    intro = ("R2 asks, split by split, whether an answer that ranks high in sample falls in rank "
             "on the test slice. Here the group is the novelty archive: per split, this formula's "
             "rank (0 = best) by in-sample Sharpe and by test Sharpe, and the penalty R2's own "
             "code gives the drop. Rising in rank is free.")
    tr, ex = s.train, s.extras
    if tr is None:
        return _none(s), intro
    if ex is None or ex.rank_drop is None:
        return '<p class="note">No reference group: the archive is empty.</p>', intro
    rd = ex.rank_drop
    from gymkit.verifiers.cpcv import CPCV

    cv = CPCV(**{k: int(v) for k, v in tr.cpcv_params.items() if k != "name"})
    labels = [f"{a}+{b}" for a, b in cv.test_blocks]
    drop = rd.rank_oos - rd.rank_is
    svg = fg.bar_svg("rank-drop", [
        {"title": f"rank drop (test − in-sample rank, of {rd.group})", "labels": labels,
         "fontsize": 6.5,
         "bars": [(drop, "", [_P["neg"] if v > 0 else _P["train"] for v in drop])]},
        {"title": "R2 penalty per split", "labels": labels, "fontsize": 6.5,
         "bars": [(rd.penalty, "", _P["neg"])]}], height=2.6)
    rows = [[f"B{lab.replace('+', ' + B')}", fmt(float(a), "g"), fmt(float(b), "g"), fmt(float(b - a), "+g"),
             fmt(float(p), "+.4f")]
            for lab, a, b, p in zip(labels, rd.rank_is, rd.rank_oos, rd.penalty, strict=True)]
    body = svg + kv_table([
        ("group", f"this formula + {rd.group - 1} archive entries (train P&L)"),
        ("R2 in this group (mean over the splits)", fmt(rd.mean_penalty, "+.4f")),
        ("R2 on the card", f"{fmt(s.card.channels.get('pbo'), '+.4f')} (scored in its own group; "
                           "0 when scored alone)"),
    ]) + table(["split", "in-sample rank", "test rank", "drop", "penalty"], rows,
               [False, True, True, False, True])  # a rise in rank (drop < 0) is not a loss: no red
    return body, intro
