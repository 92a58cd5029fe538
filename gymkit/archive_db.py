"""Persistent novelty archive and commit ledger in SQLite (standard library, WAL mode).

One database file holds, per environment (keyed by its fingerprint):

* ``archive_head``: the current archive snapshot (:meth:`NoveltyArchive.snapshot` bytes),
  its version, digest and size — what a restarted server or another process loads;
* ``archive_versions``: one row per version ever committed (version, digest, size, the
  request id that made it).  ``(env_key, version)`` is the primary key, so a version number
  is never written twice, whatever process commits;
* ``commit_ledger``: the idempotency ledger of commits — request id, sha256 of the request
  body and the exact response text — bounded to the newest ``ledger_limit`` rows per env.

Writers serialise through SQLite's write lock: :meth:`ArchiveDB.transaction` opens
``BEGIN IMMEDIATE``, so two processes committing to one file take turns and each starts from
the other's head.  Readers never block (WAL).  ``":memory:"`` gives the same behaviour in one
process without a file.  A connection is used from one thread at a time (the caller's
duty; the server runs every call on one dedicated thread).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sqlite_file import sql_rows

__all__ = ["ArchiveDB", "Head", "LedgerEntry", "Transaction", "default_db_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS archive_head (
    env_key TEXT PRIMARY KEY, version INTEGER NOT NULL, digest TEXT NOT NULL,
    size INTEGER NOT NULL, snapshot BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS archive_versions (
    env_key TEXT NOT NULL, version INTEGER NOT NULL, digest TEXT NOT NULL,
    size INTEGER NOT NULL, request_id TEXT, PRIMARY KEY (env_key, version));
CREATE TABLE IF NOT EXISTS commit_ledger (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, env_key TEXT NOT NULL, request_id TEXT NOT NULL,
    body_sha256 TEXT NOT NULL, response TEXT NOT NULL, UNIQUE (env_key, request_id));
"""


def default_db_path() -> Path:
    """``$GYMKIT_ARCHIVE_DB``, else ``$XDG_STATE_HOME/gymkit/archive.sqlite3`` (``~/.local/state``)."""
    given = os.environ.get("GYMKIT_ARCHIVE_DB")
    if given:
        return Path(given)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gymkit" / "archive.sqlite3"


@dataclass(frozen=True)
class Head:
    """An environment's current archive: version, digest, size and snapshot bytes."""

    version: int
    digest: str
    size: int
    snapshot: bytes


@dataclass(frozen=True)
class LedgerEntry:
    """A remembered commit: the request body's sha256 and the response text sent for it."""

    body_sha256: str
    response: str


