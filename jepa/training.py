"""Training of the JEPA (phase 1) and of its parameter decoder (phase 2), on the train panel only.

Samples are pairs of consecutive windows of W = 126 return days: the context window at
start s (masked: 25% of stock-day cells in 8-day spans) and the next window at s + W (the
target, unmasked, through the EMA encoder).  The last ``val_days`` (504) return days of the
train panel are never a training target: pairs whose next window reaches into them are the
*late-train* validation pairs of the predictor-vs-persistence gate (reported, never used to
choose anything).  With ``select_days`` > 0 the days just before them are not a training
target either: pairs whose next window lies there form the *selection* slice, the one set
hyper-parameters may be chosen on.

Markets with missing cells (:mod:`.features`): a cell that is not observed enters the encoder
as a masked cell (features 0, mask flag 1, in every window: context, next and full), and the
losses, the predictor-vs-persistence figures and the decoder fit count only the stocks present
in the windows involved; geometry targets are computed on the stocks observed on every day of
both windows of a pair.  A flat stock-window (all its observed returns 0: σ = 0) is absent the
same way (``TrainingData.moving``).  On a complete panel without a flat window nothing of
this runs (``TrainingData.missing`` and ``.moving`` are ``None``).

Determinism: one ``numpy.random.Generator(PCG64(seed))`` draws the batch order and the masks;
``torch.manual_seed(seed)`` the initial weights; ``torch.use_deterministic_algorithms(True)``
and a fixed thread count — the same seed, data and thread count give byte-identical weights
on CPU.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from gymkit.data.panel import Panel

from .features import (
    FeatureScales,
    MarketArraysF,
    day_features,
    market_arrays,
    moving_days,
    observed_days,
    window_batch,
    window_params,
    window_present,
)
from .geometry import geometry_of_windows
from .model import JEPA, JEPAConfig, ParamDecoder, apply_mask, ema_momentum, jepa_loss, make_masks

__all__ = ["TrainingData", "encode", "prediction_losses", "prepare", "present_of", "train_decoder",
           "train_jepa"]


@dataclass
class TrainingData:
    """Everything training reads, computed once from the train panel."""

    panel: Panel
    arrays: MarketArraysF
    scales: FeatureScales
    feats: np.ndarray  # (D, N, 6) float32
    fit_starts: np.ndarray  # context starts of training pairs
    val_starts: np.ndarray  # context starts of late-train validation pairs
    sel_starts: np.ndarray  # context starts of selection pairs (held out of training, before val)
    geom: np.ndarray  # (D - 2W + 1, 9) standardised next-window geometry by context start (0 = unused)
    geom_mean: np.ndarray
    geom_std: np.ndarray
    missing: np.ndarray | None = None  # (D, N) bool return days not observed; None: complete
    #: (D, N) bool observed days with a non-zero return (:func:`~gymkit.jepa.features.moving_days`);
    #: None when no window of the config's length is flat
    moving: np.ndarray | None = None

    @property
    def has_absent(self) -> bool:
        """Whether some (window, stock) can be absent (missing cells or a flat window)."""
        return self.missing is not None or self.moving is not None

    @property
    def n_days(self) -> int:
        """Number of return days."""
        return int(self.feats.shape[0])


def prepare(panel: Panel, c: JEPAConfig) -> TrainingData:
    """Features, pair starts and geometry targets of ``panel`` (the train panel)."""
    m = market_arrays(panel)
    scales = FeatureScales.fit(m)
    feats = day_features(m, scales)
    d, w = feats.shape[0], c.window
    need = 2 * w + c.val_days + c.select_days + 10 * c.stride
    if d < need:
        raise ValueError(f"the JEPA needs at least {need} train days, got {d}")
    fit_end = d - c.val_days  # next windows of training pairs end before this day
    train_end = fit_end - c.select_days  # ... and before the selection slice, if any
    fit_starts = np.arange(0, train_end - 2 * w + 1, c.stride, dtype=np.int64)
    val_starts = np.arange(fit_end - w, d - 2 * w + 1, c.stride, dtype=np.int64)
    sel_starts = (np.arange(train_end - w, fit_end - 2 * w + 1, c.stride, dtype=np.int64)
                  if c.select_days else np.zeros(0, dtype=np.int64))
    r = np.diff(m.log_close, axis=0)
    ok = observed_days(m)
    if ok is not None:  # pairs need the geometry's 6 stocks observed on every day of both windows
        keep = lambda st: st[_complete_columns(ok, st, 2 * w).sum(axis=1) >= 6]  # noqa: E731
        fit_starts, val_starts, sel_starts = keep(fit_starts), keep(val_starts), keep(sel_starts)
        if fit_starts.size == 0 or val_starts.size == 0:
            raise ValueError("the JEPA needs windows where at least 6 stocks have no missing day")
    used = np.union1d(np.union1d(fit_starts, val_starts), sel_starts)
    geom = np.zeros((d - 2 * w + 1, 9))
    if ok is None:
        # geometry of the next window (drift against the context window): interleave (ctx, next)
        idx = used[:, None] + np.arange(w)[None, :]
        pairs = np.stack([r[idx], r[idx + w]], axis=1).reshape(-1, w, r.shape[1])
        geom[used] = geometry_of_windows(pairs)[1::2]
    else:
        geom[used] = _masked_pair_geometry(r, ok, used, w)
    gm, gs = geom[fit_starts].mean(axis=0), geom[fit_starts].std(axis=0)
    return TrainingData(panel, m, scales, feats, fit_starts, val_starts, sel_starts, (geom - gm) / gs,
                        gm, gs, None if ok is None else ~ok, moving_days(m, w))


def _complete_columns(ok: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """(K, N) bool: the stock is observed on every return day of ``starts[k] … + length − 1``."""
    cs = np.vstack([np.zeros((1, ok.shape[1]), dtype=np.int64), np.cumsum(ok, axis=0, dtype=np.int64)])
    s = np.asarray(starts, dtype=np.int64)
    return (cs[s + length] - cs[s]) == length


def _masked_pair_geometry(r: np.ndarray, ok: np.ndarray, starts: np.ndarray, w: int) -> np.ndarray:
    """Next-window geometry of each pair at ``starts`` on the stocks observed on every day of
    both windows (pairs with the same stock set are computed in one batch)."""
    cols = _complete_columns(ok, starts, 2 * w)
    out = np.empty((starts.size, 9))
    keys: dict[bytes, list[int]] = {}
    for k in range(starts.size):
        keys.setdefault(np.packbits(cols[k]).tobytes(), []).append(k)
    for ks in keys.values():
        sel = np.flatnonzero(cols[ks[0]])
        idx = starts[ks][:, None] + np.arange(w)[None, :]
        rr = r[:, sel]
        pairs = np.stack([rr[idx], rr[idx + w]], axis=1).reshape(-1, w, sel.size)
        out[ks] = geometry_of_windows(pairs)[1::2]
    return out


def present_of(data: TrainingData, starts: np.ndarray, w: int) -> np.ndarray | None:
    """(K, N) bool presence of each stock in the ``w``-day windows at ``starts``
    (:func:`gymkit.jepa.features.window_present`); ``None`` on a complete panel without a flat
    window."""
    if not data.has_absent:
        return None
    return window_present(None if data.missing is None else ~data.missing, starts, w, data.moving)


def _present_t(data: TrainingData, starts: np.ndarray, w: int, device: str) -> torch.Tensor | None:
    p = present_of(data, starts, w)
    return None if p is None else torch.from_numpy(p).to(device)


def _batch(data: TrainingData, starts: np.ndarray, c: JEPAConfig, mask: np.ndarray | None,
           device: str) -> torch.Tensor:
    if data.missing is not None:  # a missing cell is a masked cell
        idx = np.asarray(starts)[:, None] + np.arange(c.window)[None, :]
        miss = data.missing[idx].transpose(0, 2, 1)  # (B, N, W)
        mask = miss if mask is None else mask | miss
    x = apply_mask(window_batch(data.feats, starts, c.window), mask)
    return torch.from_numpy(x).to(device)


def set_determinism(threads: int) -> None:
    """Deterministic torch on a fixed number of CPU threads."""
    torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True)


def train_jepa(data: TrainingData, c: JEPAConfig, *, threads: int = 1, device: str = "cpu",
               progress: bool = True, log=sys.stderr, on_epoch=None) -> tuple[JEPA, list[dict[str, float]]]:
    """Train phase 1 (module doc); returns the model (on CPU) and the per-epoch history.

    History rows: epoch, mean train losses (total, pred, var, cov, aux, and self / gate when
    active), late-train validation prediction loss ``val_pred`` and the persistence baseline
    ``val_persist`` (reported, never used to choose anything), and with ``select_days`` the
    same on the selection slice (``sel_pred``, ``sel_persist``).  ``on_epoch(model, row)`` is
    called after each epoch (sweeps use it to log extra figures).
    """
    set_determinism(threads)
    torch.manual_seed(c.seed)
    rng = np.random.default_rng(c.seed)
    model = JEPA(c).to(device)
    pred_params = list(model.predictor.parameters())
    other = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("predictor.")]
    opt = torch.optim.AdamW([{"params": other, "weight_decay": c.weight_decay},
                             {"params": pred_params, "weight_decay": c.pred_weight_decay}], lr=c.lr)
    per_epoch = math.ceil(data.fit_starts.size / c.batch)
    total = c.epochs * per_epoch
    warm = max(1, total // 20)
    history: list[dict[str, float]] = []
    step = 0
    t0 = time.perf_counter()
    for epoch in range(c.epochs):
        order = data.fit_starts[rng.permutation(data.fit_starts.size)]
        sums: dict[str, float] = {}
        model.train()
        for b in range(per_epoch):
            s = order[b * c.batch : (b + 1) * c.batch]
            lr = c.lr * min(1.0, (step + 1) / warm) * 0.5 * (1 + math.cos(math.pi * step / total))
            for g in opt.param_groups:
                g["lr"] = lr
            mask = make_masks(rng, s.size, data.feats.shape[1], c)
            x_ctx = _batch(data, s, c, mask, device)
            x_next = _batch(data, s + c.window, c, None, device)
            x_full = (_batch(data, s, c, None, device)
                      if c.self_weight > 0 or c.predictor_input == "frozen" else None)
            geom = torch.from_numpy(data.geom[s].astype(np.float32)).to(device)
            present = None
            if data.has_absent:
                present = (_present_t(data, s, c.window, device),
                           _present_t(data, s + c.window, c.window, device))
            loss, parts = jepa_loss(model, x_ctx, x_next, geom, x_full, present)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            model.ema_update(ema_momentum(step, total, c))
            for k, v in parts.items():
                sums[k] = sums.get(k, 0.0) + v / per_epoch
            step += 1
        vp, vb = prediction_losses(model, data, data.val_starts, device=device)
        row = {"epoch": epoch + 1, **sums, "val_pred": vp, "val_persist": vb}
        if data.sel_starts.size:
            row["sel_pred"], row["sel_persist"] = prediction_losses(model, data, data.sel_starts,
                                                                    device=device)
        row["seconds"] = time.perf_counter() - t0
        history.append(row)
        if on_epoch is not None:
            on_epoch(model, row)
        if progress:
            print(f"\rjepa epoch {epoch + 1}/{c.epochs}  loss {sums['total']:.4f}  pred "
                  f"{sums['pred']:.4f}  aux {sums['aux']:.3f}  val {vp:.4f} vs persistence {vb:.4f}"
                  f"  [{row['seconds']:.0f}s]", end="\n" if epoch + 1 == c.epochs else "",
                  file=log, flush=True)
    return model.to("cpu").eval(), history


@torch.no_grad()
def prediction_losses(model: JEPA, data: TrainingData, starts: np.ndarray, *,
                      device: str = "cpu") -> tuple[float, float]:
    """(predictor, persistence) smooth-L1 losses against the layer-normed next-window targets.

    The predictor reads the unmasked context window; persistence predicts the next window's
    target latent by the current window's.  With missing cells: over the stocks present in
    both windows.
    """
    c = model.config
    model.eval()
    pred_sum = pers_sum = 0.0
    n = 0
    for lo in range(0, starts.size, 64):
        s = starts[lo : lo + 64]
        x_ctx = _batch(data, s, c, None, device)
        x_next = _batch(data, s + c.window, c, None, device)
        p_ctx = _present_t(data, s, c.window, device)
        p_next = _present_t(data, s + c.window, c.window, device)
        tgt = F.layer_norm(model.target(x_next, p_next), (c.latent,))
        cur = F.layer_norm(model.target(x_ctx, p_ctx), (c.latent,))
        src = model.target if c.predictor_input == "frozen" else model.encoder
        pred = model.predictor(src(x_ctx, p_ctx), p_ctx)
        if p_ctx is None:
            pred_sum += float(F.smooth_l1_loss(pred, tgt, reduction="sum"))
            pers_sum += float(F.smooth_l1_loss(cur, tgt, reduction="sum"))
        else:
            both = (p_ctx & p_next).unsqueeze(-1).to(pred.dtype)
            pred_sum += float((F.smooth_l1_loss(pred, tgt, reduction="none") * both).sum())
            pers_sum += float((F.smooth_l1_loss(cur, tgt, reduction="none") * both).sum())
            n += int(both.sum()) * c.latent
    if not data.has_absent:
        n = starts.size * data.feats.shape[1] * c.latent
    model.train()
    return pred_sum / n, pers_sum / n


@torch.no_grad()
def encode(model: JEPA, data: TrainingData, starts: np.ndarray) -> np.ndarray:
    """(K, N, D) float64 frozen latents (target encoder) of the unmasked windows at ``starts``
    (with missing cells: absent stocks are not attended to; their own latents are returned
    as computed and must be read with :func:`present_of`)."""
    c = model.config
    model.eval()
    out = [model.encode(_batch(data, starts[lo : lo + 64], c, None, "cpu"),
                        _present_t(data, starts[lo : lo + 64], c.window, "cpu")).double().numpy()
           for lo in range(0, starts.size, 64)]
    return np.concatenate(out, axis=0)


@dataclass
class DecoderFit:
    """A fitted parameter decoder with its target standardisation and fit figures."""

    net: ParamDecoder
    mean: np.ndarray  # (N, 5) per-stock train mean of each parameter (the baseline)
    std: np.ndarray  # (5,) std of the deviations from it
    r2: dict[str, float]

    @torch.no_grad()
    def __call__(self, latents: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
        """(K, N, D) latents → (K, N, 5) parameters in model units (stock baseline + deviation);
        ``present`` (K, N): the window mean latent is over the present stocks only."""
        z = torch.from_numpy(np.ascontiguousarray(latents, dtype=np.float32))
        p = None if present is None else torch.from_numpy(np.asarray(present, dtype=bool))
        return self.net(z, p).double().numpy() * self.std + self.mean


def train_decoder(model: JEPA, data: TrainingData, *, steps: int = 2000, stride: int = 7,
                  seed: int | None = None) -> DecoderFit:
    """Phase 2: fit :class:`ParamDecoder` on frozen latents of windows at ``stride`` (all train),
    Adam on mini-batches of 32 windows; targets are deviations from each stock's train mean.
    Reports the in-sample R² of the deviations per parameter."""
    from .features import PARAM_NAMES

    c = model.config
    torch.manual_seed(c.seed + 1 if seed is None else seed)
    starts = np.arange(0, data.n_days - c.window + 1, stride, dtype=np.int64)
    z = torch.from_numpy(encode(model, data, starts).astype(np.float32))
    y = window_params(data.arrays, starts, c.window, data.scales)
    present = present_of(data, starts, c.window)
    if present is not None:
        return _train_decoder_masked(c, data, starts, z, y, present, steps)
    # per-stock baselines keep each stock's own beta, vol and volume level exactly (a pooled
    # regression shrinks betas together and flattens the spread of pairwise correlations);
    # the network decodes the window's deviation from them
    mean = y.mean(axis=0)
    std = (y - mean).reshape(-1, y.shape[-1]).std(axis=0)
    yt = torch.from_numpy(((y - mean) / std).astype(np.float32))
    net = ParamDecoder(c, y.shape[-1])
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    rng = np.random.default_rng(c.seed + 2)
    for k in range(steps):
        for g in opt.param_groups:
            g["lr"] = 3e-3 * 0.5 * (1 + math.cos(math.pi * k / steps))
        rows = torch.from_numpy(rng.choice(starts.size, size=min(32, starts.size), replace=False))
        loss = F.mse_loss(net(z[rows]), yt[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        err = ((net(z) - yt) ** 2).mean(dim=(0, 1)).numpy()
    r2 = {n: float(1.0 - e) for n, e in zip(PARAM_NAMES, err, strict=True)}
    return DecoderFit(net, mean, std, r2)


def _train_decoder_masked(c: JEPAConfig, data: TrainingData, starts: np.ndarray, z: torch.Tensor,
                          y: np.ndarray, present: np.ndarray, steps: int) -> DecoderFit:
    """:func:`train_decoder` on a market with missing cells: baselines, standardisation, loss
    and R² over the present (window, stock) pairs only; a stock never present gets the mean
    baseline of the others (its world cells are all missing)."""
    from .features import PARAM_NAMES

    pres = present & np.isfinite(y).all(axis=-1)
    w = pres[..., None]
    cnt = pres.sum(axis=0)[:, None]
    mean = np.where(w, y, 0.0).sum(axis=0) / np.maximum(cnt, 1)
    have = cnt[:, 0] > 0
    mean[~have] = mean[have].mean(axis=0)
    dev = np.where(w, y - mean, 0.0)
    std = np.sqrt((dev**2).sum(axis=(0, 1)) / pres.sum())
    yt = torch.from_numpy((dev / std).astype(np.float32))
    pt = torch.from_numpy(pres)
    wt = pt.unsqueeze(-1).to(torch.float32)
    net = ParamDecoder(c, y.shape[-1])
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    rng = np.random.default_rng(c.seed + 2)
    for k in range(steps):
        for g in opt.param_groups:
            g["lr"] = 3e-3 * 0.5 * (1 + math.cos(math.pi * k / steps))
        rows = torch.from_numpy(rng.choice(starts.size, size=min(32, starts.size), replace=False))
        e = (net(z[rows], pt[rows]) - yt[rows]) ** 2 * wt[rows]
        loss = e.sum() / (wt[rows].sum() * y.shape[-1]).clamp_min(1.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        err = (((net(z, pt) - yt) ** 2) * wt).sum(dim=(0, 1)).numpy() / pres.sum()
    r2 = {n: float(1.0 - e) for n, e in zip(PARAM_NAMES, err, strict=True)}
    return DecoderFit(net, mean, std, r2)
