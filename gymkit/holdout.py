"""The holdout, in one module: its backtest and score, and the ledger that allows one look.

Scoring (DESIGN §8, alpha post §7–§8): :func:`holdout_run` (values and backtest) and
:func:`holdout_backtest` (the backtest) evaluate a formula on the whole market and backtest
the holdout window with the environment's realistic cost model
(``holdout_costs``, through :func:`gymkit.oracle.env_backtest`); :func:`holdout_score` is
``clip(holdout CPCV score − 2·max(0, turnover − 0.5), ±5)`` (R5's excess-turnover penalty);
:func:`holdout_figures` are the four per-answer figures every holdout table shows.  Used by
``gymkit probe``, ``gymkit book --window holdout``, ``gymkit report --holdout`` (the report's
holdout section) and :func:`score_holdout`.

The ledger: one ledger of holdout looks (SQLite, standard library, WAL mode).

A *look* is any computation that shows holdout figures: ``gymkit probe --holdout``,
``gymkit book --window holdout``, ``gymkit report --holdout`` and :func:`score_holdout`
(the Python holdout API).  Each is keyed by the *formula set* (the sha256 of the sorted,
de-duplicated canonical forms of the valid formulas looked at: reordering answers, changing
brief ids or checkpoint labels, or asking another command does not buy a second look) and the
holdout data it saw: a look is a second look when an earlier one of the same formula set was in
the same environment (fingerprint: config, split, market data, versions) **or** on the same
market data (panel fingerprint) with an overlapping holdout window.  So another environment
file (a changed priority or cost), a renamed copy, or a split moved by a day does not buy a
second look at the same holdout sessions; a holdout of other sessions (a later year) does.

The formula set is taken from the answers' text gate (tag, parse, limits: the same canonical
forms as the cards, :func:`formula_forms`), so a look is claimed — or refused — before any
answer is backtested.  Canonical forms bucket windows: jittering a window does not buy a new
look either.

The first look for a key is recorded and allowed; a later one is refused with one line
(:class:`HoldoutRefused`, a ``ValueError``: CLI exit 1) unless ``force=True``
(``--force-holdout``), which is allowed, recorded with ``forced = 1`` and printed by the
command.  The claim is written *before* any holdout number is computed, inside one
``BEGIN IMMEDIATE`` transaction, so two processes racing for the same key cannot both get a
first look.

Ledger file: ``$GYMKIT_HOLDOUT_LEDGER``, else ``$XDG_CACHE_HOME/gymkit/holdout-ledger.sqlite``
(``~/.cache/...``); ``--ledger PATH`` on the commands.  Table ``looks``: id, created_utc,
env_fingerprint, formula_set, n_formulas, command, forced, result_sha256, market_fingerprint,
holdout_start, holdout_end (the last three added to older ledgers in place; their rows match
by environment only).

``gymkit probe --holdout`` also writes its result once per answers file into its ``--out``
folder (:func:`write_holdout_once`, with ``holdout-ledger.jsonl`` beside it).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .sqlite_file import sql_rows

__all__ = ["EXCESS_TURNOVER", "HOLDOUT_CLIP", "LEDGER_ENV", "HoldoutLedger", "HoldoutRefused",
           "Look", "check_holdout_unused", "claim_answers", "claim_holdout", "default_ledger_path",
           "forced_line", "formula_forms", "formula_set_digest", "holdout_backtest",
           "holdout_figures", "holdout_problem", "holdout_run", "holdout_score", "score_holdout",
           "write_holdout_once"]

#: Holdout scores are clipped to ±this.
HOLDOUT_CLIP = 5.0
#: Turnover above this pays 2·(excess) on the holdout score (R5's band edge).
EXCESS_TURNOVER = 0.5

#: Environment variable naming the ledger file.
LEDGER_ENV = "GYMKIT_HOLDOUT_LEDGER"

_SCHEMA = """CREATE TABLE IF NOT EXISTS looks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_utc TEXT NOT NULL,
    env_fingerprint TEXT NOT NULL,
    formula_set TEXT NOT NULL,
    n_formulas INTEGER NOT NULL,
    command TEXT NOT NULL,
    forced INTEGER NOT NULL,
    result_sha256 TEXT,
    market_fingerprint TEXT,
    holdout_start TEXT,
    holdout_end TEXT
);
CREATE INDEX IF NOT EXISTS looks_key ON looks (env_fingerprint, formula_set);"""
#: Columns added after the first release (ALTER TABLE on an older ledger).
_ADDED = (("market_fingerprint", "TEXT"), ("holdout_start", "TEXT"), ("holdout_end", "TEXT"))
_COLS = ("id, created_utc, env_fingerprint, formula_set, n_formulas, command, forced, "
         "market_fingerprint, holdout_start, holdout_end")


class HoldoutRefused(ValueError):
    """A second holdout look without ``force``: one line naming the first look and the ledger."""


@dataclass(frozen=True)
class Look:
    """One recorded holdout look."""

    id: int
    created_utc: str
    env_fingerprint: str
    formula_set: str
    n_formulas: int
    command: str
    forced: bool
    number: int  # 1 for the first look of its key, 2 for the next (forced) one, ...
    market_fingerprint: str | None = None
    holdout_start: str | None = None
    holdout_end: str | None = None


def default_ledger_path() -> Path:
    """``$GYMKIT_HOLDOUT_LEDGER``, else the user cache dir's ``gymkit/holdout-ledger.sqlite``."""
    env = os.environ.get(LEDGER_ENV, "").strip()
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache) / "gymkit" / "holdout-ledger.sqlite"


