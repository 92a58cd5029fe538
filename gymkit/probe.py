"""The holdout protocol (alpha post §7–§8, DESIGN §8): select on train CPCV, score the holdout once.

Input: a JSONL file of probe answers, one row per answer: ``{"checkpoint": str, "brief_id": str,
"completion": str}`` (``checkpoint`` defaults to ``"0"``; ``brief_id`` is informational and
must not be needed to score).  Or the 101-alpha corpus as one checkpoint (:func:`alpha101_answers`).

Per checkpoint, always (train window only; the selector):

* ``train_cpcv`` — mean over **all** the answers of the R1 value (clipped CPCV of net train
  returns with training costs; an invalid answer counts at -5, the clip, the lowest value a
  valid answer can have: :func:`selector_value`) — the checkpoint rule picks the highest.
  A mean over the valid answers alone would let a checkpoint that writes few valid answers, but good ones, win the selection
  (a real run shipped a checkpoint with 11 of 50 valid that way); that mean is kept as
  ``train_cpcv_valid``;
* ``valid`` — valid answers / answers (the environment's layer-1 gate, turnover floor included);
* ``families`` — distinct formula families among the valid answers: the canonical form with
  every window and numeric literal erased (``ts_mean(close, 20)`` and ``ts_mean(close, 60)``
  are one family).

With ``holdout=True``, once, afterwards: each valid answer's holdout backtest and score
(:mod:`gymkit.holdout`: the whole market, the holdout window, the realistic cost model,
``clip(holdout CPCV score − 2·max(0, turnover − 0.5), ±5)``); the checkpoint reports the mean
over valid answers, how many score above 0, and the equal-weight book of all valid answers
(compounded return, Sharpe).  ``gymkit probe --holdout`` writes the result once
(:func:`gymkit.holdout.write_holdout_once`); the look is claimed in the holdout ledger first.
The holdout names (``holdout_backtest``, ``holdout_score``, ``HOLDOUT_CLIP``, ...) are
:mod:`gymkit.holdout`'s, importable from here too.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gymkit.jsonl import read_jsonl

from .holdout import (
    EXCESS_TURNOVER,
    HOLDOUT_CLIP,
    check_holdout_unused,
    claim_holdout,
    formula_forms,
    holdout_backtest,
    holdout_figures,
    holdout_score,
    write_holdout_once,
)

__all__ = [
    "EXCESS_TURNOVER",
    "HOLDOUT_CLIP",
    "CheckpointRow",
    "alpha101_answers",
    "check_holdout_unused",
    "family_of",
    "format_table",
    "holdout_backtest",
    "holdout_score",
    "probe",
    "read_answers",
    "selector_value",
    "write_holdout_once",
]

_NUM = re.compile(r"(?<![A-Za-z_])\d+(\.\d+)?(e[-+]?\d+)?")


def selector_value(card: Any, clip: float) -> float:
    """One answer's term in the checkpoint rule's ``train_cpcv``: its R1 (the clipped train
    CPCV) when valid, else ``-clip``, the lowest R1 a valid answer can have.  An invalid card's
    R1 is its gate's fixed penalty (-0.8 for a syntax error), above every valid R1 in
    [-5, -0.8): counted at it, a checkpoint that broke its worst formulas into syntax errors
    had a higher mean, and the rule could ship it over one that wrote them validly."""
    return float(card.channels["cpcv"]) if card.valid else -float(clip)


def family_of(canonical: str) -> str:
    """Formula family: the canonical text with every number (windows, literals) replaced by '#'."""
    return _NUM.sub("#", canonical)


def read_answers(path: str | Path) -> list[dict[str, str]]:
    """Read answer rows (module doc); errors name the file and line."""
    rows = read_jsonl(path, ("completion",), "need a string field 'completion'")
    if not rows:
        raise ValueError(f"{path}: no answers")
    bare = sum("checkpoint" not in row for row in rows)
    if 0 < bare < len(rows):  # a file of several checkpoints with rows of none: say where they go
        warnings.warn(f"{path}: {bare} of {len(rows)} answers have no 'checkpoint': counted as "
                      "checkpoint '0'", UserWarning, stacklevel=2)
    for row in rows:
        row.setdefault("checkpoint", "0")
        row["checkpoint"] = str(row["checkpoint"])
    return rows


def alpha101_answers(checkpoint: str = "alpha101") -> list[dict[str, str]]:
    """The 101-alpha corpus as one checkpoint's answers, dealt round-robin onto the probe briefs."""
    from importlib.resources import files

    from gymkit.briefs import generate_briefs, probe_briefs

    probe = probe_briefs(generate_briefs())
    text = files("gymkit.dsl").joinpath("alpha101.tsv").read_text(encoding="utf-8")
    out = []
    for i, line in enumerate(text.splitlines()[1:]):
        if line.strip():
            formula = line.split("\t")[1]
            out.append({"checkpoint": checkpoint, "brief_id": probe[i % len(probe)].brief_id,
                        "completion": f"<alpha>{formula}</alpha>"})
    return out


