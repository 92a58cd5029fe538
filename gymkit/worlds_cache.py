"""Where the JEPA checkpoint and stress worlds of a user's market live (never the package).

``gymkit jepa train|worlds --market FILE`` writes to :func:`worlds_dir` unless ``--out`` /
``--checkpoint`` say otherwise; ``gymkit.make(market=...)`` looks there for a manifest when
the shipped worlds do not fit its train panel.  The key is the train panel's fingerprint and
the split, so a change to holdout rows (which the model never sees) keeps the same folder.
Base folder: ``$GYMKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/gymkit`` (``~/.cache/gymkit``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["CHECKPOINT_NAME", "MANIFEST_NAME", "cache_root", "find_user_worlds", "worlds_dir"]

#: File names inside a market's folder.
CHECKPOINT_NAME = "jepa.npz"
MANIFEST_NAME = "user_worlds.json"


def cache_root() -> Path:
    """``$GYMKIT_CACHE_DIR``, else the user cache dir's ``gymkit`` folder."""
    env = os.environ.get("GYMKIT_CACHE_DIR", "").strip()
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "gymkit"


def worlds_dir(train: Any, split: Any) -> Path:
    """The folder of ``train`` (a train Panel) under ``split`` (a Split): one per pair."""
    key = json.dumps([train.fingerprint, split.train_start, split.train_end,
                      split.holdout_start, split.holdout_end])
    return cache_root() / "worlds" / hashlib.sha256(key.encode()).hexdigest()[:16]


def find_user_worlds(train: Any, split: Any) -> Path | None:
    """The manifest built by ``gymkit jepa worlds --market`` for this train panel, if any."""
    path = worlds_dir(train, split) / MANIFEST_NAME
    return path if path.is_file() else None
