"""``gymkit demo``: score one GRPO-sized group of sample answers on the embedded default market.

The group mixes honest formulas (the default market's planted effects, the seed's winners, a
paper alpha) with the reward hacks of the seed's hack log (a known factor in disguise, a
self-cancelling book, a static tilt, a jittered duplicate, a missing tag, a syntax error, a
lookback over the limit), so one
run shows the gate, the oracle, every channel and the GDPO advantages at work.

``gymkit demo`` prints the market summary and the scored group, then writes the tear sheet
of the group's top answer (highest reward among valid answers) to
``./gymkit-demo-report/index.html`` (``--out DIR`` to change, ``--no-report`` to skip).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: (label, completion) — what a policy might answer to one brief.
SAMPLE_GROUP: tuple[tuple[str, str], ...] = (
    ("planted reversal", "<alpha>rank(group_neutralize(-ts_sum(returns, 5), sector))</alpha>"),
    ("planted volume", "<alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20) * "
                       "ts_std(returns, 250) / ts_std(returns, 20))</alpha>"),
    ("seed winner", "<alpha>rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))</alpha>"),
    ("factor clone", "<alpha>rank(-ts_sum(returns, 5))</alpha>"),
    ("alpha#101", "<alpha>((close - open) / ((high - low) + .001))</alpha>"),
    ("with reasoning", "<think>fade abnormal 3-day moves, scaled by volatility</think>"
                       "<alpha>rank(-ts_delta(close, 3) / ts_std(returns, 21))</alpha>"),
    ("jittered copy", "<alpha>rank(group_neutralize(-ts_sum(returns, 4), sector))</alpha>"),
    ("static tilt", "<alpha>rank(ts_mean(close, 250))</alpha>"),
    ("x - x hack", "<alpha>scale(ts_rank(ts_delta(volume, 23), 47) - "
                   "ts_rank(ts_delta(volume, 23), 47))</alpha>"),
    ("missing tag", "I would go long recent losers: rank(-returns)"),
    ("syntax error", "<alpha>rank(ts_mean(close, 5)</alpha>"),
    ("lookback > 252", "<alpha>ts_mean(ts_mean(close, 200), 100)</alpha>"),
)


#: Where ``gymkit demo`` writes its tear sheet unless ``--out`` says otherwise.
DEFAULT_REPORT_DIR = "gymkit-demo-report"


def _fmt(x: object, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


@dataclass(frozen=True)
class DemoRun:
    """One scored demo group: the environment, the answers, their cards and advantages."""

    env: Any
    env_id: str
    labels: tuple[str, ...]
    completions: tuple[str, ...]
    cards: tuple[Any, ...]
    advantages: np.ndarray
    info: Any
    t_make: float
    t_group: float

    def top_index(self) -> int | None:
        """Index of the highest-reward valid answer (first on ties); None if none is valid."""
        ok = [i for i, c in enumerate(self.cards) if c.valid]
        return max(ok, key=lambda i: (self.cards[i].reward, -i)) if ok else None


def score_demo(env_id: str = "us46-default",
               completions: Sequence[tuple[str, str]] = SAMPLE_GROUP) -> DemoRun:
    """Build ``env_id`` and score ``completions`` ((label, answer) pairs) as one group."""
    import gymkit

    t0 = time.perf_counter()
    env = gymkit.make(env_id)
    t_make = time.perf_counter() - t0
    t1 = time.perf_counter()
    cards = env.score_group([c for _, c in completions])
    t_group = time.perf_counter() - t1
    adv, info = env.group_advantages(cards)
    return DemoRun(env, env_id, tuple(lb for lb, _ in completions),
                   tuple(c for _, c in completions), tuple(cards), adv, info, t_make, t_group)


def format_json(run: DemoRun) -> str:
    """One JSON line per answer: label, advantage and the whole card."""
    rows = []
    for label, card, a in zip(run.labels, run.cards, run.advantages, strict=True):
        rows.append(json.dumps({"label": label, "advantage": float(a), **card.to_dict()},
                               separators=(",", ":"), allow_nan=False))
    return "\n".join(rows)


def format_summary(run: DemoRun) -> str:
    """The printable table of the group: validity, reward, advantage, key metrics, timings."""
    import gymkit

    cards, adv = run.cards, run.advantages
    lines = [
        f"gymkit {gymkit.__version__} demo: one group of {len(cards)} answers on {run.env_id}",
        f"  data {cards[0].data_fingerprint[:16]}  env {cards[0].env_fingerprint[:16]}  "
        f"archive v{cards[0].archive_version} ({cards[0].archive_digest[:12]})",
        "",
        f"  {'#':>2} {'answer':<16} {'valid':<5} {'reward':>7} {'adv':>6} {'cpcv':>6} "
        f"{'turn/d':>6} {'IC':>7}  formula or error",
    ]
    for i, (label, card, a) in enumerate(zip(run.labels, cards, adv, strict=True)):
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
        "  reward = sum of priority x channel (valid: in [-2, inf); invalid: -3.5 tag, -3.0 text, "
        "-2.5 book gate); adv = GDPO advantage within the group: each channel is normalised "
        "across the group, so adv need not follow reward; invalid answers and answers whose "
        "reward the motif guard capped rank below every other;",
        "  cpcv = R1 (mean - 0.5 std of 15 test-slice Sharpes); turn/d = share of the book "
        "traded a day; IC = weights vs next return",
        f"  GDPO: {run.info.n_valid}/{len(cards)} valid, share of non-zero advantages "
        f"{run.info.share_nonzero:.0%}, sum {adv.sum():+.1e}; invalid answers all <= 0: "
        f"{bool(np.all(adv[[not c.valid for c in cards]] <= 0))}",
        f"  time: environment {run.t_make:.2f} s (once), group {run.t_group * 1e3:.0f} ms; "
        f"median per answer by phase (ms): {split}",
    ]
    who: dict[str, list[int]] = {}
    for i, card in enumerate(cards):
        for n in card.notes:
            who.setdefault(n, []).append(i)
    lines += [f"  note ({', '.join(f'#{i}' for i in idx)}): {n}" for n, idx in sorted(who.items())]
    return "\n".join(lines)


def run_demo(env_id: str = "us46-default", completions: Sequence[tuple[str, str]] = SAMPLE_GROUP,
             as_json: bool = False) -> str:
    """Score ``completions`` as one group on ``env_id``; return the printable report (or JSONL)."""
    run = score_demo(env_id, completions)
    return format_json(run) if as_json else format_summary(run)


def write_demo_report(run: DemoRun, out_dir: str | Path, generated_at: str | None = None) -> Path | None:
    """Write the tear sheet of the group's top answer to ``out_dir/index.html``; None if none is valid."""
    from gymkit.report.api import formula_report

    top = run.top_index()
    if top is None:
        return None
    return formula_report(run.env, run.completions[top], out_dir, generated_at=generated_at,
                          label=run.labels[top], card=run.cards[top])  # the group's card


