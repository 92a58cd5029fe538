"""``gymkit demo``: score one GRPO-sized group of sample answers on the embedded default market.

The group mixes honest formulas (the default market's planted effects, the seed's winners, a
paper alpha) with the reward hacks of the seed's hack log (a self-cancelling book, a static
tilt, a jittered duplicate, a missing tag, a syntax error, a lookback over the limit), so one
run shows the gate, the oracle, every channel and the GDPO advantages at work.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import numpy as np

#: (label, completion) — what a policy might answer to one brief.
SAMPLE_GROUP: tuple[tuple[str, str], ...] = (
    ("planted reversal", "<alpha>rank(-ts_sum(returns, 5))</alpha>"),
    ("planted volume", "<alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20) * "
                       "ts_std(returns, 250) / ts_std(returns, 20))</alpha>"),
    ("seed winner", "<alpha>rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))</alpha>"),
    ("seed winner", "<alpha>rank(ts_std(volume / (high - low), 34))</alpha>"),
    ("alpha#101", "<alpha>((close - open) / ((high - low) + .001))</alpha>"),
    ("with reasoning", "<think>fade abnormal 3-day moves, scaled by volatility</think>"
                       "<alpha>rank(-ts_delta(close, 3) / ts_std(returns, 21))</alpha>"),
    ("jittered copy", "<alpha>rank(-ts_sum(returns, 4))</alpha>"),
    ("static tilt", "<alpha>rank(ts_mean(close, 250))</alpha>"),
    ("x - x hack", "<alpha>scale(ts_rank(ts_delta(volume, 23), 47) - "
                   "ts_rank(ts_delta(volume, 23), 47))</alpha>"),
    ("missing tag", "I would go long recent losers: rank(-returns)"),
    ("syntax error", "<alpha>rank(ts_mean(close, 5)</alpha>"),
    ("lookback > 252", "<alpha>ts_mean(ts_mean(close, 200), 100)</alpha>"),
)


def _fmt(x: object, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def run_demo(env_id: str = "us46-default", completions: Sequence[tuple[str, str]] = SAMPLE_GROUP,
             as_json: bool = False) -> str:
    """Score ``completions`` as one group on ``env_id``; return the printable report (or JSONL)."""
    import gymkit

    t0 = time.perf_counter()
    env = gymkit.make(env_id)
    t_make = time.perf_counter() - t0
    t1 = time.perf_counter()
    cards = env.score_group([c for _, c in completions])
    t_group = time.perf_counter() - t1
    adv, info = env.group_advantages(cards)
    if as_json:
        rows = []
        for (label, _), card, a in zip(completions, cards, adv, strict=True):
            rows.append(json.dumps({"label": label, "advantage": float(a), **card.to_dict()},
                                   separators=(",", ":"), allow_nan=False))
        return "\n".join(rows)

    lines = [
        f"gymkit {gymkit.__version__} demo: one group of {len(cards)} answers on {env_id}",
        f"  data {cards[0].data_fingerprint[:16]}  env {cards[0].env_fingerprint[:16]}  "
        f"archive v{cards[0].archive_version} ({cards[0].archive_digest[:12]})",
        "",
        f"  {'#':>2} {'answer':<16} {'valid':<5} {'reward':>7} {'adv':>6} {'cpcv':>6} "
        f"{'turn/d':>6} {'IC':>7}  formula or error",
    ]
    for i, ((label, _), card, a) in enumerate(zip(completions, cards, adv, strict=True)):
        m = card.metrics
        what = card.formula if card.valid else f"[{card.error.code}] {card.error.message}"
        lines.append(
            f"  {i:>2} {label:<16} {'yes' if card.valid else 'NO':<5} {card.reward:>7.3f} "
            f"{a:>6.2f} {_fmt(card.channels.get('cpcv'), '.2f'):>6} "
            f"{_fmt(m.get('turnover'), '.1%'):>6} {_fmt(m.get('ic'), '.4f'):>7}  {what}"
        )
    phases: dict[str, list[float]] = {}
    for card in cards:
        for k, v in card.timings.items():
            phases.setdefault(k, []).append(v)
    split = "  ".join(f"{k} {np.median(v) * 1e3:.2f}" for k, v in phases.items())
    lines += [
        "",
        f"  GDPO: {info.n_valid}/{len(cards)} valid, share of non-zero advantages "
        f"{info.share_nonzero:.0%}, sum {adv.sum():+.1e}; invalid answers all <= 0: "
        f"{bool(np.all(adv[[not c.valid for c in cards]] <= 0))}",
        f"  time: environment {t_make:.2f} s (once), group {t_group * 1e3:.0f} ms; "
        f"median per answer by phase (ms): {split}",
    ]
    notes = sorted({n for c in cards for n in c.notes})
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)
