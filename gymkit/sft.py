"""Supervised fine-tuning export: verified (brief, formula, card) pairs in chat format.

Input rows ``{brief_id, completion}`` (any sampler, e.g. RL rollouts).  Each brief's answers
are scored as one group with the brief's text; a pair is kept when the card is valid, passes
its brief (every checkable facet: brief compliance R13 = 0), its reward was not capped by the
motif guard (R10: a factor clone, low-IC motif or slow tilt, a suspected hack) and its scalar
reward ≥ ``threshold``; pairs are de-duplicated by the bucketed canonical form (the
best reward wins, ties keep the first seen).  Row: ``brief_id``, ``messages`` (system + user
from gymkit/prompt.py, then the assistant turn ``<alpha>formula</alpha>``), ``formula``,
``canonical``, ``reward``, ``card`` (the card's JSON without timings) and ``prompt_version``.
A row without a ``brief_id`` (or with ``""``) is exported without a brief (user turn = the
no-brief request); a row may carry its brief's text (``brief``, as gymkit's dataset rows do), so
briefs of any generator seed keep their prompt; an id that is neither the default generator's
nor its row's text is a one-line error (its prompt would not be what the model saw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["export_rows", "run_export_cli"]


def export_rows(env: Any, answers: Sequence[dict[str, str]], threshold: float = 0.0,
                counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Verified, de-duplicated SFT rows (module doc), in first-seen order of their forms.

    ``counts``: when given, filled with how many answers were read and why each was left out
    (``answers``, ``invalid``, ``capped``, ``below_threshold``, ``off_brief``, ``duplicate``,
    ``kept``)."""
    tally = {"answers": len(answers), "invalid": 0, "capped": 0, "below_threshold": 0,
             "off_brief": 0, "duplicate": 0}
    from gymkit.dsl.operators import OPERATORS
    from gymkit.prompt import PROMPT_VERSION, chat_messages
    from gymkit.verifiers.channels import cap_binds

    from .adapters.common import resolve_brief

    groups: dict[str, list[str]] = {}
    texts: dict[str, Any] = {}
    for a in answers:
        bid = str(a.get("brief_id") or "")
        groups.setdefault(bid, []).append(a["completion"])
        texts.setdefault(bid, a.get("brief"))
    briefs = {bid: resolve_brief(bid, texts[bid], f"{len(comps)} answer(s) with brief_id {bid!r}: ")
              for bid, comps in groups.items()}  # every id checked before anything is scored
    best: dict[str, dict[str, Any]] = {}
    for bid, comps in groups.items():
        brief = briefs[bid]
        for card in env.score_group(comps, brief=brief):
            if not card.valid or card.canonical is None:
                tally["invalid"] += 1
                continue
            if cap_binds(card):  # the motif guard capped it: a suspected hack, not a lesson
                tally["capped"] += 1
                continue
            if not card.reward >= threshold:
                tally["below_threshold"] += 1
                continue
            if brief is not None and card.channels.get("brief_compliance", 0.0) < 0.0:
                tally["off_brief"] += 1
                continue  # ignores its brief: not a verified answer to it
            prev = best.get(card.canonical)
            if prev is not None:
                tally["duplicate"] += 1
            if prev is not None and prev["reward"] >= card.reward:
                continue
            msgs = chat_messages(brief, env.setup.fields, env.setup.levels, OPERATORS)
            msgs.append({"role": "assistant", "content": f"<alpha>{card.formula}</alpha>"})
            best[card.canonical] = {"brief_id": bid, "messages": msgs, "formula": card.formula,
                                    "canonical": card.canonical, "reward": card.reward,
                                    "card": card.to_dict(timings=False),
                                    "prompt_version": PROMPT_VERSION}
    if counts is not None:
        counts.update(tally, kept=len(best))
    return list(best.values())


def configure_cli(p: Any) -> None:
    """Arguments of ``gymkit export-sft``."""
    p.add_argument("--answers", required=True, help="JSONL of {brief_id, completion} rows")
    p.add_argument("--threshold", type=float, default=0.0, help="minimum scalar reward (default 0)")
    p.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    p.add_argument("--out", default=None, help="output file (JSONL default: standard output)")
    p.add_argument("--env", default="us46-default", help="environment id")
    from .cli.options import add_market_args

    add_market_args(p)


def run_export_cli(args: Any) -> int:
    """Handler of ``gymkit export-sft``."""
    import json
    import sys

    from .adapters.datasets import write_jsonl, write_parquet
    from .cli.options import make_env
    from .probe import read_answers

    env = make_env(args)
    counts: dict[str, int] = {}
    rows = export_rows(env, read_answers(args.answers), args.threshold, counts)
    why = (f"{counts['kept']} pairs kept of {counts['answers']} answers (invalid "
           f"{counts['invalid']}, capped by the motif guard {counts['capped']}, "
           f"reward below {args.threshold:g} {counts['below_threshold']}, "
           f"off their brief {counts['off_brief']}, duplicate forms {counts['duplicate']})")
    if not rows:
        raise ValueError(f"no answer passed, nothing written: {why}")
    print(f"gymkit: note: export-sft: {why}", file=sys.stderr)
    if args.format == "parquet":
        if not args.out:
            raise ValueError("--format parquet needs --out FILE")
        write_parquet([{**r, "card": json.dumps(r["card"], sort_keys=True)} for r in rows], args.out)
    else:
        write_jsonl(rows, args.out)
    return 0
