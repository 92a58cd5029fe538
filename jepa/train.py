"""``gymkit jepa train`` and ``gymkit jepa worlds``: the offline JEPA pipeline (needs torch).

* ``train``: phase 1 (JEPA), phase 2 (parameter decoder), shift directions; writes the
  checkpoint (:mod:`.checkpoint`) with config, data fingerprint and weights sha256.
* ``worlds``: loads a checkpoint, decodes the candidate stress worlds (:data:`ALL_WORLDS`: the
  four channels and the crash regime),
  runs every gate (:mod:`.gates`; the ranking gate scores formulas in
  :mod:`gymkit.stress_ranking`) and writes the kept worlds plus a manifest with every figure
  and the dropped worlds' reasons.

Both read the train window of the embedded default market by default (``--market PATH``
for a panel file, cut by the split rule of ``gymkit.make``; its missing cells are handled
as :mod:`.features` says).  Scoring never runs this module.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the data package loads polars: kept out of `gymkit jepa --help`
    from gymkit.data.panel import Panel
    from gymkit.data.splits import Split

__all__ = ["build_worlds", "configure", "run", "train_checkpoint"]

SHIPPED_CHECKPOINT = "us46_jepa.npz"
WORLD_SEED = 20250821
#: ``gymkit jepa train --short``: the seconds-long configuration of the tests (the stride
#: shrinks on a short train window so that 10 training pairs fit: :func:`short_config`).
SHORT_CONFIG = {"epochs": 1, "stride": 97, "batch": 8}
SHORT_DECODER_STEPS = 20
#: ``gymkit jepa worlds --shifts``: the checkpoint's stored directions or the selective ones.
SHIFT_METHODS = ("stored", "selective")
#: The selective directions' calibration draw is bootstrap seed ``seed + CALIBRATION_OFFSET``
#: (the worlds use ``seed + i``, the shift gate ``seed + 100``, the unshifted decode ``seed − 1``).
CALIBRATION_OFFSET = 200


def short_config(n_days: int):
    """The ``--short`` :class:`~gymkit.jepa.model.JEPAConfig` for a train panel of ``n_days``
    return days: :data:`SHORT_CONFIG`, with the stride lowered to fit 10 training pairs."""
    import dataclasses

    from .model import JEPAConfig

    c = dataclasses.replace(JEPAConfig(), **SHORT_CONFIG)
    room = (n_days - 2 * c.window - c.val_days - c.select_days) // 10
    return dataclasses.replace(c, stride=max(1, min(c.stride, room)))


def _train_panel(path: str | None, split: Split | None = None) -> Panel:
    """The train window only: the embedded market's, or a panel file's under the one split
    rule of ``gymkit.make`` (its holdout never reaches training or the worlds)."""
    from gymkit.data import default_market, load_panel
    from gymkit.data.splits import DEFAULT_SPLIT

    split = DEFAULT_SPLIT if split is None else split

    if path is None:
        return split.train(default_market())
    return _user_train(load_panel(path))[0]


def _user_train(panel: Panel, split: dict[str, str] | None = None) -> tuple[Panel, Split]:
    """(train window, split) of a user's ``panel`` under the split rule of ``gymkit.make``
    (``split``: a partial split as ``--split`` gives it; default: the derived one)."""
    from gymkit.config import EnvConfig, split_for_market

    cfg, _ = split_for_market(EnvConfig(market="user"), panel.dates, split)
    return cfg.split_obj.train(panel), cfg.split_obj


def train_checkpoint(panel: Panel, out: str | Path, *, config=None, epochs: int | None = None,
                     seed: int | None = None, threads: int = 2, device: str = "cpu",
                     progress: bool = True, decoder_steps: int = 2000) -> dict:
    """Train on ``panel`` (the train window) and write the checkpoint to ``out``; returns its meta.

    ``config``: a :class:`~gymkit.jepa.model.JEPAConfig` (default: the shipped one);
    ``epochs``/``seed`` override its fields."""
    import dataclasses

    import torch

    from .checkpoint import read_meta, save_checkpoint
    from .generate import fit_shifts
    from .model import JEPAConfig
    from .training import prepare, train_decoder, train_jepa

    cfg = JEPAConfig() if config is None else config
    if epochs is not None:
        cfg = dataclasses.replace(cfg, epochs=int(epochs))
    if seed is not None:
        cfg = dataclasses.replace(cfg, seed=int(seed))
    if cfg.n_stocks != panel.N:  # the predictor's per-stock anchors are sized by the panel
        cfg = dataclasses.replace(cfg, n_stocks=int(panel.N))
    t0 = time.perf_counter()
    data = prepare(panel, cfg)
    model, history = train_jepa(data, cfg, threads=threads, device=device, progress=progress)
    t1 = time.perf_counter()
    dec = train_decoder(model, data, steps=decoder_steps)
    shifts = fit_shifts(model, data)
    t2 = time.perf_counter()
    # wall-clock times are returned, not stored: the file must be byte-identical across runs
    meta = {"history": [{k: v for k, v in h.items() if k != "seconds"} for h in history],
            "threads": threads, "device": device, "torch": torch.__version__,
            "n_trainable": model.n_trainable()}
    save_checkpoint(out, model, dec, shifts, data.scales, panel.fingerprint, meta)
    return {**read_meta(out), "seconds": {"jepa": round(t1 - t0, 1),
                                          "decoder_and_shifts": round(t2 - t1, 1)},
            "epoch_seconds": [round(h["seconds"], 1) for h in history]}


def build_worlds(checkpoint: str | Path, panel: Panel, out_dir: str | Path, *, seed: int = WORLD_SEED,
                 prefix: str = "us46", ranking: bool = True, split: Split | None = None,
                 shifts: str = "stored", draws: int = 1, log=sys.stderr) -> dict:
    """Decode, gate and save the stress worlds of ``checkpoint`` for train panel ``panel``.

    ``split``: the split the ranking gate's formulas are scored under (default: the default
    market's; a user market passes its own).  ``shifts``: ``"stored"`` (the checkpoint's
    directions) or ``"selective"`` (:func:`~gymkit.jepa.generate.selective_shifts`, fitted on
    the calibration draw ``seed`` + :data:`CALIBRATION_OFFSET`; the manifest records the fit
    under ``shift_directions``).  ``draws``: bootstrap draws per world (draw k of world i from
    :func:`~gymkit.jepa.generate.draw_seed`); with more than one, the ranking gate judges each
    formula's drop averaged over the draws (``ranking_gate``; each draw's own gate under
    ``ranking_gate_per_draw``), every draw of a kept world is saved and R3 scores all of them, and
    the entry lists draws 1… under ``draws``.  One draw writes the single-draw manifest, key for
    key.  Writes ``<prefix>_world_<name>.npz`` (draw k ≥ 1: ``…_<name>_draw<k>.npz``) for each kept
    world and ``<prefix>_worlds.json`` (manifest, every gate figure); returns the manifest.
    """

    from gymkit.data.default import save_market
    from gymkit.data.splits import DEFAULT_SPLIT
    from gymkit.stress_ranking import RankingSet, gate_figures

    from . import gates, portable
    from .checkpoint import load_checkpoint
    from .decoder import ResidualPool, bootstrap_days
    from .generate import (
        ALL_WORLDS,
        MAX_DRAWS,
        draw_seed,
        make_world,
        regime_shifts,
        shift_response,
        tile_latents,
        world_statistics,
    )
    from .recheck import global_gate_figures, regime_record
    from .training import prepare
    from .worlds import file_sha256, world_panel

    split = DEFAULT_SPLIT if split is None else split
    portable.enter()
    ck = load_checkpoint(checkpoint)
    if ck.meta["data_fingerprint"] != panel.fingerprint:
        raise ValueError("the checkpoint was trained on another train panel "
                         f"({ck.meta['data_fingerprint'][:12]} != {panel.fingerprint[:12]})")
    if not 1 <= int(draws) <= MAX_DRAWS:
        raise ValueError(f"draws must be 1..{MAX_DRAWS}, got {draws}")
    if shifts not in SHIFT_METHODS:
        raise ValueError(f"shifts must be one of {list(SHIFT_METHODS)}, got {shifts!r}")
    model, dec = ck.model, ck.decoder
    data = prepare(panel, model.config)
    out_dir = Path(out_dir)
    w = model.config.window
    pool = ResidualPool.build(data.arrays, w)
    latents = tile_latents(model, data)
    global_gates = global_gate_figures(ck, data, pool, latents, seed, panel)
    print("jepa worlds: global gates done", file=log, flush=True)
    directions = None
    if shifts == "selective":
        from .generate import selective_shifts

        dirs, directions = selective_shifts(model, dec, ck.shifts, data, pool, latents,
                                            seed + CALIBRATION_OFFSET)
        print("jepa worlds: selective shift directions fitted", file=log, flush=True)
    else:
        dirs = ck.shifts
    dirs = regime_shifts(model, data, dirs)

    ranking_set = RankingSet.label(panel, split) if ranking else None
    labelled = ranking_set.labelled if ranking_set is not None else []
    worlds_out = []
    base_stats = world_statistics(_arrays_of(panel), w)
    for i, spec in enumerate(ALL_WORLDS):
        drawn = []  # (bootstrap seed, arrays, panel, drops) per draw
        for k in range(int(draws)):
            s = draw_seed(seed, i, k)
            arrays = make_world(model, dec, dirs, data, pool, latents, spec.channel, spec.alpha,
                                bootstrap_days(pool.n_days, np.random.default_rng(s)))
            wp = world_panel(arrays)
            drawn.append((s, arrays, wp, ranking_set.drops(wp) if labelled else None))
        arrays, wp = drawn[0][1], drawn[0][2]
        response = shift_response(model, dec, dirs, data, pool, latents, spec.channel, seed + 100)
        sg = gates.world_shift_gate(response, spec.channel)
        entry: dict = {"name": spec.name, "channel": spec.channel, "alpha": spec.alpha,
                       "bootstrap_seed": drawn[0][0], "fingerprint": wp.fingerprint,
                       "shift_gate": {**sg, "response": response},
                       "summary": {"world": world_statistics(arrays, w), "base": base_stats,
                                   "facts": gates.decode_facts(wp)}}
        if len(drawn) > 1:
            entry["draws"] = [{"bootstrap_seed": s, "fingerprint": p.fingerprint}
                              for s, _, p, _ in drawn[1:]]
        if labelled:
            per_draw = [d for *_, d in drawn]
            entry["drops"] = np.mean(per_draw, axis=0).tolist()  # one draw: its drops, exactly
            if len(per_draw) > 1:
                entry["ranking_gate_per_draw"] = [gate_figures(labelled, [d.tolist()])[0][0]
                                                  for d in per_draw]
        worlds_out.append((entry, [a for _, a, _, _ in drawn]))
        print(f"jepa worlds: {spec.name} decoded", file=log, flush=True)

    ranking_fig = {}
    if labelled:
        per_world, ranking_fig = gate_figures(labelled, [e["drops"] for e, _ in worlds_out])
        for (e, _), gate in zip(worlds_out, per_world, strict=True):
            e["ranking_gate"] = gate
    manifest_worlds = []
    # Worlds are dropped by the gates on what they are: the unshifted decode, their shift and
    # their ranking.  The collapse and predictor gates judge the model and are reported.
    global_ok = all(v["ok"] for v in global_gates["decode"].values())
    for e, all_arrays in worlds_out:
        reasons = []
        if not global_ok:
            reasons.append("unshifted decode gate failed")
        if not e["shift_gate"]["ok"]:
            reasons.append("shift gate failed")
        if "ranking_gate" in e and not e["ranking_gate"]["ok"]:
            reasons.append("ranking gate failed")
        e["kept"] = not reasons
        e["dropped_because"] = reasons
        e.pop("drops", None)
        if e["kept"]:  # draw 0 is the entry itself, draw k >= 1 its draws[k - 1]
            for k, (d, arrays) in enumerate(zip([e, *e.get("draws", [])], all_arrays, strict=True)):
                path = out_dir / f"{prefix}_world_{e['name']}{f'_draw{k}' if k else ''}.npz"
                save_market(arrays, path, seed=d["bootstrap_seed"])
                d["file"] = path.name
                d["sha256"] = file_sha256(path)
        manifest_worlds.append(e)
    manifest = {
        "format": "gymkit-stress-worlds-v1", "train_fingerprint": panel.fingerprint,
        "arithmetic": portable.describe(),
        "checkpoint": {"file": Path(checkpoint).name, "sha256": file_sha256(checkpoint),
                       "weights_sha256": ck.meta["weights_sha256"]},
        "seed": seed, "block_days": 63, "global_gates": global_gates, "ranking": ranking_fig,
        "labelled": [x.__dict__ for x in labelled], "worlds": manifest_worlds,
        "regimes": regime_record(dirs),
    }
    if directions is not None:  # the stored directions add no key: their manifests are unchanged
        manifest["shift_directions"] = directions
    (out_dir / f"{prefix}_worlds.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True, default=_json_default) + "\n", encoding="utf-8")
    return manifest


def _json_default(o: object) -> object:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _arrays_of(panel: Panel):
    from gymkit.data.default import MarketArrays

    ok = np.isfinite(panel.close)
    c = np.where(ok, np.rint(np.where(ok, panel.close, 0.0) * 100), 0).astype(np.int64)
    return MarketArrays(panel.dates, panel.tickers, (), (), c, c, c, c, c, c)


# ------------------------------------------------------------------------------- CLI
def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit jepa``: ``train`` / ``worlds`` / ``check`` sub-actions."""

    p.add_argument("action", choices=("train", "worlds", "check"),
                   help="train the JEPA, build its worlds, or check that the shipped manifest's "
                        "figures and worlds regenerate bit for bit")
    from gymkit.cli.options import add_market_args

    p.add_argument("--market", default=None, help="panel file (default: the embedded market); "
                   "only its train window is read, missing cells allowed")
    add_market_args(p, market=False)
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint to write (train) or read (worlds) (default: the shipped one; "
                        "with --market, the market's user cache folder)")
    p.add_argument("--out", default=None, help="folder for worlds and manifest (default: the "
                                               f"package's {Path(__file__).resolve().parent.name}/; with --market, "
                                               "the market's user cache folder)")
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default: config)")
    p.add_argument("--short", action="store_true",
                   help="train: the seconds-long test configuration (1 epoch, pairs every 97 days "
                        "or fewer on a short market, batch 8, 20 decoder steps); its model gates "
                        "are not expected to pass")
    p.add_argument("--seed", type=int, default=None, help="training seed / world seed")
    p.add_argument("--shifts", choices=SHIFT_METHODS, default="stored",
                   help="worlds: the checkpoint's shift directions (stored, default) or directions "
                        "fitted to move one statistic each (selective; jepa/README.md)")
    p.add_argument("--draws", type=int, default=1,
                   help="worlds: bootstrap draws per world (default 1); with more, the ranking "
                        "gate judges each formula's drop averaged over the draws and R3 scores "
                        "every draw of a kept world (jepa/README.md 'One draw per world')")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _argv_of(args: argparse.Namespace) -> list[str]:
    """The ``gymkit jepa`` command line that :func:`configure` parses into ``args``."""
    argv = ["jepa", args.action, "--threads", str(args.threads), "--device", args.device]
    argv += ["--short"] if getattr(args, "short", False) else []
    argv += ["--shifts", args.shifts] if getattr(args, "shifts", "stored") != "stored" else []
    argv += ["--draws", str(args.draws)] if getattr(args, "draws", 1) != 1 else []
    for flag, value in (("--market", args.market), ("--epochs", args.epochs), ("--seed", args.seed),
                        ("--checkpoint", args.checkpoint), ("--out", args.out)):
        if value is not None:
            argv += [flag, str(value)]
    for flag, value in (("--columns", args.columns), ("--split", args.split)):
        if value is not None:
            argv += [flag, str(value)]
    argv += [flag for flag, on in (("--lenient", args.lenient), ("--adjust", args.adjust)) if on]
    return argv + (["--quiet"] if args.quiet else [])


