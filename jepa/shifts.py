"""Shift channels: four directions in the JEPA latent space (DESIGN §7), numpy only.

For each channel a statistic of a window of daily log returns r (W days, N stocks):

================  ===========================================================================
``volatility``    median across stocks of std(r) (the volatility regime)
``correlation``   mean off-diagonal correlation of r
``trend``         the equal-weight market's log return over the window (the "trend flip"
                  world shifts it down)
``dispersion``    cross-sectional std of the stocks' window log returns divided by the
                  median std(r)·√W (dispersion between stocks, in units of their own noise,
                  so it is not the volatility regime again)
================  ===========================================================================

Direction of a channel = mean latent (all stocks' latents of a window, flattened to N·D) of
the train windows in the top third by the statistic minus the mean over the bottom third.
The four are Gram–Schmidt orthogonalised in :data:`SHIFT_ORDER` (the regime channels
first) and normalised; a channel's *spread* is the std over train windows of the latents'
projection on its unit direction, so a shift of size α moves every window's latent by
α·spread along the direction — α in units of the train-window spread.

*Regime* channels (:data:`REGIMES`, DESIGN §7's "volatility regime" taken as what it names):
several statistics moved together on purpose, each the declared way.  A regime's direction is
the mean latent of the train windows in the top third by its *stress index* (the mean over its
signature of sign × the statistic's z-score across the train windows) minus the bottom third's,
normalised and **not** orthogonalised (the joint move is the point); its spread as for every
channel (:func:`with_regimes`; why: jepa/README.md "Regime worlds").

*Selective* directions (``gymkit jepa worlds --shifts selective``; the stored ones stay the
default): combinations of the top :data:`SELECTIVE_BASIS` principal directions of the
train-window latents whose measured first-order effect on the decoded worlds moves the
channel's own statistic and the others at most :data:`SELECTIVE_MARGIN` × as much
(:func:`selective_directions`; the responses are measured by
:func:`gymkit.jepa.generate.response_matrix`; why: jepa/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import geometry_of_windows

__all__ = ["REGIMES", "SELECTIVE_BASIS", "SELECTIVE_MARGIN", "SHIFT_ORDER", "ShiftDirections",
           "principal_directions", "selective_coefficients", "selective_directions", "shift",
           "stress_index", "window_statistics", "with_regimes"]

#: Channels in Gram–Schmidt order.
SHIFT_ORDER: tuple[str, ...] = ("volatility", "correlation", "trend", "dispersion")
#: Selective directions (:func:`selective_directions`): the number of principal directions of
#: the train-window latents they are combined from, and the largest response of another
#: statistic the fit allows per unit of the channel's own (first order, on a calibration draw
#: that is not the shift gate's: a margin under the gate's 0.5, which is unchanged).
SELECTIVE_BASIS = 12
SELECTIVE_MARGIN = 0.25
#: Regime channels: name → signature (statistic → +1 it rises, −1 it falls).  ``crash``: the
#: textbook stress regime — volatility up, correlations toward one, the market falling, and
#: stocks moving together (less dispersion in units of their own noise).
REGIMES: dict[str, dict[str, int]] = {
    "crash": {"volatility": 1, "correlation": 1, "trend": -1, "dispersion": -1},
}


def window_statistics(r: np.ndarray) -> dict[str, np.ndarray]:
    """The four channel statistics (module doc) of (K, W, N) return windows, each (K,).

    With NaN (a market with missing cells) each window's statistics are those of the stocks
    with a return on every day of that window (windows with the same stock set in one batch).
    """
    if not np.isfinite(r).all():
        return _masked_window_statistics(r)
    w = r.shape[1]
    sd = r.std(axis=1, ddof=1)  # (K, N)
    cum = r.sum(axis=1)
    med = np.median(sd, axis=1)
    return {
        "volatility": med,
        "correlation": geometry_of_windows(r)[:, 0],
        "trend": cum.mean(axis=1),
        "dispersion": cum.std(axis=1) / (med * np.sqrt(w)),
    }


def _masked_window_statistics(r: np.ndarray) -> dict[str, np.ndarray]:
    cols = np.isfinite(r).all(axis=1)  # (K, N)
    out = {k: np.full(r.shape[0], np.nan) for k in SHIFT_ORDER}
    groups: dict[bytes, list[int]] = {}
    for k in range(r.shape[0]):
        groups.setdefault(np.packbits(cols[k]).tobytes(), []).append(k)
    for ks in groups.values():
        sel = np.flatnonzero(cols[ks[0]])
        if sel.size < 6:  # the correlation geometry needs 6 stocks: the window has no statistics
            continue
        st = window_statistics(r[ks][:, :, sel])
        for name, v in st.items():
            out[name][ks] = v
    return out


@dataclass(frozen=True)
class ShiftDirections:
    """Unit directions (C, N·D) and spreads (C,) of C channels (the four of
    :data:`SHIFT_ORDER`, plus any regime added by :func:`with_regimes`)."""

    names: tuple[str, ...]
    directions: np.ndarray
    spreads: np.ndarray
    raw_cosines: np.ndarray  # cosine between the raw (pre Gram–Schmidt) directions

    @classmethod
    def fit(cls, latents: np.ndarray, stats: dict[str, np.ndarray],
            order: tuple[str, ...] = SHIFT_ORDER) -> ShiftDirections:
        """Directions from (K, N, D) train-window latents and their statistics (module doc)."""
        k = latents.shape[0]
        flat = latents.reshape(k, -1)
        raw = []
        for name in order:
            s = stats[name]
            if not np.isfinite(s).all():
                raise ValueError(f"shift statistic {name!r} is not defined on every train window")
            lo, hi = np.quantile(s, [1 / 3, 2 / 3])
            raw.append(flat[s >= hi].mean(axis=0) - flat[s <= lo].mean(axis=0))
        raw_a = np.array(raw)
        unit_raw = raw_a / np.linalg.norm(raw_a, axis=1, keepdims=True)
        basis: list[np.ndarray] = []
        for v in raw_a:
            u = v.copy()
            for b in basis:
                u -= (u @ b) * b
            basis.append(u / np.linalg.norm(u))
        d = np.array(basis)
        spreads = (flat - flat.mean(axis=0)) @ d.T
        return cls(tuple(order), d, spreads.std(axis=0), unit_raw @ unit_raw.T)

    def index(self, name: str) -> int:
        """Row of channel ``name``; ``ValueError`` naming the known channels otherwise."""
        if name not in self.names:
            raise ValueError(f"unknown shift channel {name!r}; expected one of {list(self.names)}")
        return self.names.index(name)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Arrays for a checkpoint (names as a str array)."""
        return {"shift_names": np.array(self.names), "shift_directions": self.directions,
                "shift_spreads": self.spreads, "shift_raw_cosines": self.raw_cosines}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> ShiftDirections:
        """Inverse of :meth:`to_arrays`."""
        return cls(tuple(str(x) for x in a["shift_names"]), np.asarray(a["shift_directions"]),
                   np.asarray(a["shift_spreads"]), np.asarray(a["shift_raw_cosines"]))


