"""Train / holdout splits by date.  Train-mode consumers get a panel that has no holdout rows."""

from __future__ import annotations

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
