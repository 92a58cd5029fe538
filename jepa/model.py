"""The JEPA world model (torch): per-stock window encoder, EMA target, narrow predictor, aux head.

Shapes: a batch of windows is (B, N stocks, C = 7 features + 1 mask flag, W days).

* :class:`Encoder` — per stock: three strided 1-D convolutions over time (kernel 5, stride 2),
  mean- and max-pooled, projected to H = 64; one pre-norm transformer layer *across stocks*
  (4 heads) so a stock's latent sees the others (correlation structure lives between
  stocks); a linear map to the latent, D = 32 per stock.
* :class:`AnchoredPredictor` (the shipped one, ``predictor_kind="anchored"``) — a gated
  residual on persistence: the layer-normed current latent, pulled by a learnt rate toward
  the stock's anchor (running mean of its targets), plus a gated MLP whose gate starts at 0
  and is penalised; :class:`Predictor` (``"residual"``, the first model) — narrow MLP
  (2D → 64 → 64 → D) of [own latent, mean latent] added to the layer-normed own latent.
  With ``predictor_input="frozen"`` the predictor reads the frozen (target) encoder's latent
  at inference and learns on both that and the online latent of the masked context.
* :class:`GeometryHead` — MLP of [mean, std over stocks] of the predicted latents → the 9
  correlation-geometry targets of the next window (:mod:`.geometry`), standardised.
* The target encoder is an EMA copy of the encoder (momentum 0.99 → 1.0 on a cosine
  schedule), never trained by gradient; targets are layer-normed (no affine) and detached.

Loss (:func:`jepa_loss`): smooth-L1(prediction, target) + ``var_weight``·variance hinge +
``cov_weight``·covariance penalty on the context latents (rows = batch × stocks, plus the
per-stock spread across windows, so latents cannot go constant across windows) +
``aux_weight`` (0.1)·MSE of the geometry head + ``self_weight``·smooth-L1(masked context's
latent, target latent of the full context window) + ``gate_weight``·g² (anchored predictor).
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["JEPA", "AnchoredPredictor", "Encoder", "GeometryHead", "JEPAConfig", "ParamDecoder", "Predictor", "jepa_loss",
           "make_masks", "stock_mean"]


@dataclass(frozen=True)
class JEPAConfig:
    """Architecture and training hyper-parameters (stored in the checkpoint)."""

    window: int = 126
    n_features: int = 7
    hidden: int = 64
    latent: int = 32
    pred_hidden: int = 64
    heads: int = 4
    n_geometry: int = 9
    mask_ratio: float = 0.25
    mask_span: int = 8
    ema_start: float = 0.99
    ema_end: float = 1.0
    aux_weight: float = 0.1
    var_weight: float = 1.0
    cov_weight: float = 1.0
    epochs: int = 16
    batch: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.01
    pred_weight_decay: float = 0.01
    stride: int = 4
    val_days: int = 504
    seed: int = 20250820
    self_weight: float = 1.0
    predictor_kind: str = "anchored"
    gate_weight: float = 0.1
    n_stocks: int = 46
    select_days: int = 378
    predictor_input: str = "frozen"
    pull_init: float = -1.5
    anchor_momentum: float = 0.98

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return asdict(self)


def stock_mean(z: torch.Tensor, present: torch.Tensor | None) -> torch.Tensor:
    """(B, 1, D) mean over stocks of (B, N, D) ``z``; over the present stocks only when
    ``present`` (B, N) bool is given."""
    if present is None:
        return z.mean(dim=1, keepdim=True)
    w = present.to(z.dtype).unsqueeze(-1)
    return (z * w).sum(dim=1, keepdim=True) / w.sum(dim=1, keepdim=True).clamp_min(1.0)


class Encoder(nn.Module):
    """Window (B, N, C, W) → one latent per stock (B, N, D) (module doc)."""

    def __init__(self, c: JEPAConfig) -> None:
        super().__init__()
        ch = c.n_features + 1
        self.conv = nn.Sequential(
            nn.Conv1d(ch, 32, 5, stride=2, padding=2), nn.GELU(),
            nn.Conv1d(32, 48, 5, stride=2, padding=2), nn.GELU(),
            nn.Conv1d(48, c.hidden, 5, stride=2, padding=2), nn.GELU(),
        )
        self.proj = nn.Linear(2 * c.hidden, c.hidden)
        self.norm1 = nn.LayerNorm(c.hidden)
        self.attn = nn.MultiheadAttention(c.hidden, c.heads, batch_first=True)
        self.norm2 = nn.LayerNorm(c.hidden)
        self.ff = nn.Sequential(nn.Linear(c.hidden, 2 * c.hidden), nn.GELU(),
                                nn.Linear(2 * c.hidden, c.hidden))
        self.out = nn.Linear(c.hidden, c.latent)

    def forward(self, x: torch.Tensor, present: torch.Tensor | None = None) -> torch.Tensor:
        """``present`` (B, N) bool: stocks absent from a window are not attended to."""
        b, n, ch, w = x.shape
        h = self.conv(x.reshape(b * n, ch, w))
        h = self.proj(torch.cat([h.mean(-1), h.amax(-1)], dim=-1)).reshape(b, n, -1)
        a = self.norm1(h)
        if present is None:
            h = h + self.attn(a, a, a, need_weights=False)[0]
        else:
            h = h + self.attn(a, a, a, key_padding_mask=~present, need_weights=False)[0]
        h = h + self.ff(self.norm2(h))
        return self.out(h)


class Predictor(nn.Module):
    """Context latents (B, N, D) → predicted next-window latents (B, N, D).

    Residual on the layer-normed context latent (the last layer starts at zero, so an
    untrained predictor *is* persistence and training learns the change: mean reversion of
    volatility, correlation and volume regimes).
    """

    def __init__(self, c: JEPAConfig) -> None:
        super().__init__()
        self.latent = c.latent
        h = c.pred_hidden
        self.net = nn.Sequential(nn.Linear(2 * c.latent, h), nn.GELU(), nn.Linear(h, h), nn.GELU(),
                                 nn.Linear(h, c.latent))
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, z: torch.Tensor, present: torch.Tensor | None = None) -> torch.Tensor:
        ctx = stock_mean(z, present).expand_as(z)
        return F.layer_norm(z, (self.latent,)) + self.net(torch.cat([z, ctx], dim=-1))


class AnchoredPredictor(nn.Module):
    """Current latents (B, N, D) → next-window latents: a gated residual on persistence.

    ``p = ẑ + ρ ⊙ (a_i − ẑ) + g · MLP([ẑ, mean ẑ])`` with ẑ the layer-normed current latent,
    a_i stock i's anchor — a running mean (momentum ``anchor_momentum``) of its layer-normed
    target latents over the training pairs (a per-stock identity, not a gradient parameter)
    — ρ = sigmoid(per-dim rate) the learnt pull toward it (mean reversion of the stock's
    regime; starts at sigmoid(``pull_init``)) and g a learnt scalar gate on the free MLP,
    initialised at 0 and penalised by ``gate_weight``·g² (:func:`jepa_loss`): the predictor
    starts as (nearly) persistence and departs from it only as far as the training pairs pay.
    """

    def __init__(self, c: JEPAConfig) -> None:
        super().__init__()
        if c.n_stocks < 1:
            raise ValueError("the anchored predictor needs n_stocks >= 1 in the JEPAConfig")
        self.latent = c.latent
        self.momentum = c.anchor_momentum
        h = c.pred_hidden
        self.register_buffer("anchor", torch.zeros(c.n_stocks, c.latent))
        self.rate = nn.Parameter(torch.full((c.latent,), float(c.pull_init)))
        self.gate = nn.Parameter(torch.zeros(()))
        self.net = nn.Sequential(nn.Linear(2 * c.latent, h), nn.GELU(), nn.Linear(h, h), nn.GELU(),
                                 nn.Linear(h, c.latent))

    @torch.no_grad()
    def update_anchor(self, target: torch.Tensor, present: torch.Tensor | None = None) -> None:
        """anchor ← m·anchor + (1 − m)·(batch mean of the (B, N, D) layer-normed targets);
        with ``present`` (B, N) the mean is over each stock's present windows, and a stock
        absent from the whole batch keeps its anchor."""
        if present is None:
            self.anchor.mul_(self.momentum).add_(target.mean(dim=0), alpha=1.0 - self.momentum)
            return
        w = present.to(target.dtype).unsqueeze(-1)
        cnt = w.sum(dim=0)  # (N, 1)
        mean = (target * w).sum(dim=0) / cnt.clamp_min(1.0)
        new = self.momentum * self.anchor + (1.0 - self.momentum) * mean
        self.anchor.copy_(torch.where(cnt > 0, new, self.anchor))

    def forward(self, z: torch.Tensor, present: torch.Tensor | None = None) -> torch.Tensor:
        base = F.layer_norm(z, (self.latent,))
        ctx = stock_mean(base, present).expand_as(base)
        pull = torch.sigmoid(self.rate) * (self.anchor - base)
        return base + pull + self.gate * self.net(torch.cat([base, ctx], dim=-1))


class GeometryHead(nn.Module):
    """Predicted latents (B, N, D) → standardised geometry targets (B, 9)."""

    def __init__(self, c: JEPAConfig) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * c.latent, c.hidden), nn.GELU(),
                                 nn.Linear(c.hidden, c.n_geometry))

    def forward(self, z: torch.Tensor, present: torch.Tensor | None = None) -> torch.Tensor:
        if present is None:
            return self.net(torch.cat([z.mean(dim=1), z.std(dim=1)], dim=-1))
        w = present.to(z.dtype).unsqueeze(-1)
        n = w.sum(dim=1)
        mean = (z * w).sum(dim=1) / n.clamp_min(1.0)
        var = (((z - mean.unsqueeze(1)) ** 2) * w).sum(dim=1) / (n - 1.0).clamp_min(1.0)
        return self.net(torch.cat([mean, var.sqrt()], dim=-1))


class ParamDecoder(nn.Module):
    """Frozen latents (B, N, D) → standardised window parameters (B, N, 5) (:mod:`.decoder`)."""

    def __init__(self, c: JEPAConfig, n_params: int = 5) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * c.latent, c.hidden), nn.GELU(),
                                 nn.Linear(c.hidden, c.hidden), nn.GELU(),
                                 nn.Linear(c.hidden, n_params))

    def forward(self, z: torch.Tensor, present: torch.Tensor | None = None) -> torch.Tensor:
        ctx = stock_mean(z, present).expand_as(z)
        return self.net(torch.cat([z, ctx], dim=-1))


class JEPA(nn.Module):
    """Encoder + EMA target encoder + predictor + geometry head."""

    def __init__(self, c: JEPAConfig) -> None:
        super().__init__()
        self.config = c
        self.encoder = Encoder(c)
        self.target = copy.deepcopy(self.encoder)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.predictor = AnchoredPredictor(c) if c.predictor_kind == "anchored" else Predictor(c)
        self.geometry = GeometryHead(c)

    def n_trainable(self) -> int:
        """Number of trainable parameters (the target encoder is a copy, not counted)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    @torch.no_grad()
    def ema_update(self, momentum: float) -> None:
        """target ← momentum·target + (1 − momentum)·encoder."""
        for t, s in zip(self.target.parameters(), self.encoder.parameters(), strict=True):
            t.mul_(momentum).add_(s.detach(), alpha=1.0 - momentum)

    @torch.no_grad()
    def encode(self, x: torch.Tensor, present: torch.Tensor | None = None) -> torch.Tensor:
        """Frozen latents of unmasked windows (the target encoder, used by decoder and shifts)."""
        return self.target(x, present)


