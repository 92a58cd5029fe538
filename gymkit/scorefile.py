"""``gymkit score-file``: score a file of answers into a file of cards, resumably, with progress.

Input (by extension): ``.jsonl``/``.ndjson``/``.json`` (one JSON object per line),
``.parquet``/``.pq``, or any other text file (one answer per non-empty line).  A record's
answer is its ``completion`` field (verbatim; ``--field`` names another) or, failing that, its
``formula`` field (wrapped in ``<alpha>``); a plain line without ``<alpha>`` is a bare formula.
Its id is the ``id`` field (``--id-field``) or else its 0-based row number.  A record that names
its design brief (``brief_id``, and/or the brief's text in ``brief``, as gymkit's dataset rows and
rollouts carry them) is scored with that brief, so brief compliance (R13) counts as it did for
the trainer; a brief that cannot be found (:func:`gymkit.adapters.common.resolve_brief`) makes
the record an error row.  ``--no-brief`` scores every answer without one.

Scoring: every answer alone (``env.score``), or with ``--group-field F`` the records sharing
a value of F as one group (``env.score_group``, plus each answer's GDPO advantage).  The
archive is never changed, so a row's card depends only on the environment and its group.

Output (by extension): ``.jsonl`` (one object per line: ``id``, ``answer_digest``, optional
``group`` and ``advantage``, then the card's ``to_dict``), or ``.parquet`` (flat columns: id, group,
advantage, valid, reward, error, formula, canonical, one ``ch_<name>`` column per channel,
key metrics, provenance, and the whole card as ``card_json``).  Timings are left out unless
``--timings``, so a rerun writes identical bytes.

Bad records: a line that is not UTF-8 or not JSON, a record without an answer, or an answer
with an unpaired surrogate (``"\\ud800"``) becomes an *error row* — ``id``, ``line``,
``valid: false``, ``reward: null`` and ``error: {code, message}`` (codes ``bad_record``,
``invalid_unicode``; the message names FILE:LINE and the reason) — and the run goes on.
:func:`read_records` stays strict (raises on the first bad record).

Resume: ids already in the output (error rows included) are skipped. Each row carries its
record's ``answer_digest`` (the answer, brief and group; a bad record's code and line), and an
output is refused when a row's id is not in the input or its digest is not the record's now
(another input, or an edited one), when its cards were scored on another environment, market,
split or archive (their fingerprints), or when a group is partly scored anywhere but in its
last rows (those, a run stopped while writing the group, are cut and the group scored again).
JSONL output is appended and flushed per
answer (a torn last line from a crash is cut off first); Parquet output accumulates in
``OUT.partial.jsonl`` and is written (atomically) when the input is done.

Workers: ``workers > 1`` scores the batches (one answer, or one whole group) in a process pool
(:func:`pool_start_method`: on Linux this process builds the environment, scores the first
batch and forks the workers, which inherit both; elsewhere each spawned worker builds it once
from ``env_factory``); rows are still written in input order, so the output bytes and resume
behaviour equal the serial run's.
``engine="ray"`` does the same with Ray actors (:mod:`gymkit.ray_engine`), on a cluster
(``ray_address``) or a local Ray started for the run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import itertools
import json
import multiprocessing
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from .jsonl import parse_json_line
from .worker_process import die_with_parent, stop_pool

__all__ = ["Record", "default_workers", "flatten_card_row", "read_records", "scan_records",
           "score_file"]

JSONL_EXT = (".jsonl", ".ndjson", ".json")
PARQUET_EXT = (".parquet", ".pq")
#: Metrics copied into flat Parquet columns (name in the card's metrics → column).
FLAT_METRICS = ("sharpe", "gross_sharpe", "annual_return", "turnover", "ic", "max_drawdown", "beta")

EXAMPLES = (
    "gymkit score-file answers.jsonl --out cards.jsonl",
    "gymkit score-file rollouts.parquet --out cards.parquet --group-field prompt_id",
    "gymkit score-file formulas.txt --out cards.jsonl   # resumes if cards.jsonl exists",
)


@dataclass(frozen=True)
class Record:
    """One answer to score: its id, its group key (or None) and the answer text."""

    id: str
    group: str | None
    completion: str
    error: tuple[str, str] | None = None  # (code, message) of a bad record; not scored
    line: int | None = None  # 1-based line of a text/JSONL input
    brief: str | None = None  # the design brief's text the answer was written for

    @property
    def digest(self) -> str:
        """What the record's card depends on, hashed (written as each row's ``answer_digest``;
        a resumed output must match it): the answer, its brief and group, or a bad record's
        error code and line."""
        key = (["error", self.error[0], self.line] if self.error is not None
               else [self.completion, self.brief, self.group])
        return hashlib.sha256(json.dumps(key, ensure_ascii=True).encode()).hexdigest()[:16]


class _BadRecord(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _suffix(path: Path) -> str:
    return path.suffix.lower()


def _wrap(formula: str) -> str:
    return formula if "<alpha" in formula or "</alpha>" in formula else f"<alpha>{formula.strip()}</alpha>"


def _surrogate(text: str) -> int | None:
    """Index of the first unpaired surrogate of ``text`` (None if it encodes as UTF-8)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _record(obj: Any, row: int, where: str, field: str, id_field: str, group_field: str | None,
            briefs: bool = True) -> Record:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: a record must be a JSON object")
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _BadRecord("invalid_unicode", f"{where}: unpaired surrogate "
                         f"{exc.object[exc.start:exc.end]!a} in the record") from None
    text = obj.get(field)
    if text is None and isinstance(obj.get("formula"), str):
        text = _wrap(obj["formula"])
    if not isinstance(text, str):
        raise ValueError(f"{where}: no string '{field}' (or 'formula') field")
    rid = obj.get(id_field, row)
    group = None
    if group_field is not None:
        if obj.get(group_field) is None:
            raise ValueError(f"{where}: no '{group_field}' field to group by")
        group = str(obj[group_field])
    brief = None
    if briefs and (obj.get("brief_id") or obj.get("brief")):
        from .adapters.common import UnknownBrief, resolve_brief

        try:
            brief = resolve_brief(obj.get("brief_id") or None, obj.get("brief"), f"{where}: ")
        except UnknownBrief as exc:
            raise _BadRecord("bad_record", str(exc)) from None
    return Record(str(rid), group, text, brief=brief)


