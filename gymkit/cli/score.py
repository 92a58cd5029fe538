"""``gymkit score``: a card as a table (or ``--json``).

``score`` takes formulas (bare, or whole ``<alpha>`` answers; ``-`` reads one per line from
stdin).  One answer prints its card as a table: every channel with value, priority,
contribution and why, then the backtest numbers.  Several answers are scored as one group
and print one row each with their GDPO advantage.  An invalid answer is a result, not an
error: the exit code is 0 and the card says why.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .options import add_market_args, make_env

__all__ = ["card_table", "configure", "group_table", "run"]


def _color(text: str, code: str) -> str:
    """ANSI colour when stdout is a terminal and NO_COLOR is unset."""
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return text
    return f"\033[{code}m{text}\033[0m"


def _f(x: Any, spec: str) -> str:
    if x is None or isinstance(x, bool):
        return "-" if x is None else str(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return format(v, spec) if v == v and abs(v) != float("inf") else "-"


def _answers(args: argparse.Namespace) -> list[str]:
    texts: list[str] = []
    for f in args.formula:
        if f == "-":
            texts += [ln.strip() for ln in sys.stdin if ln.strip()]
        else:
            texts.append(f)
    if not texts:
        raise ValueError("no formula given (stdin was empty)")
    return [t if "<alpha" in t or "</alpha>" in t else f"<alpha>{t.strip()}</alpha>" for t in texts]


def _caret(formula: str | None, position: int | None, width: int = 60) -> list[str]:
    """Two lines pointing at ``position`` of ``formula`` (at most ``width`` characters either
    side, cut with '…'); none when the error has no position in the formula."""
    if not formula or position is None or not 0 <= position <= len(formula) or "\n" in formula:
        return []
    lo, hi = max(0, position - width), min(len(formula), position + width)
    shown = ("…" if lo else "") + formula[lo:hi] + ("…" if hi < len(formula) else "")
    return [f"  {shown}", "  " + " " * (position - lo + (1 if lo else 0)) + "^"]


def card_table(card: Any, priorities: dict[str, float], params: Any,
               announced: tuple[str, ...] = ()) -> str:
    """The one-answer table: status line, channels with reasons, backtest numbers, and the
    card's notes except those in ``announced`` (already printed on stderr)."""
    from gymkit.report.why import channel_reasons
    from gymkit.verifiers.channels import VALID_FLOOR_WIDTH, cap_binds, channel, priority_sum

    ok = _color("VALID", "32;1") if card.valid else _color("INVALID", "31;1")
    lines = [f"{ok}  reward {card.reward:+.3f}  {card.formula or ''}"]
    if not card.valid and card.error is not None:
        lines.append(f"  [{card.error.code}] {card.error.message}")
        lines += _caret(card.formula, card.error.position)
    if card.canonical and card.canonical != card.formula:
        lines.append(f"  canonical  {card.canonical}")
    why = channel_reasons(card, params)
    lines += ["", f"  {'id':<4} {'channel':<18} {'value':>7} {'prio':>5} {'contrib':>8}  why"]
    for name, v in card.channels.items():
        pr = priorities[name]
        lines.append(f"  {channel(name).id:<4} {name:<18} {v:>+7.3f} {pr:>5g} {pr * v:>+8.3f}  {why[name]}")
    total = priority_sum(dict(card.channels), priorities)
    if card.valid and total < 0 and not cap_binds(card):  # the contributions' sum is not the reward
        b = f"{VALID_FLOOR_WIDTH:g}"
        lines.append(f"  {'':<4} {'sum':<18} {'':>7} {'':>5} {total:>+8.3f}  Σ contrib; a valid "
                     f"reward below 0 is {b}·s/({b} − s): the valid band [−{b}, ∞) stays above "
                     "every invalid answer")
    lines.append(f"  {'':<4} {'reward':<18} {'':>7} {'':>5} {card.reward:>+8.3f}"
                 + ("  capped at 0 by the motif guard" if cap_binds(card) else ""))
    m = card.metrics
    if "sharpe" in m:
        fac = m.get("factors", {})
        nov = m.get("novelty", {})
        lines += ["", f"  train {m['first_date']} .. {m['last_date']} ({m['n_days']} days, train costs)",
                  f"  net Sharpe {_f(m['sharpe'], '+.2f')}  gross {_f(m['gross_sharpe'], '+.2f')}  "
                  f"ann. return {_f(m['annual_return'], '+.1%')}  max DD {_f(m['max_drawdown'], '+.1%')}  "
                  f"hit rate {_f(m['hit_rate'], '.1%')}",
                  f"  turnover {_f(m['turnover'], '.1%')}/day  IC {_f(m['ic'], '+.4f')}  "
                  f"beta {_f(m['beta'], '+.2f')}  residual Sharpe {_f(fac.get('residual_sharpe'), '+.2f')}",
                  f"  nearest archive entry ({_f(nov.get('nearest_corr'), '+.2f')}): {nov.get('nearest') or '-'}"]
    lines += [f"  note: {n}" for n in card.notes if n not in announced]
    return "\n".join(lines)