def ema_momentum(step: int, total: int, c: JEPAConfig) -> float:
    """Cosine schedule from ``ema_start`` (step 0) to ``ema_end`` (last step)."""
    frac = step / max(1, total - 1)
    return c.ema_end - (c.ema_end - c.ema_start) * (math.cos(math.pi * frac) + 1) / 2


def make_masks(rng: np.random.Generator, b: int, n: int, c: JEPAConfig) -> np.ndarray:
    """(B, N, W) bool masks: per stock, spans of ``mask_span`` days covering ≥ ``mask_ratio``.

    Spans sit on a grid of span-sized slots shifted by a random offset per window; each stock
    draws its own slots, so ≈ 25% of stock-day cells are hidden in 8-day runs.
    """
    w, span = c.window, c.mask_span
    slots = w // span
    k = math.ceil(c.mask_ratio * w / span)
    offset = rng.integers(0, w - slots * span + 1, size=b)
    pick = np.argsort(rng.random((b, n, slots)), axis=-1)[..., :k]  # k distinct slots
    mask = np.zeros((b, n, w), dtype=bool)
    for j in range(span):
        cols = offset[:, None, None] + pick * span + j
        np.put_along_axis(mask, cols, True, axis=-1)
    return mask


def apply_mask(x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Zero masked cells of (B, N, F, W) ``x`` and append the mask flag channel → (B, N, F+1, W)."""
    if mask is None:
        flag = np.zeros((x.shape[0], x.shape[1], 1, x.shape[3]), dtype=np.float32)
        return np.concatenate([x, flag], axis=2)
    m = mask[:, :, None, :]
    return np.concatenate([np.where(m, 0.0, x).astype(np.float32), m.astype(np.float32)], axis=2)


def variance_covariance(z: torch.Tensor, present: torch.Tensor | None = None,
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """VICReg-style hinge terms on (B, N, D) latents: rows = batch × stocks, and across windows.

    variance = mean over dims of relu(1 − std) over all rows, plus the same for the spread
    across windows of each stock (mean over stocks); covariance = Σ off-diagonal cov² / D.
    With ``present`` (B, N) only present rows count (the across-window term over the stocks
    present in at least two windows of the batch).
    """
    if present is not None:
        return _masked_variance_covariance(z, present)
    b, n, d = z.shape
    flat = z.reshape(b * n, d)
    flat = flat - flat.mean(dim=0)
    std = torch.sqrt(flat.var(dim=0) + 1e-4)
    var = F.relu(1.0 - std).mean()
    if b > 1:
        std_w = torch.sqrt(z.var(dim=0) + 1e-4)  # (N, D): across windows
        var = var + F.relu(1.0 - std_w).mean()
    cov = flat.T @ flat / (b * n - 1)
    off = cov - torch.diag(torch.diag(cov))
    return var, (off**2).sum() / d


def _masked_variance_covariance(z: torch.Tensor, present: torch.Tensor,
                                ) -> tuple[torch.Tensor, torch.Tensor]:
    d = z.shape[-1]
    flat = z[present]  # (R, D)
    flat = flat - flat.mean(dim=0)
    std = torch.sqrt(flat.var(dim=0) + 1e-4)
    var = F.relu(1.0 - std).mean()
    w = present.to(z.dtype).unsqueeze(-1)  # (B, N, 1)
    cnt = w.sum(dim=0)  # (N, 1)
    keep = cnt[:, 0] >= 2
    if keep.any():
        mean = (z * w).sum(dim=0) / cnt.clamp_min(1.0)
        v = (((z - mean) ** 2) * w).sum(dim=0) / (cnt - 1.0).clamp_min(1.0)
        var = var + F.relu(1.0 - torch.sqrt(v[keep] + 1e-4)).mean()
    cov = flat.T @ flat / (flat.shape[0] - 1)
    off = cov - torch.diag(torch.diag(cov))
    return var, (off**2).sum() / d


def _masked_smooth_l1(a: torch.Tensor, b: torch.Tensor, present: torch.Tensor | None) -> torch.Tensor:
    if present is None:
        return F.smooth_l1_loss(a, b)
    e = F.smooth_l1_loss(a, b, reduction="none").mean(dim=-1)  # (B, N)
    w = present.to(e.dtype)
    return (e * w).sum() / w.sum().clamp_min(1.0)


def jepa_loss(model: JEPA, x_ctx: torch.Tensor, x_next: torch.Tensor, geom_next: torch.Tensor,
              x_full: torch.Tensor | None = None, present: tuple[torch.Tensor, torch.Tensor] | None = None,
              ) -> tuple[torch.Tensor, dict[str, float]]:
    """Total loss and its parts for one batch (module doc).

    ``x_full``: the unmasked context window; with ``self_weight`` > 0 the masked context's
    layer-normed latent must also match the target encoder's latent of the full window (the
    I-JEPA masked-prediction term), which keeps the online encoder on the target's latent —
    the predictor's persistence base — instead of drifting away from it.

    ``present``: (context, next) (B, N) bool presence of each stock in the two windows of a
    market with missing cells (:func:`gymkit.jepa.features.window_present`): absent stocks
    are not attended to, not pooled, and every loss term averages over the stocks present in
    both windows only.
    """
    c = model.config
    p_ctx, p_next = (None, None) if present is None else present
    both = None if present is None else p_ctx & p_next
    z = model.encoder(x_ctx, p_ctx)
    pred = model.predictor(z, p_ctx)
    frozen = c.predictor_input == "frozen" and x_full is not None
    with torch.no_grad():
        tgt = F.layer_norm(model.target(x_next, p_next), (c.latent,))
        cur = (model.target(x_full, p_ctx) if (frozen or c.self_weight > 0) and x_full is not None
               else None)
    l_pred = _masked_smooth_l1(pred, tgt, both)
    if frozen:  # the predictor also learns on the frozen latent it reads at inference
        l_pred = 0.5 * (l_pred + _masked_smooth_l1(model.predictor(cur, p_ctx), tgt, both))
    if isinstance(model.predictor, AnchoredPredictor):
        model.predictor.update_anchor(tgt, both)
    var, cov = variance_covariance(z, both)
    l_aux = F.mse_loss(model.geometry(pred, both), geom_next)
    total = l_pred + c.var_weight * var + c.cov_weight * cov + c.aux_weight * l_aux
    parts = {"total": total, "pred": l_pred, "var": var, "cov": cov, "aux": l_aux}
    if c.self_weight > 0 and cur is not None:
        l_self = _masked_smooth_l1(F.layer_norm(z, (c.latent,)), F.layer_norm(cur, (c.latent,)), both)
        total = total + c.self_weight * l_self
        parts["self"] = l_self
    if c.gate_weight > 0 and isinstance(model.predictor, AnchoredPredictor):
        l_gate = model.predictor.gate ** 2
        total = total + c.gate_weight * l_gate
        parts["gate"] = l_gate
    parts["total"] = total
    return total, {k: float(v.detach()) for k, v in parts.items()}