def _lines(p: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line number, text or None, reason) of every non-blank line, decoded one by one."""
    with p.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield n, None, (f"{p}:{n}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                                f"column {exc.start + 1})")
                continue
            if text.strip():
                yield n, text, ""


def _bad_id(obj: Any, id_field: str, row: int) -> str:
    """A bad record's id: its own when readable and encodable, else its row number."""
    rid = obj.get(id_field) if isinstance(obj, dict) else None
    if rid is None or _surrogate(str(rid)) is not None:
        return str(row)
    return str(rid)


def _bad(rid: str, line: int, code: str, message: str) -> Record:
    return Record(rid, None, "", (code, message), line)


def _scan(path: str | Path, field: str, id_field: str, group_field: str | None,
          briefs: bool = True) -> list[Record]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"input file {p} not found")
    out: list[Record] = []
    ext = _suffix(p)
    if ext in PARQUET_EXT:
        import polars as pl

        for row, obj in enumerate(pl.read_parquet(p).iter_rows(named=True)):
            out.append(_record(obj, row, f"{p} row {row}", field, id_field, group_field, briefs))
    elif ext in JSONL_EXT:
        for row, (n, text, why) in enumerate(_lines(p)):
            obj: Any = None
            try:
                if text is None:
                    raise _BadRecord("bad_record", why)
                obj = parse_json_line(text, f"{p}:{n}")
                rec = _record(obj, row, f"{p}:{n}", field, id_field, group_field, briefs)
                out.append(replace(rec, line=n))
            except ValueError as exc:
                code = exc.code if isinstance(exc, _BadRecord) else "bad_record"
                out.append(_bad(_bad_id(obj, id_field, row), n, code, str(exc)))
    else:
        if group_field is not None:
            raise ValueError(f"{p}: --group-field needs JSONL or Parquet input, not plain lines")
        for row, (n, text, why) in enumerate(_lines(p)):
            if text is None:
                out.append(_bad(str(row), n, "bad_record", why))
            else:
                out.append(Record(str(row), None, _wrap(text.strip()), None, n))
    return out


def _unique(records: list[Record], p: str | Path) -> list[Record]:
    seen: dict[str, Record] = {}
    for r in records:
        first = seen.setdefault(r.id, r)
        if first is not r:
            where = (f" (lines {first.line} and {r.line}; a record without a readable id takes "
                     "its row number)" if first.line is not None and r.line is not None else "")
            raise ValueError(f"{p}: id {r.id!r} appears twice{where}: ids must be unique to "
                             "resume")
    return records


def scan_records(path: str | Path, *, field: str = "completion", id_field: str = "id",
                 group_field: str | None = None, briefs: bool = True) -> list[Record]:
    """Every record of ``path`` (module doc), a bad one as a :class:`Record` whose ``error`` is
    (code, "FILE:LINE: reason"); ``ValueError`` only for what spoils the whole file (missing,
    duplicate ids, --group-field on plain lines, a group whose records name different briefs).
    ``briefs=False`` ignores the records' briefs."""
    out = _unique(_scan(path, field, id_field, group_field, briefs), path)
    first: dict[str, Record] = {}
    for r in out:
        if r.group is None or r.error is not None:
            continue
        f = first.setdefault(r.group, r)
        if r.brief != f.brief:
            raise ValueError(f"{path}: group {r.group!r} mixes briefs (records {f.id!r} and "
                             f"{r.id!r}): a group is scored against one brief")
    return out


