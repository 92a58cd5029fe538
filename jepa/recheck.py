"""Recompute a worlds manifest's reproducible figures from its checkpoint (needs torch).

``python -m gymkit.jepa.recheck [MANIFEST]`` prints one JSON object: the global gate figures
(collapse, prediction, unshifted decode), the fit of selective shift directions when the manifest
has one, every world's shift-gate response and the sha256 of every kept world regenerated from
its bootstrap seed.  In portable mode (:mod:`.portable`) each must equal the manifest bit for
bit on any x86-64-v3 machine; ``gymkit jepa check`` runs it that way and compares.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ManifestModel", "compare", "global_gate_figures", "recompute", "regime_record"]


def global_gate_figures(ck, data, pool, latents: np.ndarray, seed: int, panel) -> dict:
    """The manifest's ``global_gates`` of checkpoint ``ck`` on train ``panel``: collapse,
    prediction (late-train pairs) and the unshifted decode (bootstrap seed ``seed - 1``)."""
    from . import gates
    from .decoder import bootstrap_days, tile_starts
    from .generate import make_world
    from .training import prediction_losses, present_of
    from .worlds import world_panel

    vp, vb = prediction_losses(ck.model, data, data.val_starts)
    base = make_world(ck.model, ck.decoder, ck.shifts, data, pool, latents, None, 0.0,
                      bootstrap_days(pool.n_days, np.random.default_rng(seed - 1)))
    w = ck.model.config.window
    present = present_of(data, tile_starts(data.n_days, w), w)
    return {"collapse": gates.collapse_figures(latents, present),
            "prediction": {"val_pred": vp, "val_persist": vb, "ratio": vp / vb},
            "decode": gates.decode_gate(world_panel(base), panel)}


def regime_record(dirs) -> dict:
    """The manifest's ``regimes``: per regime channel of ``dirs``, its signature, its train
    spread and its cosine with every other channel's unit direction."""
    from .shifts import REGIMES

    out = {}
    for name, signature in REGIMES.items():
        i = dirs.index(name)
        out[name] = {"signature": dict(signature), "spread": float(dirs.spreads[i]),
                     "cosines": {n: float(dirs.raw_cosines[i, j])
                                 for j, n in enumerate(dirs.names) if j != i}}
    return out


@dataclass(frozen=True)
class ManifestModel:
    """What a manifest's worlds are decoded from: the manifest and its folder, the checkpoint,
    its training data, residual pool and tile latents on the train ``panel``, and the shift
    directions the manifest used (``dirs``, regimes included; ``directions``: the selective fit's
    record, None for the stored directions)."""

    man: dict
    folder: Path
    ck: object
    data: object
    pool: object
    latents: np.ndarray
    dirs: object
    directions: dict | None

    @classmethod
    def load(cls, manifest_path: str | Path, panel) -> ManifestModel:
        """Read ``manifest_path`` and rebuild its model on ``panel`` (``ValueError`` when the
        manifest was built on another train panel)."""
        from .checkpoint import load_checkpoint
        from .decoder import ResidualPool
        from .generate import regime_shifts, selective_shifts, tile_latents
        from .training import prepare

        manifest_path = Path(manifest_path)
        man = json.loads(manifest_path.read_text(encoding="utf-8"))
        if man["train_fingerprint"] != panel.fingerprint:
            raise ValueError(f"{manifest_path.name} was built on another train panel")
        ck = load_checkpoint(manifest_path.parent / man["checkpoint"]["file"])
        data = prepare(panel, ck.model.config)
        pool = ResidualPool.build(data.arrays, ck.model.config.window)
        latents = tile_latents(ck.model, data)
        dirs, directions = ck.shifts, None
        if "shift_directions" in man:  # selective directions: fitted again on their calibration draw
            dirs, directions = selective_shifts(ck.model, ck.decoder, ck.shifts, data, pool,
                                                latents, man["shift_directions"]["calibration_seed"])
        return cls(man, manifest_path.parent, ck, data, pool, latents,
                   regime_shifts(ck.model, data, dirs), directions)

    def world(self, spec, bootstrap_seed: int):
        """The exact-cent arrays of world ``spec`` (a :class:`~.generate.WorldSpec`) on one draw."""
        from .decoder import bootstrap_days
        from .generate import make_world

        src = bootstrap_days(self.pool.n_days, np.random.default_rng(bootstrap_seed))
        return make_world(self.ck.model, self.ck.decoder, self.dirs, self.data, self.pool,
                          self.latents, spec.channel, spec.alpha, src)


def recompute(manifest_path: str | Path, panel=None) -> dict:
    """The figures of ``manifest_path`` recomputed from its checkpoint and train ``panel``
    (default: the embedded market's train window)."""
    from gymkit.data import DEFAULT_SPLIT, default_market
    from gymkit.data.default import save_market

    from .generate import ALL_WORLDS, shift_response
    from .worlds import file_sha256, world_draws

    panel = DEFAULT_SPLIT.train(default_market()) if panel is None else panel
    m = ManifestModel.load(manifest_path, panel)
    man, ck = m.man, m.ck
    names = {w["name"] for w in man["worlds"]}
    out = {**global_gate_figures(ck, m.data, m.pool, m.latents, man["seed"], panel), "worlds": {},
           "shift_directions": m.directions, "regimes": regime_record(m.dirs),
           "shift_response": {s.name: shift_response(ck.model, ck.decoder, m.dirs, m.data, m.pool,
                                                     m.latents, s.channel, man["seed"] + 100)
                              for s in ALL_WORLDS if s.name in names}}
    with tempfile.TemporaryDirectory() as tmp:
        for w in man["worlds"]:
            if not w["kept"]:
                continue
            spec = next(s for s in ALL_WORLDS if s.name == w["name"])
            for name, d in world_draws(w):  # every saved draw (one unless --draws K)
                path = Path(tmp) / d["file"]
                save_market(m.world(spec, d["bootstrap_seed"]), path, seed=d["bootstrap_seed"])
                out["worlds"][name] = file_sha256(path)
    return out


def compare(figures: dict, manifest: dict) -> list[str]:
    """Every figure of ``figures`` that differs from ``manifest`` ([] when all are equal)."""
    from .worlds import world_draws

    bad = [f"global gate {k}: {figures[k]} != {manifest['global_gates'][k]}"
           for k in ("collapse", "prediction", "decode") if figures[k] != manifest["global_gates"][k]]
    if figures.get("shift_directions") != manifest.get("shift_directions"):
        bad.append("selective shift directions: their fit differs")
    if "regimes" in manifest and figures.get("regimes") != manifest["regimes"]:
        bad.append("regime directions: their fit differs")
    for w in manifest["worlds"]:
        if figures["shift_response"][w["name"]] != w["shift_gate"]["response"]:
            bad.append(f"world {w['name']}: shift-gate response differs")
        if not w["kept"]:
            continue
        for name, d in world_draws(w):
            if figures["worlds"].get(name) != d["sha256"]:
                bad.append(f"world {name}: sha256 {str(figures['worlds'].get(name))[:16]} "
                           f"!= {d['sha256'][:16]}")
    return bad


def main(argv: list[str] | None = None) -> int:
    """Print :func:`recompute` of the manifest named in ``argv`` (default: the shipped one)."""
    from . import portable
    from .worlds import SHIPPED_MANIFEST

    args = sys.argv[1:] if argv is None else argv
    portable.enter()
    print(json.dumps(recompute(args[0] if args else SHIPPED_MANIFEST), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