def stress_index(stats: dict[str, np.ndarray], signature: dict[str, int]) -> np.ndarray:
    """(K,) mean over ``signature`` of sign × the statistic's z-score across the K windows."""
    z = []
    for name, sign in signature.items():
        s = np.asarray(stats[name], dtype=np.float64)
        if not np.isfinite(s).all():
            raise ValueError(f"regime statistic {name!r} is not defined on every train window")
        if not s.std() > 0:
            raise ValueError(f"regime statistic {name!r} is constant over the train windows")
        z.append(sign * (s - s.mean()) / s.std())
    return np.mean(z, axis=0)


def with_regimes(dirs: ShiftDirections, latents: np.ndarray, stats: dict[str, np.ndarray],
                 regimes: dict[str, dict[str, int]] = REGIMES) -> ShiftDirections:
    """``dirs`` plus one channel per regime (module doc), fitted on (K, N, D) train-window
    ``latents`` and their statistics.  ``raw_cosines``: ``dirs``' own block as it was, and each
    regime's row and column its cosine with every unit direction (a regime is not
    orthogonalised, so its cosines are those of the directions it is shifted along)."""
    flat = latents.reshape(latents.shape[0], -1)
    rows = []
    for signature in regimes.values():
        s = stress_index(stats, signature)
        lo, hi = np.quantile(s, [1 / 3, 2 / 3])
        v = flat[s >= hi].mean(axis=0) - flat[s <= lo].mean(axis=0)
        rows.append(v / np.linalg.norm(v))
    d = np.vstack([dirs.directions, *rows])
    spreads = ((flat - flat.mean(axis=0)) @ np.array(rows).T).std(axis=0)
    cos = d @ d.T
    n = len(dirs.names)
    cos[:n, :n] = dirs.raw_cosines
    return ShiftDirections((*dirs.names, *regimes), d, np.concatenate([dirs.spreads, spreads]), cos)


