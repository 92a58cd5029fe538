"""One line per reward channel saying why a card has the value it has.

One table, :data:`REASONS`: channel name → function of (card, thresholds) returning a
sentence built from the card's own metrics and the channel table's constants
(:mod:`gymkit.verifiers.channels`), so the sentence and the value cannot drift apart
silently: the tests recompute each value from the numbers the sentence quotes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gymkit.card import ScoreCard
from gymkit.dsl.errors import TAG_CODES
from gymkit.verifiers.channels import ChannelParams

__all__ = ["REASONS", "channel_reasons"]


def _m(card: ScoreCard, *path: str) -> Any:
    cur: Any = card.metrics
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def _cpcv(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        code = card.error.code if card.error else "?"
        kind = "tag failure" if code in TAG_CODES else "gate failure"
        return f"invalid answer ({code}): fixed {kind} penalty (the scalar reward's invalid band)"
    sr = np.asarray(_m(card, "cpcv", "test_sharpes") or [], dtype=np.float64)
    if sr.size == 0:
        return "no CPCV split Sharpes on the card"
    raw = sr.mean() - 0.5 * sr.std()
    clip = f", clipped to ±{p.cpcv_clip:g}" if abs(raw) > p.cpcv_clip else ""
    return (f"mean {sr.mean():+.2f} − 0.5 × std {sr.std():.2f} of the {sr.size} test-slice net "
            f"Sharpes = {raw:+.2f}{clip}")


def _pbo(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    v = card.channels.get("pbo", 0.0)
    if v == 0.0:
        return ("no rank drop: scored alone, or it ranks no worse out of sample than in sample "
                "within its group")
    return (f"ranks worse on test slices than in sample within its group: mean penalty over the "
            f"splits {v:+.3f} (floor −{p.pbo_scale:g})")


def _stress(card: ScoreCard, p: ChannelParams) -> str:
    v = card.channels.get("jepa_stress")
    if v is None:
        return "not active: no stress worlds"
    if not card.valid:
        return "0 on invalid answers"
    st = _m(card, "stress") or {}
    drop, worlds = st.get("mean_drop"), st.get("world_cpcv") or {}
    if drop is None:
        return f"no stress scores on the card: {v:+.3f}"
    return (f"mean CPCV drop {drop:.2f} over {len(worlds)} worlds → "
            f"−min(1, {p.stress_scale:g}·log(1 + {drop:.2f})) = {v:+.3f}")


def _factor(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    raw, res = _m(card, "factors", "raw_sharpe"), _m(card, "factors", "residual_sharpe")
    part = _m(card, "factors", "factor_sharpe")
    if raw is None or (res is None and part is None):
        return "no factor regression on the card"
    if part is not None:  # R4's input: the factor part's Sharpe in the P&L's own volatility
        rest = f", residual {res:+.2f}" if res is not None else ""
        if part <= 0:
            return (f"the six factors explain no Sharpe (factor part {part:+.2f} of raw "
                    f"{raw:+.2f}{rest}): no penalty")
        return (f"the six factors explain Sharpe {part:.2f} of the raw {raw:+.2f}{rest} → "
                f"−{p.factor_scale:g} × {min(part, p.factor_clip):.2f}")
    diff = raw - res
    if diff <= 0:
        return (f"raw Sharpe {raw:+.2f} ≤ residual {res:+.2f} after the six factors: nothing "
                "explained, no penalty")
    return (f"raw Sharpe {raw:+.2f} − residual {res:+.2f} = {diff:.2f} explained by the six "
            f"factors → −{p.factor_scale:g} × {min(diff, p.factor_clip):.2f}")


def _turnover(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    t = _m(card, "turnover")
    if t is None:
        return "no turnover on the card"
    if t <= p.turnover_cap:
        return f"turnover {t:.1%}/day ≤ the {p.turnover_cap:.0%} cap: free"
    return (f"turnover {t:.1%}/day above the {p.turnover_cap:.0%} cap: "
            f"−{p.turnover_slope:g} × {t - p.turnover_cap:.3f}")


def _min_turnover(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        code = card.error.code if card.error else "?"
        if code in ("turnover_floor", "degenerate_book"):
            return f"invalid ({code}): trades below the {p.min_turnover_floor:.0%}/day floor"
        return "0 on answers that fail before the book"
    t = _m(card, "turnover")
    if t is None:
        return "no turnover on the card"
    if t >= p.min_turnover_free:
        return f"turnover {t:.1%}/day ≥ {p.min_turnover_free:.0%}: free"
    return (f"turnover {t:.1%}/day in the {p.min_turnover_floor:.0%}–{p.min_turnover_free:.0%} "
            "ramp: a slow book pays")


def _ic(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    ic, cpcv = _m(card, "ic"), _m(card, "cpcv", "score")
    if ic is None:
        return "no IC on the card"
    s = f"IC {ic:+.4f} → {p.ic_scale:g}·clip({p.ic_multiplier:g}·IC, ±1)"
    if cpcv is not None and cpcv <= 0:
        s += f", capped at {p.ic_cap_without_cpcv:g} because CPCV ≤ 0"
    return s


def _novelty_pnl(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    c = _m(card, "novelty", "max_abs_corr") or 0.0
    near = _m(card, "novelty", "nearest")
    tail = f" (nearest: {near})" if near else ""
    if c >= p.near_duplicate_corr:
        return f"near-duplicate of an archived book: max |corr| {c:.2f} ≥ {p.near_duplicate_corr:g}{tail}"
    return f"{p.novelty_pnl_scale:g} × (1 − max |corr| {c:.2f} with the archive){tail}"


def _novelty_syntax(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    in_arc = bool(_m(card, "novelty", "in_archive"))
    dups = int(_m(card, "novelty", "group_duplicates") or 0)
    c = _m(card, "novelty", "max_abs_corr") or 0.0
    if not in_arc and dups == 0:
        return f"unseen canonical form: {p.novelty_syntax_bonus:g} × (1 − {c:.2f})"
    where = ", ".join(x for x in ("in the archive" if in_arc else "",
                                  f"{dups} earlier in the group" if dups else "") if x)
    return f"known canonical form ({where}): {p.duplicate_penalty:g} × {int(in_arc) + dups}"


def _motif(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    if card.motif_capped:
        return (f"fires: single-motif or price-only with IC < {p.motif_ic_threshold:g}; "
                "reward capped at 0")
    single = _m(card, "structure", "is_single_motif")
    price = _m(card, "structure", "is_price_only")
    if single or price:
        return f"{'single-motif' if single else 'price-only'} but IC ≥ {p.motif_ic_threshold:g}: passes"
    return "more than one motif and not price-only: passes"


def _complexity(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    n = _m(card, "structure", "node_count")
    if n is None:
        return "no node count on the card"
    if n <= p.complexity_free_nodes:
        return f"{n} expression nodes ≤ {p.complexity_free_nodes} free"
    return f"{n} nodes: {p.complexity_per_node:g} × {n - p.complexity_free_nodes} beyond {p.complexity_free_nodes}"


def _format(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    if card.channels.get("format", 0.0) > 0:
        return f"a reasoning block precedes the tag: +{p.format_bonus:g}"
    return "no reasoning block"


#: channel name → reason function (card, thresholds) → one line.
REASONS: dict[str, Callable[[ScoreCard, ChannelParams], str]] = {
    "cpcv": _cpcv,
    "pbo": _pbo,
    "jepa_stress": _stress,
    "factor_neutrality": _factor,
    "turnover": _turnover,
    "min_turnover": _min_turnover,
    "ic": _ic,
    "novelty_pnl": _novelty_pnl,
    "novelty_syntax": _novelty_syntax,
    "motif_guard": _motif,
    "complexity": _complexity,
    "format": _format,
}


def channel_reasons(card: ScoreCard, params: ChannelParams) -> dict[str, str]:
    """Return ``{channel: one-line reason}`` for every channel on ``card``, in card order."""
    return {name: REASONS[name](card, params) if name in REASONS else "no explanation registered"
            for name in card.channels}
