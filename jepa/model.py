"""The JEPA world model (torch): per-stock window encoder, EMA target, narrow predictor, aux head.

Shapes: a batch of windows is (B, N stocks, C = 7 features + 1 mask flag, W days).

* :class:`Encoder` — per stock: three strided 1-D convolutions over time (kernel 5, stride 2),
  mean- and max-pooled, projected to H = 64; one pre-norm transformer layer *across stocks*
  (4 heads) so a stock's latent sees the others (correlation structure lives between
  stocks); a linear map to the latent, D = 32 per stock.
* :class:`Predictor` — narrow MLP (2D → 64 → 64 → D) of [own latent, mean latent of the
  window], added to the layer-normed own latent: predicts each stock's latent of the *next*
  window (starts as persistence, learns the change).
* :class:`GeometryHead` — MLP of [mean, std over stocks] of the predicted latents → the 9
  correlation-geometry targets of the next window (:mod:`.geometry`), standardised.
* The target encoder is an EMA copy of the encoder (momentum 0.996 → 1.0 on a cosine
  schedule), never trained by gradient; targets are layer-normed (no affine) and detached.

Loss (:func:`jepa_loss`): smooth-L1(prediction, target) + ``var_weight``·variance hinge +
``cov_weight``·covariance penalty on the context latents (rows = batch × stocks, plus the
per-stock spread across windows, so latents cannot go constant across windows) +
``aux_weight`` (0.1)·MSE of the geometry head.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["JEPA", "Encoder", "GeometryHead", "JEPAConfig", "ParamDecoder", "Predictor", "jepa_loss",
           "make_masks"]


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
    ema_start: float = 0.996
    ema_end: float = 1.0
    aux_weight: float = 0.1
    var_weight: float = 1.0
    cov_weight: float = 0.04
    epochs: int = 16
    batch: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.01
    pred_weight_decay: float = 0.01
    stride: int = 4
    val_days: int = 504
    seed: int = 20250820

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return asdict(self)


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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, ch, w = x.shape
        h = self.conv(x.reshape(b * n, ch, w))
        h = self.proj(torch.cat([h.mean(-1), h.amax(-1)], dim=-1)).reshape(b, n, -1)
        a = self.norm1(h)
        h = h + self.attn(a, a, a, need_weights=False)[0]
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

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        ctx = z.mean(dim=1, keepdim=True).expand_as(z)
        return F.layer_norm(z, (self.latent,)) + self.net(torch.cat([z, ctx], dim=-1))


class GeometryHead(nn.Module):
    """Predicted latents (B, N, D) → standardised geometry targets (B, 9)."""

    def __init__(self, c: JEPAConfig) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * c.latent, c.hidden), nn.GELU(),
                                 nn.Linear(c.hidden, c.n_geometry))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([z.mean(dim=1), z.std(dim=1)], dim=-1))


class ParamDecoder(nn.Module):
    """Frozen latents (B, N, D) → standardised window parameters (B, N, 5) (:mod:`.decoder`)."""

    def __init__(self, c: JEPAConfig, n_params: int = 5) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * c.latent, c.hidden), nn.GELU(),
                                 nn.Linear(c.hidden, c.hidden), nn.GELU(),
                                 nn.Linear(c.hidden, n_params))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        ctx = z.mean(dim=1, keepdim=True).expand_as(z)
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
        self.predictor = Predictor(c)
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
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Frozen latents of unmasked windows (the target encoder, used by decoder and shifts)."""
        return self.target(x)


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


def variance_covariance(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """VICReg-style hinge terms on (B, N, D) latents: rows = batch × stocks, and across windows.

    variance = mean over dims of relu(1 − std) over all rows, plus the same for the spread
    across windows of each stock (mean over stocks); covariance = Σ off-diagonal cov² / D.
    """
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


def jepa_loss(model: JEPA, x_ctx: torch.Tensor, x_next: torch.Tensor, geom_next: torch.Tensor,
              ) -> tuple[torch.Tensor, dict[str, float]]:
    """Total loss and its parts for one batch (module doc)."""
    c = model.config
    z = model.encoder(x_ctx)
    pred = model.predictor(z)
    with torch.no_grad():
        tgt = F.layer_norm(model.target(x_next), (c.latent,))
    l_pred = F.smooth_l1_loss(pred, tgt)
    var, cov = variance_covariance(z)
    l_aux = F.mse_loss(model.geometry(pred), geom_next)
    total = l_pred + c.var_weight * var + c.cov_weight * cov + c.aux_weight * l_aux
    parts = {"total": total, "pred": l_pred, "var": var, "cov": cov, "aux": l_aux}
    return total, {k: float(v.detach()) for k, v in parts.items()}
