"""The JEPA checkpoint: one ``.npz`` with the weights, config, data fingerprint and a sha256.

Contents: every tensor of the JEPA (``jepa/<name>``, the EMA target encoder included) and
of the parameter decoder (``decoder/<name>``) as float32 arrays, the decoder's target
standardisation, the shift directions (:class:`gymkit.jepa.shifts.ShiftDirections`), and a
``meta`` JSON string: the model config, feature scales, train-panel fingerprint, training
history, thread count, torch version and ``weights_sha256`` (sha256 over the arrays in
sorted-name order: name, dtype, shape, bytes).  ``numpy.savez_compressed`` writes fixed zip
timestamps, so equal contents give byte-identical files.  :func:`read_meta` needs numpy only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .features import FeatureScales
from .shifts import ShiftDirections

__all__ = ["Checkpoint", "load_checkpoint", "read_meta", "save_checkpoint", "weights_sha256"]

FORMAT = "gymkit-jepa-checkpoint-v1"


def weights_sha256(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over ``arrays`` in sorted-name order (name, dtype, shape, C-order bytes)."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(k.encode() + str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | Path, model, decoder, shifts: ShiftDirections, scales: FeatureScales,
                    data_fingerprint: str, meta: dict) -> str:
    """Write the checkpoint; returns its ``weights_sha256``."""
    arrays: dict[str, np.ndarray] = {}
    for k, v in model.state_dict().items():
        arrays[f"jepa/{k}"] = v.detach().cpu().numpy().astype(np.float32)
    for k, v in decoder.net.state_dict().items():
        arrays[f"decoder/{k}"] = v.detach().cpu().numpy().astype(np.float32)
    arrays["decoder_mean"] = np.asarray(decoder.mean, dtype=np.float64)
    arrays["decoder_std"] = np.asarray(decoder.std, dtype=np.float64)
    for k, v in shifts.to_arrays().items():
        arrays[k] = v
    digest = weights_sha256({k: v for k, v in arrays.items() if v.dtype.kind != "U"})
    full = {"format": FORMAT, "config": model.config.to_dict(), "scales": scales.to_dict(),
            "data_fingerprint": data_fingerprint, "weights_sha256": digest,
            "decoder_r2": decoder.r2, **meta}
    np.savez_compressed(path, meta=np.array(json.dumps(full, sort_keys=True)), **arrays)
    return digest


def read_meta(path: str | Path) -> dict:
    """The checkpoint's ``meta`` dict (numpy only)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a gymkit JEPA checkpoint (format {meta.get('format')!r})")
    return meta


@dataclass
class Checkpoint:
    """A loaded checkpoint: the frozen JEPA, decoder, shifts, scales and meta."""

    model: object
    decoder: object
    shifts: ShiftDirections
    scales: FeatureScales
    meta: dict


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Load a checkpoint (needs torch); verifies ``weights_sha256``."""
    import torch

    from .model import JEPA, JEPAConfig, ParamDecoder
    from .training import DecoderFit

    meta = read_meta(path)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != "meta"}
    if weights_sha256({k: v for k, v in arrays.items() if v.dtype.kind != "U"}) != meta["weights_sha256"]:
        raise ValueError(f"{path}: weights do not match the checkpoint's sha256")
    cfg = JEPAConfig(**meta["config"])
    model = JEPA(cfg)
    model.load_state_dict({k[5:]: torch.from_numpy(v) for k, v in arrays.items() if k.startswith("jepa/")})
    net = ParamDecoder(cfg, int(arrays["decoder_std"].size))
    net.load_state_dict({k[8:]: torch.from_numpy(v) for k, v in arrays.items() if k.startswith("decoder/")})
    model.eval()
    net.eval()
    dec = DecoderFit(net, arrays["decoder_mean"], arrays["decoder_std"], meta.get("decoder_r2", {}))
    return Checkpoint(model, dec, ShiftDirections.from_arrays(arrays),
                      FeatureScales.from_dict(meta["scales"]), meta)
