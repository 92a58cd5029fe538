"""Book-level tools: combine many formulas' daily P&L, select diverse ones, count effective bets.

* :func:`equal_weight_book` — the mean of M aligned daily P&L series (each formula
  gets 1/M of the capital; a formula's series is already gross-1 net P&L).
* :func:`correlation_capped_selection` — the seed's selector (alpha post §8)::

      sort candidates by CPCV score, descending (ties: lower index first)
      for f in candidates:
          if turnover(f) < 0.02: skip
          if max |corr(pnl f, pnl g)| >= 0.5 for any selected g: skip
          select f

  A correlation with a zero-variance series is taken as 0.
* :func:`effective_number_of_bets` — (Σλ)² / Σλ² of the eigenvalues λ of the P&L
  correlation matrix C, computed without an eigensolver as trace(C)² / ‖C‖_F²
  (Σλ = trace C, Σλ² = trace C² = Σ_ij C_ij²).  M uncorrelated books → M; M
  identical books → 1.  Zero-variance series are dropped first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["correlation_capped_selection", "effective_number_of_bets", "equal_weight_book", "pnl_correlation"]


def _as_pnl_matrix(pnls: np.ndarray) -> np.ndarray:
    x = np.asarray(pnls, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"P&L must be a (days, formulas) matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("P&L matrix must be finite")
    return x


def equal_weight_book(pnls: np.ndarray) -> np.ndarray:
    """Return the (D,) equal-weight combination (row mean) of the (D, M) daily P&L matrix."""
    x = _as_pnl_matrix(pnls)
    if x.shape[1] == 0:
        raise ValueError("equal_weight_book needs at least one formula")
    return x.sum(axis=1) / x.shape[1]


def pnl_correlation(pnls: np.ndarray) -> np.ndarray:
    """Return the (M, M) Pearson correlation of the P&L columns; 0 off-diagonal for zero variance."""
    x = _as_pnl_matrix(pnls)
    dev = x - x.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->j", dev, dev))
    safe = np.where(norms > 0, norms, 1.0)
    z = dev / safe
    c = np.einsum("ij,ik->jk", z, z)  # einsum without BLAS: fixed summation order
    c[:, norms == 0] = 0.0
    c[norms == 0, :] = 0.0
    np.fill_diagonal(c, 1.0)
    return np.clip(c, -1.0, 1.0)


def correlation_capped_selection(
    scores: np.ndarray,
    turnovers: np.ndarray,
    pnls: np.ndarray,
    *,
    max_corr: float = 0.5,
    min_turnover: float = 0.02,
) -> list[int]:
    """Return the indices (in selection order) chosen by the correlation-capped selector (module doc).

    ``scores`` (M,) CPCV scores, ``turnovers`` (M,) mean daily turnover, ``pnls``
    (D, M) daily P&L.  Candidates with a non-finite score are skipped.
    """
    s = np.asarray(scores, dtype=np.float64)
    tv = np.asarray(turnovers, dtype=np.float64)
    x = _as_pnl_matrix(pnls)
    if s.shape != tv.shape or s.ndim != 1 or x.shape[1] != s.size:
        raise ValueError(f"scores {s.shape}, turnovers {tv.shape} and pnls {x.shape} do not describe the same formulas")
    corr = pnl_correlation(x)
    order = sorted(range(s.size), key=lambda i: (-s[i], i))
    chosen: list[int] = []
    for i in order:
        if not np.isfinite(s[i]) or not tv[i] >= min_turnover:
            continue
        if chosen and np.max(np.abs(corr[i, chosen])) >= max_corr:
            continue
        chosen.append(i)
    return chosen


def effective_number_of_bets(pnls: np.ndarray) -> float:
    """Return (Σλ)²/Σλ² of the P&L correlation matrix (module doc); 0.0 with no varying series."""
    x = _as_pnl_matrix(pnls)
    keep = x.std(axis=0) > 0
    if not keep.any():
        return 0.0
    c = pnl_correlation(x[:, keep])
    return float(np.trace(c) ** 2 / np.sum(c * c))