def read_records(path: str | Path, *, field: str = "completion", id_field: str = "id",
                 group_field: str | None = None) -> list[Record]:
    """Read every record of ``path`` (module doc); ``ValueError`` names the first bad line or row."""
    out = _scan(path, field, id_field, group_field)
    for r in out:
        if r.error is not None:
            raise ValueError(r.error[1])
    return _unique(out, path)


# ------------------------------------------------------------------ output side
#: What a resumed output must share with this run: rows made elsewhere would be mixed in.
_PROVENANCE = (("env_fingerprint", "environment"), ("archive_digest", "novelty archive"))


def _check_provenance(rows: Iterable[dict[str, Any]], env: Any, out: Path) -> None:
    """Refuse to resume ``out`` when a card row in it was scored by another environment, market
    or archive than ``env`` (error rows carry no provenance and are not compared)."""
    have = {"env_fingerprint": env.fingerprint, "archive_digest": env.archive.digest}
    for n, row in enumerate(rows, 1):
        for key, what in _PROVENANCE:
            old = row.get(key)
            if old is not None and old != have[key]:
                raise ValueError(
                    f"{out}: row {n} (id {row.get('id')!r}) was scored on another {what} "
                    f"({key} {str(old)[:12]}, this run {have[key][:12]}: another environment, "
                    "market, split or archive); resuming would mix the two in one file: "
                    "pass --restart or another --out")


