"""The daily dollar-neutral rank book of many formulas at once, on torch (DESIGN §4).

The same contract as :func:`gymkit.verifiers.book.book_pnl`, vectorised over a leading
formula axis: at close(t) the values are ranked across stocks (non-finite excluded, ties
averaged), centred and divided by Σ|centred| (gross 1); fewer than 2 finite values or a
constant row hold nothing.  gross_t = Σ_i w·fwd (a NaN forward return counts 0, split
into the long and short legs as the CPU kernel does), turnover_t = Σ_i |w_t − w_{t−1}|
(the book starts from zero), net = gross − cost with the train cost model
(``bps_per_turnover`` · 1e-4 · turnover).

Weights are bit-identical to the CPU book (centred ranks are multiples of 0.5, so every
sum in them is exact).  With ``exact=True`` (the default) the per-day sums over stocks
(legs, turnover) are the CPU kernel's stock-order chains, one step per stock vectorised
over formulas and days: bit-identical.  ``exact=False`` takes torch reductions instead
(one kernel each; a few ulps of the sum apart, measured in benchmarks/RESULTS.md).
Not here: the IC, realistic (holdout) costs, metrics and CPCV.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gymkit.bulk.ops import ranks2
from gymkit.bulk.rowsum import seq_sum

__all__ = ["BookBatch", "book_many", "book_weights_many"]

_BPS = 1e-4


@dataclass(frozen=True, slots=True)
class BookBatch:
    """Per formula b: ``weights[b]`` (D, N), ``gross[b]``, ``turnover[b]``, ``long[b]``,
    ``short[b]``, ``net[b]`` (D,)."""

    weights: torch.Tensor
    gross: torch.Tensor
    turnover: torch.Tensor
    long: torch.Tensor
    short: torch.Tensor
    net: torch.Tensor


def book_weights_many(values: torch.Tensor) -> torch.Tensor:
    """Gross-1 centred rank weights of each row of ``values`` (..., N): 0 where not finite,
    all 0 for a row with < 2 finite values or a constant row; as the CPU ``book_weights``."""
    r2, n = ranks2(values)
    centre = 0.5 * (n + 1.0)
    c = torch.where(r2 > 0.0, 0.5 * r2 - centre, 0.0)
    gross = torch.abs(c).sum(dim=-1, keepdim=True)  # multiples of 0.5: exact in any order
    hold = (n >= 2.0) & (gross != 0.0)
    return torch.where(hold, c / torch.where(hold, gross, 1.0), 0.0)


def book_many(values: torch.Tensor, fwd: torch.Tensor, rows: slice,
              bps_per_turnover: float = 0.0, *, exact: bool = True) -> BookBatch:
    """Book and P&L of every formula: ``values`` (B, T, N), ``fwd`` (T, N) the open-to-open
    forward returns (NaN where unknown), ``rows`` the judged signal rows (step 1);
    ``exact``: stock-order sums as the CPU kernel (bit-identical) or torch reductions."""
    r0, r1, step = rows.indices(values.shape[-2])
    if step != 1:
        raise ValueError("rows must be a step-1 slice")
    w = book_weights_many(values[:, r0:r1])
    f = fwd[r0:r1]
    f0 = torch.where(torch.isfinite(f), f, 0.0)
    pos = torch.where(w > 0.0, w, 0.0)  # max(w, 0.0) as the CPU kernel: -0.0 stays -0.0
    lterm = pos * f0
    sterm = (w - pos) * f0
    prev = torch.cat([torch.zeros_like(w[:, :1]), w[:, :-1]], dim=1)
    tterm = torch.abs(w - prev)
    if exact:  # (acc + term_j), in stock order: one chain per row (rowsum.seq_sum)
        long, short, turnover = seq_sum(torch.stack([lterm, sterm, tterm]))
    else:
        long, short, turnover = lterm.sum(dim=-1), sterm.sum(dim=-1), tterm.sum(dim=-1)
    gross = long + short
    net = gross - (bps_per_turnover * _BPS) * turnover
    return BookBatch(w, gross, turnover, long, short, net)
