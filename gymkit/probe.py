"""The holdout protocol (alpha post §7–§8, DESIGN §8): select on train CPCV, score the holdout once.

Input: a JSONL file of probe answers, one row per answer: ``{"checkpoint": str, "brief_id": str,
"completion": str}`` (``checkpoint`` defaults to ``"0"``; ``brief_id`` is informational and
must not be needed to score).  Or the 101-alpha corpus as one checkpoint (:func:`alpha101_answers`).

Per checkpoint, always (train window only; the selector):

* ``train_cpcv`` — mean over the valid answers of the R1 value (clipped CPCV of net train
  returns with training costs) — the checkpoint rule picks the highest;
* ``valid`` — valid answers / answers (the environment's layer-1 gate, turnover floor included);
* ``families`` — distinct formula families among the valid answers: the canonical form with
  every window and numeric literal erased (``ts_mean(close, 20)`` and ``ts_mean(close, 60)``
  are one family).

With ``holdout=True``, once, afterwards: for each valid answer the formula is evaluated on the
whole market and backtested on the holdout window with the realistic cost model of the
environment (``holdout_costs``); its holdout score is ``clip(CPCV-style Sharpe on the holdout
− 2·max(0, turnover − 0.5), −5, 5)`` (the excess-turnover penalty is R5's); the checkpoint
reports the mean over valid answers, how many score above 0, and the equal-weight book of all
valid answers (compounded return, Sharpe).  The holdout result is written once: a ledger beside
the output records the sha256 of the answers file and of the result; a second holdout run on
the same answers is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gymkit.jsonl import read_jsonl

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
    "run_probe_cli",
    "write_holdout_once",
]

#: Holdout scores are clipped to ±this.
HOLDOUT_CLIP = 5.0
#: Turnover above this pays 2·(excess) on the holdout score (R5's band edge).
EXCESS_TURNOVER = 0.5
_NUM = re.compile(r"(?<![A-Za-z_])\d+(\.\d+)?(e[-+]?\d+)?")


def family_of(canonical: str) -> str:
    """Formula family: the canonical text with every number (windows, literals) replaced by '#'."""
    return _NUM.sub("#", canonical)


def read_answers(path: str | Path) -> list[dict[str, str]]:
    """Read answer rows (module doc); errors name the file and line."""
    rows = read_jsonl(path, ("completion",), "need a string field 'completion'")
    for row in rows:
        row.setdefault("checkpoint", "0")
        row["checkpoint"] = str(row["checkpoint"])
    if not rows:
        raise ValueError(f"{path}: no answers")
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


def holdout_backtest(env: Any, formula: str) -> Any:
    """Backtest ``formula`` on the holdout window of ``env.market`` with realistic costs."""
    from gymkit.dsl import parse
    from gymkit.dsl.evaluator import evaluate
    from gymkit.verifiers.costs import cost_model_from_dict
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.oracle import backtest

    expr = parse(formula, fields=env.setup.fields, levels=env.setup.levels)
    values = evaluate(expr, env.market)
    return backtest(values, env.market, env.config.split_obj, "holdout",
                    cost_model_from_dict(env.config.holdout_costs), cpcv=CPCV(**env.config.cpcv),
                    burn_in=env.config.burn_in)


def holdout_score(bt: Any) -> float:
    """clip(holdout CPCV score − 2·max(0, turnover − 0.5), ±5) of a holdout backtest."""
    s = bt.cpcv.score - 2.0 * max(0.0, bt.metrics.turnover - EXCESS_TURNOVER)
    return float(np.clip(s, -HOLDOUT_CLIP, HOLDOUT_CLIP)) if np.isfinite(s) else -HOLDOUT_CLIP


def _compound(r: np.ndarray) -> float:
    return float(np.prod(1.0 + r) - 1.0)


@dataclass
class CheckpointRow:
    """One row of the train-vs-holdout table (holdout fields None until the holdout ran)."""

    checkpoint: str
    n: int
    n_valid: int
    families: int
    train_cpcv: float
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
            "checkpoint", "n", "n_valid", "families", "train_cpcv", "holdout_score",
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
        from .holdout import claim_holdout, formula_forms

        forms = formula_forms(env, [c for comps in by_ck.values() for c in comps])
        if forms:
            look = claim_holdout(env, forms, command=command, force=force, ledger=ledger)
    scored = {ck: [env.score(c) for c in comps] for ck, comps in by_ck.items()}
    rows = []
    for ck, cards in scored.items():
        valid = [c for c in cards if c.valid]
        fams = {family_of(c.canonical) for c in valid if c.canonical}
        train = float(np.mean([c.channels["cpcv"] for c in valid])) if valid else float("nan")
        row = CheckpointRow(ck, len(cards), len(valid), len(fams), train, look=look)
        row.answers = [{"formula": c.formula, "valid": c.valid,
                        "error": None if c.error is None else c.error.code,
                        "train_cpcv": c.channels.get("cpcv"),
                        "train_turnover": c.metrics.get("turnover")} for c in cards]
        if holdout and valid:
            scores, pnls = [], []
            details = iter([d for d in row.answers if d["valid"]])
            for c in valid:
                bt = holdout_backtest(env, c.formula)
                s = holdout_score(bt)
                scores.append(s)
                pnls.append(bt.net)
                d = next(details)
                d.update(holdout_score=s, holdout_sharpe=bt.metrics.sharpe,
                         holdout_return=_compound(bt.net), holdout_turnover=bt.metrics.turnover)
            book = equal_weight_book(np.stack(pnls, axis=1))
            row.holdout_score = float(np.mean(scores))
            row.holdout_positive = int(sum(s > 0 for s in scores))
            row.book_return = _compound(book)
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
    best = max((r for r in rows if np.isfinite(r.train_cpcv)), key=lambda r: r.train_cpcv,
               default=None)
    if best is not None:
        lines.append(f"selected by train CPCV: {best.checkpoint}")
    return "\n".join(lines)


def _sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_holdout_unused(answers_sha: str, out_dir: str | Path) -> None:
    """Raise ``ValueError`` when the ledger in ``out_dir`` already holds these answers' holdout."""
    ledger = Path(out_dir) / "holdout-ledger.jsonl"
    if ledger.exists():
        for line in ledger.read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line).get("answers_sha256") == answers_sha:
                raise ValueError(f"the holdout of answers {answers_sha[:12]} was already computed "
                                 f"(ledger {ledger}): the holdout is scored once")


