"""The judged-days rule (DESIGN §4): which signal dates count, in train and in holdout.

A signal date t is *judged* when its P&L — open(t+1) → open(t+2) — is counted.
P&L is always labelled by its signal date t.

**Train** (``mode='train'``): the oracle receives only ``split.train(panel)``, a
panel physically without holdout rows (T_train sessions, 0-based index).  Judged
signal dates are ``burn_in ≤ t ≤ T_train − 3``: the burn-in of 252 sessions is the
maximum lookback of a formula, and t = T_train − 3 is the last date whose open(t+2)
is still a train session.  The last two train sessions are never judged (their
returns would need a holdout price).  Default split: 3,304 train sessions →
t ∈ [252, 3301], 3,050 judged days, 2013-07-03 … 2025-08-18.

**Holdout** (``mode='holdout'``): the oracle receives ``split.with_history(panel)``
(every session up to ``holdout_end``; earlier sessions are history for the
formula's lookback).  Judged signal dates are the holdout sessions that have an
open(t+2) inside the window, i.e. ``max(h0, burn_in) ≤ t ≤ T_w − 3`` where h0 is
the first holdout session.  The last 2 holdout sessions cannot be judged, and the
last 2 train sessions (whose fills fall in the holdout) are judged in neither mode.
Default split: 252 holdout sessions → 250 judged days, 2025-08-21 … 2026-08-19.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gymkit.data.panel import Panel
from gymkit.data.splits import Split

__all__ = ["BURN_IN", "MODES", "JudgedWindow", "judged_window", "window_panel"]

#: Sessions of history before the first judged train day (the maximum formula lookback).
BURN_IN = 252
#: The two backtest modes.
MODES = ("train", "holdout")
#: Sessions after a signal date needed to realise its P&L (fill at t+1, mark at t+2).
HORIZON = 2


@dataclass(frozen=True)
class JudgedWindow:
    """Judged signal dates of one mode, as indices into the window panel.

    ``mode``; ``first``, ``last`` (inclusive indices of the window panel); ``dates``
    (datetime64[D] of the judged signal dates); ``n_sessions`` (rows of the window panel).
    """

    mode: str
    first: int
    last: int
    dates: np.ndarray
    n_sessions: int

    @property
    def rows(self) -> slice:
        """The judged signal dates as a slice of the window panel's rows."""
        return slice(self.first, self.last + 1)

    @property
    def n_days(self) -> int:
        """Number of judged days."""
        return self.last - self.first + 1


def window_panel(panel: Panel, split: Split, mode: str) -> Panel:
    """Return the panel the given mode may see: the train slice or the history up to holdout end."""
    _check_mode(mode)
    return split.train(panel) if mode == "train" else split.with_history(panel)


def judged_window(window: Panel, split: Split, mode: str, burn_in: int = BURN_IN) -> JudgedWindow:
    """Return the judged signal dates of ``window`` (the panel from :func:`window_panel`).

    Raises ``ValueError`` naming the mode and the counts when no day can be judged.
    """
    _check_mode(mode)
    if burn_in < 0:
        raise ValueError(f"burn_in must be >= 0, got {burn_in}")
    n = window.T
    first = burn_in
    if mode == "holdout":
        h0 = int(np.searchsorted(window.dates, np.datetime64(split.holdout_start, "D"), "left"))
        first = max(first, h0)
    last = n - 1 - HORIZON
    if last < first:
        raise ValueError(
            f"{mode} window has no judged day: {n} sessions, first judged index {first}, "
            f"last judged index {last} (burn-in {burn_in}, horizon {HORIZON})"
        )
    dates = window.dates[first : last + 1].copy()
    dates.setflags(write=False)
    return JudgedWindow(mode, first, last, dates, n)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
