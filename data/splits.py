"""Train / holdout splits by date.  Train-mode consumers get a panel that has no holdout rows."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import numpy as np

from gymkit.data.panel import Panel


@dataclass(frozen=True)
class Split:
    """A train window and a holdout window, both inclusive, on session dates."""

    train_start: str
    train_end: str
    holdout_start: str
    holdout_end: str

    def __post_init__(self) -> None:
        ts, te = np.datetime64(self.train_start, "D"), np.datetime64(self.train_end, "D")
        hs, he = np.datetime64(self.holdout_start, "D"), np.datetime64(self.holdout_end, "D")
        if not (ts <= te < hs <= he):
            raise ValueError(
                f"split windows must be ordered train_start <= train_end < holdout_start <= "
                f"holdout_end, got {ts} {te} {hs} {he}"
            )

    def train(self, panel: Panel) -> Panel:
        """Return the train slice: a new panel physically without any row after ``train_end``."""
        return panel.between(self.train_start, self.train_end)

    def with_history(self, panel: Panel) -> Panel:
        """Return everything up to ``holdout_end``: holdout rows plus earlier sessions as history."""
        return panel.between(panel.dates[0], self.holdout_end)

    def holdout_mask(self, dates: np.ndarray) -> np.ndarray:
        """Boolean mask of ``dates`` that fall in the holdout window."""
        d = np.asarray(dates).astype("datetime64[D]")
        return (d >= np.datetime64(self.holdout_start, "D")) & (d <= np.datetime64(self.holdout_end, "D"))


#: The default environment's split (DESIGN §2): 3,304 train sessions, 252 holdout sessions.
DEFAULT_SPLIT = Split("2012-06-29", "2025-08-20", "2025-08-21", "2026-08-21")


#: Sessions the derived rule holds out at the end of a user's market (one trading year).
HOLDOUT_SESSIONS = 252
#: The four keys of a split, in order.
SPLIT_KEYS: tuple[str, ...] = ("train_start", "train_end", "holdout_start", "holdout_end")
#: Prefix of the note an environment carries when its split was derived or completed.
SPLIT_NOTE = "split adapted to the panel"


def split_day(key: str, value: object) -> np.datetime64:
    """``value`` as a day (ISO ``YYYY-MM-DD``, or its basic form ``YYYYMMDD``, as text, a TOML
    date or an integer); ``ValueError`` (one line, naming ``key``) when it is not a date."""
    text = str(value).strip()
    try:  # not np.datetime64(text): it reads "20191228" as the year 20,191,228
        return np.datetime64(datetime.date.fromisoformat(text), "D")
    except ValueError:
        raise ValueError(f"split {key} = {text[:40]!r} is not a date (expected YYYY-MM-DD)") from None


def _to_session(d: np.ndarray, key: str, day: np.datetime64) -> np.datetime64:
    """``day`` moved onto the sorted sessions ``d``: the first session on or after it for a
    ``*_start`` key, the last on or before it for a ``*_end`` key; ``day`` when there is none."""
    if key.endswith("_start"):
        k = int(np.searchsorted(d, day, "left"))
        return d[k] if k < d.size else day
    k = int(np.searchsorted(d, day, "right")) - 1
    return d[k] if k >= 0 else day


def resolve_split(dates: np.ndarray, partial: dict[str, str] | None = None, *,
                  min_train: int = 0, min_holdout: int = 1,
                  holdout_sessions: int = HOLDOUT_SESSIONS) -> tuple[Split, str]:
    """Complete ``partial`` (any subset of :data:`SPLIT_KEYS`) on the session ``dates``.

    The rule (the same for every command and the Python API): a given date that is not a
    session becomes the session its window reaches (the first on or after a ``*_start``, the
    last on or before a ``*_end``; kept as given when the panel has none there), so the split
    and the note name sessions.  ``holdout_end`` defaults to the last session,
    ``train_start`` to the first; ``holdout_start`` to the session after a given
    ``train_end``, else to the first of the last ``holdout_sessions`` sessions up to
    ``holdout_end``; ``train_end`` to the session before ``holdout_start``.  Returns the
    split and a one-line note (starting with :data:`SPLIT_NOTE`) naming both windows.
    Raises ``ValueError`` (one line) for unknown keys, bad dates, a holdout with no session
    of the panel or fewer than ``min_holdout``, or fewer than ``min_train`` train sessions.
    """
    given = dict(partial or {})
    bad = sorted(set(given) - set(SPLIT_KEYS))
    if bad:
        raise ValueError(f"unknown split key(s) {bad}; expected some of {list(SPLIT_KEYS)}")
    d = np.unique(np.asarray(dates).astype("datetime64[D]"))
    if d.size == 0:
        raise ValueError("cannot resolve a split on a panel with no sessions")
    day = {k: _to_session(d, k, split_day(k, v)) for k, v in given.items()}
    he = day.get("holdout_end", d[-1])
    e = int(np.searchsorted(d, he, "right")) - 1
    if "holdout_start" in day:
        hs = day["holdout_start"]
    elif "train_end" in day:
        k = int(np.searchsorted(d, day["train_end"], "right"))
        if k >= d.size:
            raise ValueError(f"split train_end {given['train_end']} leaves no session after it for "
                             f"the holdout (the panel spans {d[0]}..{d[-1]})")
        if d[k] > he:
            raise ValueError(f"split train_end {given['train_end']} leaves no session before "
                             f"holdout_end {he} for the holdout")
        hs = d[k]
    else:
        hs = d[max(0, e - holdout_sessions + 1)] if e >= 0 else he
    if "train_end" in day:
        te = day["train_end"]
    else:
        k = int(np.searchsorted(d, hs, "left")) - 1
        if k < 0:
            raise ValueError(f"split leaves no train session before holdout_start {hs} "
                             f"(the panel starts {d[0]})")
        te = d[k]
    ts = day.get("train_start", d[0])
    if hs > he:
        raise ValueError(f"split leaves the holdout empty: holdout_start {hs} is after "
                         f"holdout_end {he} (the panel spans {d[0]}..{d[-1]})")
    split = Split(str(ts), str(te), str(hs), str(he))
    n_hold = int(split.holdout_mask(d).sum())
    n_train = int(((d >= ts) & (d <= te)).sum())
    if n_hold == 0:
        raise ValueError(f"split leaves the holdout empty: no session of the panel "
                         f"({d[0]}..{d[-1]}) lies in {hs}..{he}")
    _check_counts(n_train, n_hold, f"{ts}..{te}", f"{hs}..{he}", min_train, min_holdout)
    how = (f"completed from {', '.join(k for k in SPLIT_KEYS if k in given)}" if given else
           f"no split given; rule: the last {holdout_sessions} sessions are the holdout, the "
           "train window everything before")
    note = (f"{SPLIT_NOTE} ({how}): train {ts}..{te} ({n_train} sessions), "
            f"holdout {hs}..{he} ({n_hold} sessions)")
    return split, note


def _check_counts(n_train: int, n_hold: int, train: str, hold: str, min_train: int,
                  min_holdout: int) -> None:
    """One-line ``ValueError`` when a window holds fewer sessions than it needs."""
    if n_train < min_train:
        raise ValueError(f"split leaves {n_train} train sessions ({train}); the train window "
                         f"needs at least {min_train} (burn-in, CPCV blocks and the 2-day horizon)"
                         f", {min_train + n_hold} with this {n_hold}-session holdout: give a "
                         "longer panel or a shorter holdout (--split train_end=DATE, "
                         "split={'train_end': DATE})")
    if n_hold < min_holdout:
        raise ValueError(f"split leaves {n_hold} holdout sessions ({hold}); the holdout needs at "
                         f"least {min_holdout} (the 2-day horizon and one judged day per CPCV "
                         "block), or no holdout book can be scored")


def check_split(split: Split, dates: np.ndarray, *, min_train: int = 0, min_holdout: int = 1) -> None:
    """Raise ``ValueError`` (one line) when ``split`` leaves the holdout of ``dates`` empty or
    shorter than ``min_holdout`` sessions, or fewer than ``min_train`` train sessions."""
    d = np.asarray(dates).astype("datetime64[D]")
    n_hold = int(split.holdout_mask(d).sum())
    lo, hi = np.datetime64(split.train_start, "D"), np.datetime64(split.train_end, "D")
    n_train = int(((d >= lo) & (d <= hi)).sum())
    span = f"{d[0]}..{d[-1]}" if d.size else "no sessions"
    if n_hold == 0:
        raise ValueError(f"split leaves the holdout empty: no session of the panel ({span}) lies "
                         f"in {split.holdout_start}..{split.holdout_end}; give a split inside the "
                         "panel or none (the last 252 sessions become the holdout)")
    _check_counts(n_train, n_hold, f"{split.train_start}..{split.train_end}",
                  f"{split.holdout_start}..{split.holdout_end}", min_train, min_holdout)
