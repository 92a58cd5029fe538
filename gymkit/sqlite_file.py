"""One statement against a project SQLite file, its damage reported as a user error.

SQLite opens a damaged file without complaint and says "database disk image is malformed"
only when a statement first reads a bad page; left alone, that surfaced as an internal error
naming no file.  Used by the archive store (:mod:`gymkit.archive_db`) and the holdout ledger
(:mod:`gymkit.holdout`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["sql_rows"]


def sql_rows(db: sqlite3.Connection, what: str, statement: str, params: tuple[Any, ...] = (),
             advice: str = "") -> list[tuple[Any, ...]]:
    """Run ``statement`` on ``db`` and return its rows.  A damaged file is a ValueError
    ``"{what}: {sqlite's words}; {advice}"``; one locked, unreadable or full
    (``OperationalError``) the same without ``advice``, which is for damage; constraint errors
    (``IntegrityError``) pass unchanged, for the caller to answer."""
    try:
        return db.execute(statement, params).fetchall()
    except sqlite3.IntegrityError:
        raise
    except sqlite3.OperationalError as exc:
        raise ValueError(f"{what}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{what}: {exc}" + (f"; {advice}" if advice else "")) from None