def formula_forms(env: Any, completions: Iterable[str]) -> list[str]:
    """Canonical forms of the answers that pass the text gate (tag, parse, limits) on ``env``."""
    from .scoring import gate_text

    states = (gate_text(c, env.setup) for c in completions)
    return [st.canonical for st in states if st.error is None and st.canonical]


def formula_set_digest(canonicals: Iterable[str]) -> tuple[str, int]:
    """(sha256 hex, count) of the sorted, de-duplicated canonical forms."""
    forms = sorted({c for c in canonicals if c})
    return hashlib.sha256("\n".join(forms).encode()).hexdigest(), len(forms)


class HoldoutLedger:
    """The ledger file (module doc); cheap to open, one connection per instance."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_ledger_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            self._upgrade()
        except (OSError, sqlite3.Error) as exc:
            raise ValueError(f"holdout ledger {self.path}: cannot open ({exc})") from None

    def _upgrade(self) -> None:
        """Add :data:`_ADDED` to a ledger written before them (one writer at a time)."""
        def missing() -> list[tuple[str, str]]:
            have = {r[1] for r in self._db.execute("PRAGMA table_info(looks)")}
            return [c for c in _ADDED if c[0] not in have]

        if not missing():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for name, kind in missing():  # re-read under the lock: another process may have
                self._db.execute(f"ALTER TABLE looks ADD COLUMN {name} {kind}")
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def _sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """One statement's rows; a damaged ledger is one ValueError naming it
        (:func:`gymkit.sqlite_file.sql_rows`)."""
        return sql_rows(self._db, f"holdout ledger {self.path}", statement, params,
                        "restore a copy of it (a fresh ledger forgets every earlier look)")

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def __enter__(self) -> HoldoutLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def looks(self, env_fingerprint: str, formula_set: str, market_fingerprint: str | None = None,
              holdout: tuple[str, str] | None = None) -> list[Look]:
        """Every earlier look of this formula set at the same holdout data, oldest first: in the
        same environment, or (given ``market_fingerprint`` and ``holdout`` = (first, last
        session), ISO dates) on the same market with an overlapping holdout window."""
        where, args = "env_fingerprint = ?", [env_fingerprint]
        if market_fingerprint is not None and holdout is not None:
            where += " OR (market_fingerprint = ? AND holdout_start <= ? AND holdout_end >= ?)"
            args += [market_fingerprint, holdout[1], holdout[0]]
        rows = self._sql(f"SELECT {_COLS} FROM looks WHERE formula_set = ? AND ({where}) "
                         "ORDER BY id", (formula_set, *args))
        return [Look(*r[:6], bool(r[6]), k, *r[7:]) for k, r in enumerate(rows, 1)]

    def claim(self, env_fingerprint: str, formula_set: str, *, n_formulas: int, command: str,
              force: bool = False, market_fingerprint: str | None = None,
              holdout: tuple[str, str] | None = None) -> Look:
        """Record a look and return it; :class:`HoldoutRefused` when an earlier look of the same
        holdout data exists (:meth:`looks`) and not ``force``."""
        db = self._db
        self._sql("BEGIN IMMEDIATE")
        try:
            prior = self.looks(env_fingerprint, formula_set, market_fingerprint, holdout)
            if prior and not force:
                raise HoldoutRefused(_refusal(prior[0], env_fingerprint, formula_set, n_formulas,
                                              self.path))
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            start, end = holdout if holdout is not None else (None, None)
            self._sql(
                "INSERT INTO looks (created_utc, env_fingerprint, formula_set, n_formulas, "
                "command, forced, result_sha256, market_fingerprint, holdout_start, holdout_end) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                (now, env_fingerprint, formula_set, n_formulas, command, int(bool(prior)),
                 market_fingerprint, start, end))
            (look_id,), = self._sql("SELECT last_insert_rowid()")
            self._sql("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return Look(int(look_id), now, env_fingerprint, formula_set, n_formulas,
                    command, bool(prior), len(prior) + 1, market_fingerprint, start, end)

    def record_result(self, look: Look, result_sha256: str) -> None:
        """Attach the sha256 of what the look produced."""
        self._sql("UPDATE looks SET result_sha256 = ? WHERE id = ?", (result_sha256, look.id))


def _refusal(first: Look, env_fingerprint: str, formula_set: str, n_formulas: int,
             path: Path) -> str:
    """The one line of a refused second look, naming the first look."""
    if first.env_fingerprint == env_fingerprint:
        where = f"for this environment ({env_fingerprint[:12]})"
    else:  # same market data, overlapping holdout sessions, another environment
        where = (f"on this market's holdout sessions {first.holdout_start}..{first.holdout_end} "
                 f"(in environment {first.env_fingerprint[:12]}; another config or split of the "
                 "same data is the same holdout)")
    return (f"the holdout was already scored {where} and formula set ({formula_set[:12]}, "
            f"{n_formulas} formulas) by '{first.command}' at {first.created_utc} (ledger {path}): "
            "the holdout is scored once; --force-holdout looks again and is recorded")


def holdout_problem(market: Any, split: Any) -> str | None:
    """Why no holdout book can be held on ``market`` under ``split``, or None: a book needs at
    least 2 stocks with an open (it fills and earns at the open) on a holdout session."""
    import numpy as np

    rows = split.holdout_mask(market.dates)
    priced = np.isfinite(market.open[rows])
    if priced.size and int(priced.sum(axis=1).max()) >= 2:
        return None
    names = [str(t) for t, ok in zip(market.tickers, priced.any(axis=0), strict=True) if ok]
    which = f" ({', '.join(names)})" if names else ""
    return (f"the holdout {split.holdout_start}..{split.holdout_end} has an open price for "
            f"{len(names)} stock{'s' * (len(names) != 1)}{which} on its sessions, never 2 on one "
            "day: a book needs at least 2, so there is no holdout to score")


def claim_holdout(env: Any, canonicals: Sequence[str], *, command: str, force: bool = False,
                  ledger: str | Path | HoldoutLedger | None = None) -> Look:
    """Claim the holdout look of ``canonicals`` on ``env`` (module doc); returns the look.
    ``ValueError`` (nothing claimed) when no answer is valid or the holdout can hold no book."""
    import numpy as np

    digest, n = formula_set_digest(canonicals)
    if n == 0:
        raise ValueError("no valid formula: there is no holdout to score")
    problem = holdout_problem(env.market, env.config.split_obj)
    if problem is not None:
        raise ValueError(f"{problem} (the look is not spent)")
    rows = np.flatnonzero(env.config.split_obj.holdout_mask(env.market.dates))
    key = {"n_formulas": n, "command": command, "force": force,
           "market_fingerprint": env.market.fingerprint,
           "holdout": (str(env.market.dates[rows[0]]), str(env.market.dates[rows[-1]]))}
    if isinstance(ledger, HoldoutLedger):
        return ledger.claim(env.fingerprint, digest, **key)
    with HoldoutLedger(ledger) as db:
        return db.claim(env.fingerprint, digest, **key)


def claim_answers(env: Any, completions: Iterable[str], *, command: str, force: bool = False,
                  ledger: str | Path | HoldoutLedger | None = None) -> Look:
    """Claim the look of the answers' valid formulas (:func:`formula_forms`) before any is
    backtested; ``ValueError`` when none is valid, :class:`HoldoutRefused` on a second look."""
    return claim_holdout(env, formula_forms(env, completions), command=command, force=force,
                         ledger=ledger)


def forced_line(number: int, ledger: str | Path | None = None) -> str:
    """The line a command prints for forced look number ``number``."""
    where = ledger or default_ledger_path()
    return (f"holdout: FORCED look #{number} at this holdout and formula set "
            f"(--force-holdout), recorded in {where}")


# ----------------------------------------------------------------------- holdout scoring
def holdout_run(env: Any, formula: Any) -> Any:
    """``formula`` (text or AST) evaluated on the whole ``env.market`` and backtested on its
    holdout window with the environment's holdout costs: a :class:`gymkit.oracle.FormulaBacktest`
    (values and backtest; the report's holdout section reads both)."""
    from .oracle import env_backtest

    return env_backtest(env, formula, "holdout")


def holdout_backtest(env: Any, formula: Any) -> Any:
    """The :class:`~gymkit.verifiers.oracle.BacktestResult` of :func:`holdout_run`."""
    return holdout_run(env, formula).result


def holdout_score(bt: Any) -> float:
    """clip(holdout CPCV score − 2·max(0, turnover − 0.5), ±5) of a holdout backtest."""
    import numpy as np

    s = bt.cpcv.score - 2.0 * max(0.0, bt.metrics.turnover - EXCESS_TURNOVER)
    return float(np.clip(s, -HOLDOUT_CLIP, HOLDOUT_CLIP)) if np.isfinite(s) else -HOLDOUT_CLIP


def holdout_figures(bt: Any) -> dict[str, float]:
    """``holdout_score``, ``holdout_sharpe``, ``holdout_return`` (compounded net) and
    ``holdout_turnover`` of one holdout backtest."""
    import numpy as np

    return {"holdout_score": holdout_score(bt), "holdout_sharpe": bt.metrics.sharpe,
            "holdout_return": float(np.prod(1.0 + bt.net) - 1.0),
            "holdout_turnover": bt.metrics.turnover}


def score_holdout(env: Any, completions: Sequence[str], *, force: bool = False,
                  ledger: str | Path | None = None, command: str = "gymkit.holdout.score_holdout"
                  ) -> dict[str, Any]:
    """The Python holdout API: each valid answer's holdout score, once per formula set.

    Claims the look of the answers' canonical forms, scores them on the train window, then
    backtests each valid one on the holdout with the realistic costs.  Returns
    ``{"look": n, "forced": bool, "answers": [{formula, canonical, holdout_score,
    holdout_sharpe, holdout_return, holdout_turnover}]}``; invalid answers are skipped.
    """
    look = claim_answers(env, completions, command=command, force=force, ledger=ledger)
    cards = [c for c in (env.score(x) for x in completions) if c.valid]
    out = [{"formula": c.formula, "canonical": c.canonical,
            **holdout_figures(holdout_backtest(env, c.formula))} for c in cards]
    return {"look": look.number, "forced": look.forced, "answers": out}


# ------------------------------------------------------- probe's result file, written once
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