def _check(manifest_path: Path, panel: Panel) -> int:
    from . import portable
    from .recheck import compare, recompute

    portable.enter()
    bad = compare(recompute(manifest_path, panel),
                  json.loads(manifest_path.read_text(encoding="utf-8")))
    for line in bad:
        print(f"differs: {line}")
    print(f"{manifest_path.name}: " + ("every figure and world regenerates bit for bit" if not bad
                                       else f"{len(bad)} figure(s) differ"))
    return 0 if not bad else 1


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit jepa`` (re-executes itself in portable mode first: :mod:`.portable`)."""
    from . import portable
    from .worlds import SHIPPED_DIR

    portable.reexec_if_needed(_argv_of(args))
    prefix = "us46"
    if args.market is None:
        panel = _train_panel(None)
        args.checkpoint = args.checkpoint or str(SHIPPED_DIR / SHIPPED_CHECKPOINT)
        args.out = args.out or str(SHIPPED_DIR)
    else:  # a user's market: its train window, written to its own cache folder
        from gymkit.cli.options import parse_split, read_market
        from gymkit.worlds_cache import CHECKPOINT_NAME, MANIFEST_NAME, worlds_dir

        panel, split = _user_train(read_market(args), parse_split(args.split))
        home = worlds_dir(panel, split)
        home.mkdir(parents=True, exist_ok=True)
        args.checkpoint = args.checkpoint or str(home / CHECKPOINT_NAME)
        args.out = args.out or str(home)
        prefix = MANIFEST_NAME.removesuffix("_worlds.json")
    if args.action == "check":
        return _check(Path(args.out) / f"{prefix}_worlds.json", panel)
    if args.action == "train":
        t0 = time.perf_counter()
        extra = {}
        if args.short:
            extra = {"config": short_config(panel.T - 1), "decoder_steps": SHORT_DECODER_STEPS}
        meta = train_checkpoint(panel, args.checkpoint, epochs=args.epochs, seed=args.seed,
                                threads=args.threads, device=args.device, progress=not args.quiet,
                                **extra)
        last = meta["history"][-1]
        print(f"checkpoint {args.checkpoint}: {meta['n_trainable']} parameters, "
              f"{time.perf_counter() - t0:.0f}s ({meta['seconds']}), val {last['val_pred']:.4f} vs persistence "
              f"{last['val_persist']:.4f}, weights sha256 {meta['weights_sha256'][:16]}")
        return 0
    man = build_worlds(args.checkpoint, panel, args.out,
                       seed=WORLD_SEED if args.seed is None else args.seed, prefix=prefix,
                       split=None if args.market is None else split, shifts=args.shifts,
                       draws=args.draws)
    for wd in man["worlds"]:
        status = "kept" if wd["kept"] else "DROPPED (" + "; ".join(wd["dropped_because"]) + ")"
        print(f"world {wd['name']:12s} {status}")
    return 0
