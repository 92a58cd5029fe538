"""Environment configuration: one frozen dataclass, a TOML round trip and a fingerprint.

An :class:`EnvConfig` names everything that decides a score: the market, the split dates,
the burn-in, cost models, CPCV parameters, the active reward channels with their priorities
and thresholds, the novelty archive (capacity, seed corpus), stress worlds and the GDPO
advantage floor.  Schema (TOML; every key optional when read, defaults = ``us46-default``)::

    env_id = "us46-default"          # name in the registry
    description = "..."              # on another market than "default", the embedded market's
                                     # phrase (EMBEDDED_MARKET) reads as that market's instead
    market = "default"               # "default" (embedded), "user" (make(..., market=panel))
                                     # or a path to a panel file (gymkit.data.load_panel)
    burn_in = 252                    # sessions before the first judged day
    channels = ["cpcv", "pbo", ...]  # active channels (registry names), any order
    stress_worlds = "default"        # "default" = the shipped JEPA worlds (gymkit.jepa), a
                                     # manifest path, or "" = none (R3 cannot be active)

    [split]        train_start, train_end, holdout_start, holdout_end   (ISO dates; any subset:
                   the rest is completed on the market by the split rule, as --split is)
    [train_costs]  name = "train", fee_bps, slippage_bps, half_spread_bps, fixed_impact_bps
    [holdout_costs] name = "realistic", ...                  (holdout protocol, never scoring)
    [cpcv]         n_blocks, n_test_blocks, purge, embargo
    [priorities]   one float per channel name (every row is stored; inactive ones are unused)
    [thresholds]   ChannelParams fields (gymkit.verifiers.channels)
    [archive]      capacity = 1024, seed = "alpha101" | "none"
    [advantages]   floor = <float>  (absent = no floor, the default)

The writer is a small deterministic emitter (sorted keys inside each table, ``repr`` floats,
JSON-escaped strings), so ``to_toml`` of equal configs is byte-identical and
``EnvConfig.from_toml(c.to_toml()) == c``.

Fingerprint: ``sha256`` of the canonical JSON of the config (sorted keys, no whitespace),
the data fingerprint, the gymkit semantic version, the channel table version and the prompt
version, joined by newlines.  Every score card reports it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymkit.data.splits import (
    DEFAULT_SPLIT,
    SPLIT_KEYS,
    Split,
    check_split,
    resolve_split,
    split_day,
)
from gymkit.verifiers.channels import (
    CHANNEL_NAMES,
    CHANNEL_TABLE_VERSION,
    CHANNELS,
    ChannelParams,
    channel,
)
from gymkit.verifiers.costs import RealisticCosts, TrainCosts, cost_model_from_dict
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.windows import BURN_IN

from .prompt import PROMPT_VERSION  # the template's version (gymkit/prompt.py), fingerprinted

__all__ = ["ARCHIVE_SEEDS", "EMBEDDED_MARKET", "MIN_BLOCK_DAYS", "PROMPT_VERSION", "EnvConfig",
           "describe_market", "market_phrase", "split_for_market"]

#: Judged days per CPCV block a train window must at least hold (about a trading month).
MIN_BLOCK_DAYS = 21

#: Seed corpora the novelty archive can start from.
ARCHIVE_SEEDS = ("alpha101", "none")

#: How a description names the embedded market; on any other market it names that market.
EMBEDDED_MARKET = "46 synthetic US stocks (embedded market)"

_TABLES = ("split", "train_costs", "holdout_costs", "cpcv", "priorities", "thresholds",
           "archive", "advantages")


def _default_channels() -> tuple[str, ...]:
    return tuple(c.name for c in CHANNELS if c.default_on)


def _default_split() -> dict[str, str]:
    s = DEFAULT_SPLIT
    return {"train_start": s.train_start, "train_end": s.train_end,
            "holdout_start": s.holdout_start, "holdout_end": s.holdout_end}


@dataclass(frozen=True)
class EnvConfig:
    """A named environment configuration (module doc has the schema); validated on creation."""

    env_id: str = "us46-default"
    description: str = f"{EMBEDDED_MARKET}, 12-channel reward, train window only"
    market: str = "default"
    burn_in: int = BURN_IN
    channels: tuple[str, ...] = field(default_factory=_default_channels)
    stress_worlds: str = "default"
    split: dict[str, str] = field(default_factory=_default_split)
    train_costs: dict[str, Any] = field(default_factory=lambda: TrainCosts().to_dict())
    holdout_costs: dict[str, Any] = field(default_factory=lambda: RealisticCosts().to_dict())
    cpcv: dict[str, int] = field(default_factory=lambda: {
        k: v for k, v in CPCV().to_dict().items() if k != "name"})
    priorities: dict[str, float] = field(default_factory=lambda: {c.name: c.priority for c in CHANNELS})
    thresholds: dict[str, float] = field(default_factory=lambda: ChannelParams().to_dict())
    archive: dict[str, Any] = field(default_factory=lambda: {"capacity": 1024, "seed": "alpha101"})
    advantages: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"env_id must be a non-empty string, got {self.env_id!r}")
        if not isinstance(self.description, str):
            raise ValueError(f"description must be a string, got {self.description!r}")
        set_(self, "description", describe_market(self.description, self.market))
        if not isinstance(self.burn_in, int) or isinstance(self.burn_in, bool) or self.burn_in < 0:
            raise ValueError(f"burn_in must be an int >= 0, got {self.burn_in!r}")
        names = tuple(channel(n).name for n in self.channels)  # ids accepted, names stored
        if len(set(names)) != len(names):
            raise ValueError(f"channels lists a channel twice: {list(self.channels)}")
        if not names:
            raise ValueError("channels must name at least one reward channel")
        set_(self, "channels", tuple(n for n in CHANNEL_NAMES if n in names))
        for n in self.channels:
            if channel(n).needs == "stress_worlds" and not self.stress_worlds:
                raise ValueError(f"channel {n} needs stress worlds (config stress_worlds); none "
                                 "configured: drop it from channels")
        split = dict(self.split)
        bad = sorted(set(split) - set(SPLIT_KEYS))
        if bad:
            raise ValueError(f"unknown split key(s) {bad}; expected some of {list(SPLIT_KEYS)}")
        # ISO text for every given date (a TOML date literal, an integer 20191228, "20191228")
        split = {k: str(split_day(k, v)) for k, v in split.items()}
        if not split or len(split) == len(SPLIT_KEYS):  # a partial one is completed on the market
            split = {**_default_split(), **split}
            Split(**split)
        set_(self, "split", split)
        for key in ("train_costs", "holdout_costs"):
            set_(self, key, cost_model_from_dict(dict(getattr(self, key))).to_dict())
        cpcv = dict(self.cpcv)
        CPCV(**cpcv)
        set_(self, "cpcv", cpcv)
        prio = {c.name: c.priority for c in CHANNELS}
        for k, v in dict(self.priorities).items():
            name = channel(k).name
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"priority of channel {name} must be a finite number, got {v!r}")
            # a priority that would never count is a mistake (R13 counts whenever a brief is given)
            if name not in self.channels and name != "brief_compliance" and float(v) != prio[name]:
                raise ValueError(f"priority {v!r} set for channel {name}, which is not active in "
                                 f"{self.env_id}: add it to channels or drop the priority")
            prio[name] = float(v)
        set_(self, "priorities", prio)
        set_(self, "thresholds", ChannelParams.from_dict(
            {**ChannelParams().to_dict(), **dict(self.thresholds)}).to_dict())
        arc = {"capacity": 1024, "seed": "alpha101", **dict(self.archive)}
        if set(arc) - {"capacity", "seed"}:
            raise ValueError(f"unknown archive key(s) {sorted(set(arc) - {'capacity', 'seed'})}")
        if not isinstance(arc["capacity"], int) or isinstance(arc["capacity"], bool) or arc["capacity"] < 1:
            raise ValueError(f"archive capacity must be an int >= 1, got {arc['capacity']!r}")
        if arc["seed"] not in ARCHIVE_SEEDS:
            raise ValueError(f"archive seed must be one of {ARCHIVE_SEEDS}, got {arc['seed']!r}")
        set_(self, "archive", arc)
        adv = dict(self.advantages)
        if set(adv) - {"floor"}:
            raise ValueError(f"unknown advantages key(s) {sorted(set(adv) - {'floor'})}")
        if adv.get("floor") is None:
            adv.pop("floor", None)
        elif isinstance(adv["floor"], bool) or not isinstance(adv["floor"], int | float) \
                or not math.isfinite(adv["floor"]):
            raise ValueError(f"advantages.floor must be a finite number, got {adv['floor']!r}")
        else:
            adv["floor"] = float(adv["floor"])
        set_(self, "advantages", adv)

    # ------------------------------------------------------------------ views
    @property
    def split_partial(self) -> bool:
        """True while the split names only some of its four dates (completed on the market by
        :func:`split_for_market`, which every environment build runs)."""
        return len(self.split) < len(SPLIT_KEYS)

    @property
    def split_obj(self) -> Split:
        """The :class:`gymkit.data.Split` of the config (``ValueError`` while it is partial)."""
        if self.split_partial:
            raise ValueError(f"the split {self.split} is partial: it is completed on a market "
                             "(gymkit.make, or gymkit.config.split_for_market)")
        return Split(**self.split)

    @property
    def min_train_sessions(self) -> int:
        """Fewest train sessions this config can judge: burn-in + 2-day horizon + CPCV blocks
        of ``max(MIN_BLOCK_DAYS, purge + embargo + 1)`` judged days each."""
        c = self.cpcv
        block = max(MIN_BLOCK_DAYS, int(c["purge"]) + int(c["embargo"]) + 1)
        return self.burn_in + 2 + int(c["n_blocks"]) * block

    @property
    def min_holdout_sessions(self) -> int:
        """Fewest holdout sessions a holdout book can be scored on: the 2-day horizon and one
        judged day per CPCV block (the holdout score's CPCV)."""
        return 2 + int(self.cpcv["n_blocks"])

    @property
    def channel_params(self) -> ChannelParams:
        """The thresholds as a :class:`ChannelParams`."""
        return ChannelParams.from_dict(self.thresholds)

    @property
    def advantage_floor(self) -> float | None:
        """The GDPO advantage floor (None = off)."""
        return self.advantages.get("floor")

    def active_priorities(self) -> tuple[float, ...]:
        """Priorities of the active channels, in registry order."""
        return tuple(self.priorities[n] for n in self.channels)

    # ------------------------------------------------------------ round trips
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every field."""
        d = dataclasses.asdict(self)
        d["channels"] = list(self.channels)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EnvConfig:
        """Build from a (partial) dict; unknown keys raise ``ValueError`` naming them."""
        known = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise ValueError(f"unknown environment config key(s) {bad}; expected some of {sorted(known)}")
        kw = dict(d)
        if "channels" in kw:
            kw["channels"] = tuple(kw["channels"])
        return cls(**kw)

    def replace(self, **overrides: Any) -> EnvConfig:
        """A copy with ``overrides``; dict-valued fields are merged key by key, except ``split``,
        which is replaced whole (a partial split is completed on the market, never mixed with the
        dates it replaces)."""
        kw: dict[str, Any] = {}
        known = {f.name for f in dataclasses.fields(self)}
        for k, v in overrides.items():
            if k not in known:
                raise ValueError(f"unknown environment config key {k!r}; expected one of {sorted(known)}")
            cur = getattr(self, k)
            merge = isinstance(cur, dict) and isinstance(v, dict) and k != "split"
            kw[k] = {**cur, **v} if merge else v
        return dataclasses.replace(self, **kw)

    def canonical_json(self) -> str:
        """Sorted-key, whitespace-free JSON of :meth:`to_dict` (the fingerprint's input)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    def fingerprint(self, data_fingerprint: str, stress_digest: str = "") -> str:
        """sha256 hex of config JSON + data fingerprint + gymkit version + table/prompt versions
        + the DSL's operator names (the prompt's vocabulary: adding an operator moves it)
        (+ the loaded stress worlds' digest when R3 is active)."""
        from gymkit import __version__
        from gymkit.dsl.operators import OPERATORS

        h = hashlib.sha256()
        for part in (self.canonical_json(), data_fingerprint, __version__, CHANNEL_TABLE_VERSION,
                     PROMPT_VERSION, " ".join(sorted(OPERATORS))):
            h.update(part.encode() + b"\n")
        if stress_digest:
            h.update(stress_digest.encode() + b"\n")
        return h.hexdigest()

    def to_toml(self) -> str:
        """Deterministic TOML text of the config (module doc)."""
        d = self.to_dict()
        lines = [f"{k} = {_toml_value(d[k])}" for k in
                 ("env_id", "description", "market", "burn_in", "channels", "stress_worlds")]
        for table in _TABLES:
            lines += ["", f"[{table}]"]
            lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in sorted(d[table].items())]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, text: str) -> EnvConfig:
        """Parse TOML text (``tomllib``); errors name the bad key or value."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"environment config is not valid TOML: {exc}") from None
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_toml` to ``path`` (UTF-8)."""
        Path(path).write_text(self.to_toml(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> EnvConfig:
        """Read a TOML file written by :meth:`save` (or by hand)."""
        return cls.from_toml(Path(path).read_text(encoding="utf-8"))


def market_phrase(market: str) -> str:
    """How a description names ``market`` (a config's ``market`` value)."""
    if market == "default":
        return EMBEDDED_MARKET
    if market == "user":
        return "a user-supplied market"
    return f"the market file {market}"


def describe_market(description: str, market: str) -> str:
    """``description`` naming ``market``: the embedded market's phrase (:data:`EMBEDDED_MARKET`)
    is replaced by :func:`market_phrase` on any other market; any other text is kept as is."""
    if market == "default" or EMBEDDED_MARKET not in description:
        return description
    return description.replace(EMBEDDED_MARKET, market_phrase(market))


def split_for_market(config: EnvConfig, dates: Any, split: dict[str, str] | None = None,
                     *, user_market: bool = True) -> tuple[EnvConfig, str | None]:
    """The config with its split resolved on the session ``dates``, and the note saying how.

    One rule for ``make``, ``audit``, ``probe``, ``book`` and ``report``
    (:func:`gymkit.data.splits.resolve_split`): a given (possibly partial) ``split`` is
    completed on ``dates``, and so is a partial split of the config itself (the given
    ``split`` overriding it key by key); with none, a user market whose config still carries the
    registry's default split gets the derived split (last 252 sessions held out); any
    other split is kept and checked.  Raises ``ValueError`` (one line) when the result has
    an empty holdout or too short a train window.  The note is None when the split is
    unchanged (e.g. the derived split of the default market is its registry split).
    """
    if config.split_partial:  # a partial [split] of a TOML or EnvConfig: the override wins
        split = {**config.split, **(split or {})}
    if split is None and not (user_market and config.split == _default_split()):
        check_split(config.split_obj, dates, min_train=config.min_train_sessions,
                    min_holdout=config.min_holdout_sessions)
        return config, None
    resolved, note = resolve_split(dates, split, min_train=config.min_train_sessions,
                                   min_holdout=config.min_holdout_sessions)
    full = {k: getattr(resolved, k) for k in ("train_start", "train_end", "holdout_start",
                                              "holdout_end")}
    if full == config.split:
        return config, None
    return dataclasses.replace(config, split=full), note


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} value {v!r} to TOML")
