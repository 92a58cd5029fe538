"""Assemble tear-sheet pages from studies: the section tables and the two page builders.

:data:`FORMULA_SECTIONS` and :data:`ANSWERS_SECTIONS` list every section (anchor id, title)
in page order; the builders emit exactly these, in this order, whatever the study holds
(an invalid answer or a report without holdout still gets every section, saying why it is
empty), so a reader always finds the same page and a test can check it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gymkit.card import ScoreCard
from gymkit.verifiers.channels import cap_binds, channel

from . import figures as fg
from .analysis import (
    HORIZONS,
    BookView,
    FormulaStudy,
    GroupStudy,
    drawdown,
    equity,
    rolling_nanmean,
    rolling_sharpe,
)
from .html import Section, badge, esc, fmt, kpis, kv_table, page, table
from .quant_sections import (
    breakeven_section,
    cpcv_section,
    distribution_section,
    exposure_section,
    legs_section,
    quantiles_section,
    rank_drop_section,
    turnover_section,
    worst_drawdowns_section,
)

__all__ = ["ANSWERS_SECTIONS", "FORMULA_SECTIONS", "answers_page", "formula_page"]

#: (anchor id, title) of the single-formula tear sheet, in page order.
FORMULA_SECTIONS: tuple[tuple[str, str], ...] = (
    ("summary", "Summary"),
    ("channels", "Why this reward"),
    ("equity", "Equity curve"),
    ("drawdown", "Drawdown"),
    ("worst-drawdowns", "Worst drawdowns"),
    ("rolling-sharpe", "Rolling Sharpe"),
    ("returns", "Return distribution"),
    ("quantiles", "Quantile returns and spread"),
    ("ic", "IC, rolling IC and IC decay"),
    ("turnover", "Turnover and holding period"),
    ("break-even", "Break-even cost"),
    ("legs", "Long and short legs"),
    ("cpcv", "CPCV test slices and paths"),
    ("rank-drop", "Rank drop per split (R2)"),
    ("factors", "Factor exposures"),
    ("factor-exposure", "Factor exposure over time"),
    ("stress", "Stress worlds"),
    ("archive", "Canonical form and archive neighbours"),
)

#: (anchor id, title) of the answers (group and book) tear sheet, in page order.
ANSWERS_SECTIONS: tuple[tuple[str, str], ...] = (
    ("summary", "Summary"),
    ("answers", "Answers"),
    ("heatmap", "Channels heat map"),
    ("advantages", "GDPO advantages"),
    ("validity", "Validity reasons"),
    ("books", "Books"),
    ("book-equity", "Book equity"),
    ("down-days", "Down-day behaviour"),
    ("stress", "Stress worlds"),
)

ROLL_TRAIN = 126
ROLL_HOLDOUT = 63
ROLL_IC = 63
_P = fg.PALETTE


def _pct(x: object, d: int = 1) -> str:
    return fmt(x, f"+.{d}%") if isinstance(x, float) else fmt(x)


def _footer(card: ScoreCard) -> str:
    return (f"gymkit {esc(card.gymkit_version)} · env <code>{esc(card.env_id)}</code> "
            f"{esc(card.env_fingerprint[:16])} · data {esc(card.data_fingerprint[:16])} · "
            f"archive v{card.archive_version} ({esc(card.archive_digest[:12])}) · channel values are "
            "raw; reward = Σ priority × value (capped at 0 when the motif guard fires; below 0 "
            "softly floored into (−2, 0); invalid answers −3.5 / −3.0 / −2.5 by gate layer). "
            "Holdout numbers are computed for this report only: scoring and checkpoint "
            "selection never see them.")


def _sections(spec: tuple[tuple[str, str], ...], bodies: dict[str, tuple[str, str]]) -> list[Section]:
    return [Section(sid, title, *bodies[sid]) for sid, title in spec]


# ------------------------------------------------------------------- one formula
def _no_backtest(s: FormulaStudy) -> str:
    e = s.card.error
    why = f"[{e.code}] {e.message}" if e else "no backtest"
    return f'<p class="note">No backtest: the answer is invalid ({esc(why)}).</p>'


def _hold_note(s: FormulaStudy) -> str:
    return "" if s.holdout is not None else (
        '<p class="note">Holdout not shown: train figures only (<code>gymkit report --holdout</code> shows it, once per '
        'formula set and holdout sessions, recorded in the holdout ledger).</p>')


def _summary(s: FormulaStudy) -> tuple[str, str]:
    c, tr, ho = s.card, s.train, s.holdout
    head = (f"<p>{badge(c.valid, 'valid' if c.valid else 'invalid')} "
            f"<code>{esc(c.formula or s.completion)}</code></p>")
    if not c.valid:
        e = c.error
        head += (f'<p class="note">Rejected by the {esc(e.layer if e else "gate")} with '
                 f"<code>{esc(e.code if e else '?')}</code>: {esc(e.message if e else '')}</p>")
    items = [("reward", fmt(c.reward, "+.3f")), ("CPCV (R1)", fmt(c.channels.get("cpcv"), "+.2f"))]
    if tr is not None:
        m = tr.metrics
        items += [("train Sharpe (net)", fmt(m.sharpe, "+.2f")),
                  ("train ann. return", _pct(m.annual_return)),
                  ("turnover / day", fmt(m.turnover, ".1%")), ("IC", fmt(m.ic, "+.4f")),
                  ("beta to market", fmt(m.beta, "+.2f")), ("max drawdown", _pct(m.max_drawdown))]
    if ho is not None:
        items += [("holdout Sharpe (net)", fmt(ho.metrics.sharpe, "+.2f")),
                  ("holdout return", _pct(ho.metrics.total_return))]
    body = head + kpis(items) + kv_table([
        ("environment", f"{s.env_id}: {s.env_description}"),
        ("train window", f"{tr.dates[0]} → {tr.dates[-1]} ({tr.dates.size} judged days), "
                         f"costs {tr.costs.get('name')}" if tr is not None else "–"),
        ("holdout window", f"{ho.dates[0]} → {ho.dates[-1]} ({ho.dates.size} days), costs "
                           f"{ho.costs.get('name')}, report only" if ho is not None else "not computed"),
    ])
    if tr is not None:
        body += _metrics_table(s)
    return body, "The answer, whether the gate accepted it, and its headline numbers."


def _metrics_table(s: FormulaStudy) -> str:
    """Train (scored) next to holdout (report only) on the same metrics."""
    tr, ho = s.train, s.holdout
    assert tr is not None
    rows = []
    for name, key, spec in (("net Sharpe", "sharpe", "+.2f"), ("gross Sharpe", "gross_sharpe", "+.2f"),
                            ("annual return (net)", "annual_return", "+.1%"),
                            ("max drawdown", "max_drawdown", "+.1%"), ("turnover / day", "turnover", ".1%"),
                            ("IC", "ic", "+.4f"), ("hit rate", "hit_rate", ".1%"),
                            ("beta to market", "beta", "+.2f"), ("corr to market", "corr", "+.2f")):
        rows.append([name, fmt(getattr(tr.metrics, key), spec),
                     fmt(getattr(ho.metrics, key), spec) if ho is not None else "not shown"])
    return table(["", "train (scored)", "holdout (report only)"], rows, [False, True, True])


def _two_windows(s: FormulaStudy, name: str, fn: Callable, title_tr: str, title_ho: str,
                 pct: bool, fill: bool = False) -> str:
    tr, ho = s.train, s.holdout
    assert tr is not None
    legend = "lower left" if fill else "upper left"
    panels = [{"title": title_tr, "x": tr.dates, "pct": pct, "fill": fill, "legend": legend, "lines": [
        (fn(tr.gross), "gross", _P["train_gross"], "-"), (fn(tr.net), "net", _P["train"], "-")]}]
    if ho is not None:
        panels.append({"title": title_ho, "x": ho.dates, "pct": pct, "fill": fill, "legend": legend, "lines": [
            (fn(ho.gross), "gross", _P["holdout_gross"], "-"),
            (fn(ho.net), "net", _P["holdout"], "-")]})
    return fg.series_svg(name, panels, widths=[3, 1.3] if ho is not None else None)


def _equity(s: FormulaStudy) -> tuple[str, str]:
    intro = ("Compounded return of the dollar-neutral book, gross and net of costs: train window "
             "with the environment's train costs, holdout with realistic costs (impact, capacity, "
             "borrow).")
    if s.train is None:
        return _no_backtest(s), intro
    svg = _two_windows(s, "equity", equity, "train (scored)", "holdout (report only)", True)
    return svg + _hold_note(s), intro


def _drawdown(s: FormulaStudy) -> tuple[str, str]:
    intro = "Net equity below its running peak."
    if s.train is None:
        return _no_backtest(s), intro
    svg = _two_windows(s, "drawdown", drawdown, "train drawdown", "holdout drawdown", True, True)
    rows = [["train", _pct(s.train.metrics.max_drawdown), fmt(s.train.metrics.hit_rate, ".1%")]]
    if s.holdout is not None:
        rows.append(["holdout", _pct(s.holdout.metrics.max_drawdown),
                     fmt(s.holdout.metrics.hit_rate, ".1%")])
    return svg + table(["window", "max drawdown (net)", "hit rate"], rows, [False, True, True]), intro


def _rolling(s: FormulaStudy) -> tuple[str, str]:
    intro = (f"Annualised net Sharpe over a trailing {ROLL_TRAIN}-day window on train and "
             f"{ROLL_HOLDOUT}-day window on the (shorter) holdout.")
    tr, ho = s.train, s.holdout
    if tr is None:
        return _no_backtest(s), intro
    lines = [(rolling_sharpe(tr.net, ROLL_TRAIN), f"train, {ROLL_TRAIN}d", _P["train"], "-")]
    x = tr.dates
    if ho is not None:
        x = np.concatenate([tr.dates, ho.dates])
        pad_tr = np.full(ho.dates.size, np.nan)
        pad_ho = np.full(tr.dates.size, np.nan)
        lines = [(np.concatenate([lines[0][0], pad_tr]), *lines[0][1:]),
                 (np.concatenate([pad_ho, rolling_sharpe(ho.net, ROLL_HOLDOUT)]),
                  f"holdout, {ROLL_HOLDOUT}d", _P["holdout"], "-")]
    svg = fg.series_svg("rolling-sharpe", [{"title": "rolling Sharpe (net)", "x": x, "lines": lines,
                                            "hline": 0.0}])
    return svg + _hold_note(s), intro


def _ic(s: FormulaStudy) -> tuple[str, str]:
    intro = ("Daily Pearson correlation of the book's weights with the next open-to-open return "
             "(63-day mean), and its decay: the same weights against the return h sessions "
             "ahead, h = 1, 2, 5, 10, 21 (h = 1 is the card's IC). A fast signal decays within "
             "days; an IC that stays flat is a slow tilt.")
    tr, ho = s.train, s.holdout
    if tr is None:
        return _no_backtest(s), intro
    x, lines = tr.dates, [(rolling_nanmean(tr.ic, ROLL_IC), "train", _P["train"], "-")]
    if ho is not None:
        x = np.concatenate([tr.dates, ho.dates])
        lines = [(np.concatenate([lines[0][0], np.full(ho.dates.size, np.nan)]), "train", _P["train"], "-"),
                 (np.concatenate([np.full(tr.dates.size, np.nan), rolling_nanmean(ho.ic, ROLL_IC)]),
                  "holdout", _P["holdout"], "-")]
    bars = [(s.ic_decay_train, "train", _P["train"])]
    if ho is not None:
        bars.append((s.ic_decay_holdout, "holdout", _P["holdout"]))
    left = fg.series_svg("ic-rolling", [{"title": "IC, 63-day mean", "x": x, "lines": lines,
                                          "hline": 0.0}], height=2.6)
    right = fg.bar_svg("ic-decay", [{"title": "IC decay by horizon (sessions ahead)",
                                     "labels": [str(h) for h in HORIZONS], "bars": bars}], height=2.6)
    rows = [["train", *(fmt(v, "+.4f") for v in s.ic_decay_train)]]
    if ho is not None:
        rows.append(["holdout", *(fmt(v, "+.4f") for v in s.ic_decay_holdout)])
    tab = table(["h", *(str(h) for h in HORIZONS)], rows, [False, *([True] * len(HORIZONS))])
    return left + right + tab, intro


def _factors(s: FormulaStudy) -> tuple[str, str]:
    intro = ("OLS of the daily gross P&L on six gross factor books (market, size, 12-1 momentum, "
             "5-day reversal, low volatility, price level), then costs charged, the factors bearing "
             "the share R² of them: raw Sharpe = factor part + residual part, both in the net "
             "P&L's volatility. R4 = −0.4·clip(factor part, 0, 3): the score card's numbers.")
    tr, ho = s.train, s.holdout
    if tr is None or s.factor_returns is None:
        return _no_backtest(s), intro
    names = list(s.factor_names)
    beta = np.array([tr.factors.betas[n] for n in names])
    bars = [(beta, "train", _P["train"])]
    if ho is not None:
        bars.append((np.array([ho.factors.betas[n] for n in names]), "holdout", _P["holdout"]))
    r2, cost = tr.factors.r2, np.asarray(tr.cost)
    explained = s.factor_returns @ beta - r2 * cost
    resid = np.asarray(tr.net) - explained   # α + ε − (1 − R²)·cost
    svg = fg.bar_svg("factor-betas", [{"title": "factor betas", "labels": names, "bars": bars}],
                     height=2.5)
    svg += fg.series_svg("factor-residual", [{
        "title": "train: cumulative net P&L, the factors' part and the residual (alpha + noise)",
        "x": tr.dates, "lines": [(np.cumsum(tr.net), "net P&L", _P["train"], "-"),
                                 (np.cumsum(explained), "explained by factors", _P["market"], "--"),
                                 (np.cumsum(resid), "residual", _P["capped"], "-")]}], height=2.6)
    rows = []
    for key, label, spec in (("raw_sharpe", "raw Sharpe", "+.2f"),
                             ("residual_sharpe", "residual Sharpe (net of its cost share)", "+.2f"),
                             ("sharpe_explained", "Sharpe explained", "+.2f"),
                             ("factor_sharpe", "factor part's Sharpe (R4 input)", "+.2f"),
                             ("share_explained", "share explained", "+.0%"), ("r2", "R²", ".3f")):
        if not hasattr(tr.factors, key):
            continue
        rows.append([label, fmt(getattr(tr.factors, key), spec),
                     fmt(getattr(ho.factors, key), spec) if ho is not None else "–"])
    rows.append(["alpha (annualised)", fmt(tr.factors.alpha * 252, "+.2%"),
                 fmt(ho.factors.alpha * 252, "+.2%") if ho is not None else "–"])
    for n in names:
        rows.append([f"beta {n}", fmt(tr.factors.betas[n], "+.3f"),
                     fmt(ho.factors.betas[n], "+.3f") if ho is not None else "–"])
    return svg + table(["", "train", "holdout"], rows, [False, True, True]), intro


def _reward_why(c: ScoreCard, total: float) -> str:
    """How the card's scalar reward follows from Σ priority × value (verifiers/channels.py)."""
    if not c.valid:
        return "invalid: the fixed value of its gate layer (every invalid answer below every valid one)"
    if cap_binds(c):
        return "capped at 0 by the motif guard"
    if total < 0:
        return f"Σ priority × value = {total:+.3f}, softly floored: 2·s/(2 − s)"
    return "Σ priority × value"