class ArchiveDB:
    """The SQLite store of archives and ledgers (module doc).  ``path`` may be ``":memory:"``."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 120.0,
                 ledger_limit: int = 4096) -> None:
        self.path = str(path)
        self.ledger_limit = int(ledger_limit)
        if self.path != ":memory:":
            parent = Path(self.path).parent
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ValueError(f"archive db {self.path}: cannot create {parent} "
                                 f"({exc.strerror})") from None
        try:
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"archive db {self.path}: not a usable SQLite database ({exc})") from None

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and return its rows; a damaged file is one ValueError naming it
        and the way out (:func:`gymkit.sqlite_file.sql_rows`)."""
        return sql_rows(self._db, f"archive db {self.path}", statement, params,
                        "move the file aside to start again from the seed archive, or restore "
                        "a copy of it")

    # ------------------------------------------------------------------ reads
    def head(self, env_key: str) -> Head | None:
        """The environment's current archive, or None when nothing was stored yet."""
        rows = self.sql("SELECT version, digest, size, snapshot FROM archive_head "
                        "WHERE env_key = ?", (env_key,))
        return None if not rows else Head(int(rows[0][0]), str(rows[0][1]), int(rows[0][2]),
                                          bytes(rows[0][3]))

    def head_version(self, env_key: str) -> tuple[int, str] | None:
        """(version, digest) of the current archive without reading the snapshot."""
        rows = self.sql("SELECT version, digest FROM archive_head WHERE env_key = ?", (env_key,))
        return None if not rows else (int(rows[0][0]), str(rows[0][1]))

    def versions(self, env_key: str) -> list[tuple[int, str, int, str | None]]:
        """Every stored version of the environment's archive: (version, digest, size, request id)."""
        return [(int(v), str(d), int(n), r) for v, d, n, r in self.sql(
            "SELECT version, digest, size, request_id FROM archive_versions WHERE env_key = ? "
            "ORDER BY version", (env_key,))]

    def ledger(self, env_key: str) -> list[tuple[str, str, str]]:
        """The commit ledger in commit order: (request id, body sha256, response text)."""
        return [(str(a), str(b), str(c)) for a, b, c in self.sql(
            "SELECT request_id, body_sha256, response FROM commit_ledger WHERE env_key = ? "
            "ORDER BY seq", (env_key,))]

    # ----------------------------------------------------------------- writes
    def seed(self, env_key: str, version: int, digest: str, size: int, snapshot: bytes) -> Head:
        """Store the seed archive unless the environment already has a head; return the head."""
        with self.transaction(env_key) as tx:
            if tx.head() is None:
                tx.record(version, digest, size, snapshot, None)
        head = self.head(env_key)
        assert head is not None
        return head

    def begin(self, env_key: str) -> Transaction:
        """``BEGIN IMMEDIATE``: take the write lock (waits for another writer up to the busy
        timeout); end with :meth:`Transaction.commit` or :meth:`Transaction.rollback`."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ValueError(f"archive db {self.path}: cannot take the write lock ({exc})") from None
        return Transaction(self, env_key)

    @contextlib.contextmanager
    def transaction(self, env_key: str) -> Iterator[Transaction]:
        """:meth:`begin` … commit (rollback on any exception): one writer at a time."""
        tx = self.begin(env_key)
        try:
            yield tx
        except BaseException:
            tx.rollback()
            raise
        tx.commit()


class Transaction:
    """Reads and writes inside one :meth:`ArchiveDB.transaction`."""

    def __init__(self, db: ArchiveDB, env_key: str) -> None:
        self._db, self.env_key = db, env_key

    def commit(self) -> None:
        """Make this transaction's writes durable and release the write lock."""
        self._db.sql("COMMIT")

    def rollback(self) -> None:
        """Drop this transaction's writes and release the write lock (never raises)."""
        with contextlib.suppress(sqlite3.Error):
            self._db._db.execute("ROLLBACK")

    def head(self) -> Head | None:
        """The head as of this transaction (sees this process's and others' committed writes)."""
        return self._db.head(self.env_key)

    def lookup(self, request_id: str) -> LedgerEntry | None:
        """The ledger entry of ``request_id``, or None."""
        rows = self._db.sql("SELECT body_sha256, response FROM commit_ledger WHERE "
                            "env_key = ? AND request_id = ?", (self.env_key, request_id))
        return None if not rows else LedgerEntry(str(rows[0][0]), str(rows[0][1]))

    def record(self, version: int, digest: str, size: int, snapshot: bytes,
               request_id: str | None) -> None:
        """Store a new head and its version row; a version already stored raises ``ValueError``."""
        try:
            self._db.sql("INSERT INTO archive_versions VALUES (?, ?, ?, ?, ?)",
                         (self.env_key, int(version), digest, int(size), request_id))
        except sqlite3.IntegrityError:
            raise ValueError(f"archive version {version} is already stored") from None
        self._db.sql("INSERT OR REPLACE INTO archive_head VALUES (?, ?, ?, ?, ?)",
                     (self.env_key, int(version), digest, int(size), sqlite3.Binary(snapshot)))

    def remember(self, request_id: str, body_sha256: str, response: str) -> None:
        """Add a ledger row and drop the oldest beyond the ledger limit."""
        self._db.sql("INSERT INTO commit_ledger (env_key, request_id, body_sha256, response) "
                     "VALUES (?, ?, ?, ?)", (self.env_key, request_id, body_sha256, response))
        self._db.sql("DELETE FROM commit_ledger WHERE env_key = ? AND seq NOT IN (SELECT seq "
                     "FROM commit_ledger WHERE env_key = ? ORDER BY seq DESC LIMIT ?)",
                     (self.env_key, self.env_key, self._db.ledger_limit))