def group_table(cards: list[Any], adv: Any) -> str:
    """One row per answer: valid, reward, advantage, cpcv, turnover, IC, formula or error; a
    footnote for each mark used (a capped answer, an invalid answer's fixed cpcv)."""
    from gymkit.verifiers.channels import cap_binds

    lines = [f"  {'#':>2} {'valid':<5} {'reward':>7} {'adv':>6} {'cpcv':>6} {'turn/d':>6} {'IC':>7}  formula or error"]
    status = [("cap" if cap_binds(c) else "yes") if c.valid else "NO" for c in cards]
    for i, (c, a) in enumerate(zip(cards, adv, strict=True)):
        m = c.metrics
        what = c.formula if c.valid else f"[{c.error.code}] {c.error.message}"
        lines.append(f"  {i:>2} {status[i]:<5} {c.reward:>+7.3f} {a:>+6.2f} "
                     f"{_f(c.channels.get('cpcv'), '+.2f'):>6} {_f(m.get('turnover'), '.1%'):>6} "
                     f"{_f(m.get('ic'), '+.4f'):>7}  {what}")
    if "cap" in status:
        lines.append("  cap: valid, but R10 (motif guard) capped its reward at 0: no positive "
                     "advantage (`gymkit score FORMULA` says why)")
    if "NO" in status:
        lines.append("  NO: invalid; its cpcv is the fixed gate penalty, its advantage never positive")
    return "\n".join(lines)


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit score``."""
    p.add_argument("formula", nargs="+", help="formula(s) or <alpha> answers; '-' reads stdin, one per line")
    p.add_argument("--env", default="us46-default", help="environment id (default: us46-default)")
    p.add_argument("--json", action="store_true", help="one JSON card per line instead of the table")
    p.add_argument("--timings", action="store_true", help="with --json: include per-phase timings")
    p.add_argument("--brief", metavar="ID_OR_TEXT", default=None,
                   help="score against a generated brief (its brief_id or text, see `gymkit "
                        "briefs`): brief compliance (R13) is checked on the AST and counts")
    add_market_args(p)


def _brief_text(arg: str | None) -> str | None:
    """The text of ``--brief`` (a generated brief's id or text); ValueError for anything else."""
    if arg is None:
        return None
    from gymkit.adapters.common import brief_text_of
    from gymkit.briefs import brief_from_text

    text = brief_text_of(arg.strip())
    if text is not None:
        return text
    if brief_from_text(arg) is None:
        raise ValueError(f"--brief: {arg[:40]!r} is neither the id nor the text of a generated "
                         "brief (list them with `gymkit briefs`)")
    return arg.strip()


def run(args: argparse.Namespace) -> int:
    """``gymkit score``."""
    texts = _answers(args)
    brief = _brief_text(args.brief)
    env = make_env(args)
    cards = env.score_group(texts, brief=brief) if len(texts) > 1 else [env.score(texts[0], brief=brief)]
    if args.json:
        for c in cards:
            print(json.dumps(c.to_dict(timings=args.timings), separators=(",", ":"),
                             allow_nan=False, ensure_ascii=False))
        return 0
    prio = {n: float(env.config.priorities[n]) for n in cards[0].channels}
    if len(cards) == 1:
        print(card_table(cards[0], prio, env.setup.params,
                         announced=(env.split_note,) if env.split_note else ()))
    else:
        adv, info = env.group_advantages(cards)
        market = f" on the market {args.market}" if getattr(args, "market", None) else ""
        print(f"one group of {len(cards)} answers, {env.config.env_id}{market} "
              f"({info.n_valid} valid; adv = GDPO advantage)")
        print(group_table(cards, adv))
    return 0