def _channels(s: FormulaStudy, notes: tuple[str, ...]) -> tuple[str, str]:
    c = s.card
    rows, total = [], 0.0
    for name, v in c.channels.items():
        pr = s.priorities.get(name, channel(name).priority)
        total += pr * v
        rows.append([channel(name).id, f"<code>{esc(name)}</code>", fmt(v, "+.3f"), fmt(pr, "g"),
                     fmt(pr * v, "+.3f"), esc(s.reasons.get(name, ""))])
    rows.append(["", "<b>reward</b>", "", "", f"<b>{fmt(c.reward, '+.3f')}</b>",
                 esc(_reward_why(c, total))])
    body = table(["id", "channel", "value", "priority", "priority × value", "why"], rows,
                 [False, False, True, True, True, False], raw=True)
    if notes:
        body += "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    return body, ("Each active channel's raw value, its GDPO priority and one line on why it has "
                  "that value.")


_STRESS_INTRO = ("R3 re-scores the formula in market worlds generated by the JEPA world model "
                 "(same costs and CPCV) and penalises the mean drop of the CPCV score.")


def _stress_rows(card: ScoreCard) -> list[list[str]]:
    st = card.metrics.get("stress") if card.metrics else None
    if not st:
        return []
    base = card.channels.get("cpcv")
    return [[w, fmt(v, "+.2f"), fmt(base - v if base is not None and v is not None else None, "+.2f")]
            for w, v in (st.get("world_cpcv") or {}).items()]