def write_holdout_once(result: dict[str, Any], answers_sha: str, out_dir: str | Path,
                       force: bool = False) -> Path:
    """Write the holdout result under ``out_dir`` once per answers file; record it in the ledger.

    ``force`` (a forced look, already recorded in the holdout ledger) overwrites the file."""
    if not force:
        check_holdout_unused(answers_sha, out_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ledger = out / "holdout-ledger.jsonl"
    text = json.dumps(result, sort_keys=True, separators=(",", ":"), allow_nan=False)
    digest = hashlib.sha256(text.encode()).hexdigest()
    path = out / f"holdout-{answers_sha[:16]}.json"
    path.write_text(text + "\n", encoding="utf-8")
    with ledger.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"answers_sha256": answers_sha, "result_sha256": digest,
                             "file": path.name}) + "\n")
    return path


def configure_cli(p: Any) -> None:
    """Arguments of ``gymkit probe``."""
    p.add_argument("--answers", help="JSONL of {checkpoint, brief_id, completion} rows")
    p.add_argument("--corpus", choices=["alpha101"], help="score a built-in corpus as one checkpoint")
    p.add_argument("--holdout", action="store_true",
                   help="also score the holdout once (realistic costs); written to --out")
    p.add_argument("--out", default="probe-results", help="folder for the holdout result and ledger")
    p.add_argument("--env", default="us46-default", help="environment id")
    p.add_argument("--json", action="store_true", help="print rows as JSON instead of the table")
    add_holdout_args(p)
    from .market_args import add_market_args

    add_market_args(p)


def add_holdout_args(p: Any) -> None:
    """``--force-holdout`` and ``--ledger`` (the holdout ledger, :mod:`gymkit.holdout`)."""
    p.add_argument("--force-holdout", action="store_true",
                   help="look at the holdout again although the ledger has a look (printed and "
                        "recorded)")
    p.add_argument("--ledger", default=None, metavar="FILE",
                   help="holdout ledger (default $GYMKIT_HOLDOUT_LEDGER or "
                        "~/.cache/gymkit/holdout-ledger.sqlite)")


def run_probe_cli(args: Any) -> int:
    """Handler of ``gymkit probe``."""
    from .holdout import HoldoutLedger, forced_line
    from .market_args import make_env

    if bool(args.answers) == bool(args.corpus):
        raise ValueError("give exactly one of --answers FILE or --corpus alpha101")
    if args.answers:
        answers, sha = read_answers(args.answers), _sha256_file(args.answers)
    else:
        answers = alpha101_answers()
        sha = hashlib.sha256(json.dumps(answers, sort_keys=True).encode()).hexdigest()
    env = make_env(args)
    with HoldoutLedger(args.ledger) as ledger:
        rows = probe(env, answers, holdout=args.holdout, force=args.force_holdout,
                     ledger=ledger)
    if args.holdout:
        look = next((r.look for r in rows if r.look is not None), None)
        forced = look is not None and look.forced
        if forced:
            print(forced_line(look, ledger.path))
        result = {"answers_sha256": sha, "env_fingerprint": env.fingerprint,
                  "forced_holdout": forced, "rows": [r.to_dict() for r in rows]}
        path = write_holdout_once(result, sha, args.out, force=args.force_holdout)
        print(f"holdout result written once to {path}")
    if args.json:
        for r in rows:
            print(json.dumps(r.to_dict(), sort_keys=True))
    else:
        print(format_table(rows))
    return 0
