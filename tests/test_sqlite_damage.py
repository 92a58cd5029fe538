"""A damaged SQLite file of the project's (the archive store, the holdout ledger) is one error
naming the file and the way out, not an internal error.

SQLite opens a damaged file without complaint; "database disk image is malformed" comes on the
first read of a bad page.  A walkthrough of ``gymkit serve`` with 4 KB overwritten in its archive
file got "internal error: DatabaseError: database disk image is malformed" (exit 3), naming no
file.  Here a file is filled, closed (its write-ahead log checkpointed into it), and its second
page overwritten, so the schema still reads and the data does not.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gymkit.archive_db import ArchiveDB
from gymkit.holdout import HoldoutLedger


def _damage(path: Path) -> None:
    with sqlite3.connect(path) as db:  # everything in the main file, no -wal beside it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    page = 4096
    data = bytearray(path.read_bytes())
    assert len(data) >= 2 * page, len(data)
    data[page:2 * page] = b"\xa5" * page
    path.write_bytes(bytes(data))


def test_a_damaged_archive_store_names_its_file(tmp_path: Path) -> None:
    path = tmp_path / "archive.sqlite3"
    db = ArchiveDB(path)
    db.seed("env", 1, "d" * 64, 3, b"x" * 20_000)
    db.close()
    _damage(path)
    db = ArchiveDB(path)  # opens: the schema page is intact
    with pytest.raises(ValueError, match=rf"^archive db {path}: .*malformed.*; move the file aside"):
        db.head("env")
    db.close()


def test_a_damaged_holdout_ledger_names_its_file(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with HoldoutLedger(path) as ledger:
        for i in range(200):  # rows enough to fill more than the first page of the table
            ledger.claim("env", f"{i:064d}", n_formulas=1, command="test")
    _damage(path)
    with HoldoutLedger(path) as ledger, pytest.raises(
            ValueError, match=rf"^holdout ledger {path}: .*malformed.*; restore a copy"):
        ledger.claim("env", "f" * 64, n_formulas=1, command="test")


def test_a_locked_ledger_is_named_without_the_damage_advice(tmp_path: Path) -> None:
    """A busy file is not a damaged one: moving it aside would be the wrong advice."""
    path = tmp_path / "ledger.sqlite"
    with HoldoutLedger(path) as ledger:
        ledger.claim("env", "a" * 64, n_formulas=1, command="test")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holding the write lock
    try:
        with HoldoutLedger(path) as ledger:
            ledger._db.execute("PRAGMA busy_timeout = 50")
            with pytest.raises(ValueError, match=rf"^holdout ledger {path}: database is locked$"):
                ledger.claim("env", "b" * 64, n_formulas=1, command="test")
    finally:
        other.execute("ROLLBACK")
        other.close()
