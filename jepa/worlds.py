"""Stress worlds on disk and their use in scoring (numpy only: this module never imports torch).

A world is a complete train-window panel (the train panel's dates, tickers, sectors and
shares outstanding; decoded prices and volumes) stored like the default market, in exact
cents and whole shares (:func:`gymkit.data.default.save_market`).  A manifest
(``<prefix>_worlds.json``) lists every generated world with its channel, shift size, file
sha256, panel fingerprint, gate figures and whether it was kept; only kept worlds are read
(every saved draw of one, with ``--draws K``: :func:`world_draws`).

:func:`load_stress_worlds` returns the kept worlds of a manifest after checking that they were
generated from the very train panel the environment scores on (data fingerprint) and that
every file's sha256 matches.  A world of a market with missing cells stores 0 in every field
of a cell without a bar (exactly the train panel's cells without a complete bar);
:func:`world_panel` reads those cells back as NaN.  Re-scoring a formula in a world is scoring's
work: :func:`gymkit.scoring.world_score` (the cards' R3) and :func:`gymkit.stress_ranking.rescore`
(the ranking gate); this module reads and writes no formula.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gymkit.data.default import load_market
from gymkit.data.panel import Panel

__all__ = ["SHIPPED_DIR", "SHIPPED_MANIFEST", "StressWorld", "file_sha256", "load_stress_worlds",
           "read_manifest", "world_draws", "world_panel"]

#: Where the shipped checkpoint, worlds and manifest live (package data of gymkit.jepa).
SHIPPED_DIR: Path = Path(__file__).resolve().parent
#: Manifest of the worlds shipped for ``us46-default``.
SHIPPED_MANIFEST: Path = SHIPPED_DIR / "us46_worlds.json"


@dataclass(frozen=True)
class StressWorld:
    """One loaded stress world: its name, shift channel and size, and its panel."""

    name: str
    channel: str
    alpha: float
    panel: Panel


def file_sha256(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def world_panel(arrays) -> Panel:
    """The float :class:`Panel` of a world's integer arrays: ``arrays.to_panel()``, with NaN in
    every field of a cell stored as 0 cents (no bar; module doc)."""
    panel = arrays.to_panel()
    gone = arrays.close_c <= 0
    if not gone.any():
        return panel
    nan = {n: np.where(gone, np.nan, getattr(panel, n)) for n in ("open", "high", "low", "close", "volume")}
    if panel.cap is not None:
        nan["cap"] = np.where(gone, np.nan, panel.cap)
    return panel.replace(**nan)


def world_draws(entry: dict) -> list[tuple[str, dict]]:
    """(name, record) of every saved draw of a kept manifest entry: draw 0 is the entry itself
    under the world's name, draw k ≥ 1 its ``draws[k - 1]`` as ``<name>@draw<k>`` (a manifest
    of ``gymkit jepa worlds --draws K``; each record has ``file`` and ``sha256``)."""
    return [(entry["name"], entry)] + [(f"{entry['name']}@draw{k}", d)
                                        for k, d in enumerate(entry.get("draws", []), 1)]


def read_manifest(spec: str | Path) -> tuple[dict, Path]:
    """Read a worlds manifest: ``'default'`` (the shipped one) or a path; returns (dict, folder)."""
    path = SHIPPED_MANIFEST if str(spec) == "default" else Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"stress-world manifest not found: {path}")
    return json.loads(path.read_text(encoding="utf-8")), path.parent


def load_stress_worlds(spec: str | Path, train: Panel) -> list[StressWorld]:
    """Kept worlds of manifest ``spec`` for the train panel ``train`` (module doc).

    Raises ``ValueError`` when the worlds were generated from another train panel, a file's
    sha256 differs from the manifest, or no world was kept; ``FileNotFoundError`` for a
    missing file.
    """
    man, folder = read_manifest(spec)
    if man.get("train_fingerprint") != train.fingerprint:
        raise ValueError(f"stress worlds {str(spec)!r} were generated for train panel "
                         f"{str(man.get('train_fingerprint'))[:12]}, not this one "
                         f"({train.fingerprint[:12]})")
    out = []
    for w in man["worlds"]:
        if not w.get("kept"):
            continue
        for name, d in world_draws(w):
            path = folder / d["file"]
            if not path.is_file():
                raise FileNotFoundError(f"stress world file missing: {path}")
            if file_sha256(path) != d["sha256"]:
                raise ValueError(f"stress world file {path.name} does not match its manifest sha256")
            panel = world_panel(load_market(path))
            if not (np.array_equal(panel.dates, train.dates) and panel.tickers == train.tickers):
                raise ValueError(f"stress world {name} does not cover the train panel's "
                                 "dates and tickers")
            out.append(StressWorld(name, w["channel"], float(w["alpha"]), panel))
    if not out:
        why = "; ".join(f"{w['name']}: {', '.join(w.get('dropped_because') or ['dropped'])}"
                        for w in man["worlds"])
        raise ValueError(f"stress worlds {str(spec)!r}: every world was dropped by its gates "
                         f"({why}), so R3 (jepa_stress) stays off on this market and split; the "
                         "gates do not move: a model trained with --short rarely passes them, the "
                         "full `gymkit jepa train --market FILE` then `gymkit jepa worlds --market "
                         "FILE` may (jepa/README.md: on the real S&P 500 it does not)")
    return out


def __getattr__(name: str) -> object:
    """``world_score``: the old name of :func:`gymkit.stress_ranking.rescore`, kept for one
    release for tests/verifiers/test_stress_path.py and benchmarks/bench_scale.py (imported
    lazily: this module imports no formula code)."""
    if name == "world_score":
        from gymkit.stress_ranking import rescore

        return rescore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