def _repair_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows already in a JSONL output (each with an ``id`` and, as ``_offset``, the byte
    offset of its line); a torn last line (no newline, bad JSON) is cut off first."""
    if not path.exists():
        return []
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):  # a write died mid-line: drop the fragment
        with path.open("r+b") as fh:
            fh.truncate(keep)
        data = data[:keep]
    rows = []
    offset = 0
    for n, raw in enumerate(data.splitlines(keepends=True), 1):
        line = raw.decode("utf-8")
        if line.strip():
            try:
                row = json.loads(line)
                row["id"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ValueError(f"{path}:{n}: existing output line is not a card row; "
                                 "move the file away or pass --restart") from None
            row["_offset"] = offset
            rows.append(row)
        offset += len(raw)
    return rows


def _check_answers(rows: list[dict[str, Any]], records: Sequence[Record], out: Path,
                   src: str | Path) -> None:
    """Refuse to resume ``out`` unless each row in it was scored for the record of ``src``
    with its id, as that record is now (``answer_digest``): ids alone would keep another
    input's cards (text inputs' ids are line numbers)."""
    by_id = {r.id: r for r in records}
    for n, row in enumerate(rows, 1):
        rid = str(row["id"])
        rec = by_id.get(rid)
        if rec is None:
            why = f"has id {rid!r}, which {src} does not have: it was scored for another input"
        elif row.get("answer_digest") is None:
            why = (f"(id {rid!r}) has no answer_digest (written by an older gymkit), so it "
                   "cannot be matched to this input")
        elif row["answer_digest"] != rec.digest:
            where = f" (line {rec.line})" if rec.line is not None else ""
            why = f"(id {rid!r}) was scored for another answer than {src}'s record{where}"
        else:
            continue
        raise ValueError(f"{out}: row {n} {why}; resuming would mix the two in one file: "
                         "pass --restart or another --out")


def _partial_groups(rows: list[dict[str, Any]], records: Sequence[Record], partial: Path,
                    out: Path) -> list[dict[str, Any]]:
    """``rows`` without a group whose answers are only partly in the output (a run stopped
    while writing it: its rows are the file's last), which is cut off ``partial`` to be scored
    again whole; a partly scored group anywhere else is refused (its answers are scored
    together, so a resumed run cannot add to it)."""
    done = {str(r["id"]) for r in rows}
    members: dict[str, list[str]] = {}
    for r in records:
        if r.group is not None and r.error is None:
            members.setdefault(r.group, []).append(r.id)
    broken = {g for g, ids in members.items()
              if any(i in done for i in ids) and not all(i in done for i in ids)}
    if not broken:
        return rows
    cut = len(rows)
    while cut and rows[cut - 1].get("group") in broken and "_offset" in rows[cut - 1]:
        cut -= 1
    tail_groups = {r.get("group") for r in rows[cut:]}
    if tail_groups != broken or len(tail_groups) != 1:
        g = sorted(broken - tail_groups or broken)[0]
        have = sum(i in done for i in members[g])
        raise ValueError(f"{out}: group {g!r} is partly scored ({have} of {len(members[g])} "
                         "answers): a group's answers are scored together, so a resumed run "
                         "cannot add to it: pass --restart or another --out")
    with partial.open("r+b") as fh:  # the stopped group's rows, written last: score it again
        fh.truncate(rows[cut]["_offset"])
    return rows[:cut]


def flatten_card_row(row: dict[str, Any], channels: Sequence[str]) -> dict[str, Any]:
    """Flat Parquet columns of one output row (module doc)."""
    err = row.get("error") or {}
    metrics = row.get("metrics") or {}
    flat: dict[str, Any] = {
        "id": row["id"], "group": row.get("group"), "advantage": row.get("advantage"),
        "valid": row["valid"], "reward": row["reward"], "error_code": err.get("code"),
        "error_message": err.get("message"), "formula": row.get("formula"),
        "canonical": row.get("canonical"),
    }
    for ch in channels:
        flat[f"ch_{ch}"] = (row.get("channels") or {}).get(ch)
    for m in FLAT_METRICS:
        v = metrics.get(m)
        flat[m] = float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
    cp = metrics.get("cpcv")
    flat["cpcv_score"] = cp.get("score") if isinstance(cp, dict) else None
    for k in ("env_id", "env_fingerprint", "data_fingerprint", "archive_version"):
        flat[k] = row.get(k)
    flat["card_json"] = json.dumps(row, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return flat


def _write_parquet(rows: list[dict[str, Any]], channels: Sequence[str], path: Path) -> None:
    import polars as pl

    schema: dict[str, Any] = {
        "id": pl.Utf8, "group": pl.Utf8, "advantage": pl.Float64, "valid": pl.Boolean,
        "reward": pl.Float64, "error_code": pl.Utf8, "error_message": pl.Utf8, "formula": pl.Utf8,
        "canonical": pl.Utf8, **{f"ch_{c}": pl.Float64 for c in channels},
        **{m: pl.Float64 for m in FLAT_METRICS}, "cpcv_score": pl.Float64, "env_id": pl.Utf8,
        "env_fingerprint": pl.Utf8, "data_fingerprint": pl.Utf8, "archive_version": pl.Int64,
        "card_json": pl.Utf8,
    }
    frame = pl.DataFrame([flatten_card_row(r, channels) for r in rows], schema=schema, orient="row")
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp)
    os.replace(tmp, path)


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    import polars as pl

    try:
        cards = pl.read_parquet(path, columns=["id", "card_json"])
    except Exception as exc:  # a file we did not write: say so instead of overwriting it
        raise ValueError(f"existing output {path} is not a score-file Parquet ({type(exc).__name__}); "
                         "move it away or pass --restart") from None
    return [json.loads(c) for c in cards["card_json"]]


# -------------------------------------------------------------------- progress
class Progress:
    """A one-line progress bar with throughput and ETA on ``stream`` (redrawn at most 10×/s)."""

    def __init__(self, total: int, done: int, stream: TextIO, enabled: bool = True) -> None:
        self.total, self.start_done, self.done = total, done, done
        self.stream, self.enabled = stream, enabled
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.valid = 0
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def line(self) -> str:
        """The current status line."""
        n = self.done - self.start_done
        dt = max(time.perf_counter() - self.t0, 1e-9)
        rate = n / dt
        left = self.total - self.done
        eta = f"{int(left / rate // 60)}:{int(left / rate % 60):02d}" if rate > 0 else "-:--"
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(24 * frac) + "." * (24 - int(24 * frac))
        valid = f"{self.valid / n:.0%}" if n else "-"
        if self.start_done:  # resumed: the share is of this run's answers, not of done/total
            valid += f" of {n} new"
        return (f"[{bar}] {self.done}/{self.total} {frac:4.0%}  {rate:6.1f} answers/s  "
                f"eta {eta}  valid {valid}")

    def update(self, k: int, valid: int, final: bool = False) -> None:
        """Count ``k`` more answers (``valid`` of them valid); redraw when due."""
        self.done += k
        self.valid += valid
        if not self.enabled:
            return
        now = time.perf_counter()
        period = 0.1 if self.tty else 2.0
        if final or now - self.last >= period:
            self.last = now
            end = "\n" if final or not self.tty else ""
            self.stream.write(("\r" if self.tty else "") + self.line() + end)
            self.stream.flush()


# ---------------------------------------------------------------------- driver
def _batches(records: Sequence[Record]) -> Iterator[list[Record]]:
    if all(r.group is None for r in records):
        for r in records:
            yield [r]
        return
    order: dict[str, list[Record]] = {}
    for r in records:
        if r.error is not None:
            yield [r]
        else:
            order.setdefault(str(r.group), []).append(r)
    yield from order.values()


def _error_row(rec: Record) -> dict[str, Any]:
    assert rec.error is not None
    return {"id": rec.id, "answer_digest": rec.digest, "line": rec.line, "valid": False,
            "reward": None, "error": {"code": rec.error[0], "message": rec.error[1]}}


def _dump(row: dict[str, Any]) -> str:
    return json.dumps(row, separators=(",", ":"), allow_nan=False, ensure_ascii=False) + "\n"


def _score_batch(env: Any, batch: list[Record], timings: bool) -> tuple[str, int]:
    """The output lines (joined) of one scorable batch and how many of its cards are valid."""
    if batch[0].group is None:
        cards = [env.score(batch[0].completion, brief=batch[0].brief)]
        adv = None
    else:
        cards = env.score_group([r.completion for r in batch], brief=batch[0].brief)
        with warnings.catch_warnings():
            if len(batch) == 1:  # a group of one has advantage 0 by definition: no warning
                warnings.simplefilter("ignore", RuntimeWarning)
            adv, _ = env.group_advantages(cards)
    lines = []
    for k, (rec, card) in enumerate(zip(batch, cards, strict=True)):
        row: dict[str, Any] = {"id": rec.id, "answer_digest": rec.digest}
        if rec.group is not None:
            row["group"] = rec.group
            row["advantage"] = float(adv[k]) if adv is not None else None
        row.update(card.to_dict(timings=timings))
        lines.append(_dump(row))
    return "".join(lines), sum(bool(c.valid) for c in cards)


_WORKER_ENV: Any = None


def _make_on(env_id: str, panel: Any = None, split: Any = None) -> Any:
    """``gymkit.make(env_id, market=panel, split=split)``, looked up when called (a picklable
    worker factory; no panel: the environment's own market)."""
    import gymkit

    return gymkit.make(env_id, market=panel, **({} if split is None else {"split": split}))


def _init_worker(factory: Callable[[], Any], parent: int | None = None) -> None:
    """Spawned pool's (and a Ray actor's) initializer: build this worker's environment once
    (its stderr notes silenced).  A worker ignores SIGINT: Ctrl-C reaches the whole process
    group, and the command, not each worker's traceback, answers it (the pool is shut down on
    the way out); given its ``parent``'s pid, it ends with it
    (:func:`~gymkit.worker_process.die_with_parent`; a Ray actor is Ray's to stop)."""
    global _WORKER_ENV
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        die_with_parent(parent)
    with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
        _WORKER_ENV = factory()


def _adopt_env(env: Any, parent: int) -> None:
    """Forked pool's initializer: score with the parent's environment, inherited with the
    process (nothing pickled, its arrays shared copy-on-write); SIGINT ignored as above, and
    the worker ends with its parent (:func:`~gymkit.worker_process.die_with_parent`)."""
    global _WORKER_ENV
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    _WORKER_ENV = env


def pool_start_method() -> str:
    """How the local engine starts its workers: ``fork`` on Linux, where each worker inherits
    the environment this process built (its market, archive and train context: no import,
    ``make`` or context build per worker, and the arrays shared); ``spawn`` elsewhere (fork is
    unsafe on macOS and absent on Windows), where each worker builds it from the factory.
    Workers only score (NumPy and Numba kernels, no Polars or thread pool of their own)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def _worker_batch(batch: list[Record], timings: bool) -> tuple[str, int]:
    return _score_batch(_WORKER_ENV, batch, timings)


def _worker_channels() -> list[str]:
    return list(_WORKER_ENV.channels)


def _serial(env: Any, batches: Iterable[list[Record]], timings: bool) -> Iterator[tuple[str, int]]:
    for b in batches:
        yield _score_batch(env, b, timings)


ENGINES = ("local", "ray", "torch")
#: Bytes one scoring process needs per train-panel cell, and again per stress world: the
#: measured peak of a serial score-file at N = 3,000 (9.9 M train cells, the evaluation cache
#: full) is 323, with margin for deep formulas (RESULTS.md, issue 22).
BYTES_PER_CELL = 400


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where it cannot be read)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


#: Batches (answers, or groups) each worker of a default-sized pool gets at least: a worker's
#: start costs about as much as this many cards (spawned: import, ``make``, its train context;
#: forked: loading the compiled kernels its formulas need; at N = 46 two forked workers still
#: only tie one on 128 answers; RESULTS.md).
MIN_BATCHES_PER_WORKER = 64


def pool_size(workers: int | None, env: Any, n_batches: int) -> int:
    """Processes the local engine runs for ``n_batches``: ``workers`` when given, else
    :func:`default_workers`, but no more than one per :data:`MIN_BATCHES_PER_WORKER` batches;
    never more than the batches, never fewer than 1."""
    if workers is None:
        workers = min(default_workers(env), -(-n_batches // MIN_BATCHES_PER_WORKER))
    return max(1, min(workers, n_batches))


def default_workers(env: Any = None, available: int | None = None) -> int:
    """``--workers``'s default: the machine's cores, but no more processes than fit in the
    memory available (each builds its own train context: about :data:`BYTES_PER_CELL` per
    cell of ``env``'s train panel, times one plus its stress worlds); the default market never
    binds.  Output bytes do not depend on it."""
    cores = os.cpu_count() or 1
    if env is None:
        return cores
    train = env.setup.train
    need = BYTES_PER_CELL * train.T * train.N * (1 + len(getattr(env.setup, "worlds", ())))
    free = _available_memory() if available is None else available
    if free is None or need <= 0:
        return cores
    return max(1, min(cores, int(0.8 * free) // need))


@contextlib.contextmanager
def _engine(name: str, good: list[list[Record]], timings: bool, *, workers: int | None,
            env: Any, env_id: str, env_factory: Callable[[], Any] | None, want_channels: bool,
            ray_address: str | None, device: str | None = None,
            ) -> Iterator[tuple[Iterator[tuple[str, int]], list[str] | None]]:
    """The one engine dispatch: yield (the rows of ``good`` in input order, the channel names
    when ``want_channels`` and the engine knows them, else None)."""
    factory = env_factory or functools.partial(_make_on, env_id)
    if name == "ray":
        from .ray_engine import ray_scorer

        fp = None if env is None else env.fingerprint
        with ray_scorer(good, timings, factory, address=ray_address, workers=workers,
                        expect_fingerprint=fp) as (rows, channels):
            yield rows, channels
        return
    if name == "torch":  # formulas evaluated in bulk on a torch device (gymkit.bulk), cards here
        import gymkit

        from .bulk.cards import bulk_env

        env = bulk_env(gymkit.make(env_id) if env is None else env, good, device or "cuda")
        yield _serial(env, good, timings), list(env.channels)
        return
    if name != "local":
        raise ValueError(f"--engine must be one of {', '.join(ENGINES)}, not {name!r}")
    n = pool_size(workers, env, len(good))
    if n <= 1:
        import gymkit

        env = gymkit.make(env_id) if env is None else env
        yield _serial(env, good, timings), list(env.channels)
        return
    first: list[tuple[str, int]] = []
    if pool_start_method() == "fork":  # build once here, score the first batch (which builds
        env = factory() if env is None else env  # the train context), then fork the workers
        first.append(_score_batch(env, good[0], timings))
        todo = good[1:]
        pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_adopt_env, initargs=(env, os.getpid()))
    else:
        todo = good
        pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker, initargs=(factory, os.getpid()))
    try:
        with warnings.catch_warnings():  # Python 3.12+ warns on fork() beside threads (Polars',
            # BLAS'): the workers use none of them (pool_start_method); under -W error it failed
            warnings.filterwarnings("ignore", r"This process .* is multi-threaded",
                                    DeprecationWarning)
            mapped = pool.map(_worker_batch, todo, [timings] * len(todo),  # forks the workers
                              chunksize=max(1, min(16, len(todo) // (8 * n))))
        rows = itertools.chain(first, mapped)
        channels = (list(env.channels) if env is not None else
                    pool.submit(_worker_channels).result() if want_channels else None)
        yield rows, channels
    except BaseException:  # Ctrl-C, a dead worker, a write error: stop the workers, then raise
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def score_file(src: str | Path, out: str | Path, *, env_id: str = "us46-default",
               field: str = "completion", id_field: str = "id", group_field: str | None = None,
               timings: bool = False, restart: bool = False, progress: bool = True,
               stream: TextIO | None = None, env: Any = None, workers: int | None = 1,
               env_factory: Callable[[], Any] | None = None, engine: str = "local",
               ray_address: str | None = None, device: str | None = None,
               briefs: bool = True) -> dict[str, int | None]:
    """Score ``src`` into ``out`` (module doc); return counts {total, skipped, scored, valid,
    bad, workers} (``bad``: error rows written for bad records, counted in ``scored`` too;
    ``workers``: the local engine's processes, 0 when nothing was scored; for Ray the
    ``workers`` asked, None for all).

    ``env``: an environment already built (e.g. on ``--market``); default ``make(env_id)``.
    ``briefs``: score a record that names its brief with it (module doc); False ignores briefs.
    ``engine``: ``"local"`` (``workers`` processes, None: all cores; 1: in this process) or
    ``"ray"`` (``workers`` Ray actors, None: the cluster's CPUs; ``ray_address`` for
    ``ray.init``, None: a local Ray for the run).  Forked local workers (Linux) inherit ``env``
    (or the one ``env_factory`` builds here); spawned ones and Ray actors build theirs with
    ``env_factory`` (picklable; default ``gymkit.make(env_id)``), which must build the same
    environment as ``env``.  ``"torch"``: in this process, the formulas evaluated in bulk on
    ``device`` (:mod:`gymkit.bulk.cards`).  The output is byte-identical for every engine and
    ``workers``."""
    import gymkit

    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be >= 1, not {workers}")
    if engine not in ENGINES:
        raise ValueError(f"--engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "ray":
        from .ray_engine import _import_ray

        _import_ray()  # a missing Ray is an error before anything is read or written
    out_p = Path(out)
    ext = _suffix(out_p)
    if ext not in JSONL_EXT + PARQUET_EXT:
        raise ValueError(f"output {out_p} must end in .jsonl or .parquet")
    if out_p.resolve() == Path(src).resolve():
        raise ValueError("output and input are the same file")
    records = scan_records(src, field=field, id_field=id_field, group_field=group_field,
                           briefs=briefs)
    partial = out_p.with_name(out_p.name + ".partial.jsonl") if ext in PARQUET_EXT else out_p
    if restart:
        for p in {out_p, partial}:
            p.unlink(missing_ok=True)
    old_rows = _parquet_rows(out_p) if ext in PARQUET_EXT else []
    resumed = [*old_rows, *_repair_jsonl(partial)]  # every row already written, read once
    if resumed:  # resuming: every card already there must be this input's, on this environment
        _check_answers(resumed, records, out_p, src)
        env = gymkit.make(env_id) if env is None else env
        _check_provenance(resumed, env, out_p)
        resumed = _partial_groups(resumed, records, partial, out_p)  # last: it may cut the file
    done = {str(r["id"]) for r in resumed}
    todo = [r for r in records if r.id not in done]
    batches = list(_batches(todo))
    good = [b for b in batches if b[0].error is None]
    parquet = ext in PARQUET_EXT
    bar = Progress(len(records), len(records) - len(todo), stream or sys.stderr, progress)
    # the local pool's size, decided once: what runs is what the summary reports
    used = 0 if not good else pool_size(workers, env, len(good)) if engine == "local" else workers
    if progress and good and (engine == "ray" or (engine == "local" and used > 1)):
        what = (f"starting {used} workers" + (" (each builds the environment once)"
                                               if pool_start_method() == "spawn" else "")
                if engine == "local"
                else f"connecting to Ray at {ray_address}" if ray_address
                else "starting a local Ray for the run")  # each start takes seconds: say so
        bar.stream.write(f"score-file: {what}\n")
        bar.stream.flush()
    scored = valid = bad = 0
    out_p.parent.mkdir(parents=True, exist_ok=True)
    try:
        with contextlib.ExitStack() as stack:
            scored_iter: Iterator[tuple[str, int]] = iter(())
            channels: list[str] | None = None
            if good:
                scored_iter, channels = stack.enter_context(_engine(
                    engine, good, timings, workers=used if engine == "local" else workers, env=env, env_id=env_id,
                    env_factory=env_factory, want_channels=parquet, ray_address=ray_address,
                    device=device))
            if parquet and channels is None:
                env = gymkit.make(env_id) if env is None else env
                channels = list(env.channels)
            with partial.open("a", encoding="utf-8") as fh:
                for batch in batches:
                    if batch[0].error is not None:
                        fh.write(_dump(_error_row(batch[0])))
                        fh.flush()
                        scored += 1
                        bad += 1
                        bar.update(1, 0)
                        continue
                    text, nv = next(scored_iter)
                    fh.write(text)
                    fh.flush()
                    scored += len(batch)
                    valid += nv
                    bar.update(len(batch), nv)
    except KeyboardInterrupt:  # the rows written so far are whole: say where, and how to go on
        if progress:
            bar.stream.write(f"\nscore-file: stopped after {scored} new row(s), kept in {partial}; "
                             "the same command resumes\n")
            bar.stream.flush()
        raise
    except BrokenProcessPool:  # a worker killed (the out-of-memory killer, kill -9)
        from .cli.errors import RunStopped

        raise RunStopped(f"a scoring worker process was killed (on a wide market, often the "
                         f"out-of-memory killer: try fewer --workers); {scored} new row(s) "
                         f"kept in {partial}; the same command resumes") from None
    bar.update(0, 0, final=True)
    if parquet:
        assert channels is not None
        new_rows = [json.loads(x) for x in partial.read_text(encoding="utf-8").splitlines() if x.strip()]
        by_id = {str(r["id"]): r for r in [*old_rows, *new_rows]}
        ordered = [by_id[r.id] for r in records if r.id in by_id]
        _write_parquet(ordered, channels, out_p)
        partial.unlink(missing_ok=True)
    return {"total": len(records), "skipped": len(records) - len(todo), "scored": scored,
            "valid": valid, "bad": bad, "workers": used}


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit score-file``."""
    from .cli.options import add_market_args, positive_int

    p.add_argument("input", help="answers: .jsonl / .parquet, each record's field 'completion' (a "
                                 "model's whole answer: the formula inside <alpha>...</alpha>) or "
                                 "'formula' (a bare formula), or a text file of bare formulas, one "
                                 "a line")
    p.add_argument("--out", required=True, metavar="FILE", help="cards: .jsonl or .parquet")
    p.add_argument("--env", default="us46-default", help="environment id (default: us46-default)")
    p.add_argument("--field", default="completion", help="the answer's field (default: completion)")
    p.add_argument("--id-field", default="id", help="the id's field (default: id; else the row number)")
    p.add_argument("--group-field", default=None, metavar="FIELD",
                   help="score records sharing this field as one group (adds GDPO advantages)")
    p.add_argument("--no-brief", action="store_true", help="ignore the records' brief_id / brief "
                   "(default: an answer that names its brief is scored with it, R13 included)")
    p.add_argument("--timings", action="store_true", help="include per-phase timings in the cards")
    p.add_argument("--restart", action="store_true", help="ignore (delete) existing output instead of resuming")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="processes (or Ray actors) scoring in parallel (default: all cores, but one "
                        f"per {MIN_BATCHES_PER_WORKER} answers or groups and no more than fit in the "
                        "available memory on a wide market; with Ray the cluster's CPUs; 1: serial); "
                        "the output is the same bytes for every N")
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local: a process pool on this machine (default); ray: Ray actors, one "
                        "environment each (pip install 'gymkit[ray]'); torch: formulas evaluated "
                        "in bulk on --device, cards in this process (--workers unused)")
    p.add_argument("--device", default=None, help="with --engine torch: the torch device (default: cuda)")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="with --engine ray: the cluster for ray.init(address=ADDR) (e.g. auto); "
                        "default: start a local Ray for the run")
    add_market_args(p)