def shift(latents: np.ndarray, dirs: ShiftDirections, name: str, alpha: float) -> np.ndarray:
    """(K, N, D) latents moved by ``alpha`` train spreads along channel ``name``."""
    i = dirs.index(name)
    step = alpha * dirs.spreads[i] * dirs.directions[i]
    return latents + step.reshape(latents.shape[1:])[None]


def principal_directions(latents: np.ndarray, p: int = SELECTIVE_BASIS) -> ShiftDirections:
    """The top ``p`` principal directions of (K, N, D) train-window latents (flattened to N·D)
    as channels ``pc0 … pc{p-1}``, each with its train-window spread (module doc)."""
    flat = latents.reshape(latents.shape[0], -1)
    centred = flat - flat.mean(axis=0)
    p = min(int(p), *centred.shape)
    vt = np.linalg.svd(centred, full_matrices=False)[2][:p]
    return ShiftDirections(tuple(f"pc{i}" for i in range(p)), vt, (centred @ vt.T).std(axis=0),
                           vt @ vt.T)


def selective_coefficients(response: np.ndarray, k: int,
                           margin: float = SELECTIVE_MARGIN) -> np.ndarray | None:
    """The smallest ``a`` (Euclidean norm) with ``response[k] @ a == 1`` and
    ``|response[j] @ a| <= margin`` for every other row ``j``; ``None`` when none exists.

    ``response`` (S, P): row = a statistic, column = its move per unit shift along a basis
    direction.  Exact: every choice of active constraints (each other row free, at +margin or
    at −margin) is solved by least norm and the feasible one of least norm is kept."""
    import itertools

    others = [j for j in range(response.shape[0]) if j != k]
    best = None
    for signs in itertools.product((0.0, -1.0, 1.0), repeat=len(others)):
        rows = [response[k], *(response[j] for j, sg in zip(others, signs, strict=True) if sg)]
        rhs = np.array([1.0, *(sg * margin for sg in signs if sg)])
        a = np.linalg.pinv(np.array(rows)) @ rhs
        if not np.allclose(np.array(rows) @ a, rhs, rtol=0.0, atol=1e-9):
            continue  # these constraints cannot all be active at once
        if all(abs(response[j] @ a) <= margin + 1e-9 for j in others) and (
                best is None or a @ a < best @ best):
            best = a
    return best


def selective_directions(basis: ShiftDirections, response: np.ndarray, latents: np.ndarray,
                         fallback: ShiftDirections, order: tuple[str, ...] = SHIFT_ORDER,
                         margin: float = SELECTIVE_MARGIN) -> tuple[ShiftDirections, dict]:
    """Channel directions that move their own statistic and, to first order, the others at
    most ``margin`` × as much.

    ``response`` (len(order), P): each statistic's move per unit α along each ``basis``
    direction (its rows in ``order``).  Channel k's latent step is Σ_c a_c·spread_c·dir_c with
    ``a`` = :func:`selective_coefficients` (k), normalised; its spread is the train-window
    spread of ``latents`` along it, as for every channel, so α keeps its units.  A channel
    without a solution keeps its ``fallback`` direction.  Returns the directions
    (``raw_cosines``: their cosines) and, per channel, the coefficients and the predicted
    response ``response @ a`` (None for a fallback)."""
    flat = latents.reshape(latents.shape[0], -1)
    centred = flat - flat.mean(axis=0)
    dirs, fit = [], {}
    for k, name in enumerate(order):
        a = selective_coefficients(response, k, margin)
        if a is None:
            dirs.append(fallback.directions[fallback.index(name)])
            fit[name] = None
            continue
        v = (a * basis.spreads) @ basis.directions
        dirs.append(v / np.linalg.norm(v))
        fit[name] = {"coefficients": a.tolist(), "predicted": (response @ a).tolist()}
    d = np.array(dirs)
    return ShiftDirections(tuple(order), d, (centred @ d.T).std(axis=0), d @ d.T), fit