def _stress(note: str, card: ScoreCard | None = None, name: str = "stress") -> tuple[str, str]:
    rows = _stress_rows(card) if card is not None else []
    if not rows:
        return f'<p class="note">{esc(note[0].upper() + note[1:])}.</p>', _STRESS_INTRO
    assert card is not None
    vals = [float(r[1]) for r in rows]
    svg = fg.bar_svg(name, [{"title": "CPCV score in each stress world (dashed: train window)",
                             "labels": [r[0] for r in rows],
                             "bars": [(vals, "", [_P["train"] if v >= 0 else _P["neg"] for v in vals])],
                             "hlines": [(float(card.channels.get("cpcv", 0.0)), "train CPCV", "#2e7d32")]}],
                     height=2.4)
    st = card.metrics["stress"]
    body = svg + table(["world", "CPCV score", "drop vs train"], rows, [False, True, True]) + kv_table([
        ("mean drop (floored at 0 per world)", fmt(st.get("mean_drop"), ".3f")),
        ("jepa_stress (R3)", fmt(card.channels.get("jepa_stress"), "+.3f")),
        ("worlds", note)])
    return body, _STRESS_INTRO


def _g_stress(g: GroupStudy) -> tuple[str, str]:
    rows = []
    for i, c in enumerate(g.cards):
        st = c.metrics.get("stress") if c.metrics else None
        if st:
            worlds = st.get("world_cpcv") or {}
            rows.append([i, g.labels[i], fmt(c.channels.get("cpcv"), "+.2f"),
                         *(fmt(v, "+.2f") for v in worlds.values()), fmt(st.get("mean_drop"), ".2f"),
                         fmt(c.channels.get("jepa_stress"), "+.3f")])
            names = list(worlds)
    if not rows:
        return _stress(g.stress_note)
    return (table(["#", "label", "train CPCV", *names, "mean drop", "R3"], rows,
                  [True, False, True, *([True] * len(names)), True, True])
            + f'<p class="note">{esc(g.stress_note)}</p>'), _STRESS_INTRO


