"""What an audit runs against: an environment configuration, its market panel, sample answers.

:func:`build_target` resolves ``--env`` / ``--config`` / ``--market`` / ``--answers`` into an
:class:`AuditTarget`.  The environment itself is built lazily, once, under the train-path spy
of :mod:`gymkit.audit.holdout` (so the frozen-holdout check sees every panel that the
environment's construction — archive seeding, factor model — hands to the evaluator and the
oracle).  Expensive by-products shared by several checks (the environment, probe cards) are
cached on the target.

Markets are named by a :class:`MarketSpec` so that worker processes (the determinism check)
can rebuild the identical panel from source instead of receiving a pickled copy.

Split: resolved exactly as ``gymkit.make`` does (:func:`gymkit.config.split_for_market`): on a
user market with no split given (the real 2012–2021 panel under the default 2012–2026 split),
the holdout becomes the panel's last 252 sessions and the train window everything before; a
partial ``split`` is completed by the same rule; the target records the note.  Every check
then runs on that configuration.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gymkit.config import EnvConfig
from gymkit.data.panel import BASE_FIELDS, OPTIONAL_FIELDS, Panel
from gymkit.data.splits import SPLIT_NOTE

__all__ = ["AuditTarget", "MarketSpec", "build_target", "load_answers", "load_market"]

#: A group of the built-in sampler and the chunk size of flat answer files.
GROUP_SIZE = 8


@dataclass(frozen=True)
class MarketSpec:
    """How to (re)build a market panel: ``kind`` is 'default' (embedded market), 'real'
    (``gymkit.data.real_panel``, ``value`` = optional path), 'path' (``load_panel(value)``) or
    'arrays' (``value`` = the dict of :func:`panel_arrays`, for in-memory panels)."""

    kind: str
    value: Any = None

    def describe(self) -> str:
        """One-word description for the checklist header."""
        if self.kind in ("default", "real"):
            return self.kind if self.value is None else f"{self.kind} ({self.value})"
        return str(self.value) if self.kind == "path" else "in-memory panel"


def panel_arrays(panel: Panel) -> dict[str, Any]:
    """The constructor arguments of ``panel`` as plain picklable values."""
    d: dict[str, Any] = {"dates": np.asarray(panel.dates), "tickers": list(panel.tickers)}
    for name in (*BASE_FIELDS, *OPTIONAL_FIELDS):
        arr = getattr(panel, name)
        d[name] = None if arr is None else np.asarray(arr)
    d["sector"] = None if panel.sector is None else list(panel.sector)
    d["industry"] = None if panel.industry is None else list(panel.industry)
    return d


def load_market(spec: MarketSpec) -> Panel:
    """Build the panel ``spec`` names (module doc)."""
    if spec.kind == "default":
        from gymkit.data import default_market

        return default_market()
    if spec.kind == "real":
        from gymkit.data import real_panel

        return real_panel(spec.value)
    if spec.kind == "path":
        from gymkit.data import load_panel

        return load_panel(spec.value)
    if spec.kind == "arrays":
        a = dict(spec.value)
        return Panel(a.pop("dates"), a.pop("tickers"), a.pop("open"), a.pop("high"), a.pop("low"),
                     a.pop("close"), a.pop("volume"), **a)
    raise ValueError(f"unknown market kind {spec.kind!r}; expected default, real, path or arrays")


def _market_spec(market: str | Panel | None, config: EnvConfig) -> MarketSpec:
    if isinstance(market, Panel):
        return MarketSpec("arrays", panel_arrays(market))
    if market is None:
        if config.market == "default":
            return MarketSpec("default")
        if config.market == "user":
            raise ValueError(f"environment {config.env_id!r} runs on a user market: pass --market")
        return MarketSpec("path", config.market)
    if market == "default":
        return MarketSpec("default")
    if market == "real":
        return MarketSpec("real")
    if not Path(market).is_file():
        raise ValueError(f"--market {market!r} is neither 'default', 'real' nor an existing file")
    return MarketSpec("path", str(market))


def _adapted_split(config: EnvConfig, panel: Panel,
                   split: dict[str, str] | None = None) -> tuple[EnvConfig, str | None]:
    """The split rule of ``gymkit.make`` (:func:`gymkit.config.split_for_market`)."""
    from gymkit.config import split_for_market

    return split_for_market(config, panel.dates, split, user_market=config.market != "default")


def load_answers(path: str | Path) -> list[list[str]]:
    """Read sample answers as groups (one group = the answers to one prompt).

    ``.json``: a list of groups (lists of completions) or a flat list of completions (cut
    into groups of 8); ``.jsonl``: one object per line with ``completion`` and optional
    ``group`` keys (lines without ``group`` are cut into groups of 8); anything else: plain
    text, one completion per line, groups separated by blank lines.
    """
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".json":
        data = json.loads(text)
        if not isinstance(data, list) or not data:
            raise ValueError(f"{p}: expected a non-empty JSON list of groups or completions")
        if all(isinstance(g, list) for g in data):
            groups = [[str(c) for c in g] for g in data]
        elif all(isinstance(c, str) for c in data):
            groups = [data[i:i + GROUP_SIZE] for i in range(0, len(data), GROUP_SIZE)]
        else:
            raise ValueError(f"{p}: mix of groups and completions; use one kind")
    elif p.suffix == ".jsonl":
        keyed: dict[str, list[str]] = {}
        flat: list[str] = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or "completion" not in row:
                raise ValueError(f"{p}:{i}: expected an object with a 'completion' key")
            if "group" in row:
                keyed.setdefault(str(row["group"]), []).append(str(row["completion"]))
            else:
                flat.append(str(row["completion"]))
        groups = list(keyed.values())
        groups += [flat[i:i + GROUP_SIZE] for i in range(0, len(flat), GROUP_SIZE)]
    else:
        groups = [[ln for ln in block.splitlines() if ln.strip()]
                  for block in text.split("\n\n")]
    groups = [g for g in groups if g]
    if not groups:
        raise ValueError(f"{p}: no answers found")
    return groups


@dataclass
class AuditTarget:
    """An environment configuration on a market, with optional sample answer groups."""

    config: EnvConfig
    market: Panel
    spec: MarketSpec
    answers: list[list[str]] | None = None
    notes: list[str] = field(default_factory=list)
    _env: Any = field(default=None, repr=False)
    spy_log: list[tuple[str, int, str]] = field(default_factory=list, repr=False)
    holdout_digest: str = ""

    def __post_init__(self) -> None:
        self.holdout_digest = holdout_digest(self.market, self.config)

    @property
    def env(self):
        """The environment (built once, under the train-path spy)."""
        if self._env is None:
            from gymkit.env import Environment

            from .holdout import TrainPathSpy

            with TrainPathSpy() as spy:
                self._env = Environment(self.config, self.market, split_note=next(
                    (n for n in self.notes if n.startswith(SPLIT_NOTE)), None))
            self.spy_log.extend(spy.log)
        return self._env

    @property
    def train(self) -> Panel:
        """The train panel the environment scores on."""
        return self.env.setup.train

    @property
    def config_toml(self) -> str:
        """The configuration as TOML text (what worker processes rebuild it from)."""
        return self.config.to_toml()

    def describe(self) -> str:
        """One header line: environment, market, shape and split sizes."""
        m = self.market
        n_hold = int(self.config.split_obj.holdout_mask(m.dates).sum())
        return (f"{self.config.env_id} on {self.spec.describe()} market ({m.T} sessions x "
                f"{m.N} stocks; train {self.config.split_obj.train(m).T}, holdout {n_hold})")


def holdout_digest(market: Panel, config: EnvConfig) -> str:
    """sha256 of the holdout rows of ``market`` (dates, tickers, every field, group labels)."""
    mask = config.split_obj.holdout_mask(market.dates)
    h = hashlib.sha256(b"gymkit-holdout-v1")
    h.update(market.dates[mask].astype("<i8").tobytes())
    h.update("\x1f".join(market.tickers).encode())
    for name in (*BASE_FIELDS, *OPTIONAL_FIELDS):
        arr = getattr(market, name)
        h.update(b"\x00" + name.encode())
        if arr is not None:
            rows = np.asarray(arr)[mask]
            h.update(np.where(np.isnan(rows), np.nan, rows).astype("<f8").tobytes())
    for level in ("sector", "industry"):
        labels = getattr(market, level)
        h.update(b"\x00" + ("absent" if labels is None else "\x1f".join(labels)).encode())
    return h.hexdigest()


def build_target(env: str | None = "us46-default", *, config: str | Path | EnvConfig | None = None,
                 market: str | Panel | None = None,
                 answers: str | Path | list[list[str]] | None = None,
                 split: dict[str, str] | None = None) -> AuditTarget:
    """Resolve the CLI options into an :class:`AuditTarget` (module doc).

    ``env``: a registered environment id (ignored when ``config`` is given); ``config``: a
    TOML path or an :class:`EnvConfig`; ``market``: 'default', 'real', a panel file or a
    :class:`Panel` (default: what the configuration names); ``answers``: a file
    (:func:`load_answers`) or groups of completions; ``split``: a (partial) split, completed
    on the market as ``gymkit.make`` completes it.
    """
    from gymkit.registry import ENVIRONMENTS, list_envs

    if isinstance(config, EnvConfig):
        cfg = config
    elif config is not None:
        cfg = EnvConfig.load(config)
    else:
        key = env or "us46-default"
        if key not in ENVIRONMENTS:
            raise ValueError(f"unknown environment {key!r}; registered: {list_envs()}")
        cfg = ENVIRONMENTS[key]
    spec = _market_spec(market, cfg)
    panel = market if isinstance(market, Panel) else load_market(spec)
    if market is not None and not (spec.kind == "default" and cfg.market == "default"):
        cfg = cfg.replace(market="user")  # as gymkit.make(..., market=panel) does
    cfg, note = _adapted_split(cfg, panel, split)
    groups = (load_answers(answers) if isinstance(answers, str | Path) else
              None if answers is None else [list(g) for g in answers])
    return AuditTarget(cfg, panel, spec, groups, [note] if note else [])
