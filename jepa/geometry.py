"""Correlation geometry of a window of returns (the JEPA's auxiliary targets, DESIGN §7).

For a window of daily returns ``r`` (W days, N stocks) with correlation matrix C and
eigenvalues λ_1 ≥ … ≥ λ_N (Σλ = trace C = N):

===================  ==========================================================================
``mean_corr``        mean off-diagonal entry of C (how much stocks move together)
``lmax_share``       λ_1 / trace(C) (weight of the market mode; the first top-5 share)
``pr_frac``          participation ratio (Σλ)² / Σλ² divided by N (effective factor fraction)
``pr_resid_frac``    the same over λ_2 … λ_N, divided by N − 1 (diversity beyond the market)
``drift_top3``       1 − ‖U_prevᵀ U‖²_F / 3: rotation of the top-3 eigenvector subspace from the
                     previous window (0 = same subspace, 1 = orthogonal; NaN without one)
``share_2..share_5``  λ_k / trace(C), k = 2 … 5 (with ``lmax_share``: the top-5 shares)
===================  ==========================================================================

Noise baseline (Marchenko–Pastur, ratio q = N / W): the eigenvalues of a pure-noise
correlation matrix fill [(1 − √q)², (1 + √q)²], so ``lmax_share`` ≈ (1 + √q)² / N, the
participation ratio ≈ N / (1 + q) and ``mean_corr`` ≈ 0.  With N = 46, W = 64 the noise
``pr_frac`` is already ≈ 0.58; the JEPA uses W = 126 (q = 0.37, noise ``pr_frac`` ≈ 0.73,
noise λ_max share ≈ 0.056), where the market's figures sit far from the noise values.
Pure numpy; batched over windows with ``numpy.linalg.eigh``.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

__all__ = ["GEOMETRY_NAMES", "geometry", "geometry_of_windows", "marchenko_pastur"]

#: Names of the geometry targets, in the order :func:`geometry_of_windows` returns them.
GEOMETRY_NAMES: tuple[str, ...] = (
    "mean_corr", "lmax_share", "pr_frac", "pr_resid_frac", "drift_top3",
    "share_2", "share_3", "share_4", "share_5",
)


def _one_blas_thread() -> contextlib.AbstractContextManager:
    """Limit BLAS/LAPACK to one thread: batched 46 x 46 ``eigh`` is ~15x slower when
    OpenBLAS spreads each tiny matrix over busy shared cores (threadpoolctl when installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _corr_batch(r: np.ndarray) -> np.ndarray:
    """(K, W, N) windows -> (K, N, N) correlation matrices (zero-variance columns -> 0)."""
    x = r - r.mean(axis=1, keepdims=True)
    sd = np.sqrt((x * x).sum(axis=1))  # (K, N)
    sd = np.where(sd > 0, sd, np.inf)
    z = x / sd[:, None, :]
    c = np.matmul(z.transpose(0, 2, 1), z)
    idx = np.arange(c.shape[1])
    c[:, idx, idx] = 1.0
    return c


def geometry_of_windows(windows: np.ndarray) -> np.ndarray:
    """Return (K, 9) geometry targets (:data:`GEOMETRY_NAMES`) of K consecutive windows.

    ``windows``: (K, W, N) finite returns; window k's ``drift_top3`` is measured against
    window k − 1 (NaN for k = 0).  Raises ``ValueError`` for a bad shape or NaN input.
    """
    r = np.asarray(windows, dtype=np.float64)
    if r.ndim != 3 or r.shape[1] < 3 or r.shape[2] < 6:
        raise ValueError(f"geometry needs (K windows, W >= 3 days, N >= 6 stocks), got {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError("geometry needs finite returns (the window has NaN)")
    n = r.shape[2]
    with _one_blas_thread():
        c = _corr_batch(r)
        lam, vec = np.linalg.eigh(c)  # ascending
    lam = np.clip(lam[:, ::-1], 0.0, None)
    vec = vec[:, :, ::-1]
    tr = lam.sum(axis=1)
    out = np.empty((r.shape[0], len(GEOMETRY_NAMES)))
    out[:, 0] = (c.sum(axis=(1, 2)) - n) / (n * (n - 1))
    out[:, 1] = lam[:, 0] / tr
    out[:, 2] = tr**2 / (lam**2).sum(axis=1) / n
    rest = lam[:, 1:]
    out[:, 3] = rest.sum(axis=1) ** 2 / (rest**2).sum(axis=1) / (n - 1)
    u = vec[:, :, :3]
    out[0, 4] = np.nan
    if r.shape[0] > 1:
        overlap = np.einsum("kia,kib->kab", u[:-1], u[1:])
        out[1:, 4] = 1.0 - (overlap**2).sum(axis=(1, 2)) / 3.0
    out[:, 5:9] = lam[:, 1:5] / tr[:, None]
    return out


def geometry(window: np.ndarray, previous: np.ndarray | None = None) -> dict[str, float]:
    """Geometry targets of one (W, N) window as a dict (``drift_top3`` needs ``previous``)."""
    w = np.asarray(window, dtype=np.float64)
    stack = w[None] if previous is None else np.stack([np.asarray(previous, np.float64), w])
    row = geometry_of_windows(stack)[-1]
    return {k: float(v) for k, v in zip(GEOMETRY_NAMES, row, strict=True)}


def marchenko_pastur(n_stocks: int, n_days: int) -> dict[str, float]:
    """Noise baseline of the geometry for N = ``n_stocks``, W = ``n_days`` (q = N / W).

    Returns the spectrum edges ``lambda_minus``/``lambda_plus`` and the expected noise
    values of ``mean_corr`` (0), ``lmax_share`` (λ+ / N) and ``pr_frac`` (1 / (1 + q):
    E Σλ² ≈ N (1 + q) for a sample correlation matrix of independent series).
    """
    if n_stocks < 2 or n_days < 2:
        raise ValueError(f"marchenko_pastur needs N >= 2 and W >= 2, got {n_stocks}, {n_days}")
    q = n_stocks / n_days
    lp = (1 + math.sqrt(q)) ** 2
    return {"q": q, "lambda_minus": (1 - math.sqrt(q)) ** 2 if q <= 1 else 0.0, "lambda_plus": lp,
            "mean_corr": 0.0, "lmax_share": lp / n_stocks, "pr_frac": 1.0 / (1.0 + q)}