def _archive(s: FormulaStudy) -> tuple[str, str]:
    c = s.card
    st = c.metrics.get("structure", {}) if c.metrics else {}
    nov = c.metrics.get("novelty", {}) if c.metrics else {}
    body = kv_table([
        ("formula as written", c.formula or "–"),
        ("canonical form (windows bucketed)", c.canonical or "–"),
        ("already in the archive", fmt(nov.get("in_archive")) if nov else "–"),
        ("nodes / lookback", f"{st.get('node_count', '–')} / {st.get('lookback', '–')} sessions"
         if st else "–"),
        ("fields / motif families", f"{' '.join(st.get('fields', []))} / "
                                    f"{' '.join(st.get('families', []))}" if st else "–"),
    ])
    if s.neighbours:
        body += table(["#", "archive entry (canonical form)", "P&L corr"],
                      [[i + 1, f, fmt(r, "+.3f")] for i, (f, r) in enumerate(s.neighbours)],
                      [True, False, True])
    else:
        body += '<p class="note">No neighbours: the answer is invalid or the archive is empty.</p>'
    return body, ("The bucketed canonical form R9 compares, and the five archive entries whose "
                  f"daily train P&L is most correlated with this book (archive v{c.archive_version}).")


def formula_page(s: FormulaStudy, notes: tuple[str, ...] = (), generated_at: str | None = None) -> str:
    """The single-formula tear sheet (every section of :data:`FORMULA_SECTIONS`)."""
    bodies = {
        "summary": _summary(s), "channels": _channels(s, notes), "equity": _equity(s),
        "drawdown": _drawdown(s), "worst-drawdowns": worst_drawdowns_section(s),
        "rolling-sharpe": _rolling(s), "returns": distribution_section(s),
        "quantiles": quantiles_section(s), "ic": _ic(s), "turnover": turnover_section(s),
        "break-even": breakeven_section(s), "legs": legs_section(s), "cpcv": cpcv_section(s),
        "rank-drop": rank_drop_section(s), "factors": _factors(s),
        "factor-exposure": exposure_section(s), "stress": _stress(s.stress_note, s.card),
        "archive": _archive(s),
    }
    title = f"gymkit · {s.card.formula or 'invalid answer'}"
    return page(title, _header(s), _sections(FORMULA_SECTIONS, bodies), _footer(s.card), generated_at)