def market_env_factory(args: argparse.Namespace, env: Any) -> Callable[[], Any]:
    """The workers' factory for ``env``, built by the command line ``args`` on a user market or
    split: it carries the panel already loaded (pickled to each worker once) instead of the
    file's path, so a worker neither reads nor validates the file again (at N = 3,000 that was
    ~9 s of each worker's start, RESULTS.md), and sees the data the parent scored with."""
    from .cli.options import parse_split

    return functools.partial(_make_on, getattr(args, "env", None) or "us46-default",
                             env.market if args.market is not None else None,
                             parse_split(getattr(args, "split", None)))


def _engine_words(engine: str, workers: int | None) -> str:
    """The summary line's words for where the cards were scored."""
    if engine == "ray":
        return f", on Ray ({workers} actors)" if workers else ", on Ray"
    if engine == "torch":
        return ", formulas evaluated in bulk (torch)"
    return f", {workers} worker{'s' if workers != 1 else ''}" if workers else ""


def run_cli(args: argparse.Namespace) -> int:
    """``gymkit score-file``: score, then print one summary line on stderr."""
    from .cli.options import make_env

    t0 = time.perf_counter()
    if args.ray_address is not None and args.engine != "ray":
        raise ValueError("--ray-address needs --engine ray")
    if args.device is not None and args.engine != "torch":
        raise ValueError("--device needs --engine torch")
    custom = args.market is not None or args.split is not None
    if args.market is not None and not args.no_progress:  # a wide file takes seconds to load
        print(f"score-file: loading the market {args.market}", file=sys.stderr, flush=True)
    env = make_env(args) if custom else None
    factory = market_env_factory(args, env) if custom else None
    c = score_file(args.input, args.out, env_id=args.env, env=env, field=args.field, id_field=args.id_field,
                   group_field=args.group_field, timings=args.timings, restart=args.restart,
                   progress=not args.no_progress, workers=args.workers, env_factory=factory,
                   engine=args.engine, ray_address=args.ray_address, device=args.device,
                   briefs=not args.no_brief)
    dt = time.perf_counter() - t0
    print(f"score-file: {c['scored']} scored ({c['valid']} valid), {c['skipped']} already in "
          f"{args.out}, {c['total']} in all"
          + (f", {c['bad']} bad record{'s' * (c['bad'] != 1)} (error rows)" if c["bad"] else "")
          + _engine_words(args.engine, c["workers"]) + f"; {dt:.1f} s",
          file=sys.stderr)
    return 0