# ------------------------------------------------------------------------ CLI
EXAMPLES = ("gymkit demo", "gymkit demo --out /tmp/tear-sheet", "gymkit demo --json --no-report")


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit demo``."""
    p.add_argument("--env", default="us46-default", help="environment id (default: us46-default)")
    p.add_argument("--json", action="store_true", help="print the score cards as JSON lines")
    p.add_argument("--out", metavar="DIR", default=DEFAULT_REPORT_DIR,
                   help=f"folder for the top answer's tear sheet (default: ./{DEFAULT_REPORT_DIR})")
    p.add_argument("--no-report", action="store_true", help="do not write the tear sheet")
    p.add_argument("--no-timestamp", action="store_true",
                   help="omit the 'generated at' line of the tear sheet")


def run_cli(args: argparse.Namespace) -> int:
    """``gymkit demo``: market summary, the scored group, then the tear sheet path (last line)."""
    from gymkit.data import default_market
    from gymkit.market_summary import market_summary

    if not args.json:
        print(market_summary(default_market(), "gymkit default market (synthetic, embedded)"))
        print()
    run = score_demo(args.env)
    print(format_json(run) if args.json else format_summary(run), flush=True)
    if args.no_report:
        return 0
    import matplotlib

    matplotlib.use("Agg")
    from gymkit.report.command import generated_line

    top = run.top_index()
    path = write_demo_report(run, args.out, None if args.no_timestamp else generated_line())
    stream = sys.stderr if args.json else sys.stdout
    if path is None:
        print("\n  no valid answer in the group: no tear sheet written", file=stream)
    else:
        print(f"\n  tear sheet of the top answer (#{top} {run.labels[top]}, reward "
              f"{run.cards[top].reward:+.3f}): {path.resolve()}", file=stream)
        print("  open it in a browser: a single static page, no server needed", file=stream)
    return 0