def _header(s: FormulaStudy) -> str:
    """One screenshot-able line: validity, reward, R1, the train headline numbers, env, window."""
    c, tr = s.card, s.train
    bits = [badge(c.valid, "valid" if c.valid else f"invalid: {c.error.code if c.error else '?'}"),
            f"reward <b>{fmt(c.reward, '+.3f')}</b>", f"R1 <b>{fmt(c.channels.get('cpcv'), '+.2f')}</b>"]
    if tr is not None:
        m = tr.metrics
        bits += [f"net Sharpe <b>{fmt(m.sharpe, '+.2f')}</b>", f"turnover <b>{fmt(m.turnover, '.0%')}</b>/day",
                 f"IC <b>{fmt(m.ic, '+.3f')}</b>", f"max DD <b>{_pct(m.max_drawdown)}</b>",
                 f"train {esc(tr.dates[0])} → {esc(tr.dates[-1])}"]
    bits.append(f"<code>{esc(s.env_id)}</code> {esc(c.env_fingerprint[:10])}")
    shown = "train and holdout" if s.holdout is not None else "train only (holdout not shown)"
    bits.append(esc(shown))
    return " · ".join(bits)


# -------------------------------------------------------------------- answers
def _g_summary(g: GroupStudy) -> tuple[str, str]:
    valid = [g.cards[i] for i in g.valid_idx]
    best = max(range(len(g.cards)), key=lambda i: (g.cards[i].reward, -i))
    items = [("answers", str(len(g.cards))), ("valid", f"{len(valid)} / {len(g.cards)}"),
             ("mean reward", fmt(float(np.mean([c.reward for c in g.cards])), "+.3f")),
             ("best reward", fmt(g.cards[best].reward, "+.3f")),
             ("distinct canonical forms", str(len({c.canonical for c in valid}))),
             ("non-zero advantages", fmt(g.share_nonzero, ".0%"))]
    for b in g.books:
        items.append((f"equal-weight book Sharpe, {b.window}", fmt(b.stats[0].sharpe, "+.2f")))
    body = kpis(items) + kv_table([("environment", f"{g.env_id}: {g.env_description}"),
                                   ("best answer", f"{g.labels[best]}: {g.cards[best].formula or '–'}")])
    return body, "The answers scored as one group, as a trainer's GDPO step sees them."