@dataclass
class CheckpointRow:
    """One row of the train-vs-holdout table (holdout fields None until the holdout ran)."""

    checkpoint: str
    n: int
    n_valid: int
    families: int
    train_cpcv: float
    train_cpcv_valid: float = float("nan")
    holdout_score: float | None = None
    holdout_positive: int | None = None
    book_return: float | None = None
    book_sharpe: float | None = None
    answers: list[dict[str, Any]] = field(default_factory=list, repr=False)
    look: Any = field(default=None, repr=False)  # the holdout ledger's look (gymkit.holdout)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (per-answer details included)."""
        from gymkit.card import json_safe

        return json_safe({k: getattr(self, k) for k in (
            "checkpoint", "n", "n_valid", "families", "train_cpcv", "train_cpcv_valid", "holdout_score",
            "holdout_positive", "book_return", "book_sharpe", "answers")})


def probe(env: Any, answers: Sequence[dict[str, str]], holdout: bool = False, *,
          force: bool = False, ledger: Any = None, command: str = "gymkit probe --holdout"
          ) -> list[CheckpointRow]:
    """Score each checkpoint's answers on the train window, and on the holdout when asked.

    ``holdout=True`` first claims the look in the holdout ledger (:mod:`gymkit.holdout`,
    keyed by the environment and the formulas of every checkpoint), before any scoring: a second look
    raises :class:`~gymkit.holdout.HoldoutRefused` unless ``force``.
    """
    from gymkit.verifiers.metrics import sharpe
    from gymkit.verifiers.portfolio import equal_weight_book

    by_ck: dict[str, list[str]] = {}
    for a in answers:
        by_ck.setdefault(str(a.get("checkpoint", "0")), []).append(a["completion"])
    look = None
    if holdout:  # claimed before any answer is scored or backtested
        forms = formula_forms(env, [c for comps in by_ck.values() for c in comps])
        if forms:
            look = claim_holdout(env, forms, command=command, force=force, ledger=ledger)
    scored = {ck: [env.score(c) for c in comps] for ck, comps in by_ck.items()}
    rows = []
    for ck, cards in scored.items():
        valid = [c for c in cards if c.valid]
        fams = {family_of(c.canonical) for c in valid if c.canonical}
        clip = env.setup.params.cpcv_clip
        train = float(np.mean([selector_value(c, clip) for c in cards])) if cards else float("nan")
        train_valid = float(np.mean([c.channels["cpcv"] for c in valid])) if valid else float("nan")
        row = CheckpointRow(ck, len(cards), len(valid), len(fams), train, train_valid, look=look)
        row.answers = [{"formula": c.formula, "valid": c.valid,
                        "error": None if c.error is None else c.error.code,
                        "train_cpcv": c.channels.get("cpcv"),
                        "train_turnover": c.metrics.get("turnover")} for c in cards]
        if holdout and valid:
            scores, pnls = [], []
            details = iter([d for d in row.answers if d["valid"]])
            for c in valid:
                bt = holdout_backtest(env, c.formula)
                figures = holdout_figures(bt)
                scores.append(figures["holdout_score"])
                pnls.append(bt.net)
                next(details).update(figures)
            book = equal_weight_book(np.stack(pnls, axis=1))
            row.holdout_score = float(np.mean(scores))
            row.holdout_positive = int(sum(s > 0 for s in scores))
            row.book_return = float(np.prod(1.0 + book) - 1.0)
            row.book_sharpe = sharpe(book)
        rows.append(row)
    return rows


def format_table(rows: Sequence[CheckpointRow]) -> str:
    """The seed's "Train vs. holdout" table as tab-separated text."""
    head = ["Checkpoint", "Train CPCV", "Holdout score", "Valid", "Formula families",
            "Book return", "Book Sharpe"]
    lines = ["\t".join(head)]
    for r in rows:
        def f(x: float | None, fmt: str) -> str:
            return "-" if x is None else format(x, fmt)
        lines.append("\t".join([
            r.checkpoint, f"{r.train_cpcv:+.2f}", f(r.holdout_score, "+.2f"),
            f"{r.n_valid} / {r.n}", str(r.families),
            "-" if r.book_return is None else f"{r.book_return * 100:+.1f}%",
            f(r.book_sharpe, ".2f")]))
    best = max((r for r in rows if r.n_valid and np.isfinite(r.train_cpcv)),
               key=lambda r: r.train_cpcv, default=None)
    if best is not None:
        lines.append(f"selected by train CPCV: {best.checkpoint}")
    return "\n".join(lines)