def _g_answers(g: GroupStudy) -> tuple[str, str]:
    rows = []
    for i, (lab, c, a) in enumerate(zip(g.labels, g.cards, g.advantages, strict=True)):
        m = c.metrics
        what = esc(c.formula) if c.valid else esc(f"[{c.error.code}] {c.error.message}" if c.error else "")
        rows.append([i, esc(lab), badge(c.valid, "yes" if c.valid else "no"), fmt(c.reward, "+.3f"),
                     fmt(float(a), "+.2f"), fmt(c.channels.get("cpcv"), "+.2f"),
                     fmt(m.get("turnover"), ".1%"), fmt(m.get("ic"), "+.4f"),
                     "✓" if i in g.capped_idx else "", f"<code>{what}</code>"])
    return (table(["#", "label", "valid", "reward", "advantage", "cpcv", "turnover", "IC",
                   "capped book", "formula or error"], rows,
                  [True, False, False, True, True, True, True, True, False, False], raw=True),
            "One row per answer, in file order.")


def _g_heatmap(g: GroupStudy) -> tuple[str, str]:
    x = g.channel_matrix
    mu, sd = x.mean(axis=0), x.std(axis=0)
    z = np.where(sd > 0, (x - mu) / np.where(sd > 0, sd, 1.0), 0.0)
    text = np.array([[f"{v:+.2f}" for v in row] for row in x], dtype=object)
    rows = [f"#{i} {lab[:18]}" for i, lab in enumerate(g.labels)]
    svg = fg.heatmap_svg("heatmap", z, text, rows, list(g.channel_names),
                         "raw channel values, coloured by their z-score within the group")
    return svg, ("Numbers are raw values; colour is how far each answer sits from the group on "
                 "that channel, which is what GDPO standardises before weighting by priority.")


def _g_advantages(g: GroupStudy) -> tuple[str, str]:
    cols = [_P["train"] if c.valid else _P["neg"] for c in g.cards]
    svg = fg.bar_svg("advantages", [{"title": "GDPO advantage per answer (red: invalid)",
                                     "labels": [f"#{i}" for i in range(len(g.cards))],
                                     "bars": [(g.advantages, "", cols)]}], height=2.6)
    inv = [float(a) for a, c in zip(g.advantages, g.cards, strict=True) if not c.valid]
    body = svg + kv_table([
        ("sum of advantages (zero-sum group)", fmt(float(g.advantages.sum()), "+.1e")),
        ("invalid answers with a positive advantage", str(sum(a > 0 for a in inv))),
        ("priorities", ", ".join(f"{n} {p:g}" for n, p in zip(g.channel_names, g.priorities, strict=True))),
    ])
    return body, ("Each channel standardised within the group, times its priority, summed; an "
                  "invalid answer never gets a positive advantage.")


def _g_validity(g: GroupStudy) -> tuple[str, str]:
    rows = []
    for i, (lab, c) in enumerate(zip(g.labels, g.cards, strict=True)):
        e = c.error
        rows.append([i, lab, "valid" if c.valid else "invalid", e.code if e else "", e.layer if e else "",
                     e.message if e else "passed the gate (tag, parse, limits, book, turnover floor)",
                     "" if e is None or e.position is None else e.position])
    counts: dict[str, int] = {}
    for c in g.cards:
        k = c.error.code if c.error else "valid"
        counts[k] = counts.get(k, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return (f'<p class="note">{esc(summary)}</p>'
            + table(["#", "label", "status", "code", "layer", "reason", "position"], rows,
                    [True, False, False, False, False, False, True])), \
        "Why each answer passed or failed layer 1 (the gate), on the text or on the book."


def _stats_rows(b: BookView) -> list[list[str]]:
    return [[st.name, str(st.members), fmt(st.effective_bets, ".1f"), fmt(st.sharpe, "+.2f"),
             _pct(st.annual_return), _pct(st.total_return), _pct(st.max_drawdown),
             fmt(st.beta, "+.2f"), fmt(st.corr, "+.2f"), fmt(st.down_day_mean, "+.3%"),
             fmt(st.up_day_mean, "+.3%"), fmt(st.down_day_hit_rate, ".0%"),
             fmt(st.worst_market_days_mean, "+.3%")] for st in b.stats]


_NO_BOOK = '<p class="note">No valid answers: no book.</p>'


def _g_books(g: GroupStudy) -> tuple[str, str]:
    intro = ("The equal-weight book of every valid answer and the correlation-capped book (by "
             "train CPCV, skip turnover < 2%/day, skip |P&L corr| ≥ 0.5 with a member), with the "
             "effective number of independent bets, beta and correlation to the market.")
    if not g.books:
        return _NO_BOOK, intro
    body = ""
    for b in g.books:
        body += f"<h3>{esc(b.window)}</h3>" + table(
            ["book", "members", "eff. bets", "Sharpe", "ann. return", "total return", "max DD",
             "beta", "corr", "mean on down days", "mean on up days", "positive on down days",
             "mean on worst 5% days"], _stats_rows(b), [False, *([True] * 12)])
    members = [f"#{i} {g.cards[i].formula}" for i in g.capped_idx]
    body += kv_table([("capped book members (train CPCV order)", "; ".join(members) or "none")])
    return body, intro


def _g_equity(g: GroupStudy) -> tuple[str, str]:
    intro = ("Compounded net return of the two books (left axis) and of the equal-weight market, "
             "long only (dotted, right axis).")
    if not g.books:
        return _NO_BOOK, intro
    panels = [{"title": f"{b.window}", "x": b.dates, "pct": True, "lines": [
        (equity(b.equal_weight), "equal-weight", _P["train"], "-"),
        (equity(b.capped), "correlation-capped", _P["capped"], "-")],
        "right": [(equity(b.market), "market", _P["market"], ":")]} for b in g.books]
    return fg.series_svg("book-equity", panels, widths=[3, 1.3] if len(panels) == 2 else None), intro


def _g_down(g: GroupStudy) -> tuple[str, str]:
    intro = ("Mean daily return of each book by quintile of the market's daily return (Q1 = the "
             "market's worst days; the market's own mean in the label). A book that leans on the "
             "market slopes with it; a neutral one does not.")
    if not g.books:
        return _NO_BOOK, intro
    panels = []
    for b in g.books:
        q = np.quantile(b.market, [0.2, 0.4, 0.6, 0.8])
        bucket = np.searchsorted(q, b.market, side="right")
        def by_q(y: np.ndarray, bucket: np.ndarray = bucket) -> np.ndarray:
            return np.array([y[bucket == k].mean() if (bucket == k).any() else np.nan for k in range(5)])
        mq = by_q(b.market)
        labels = [f"Q{k + 1}\nmkt {mq[k]:+.2%}" for k in range(5)]
        panels.append({"title": b.window, "labels": labels, "pct": True,
                       "bars": [(by_q(b.equal_weight), "equal-weight", _P["train"]),
                                (by_q(b.capped), "correlation-capped", _P["capped"])]})
    return fg.bar_svg("down-days", panels, height=2.8), intro


def answers_page(g: GroupStudy, notes: tuple[str, ...] = (), generated_at: str | None = None) -> str:
    """The answers tear sheet (every section of :data:`ANSWERS_SECTIONS`)."""
    stress = _g_stress(g)
    if notes:
        stress = (stress[0] + "".join(f'<p class="note">{esc(n)}</p>' for n in notes), stress[1])
    bodies = {"summary": _g_summary(g), "answers": _g_answers(g), "heatmap": _g_heatmap(g),
              "advantages": _g_advantages(g), "validity": _g_validity(g), "books": _g_books(g),
              "book-equity": _g_equity(g), "down-days": _g_down(g), "stress": stress}
    return page(f"gymkit · {len(g.cards)} answers", _g_header(g), _sections(ANSWERS_SECTIONS, bodies),
                _footer(g.cards[0]), generated_at)


def _g_header(g: GroupStudy) -> str:
    """The answers page's one-line header, in the formula page's style."""
    n_valid = len(g.valid_idx)
    best = max(range(len(g.cards)), key=lambda i: (g.cards[i].reward, -i))
    bits = [badge(n_valid > 0, f"{n_valid} / {len(g.cards)} valid"),
            f"best reward <b>{fmt(g.cards[best].reward, '+.3f')}</b> ({esc(g.labels[best])})",
            f"mean reward <b>{fmt(float(np.mean([c.reward for c in g.cards])), '+.3f')}</b>",
            f"non-zero advantages <b>{fmt(g.share_nonzero, '.0%')}</b>"]
    if g.books:
        bits.append(f"equal-weight book Sharpe <b>{fmt(g.books[0].stats[0].sharpe, '+.2f')}</b>")
    bits.append(f"<code>{esc(g.env_id)}</code> {esc(g.cards[0].env_fingerprint[:10])}")
    shown = "train and holdout" if len(g.books) > 1 else "train only (holdout not shown)"
    bits.append(esc(shown))
    return " · ".join(bits)
