"""``gymkit env list|show``: the registered environments, or one environment's configuration."""

from __future__ import annotations

import argparse
import json
from typing import Any, NamedTuple

from .options import add_market_args, make_env

__all__ = ["Shown", "configure", "env_summary", "run", "shown_env"]


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit env list|show``."""
    sub = p.add_subparsers(dest="env_command", metavar="list|show", required=True)
    sub.add_parser("list", help="registered environments", description="registered environments")
    sp = sub.add_parser("show", help="one environment's configuration",
                        description="one environment's configuration")
    sp.add_argument("env_id", nargs="?", default="us46-default",
                    help="a registered id or a .toml path (default: us46-default)")
    sp.add_argument("--toml", action="store_true", help="print the configuration as TOML")
    add_market_args(sp)


class Shown(NamedTuple):
    """What ``env show`` prints: the config, and what building it on its market told."""

    config: Any
    market: str | None = None  # a line about the panel it runs on
    fingerprint: str | None = None  # the environment's (every card reports it)
    channels: tuple[str, ...] | None = None  # the channels that count (None: the config's)
    notes: tuple[str, ...] = ()  # the environment's notes (inactive channels, derived split)


def _split_line(s: dict[str, str]) -> str:
    """The split as shown; a partial one names its given dates and what completes the rest."""
    if len(s) < 4:
        given = ", ".join(f"{k}={v}" for k, v in s.items())
        return f"partial ({given}): the rest is completed on the market (pass --market)"
    return (f"train {s['train_start']} .. {s['train_end']}, holdout {s['holdout_start']} .. "
            f"{s['holdout_end']}")


def env_summary(config: Any, shown: Shown | None = None) -> str:
    """A readable multi-line summary of an EnvConfig (no market loading); ``shown`` adds what
    building it told (:func:`shown_env`)."""
    from gymkit.verifiers.channels import CHANNELS

    shown = shown or Shown(config)
    active = config.channels if shown.channels is None else shown.channels
    s, c = config.split, config.cpcv
    lines = [f"{config.env_id}: {config.description}",
             f"  market        {config.market}" + (f": {shown.market}" if shown.market else ""),
             f"  split         {_split_line(s)}; burn-in {config.burn_in} sessions",
             f"  train costs   {json.dumps(config.train_costs, sort_keys=True)}",
             f"  holdout costs {json.dumps(config.holdout_costs, sort_keys=True)} (report/probe only)",
             f"  cpcv          {c['n_blocks']} blocks, {c['n_test_blocks']} test blocks, purge "
             f"{c['purge']}, embargo {c['embargo']}",
             f"  archive       {config.archive['seed']} seed, capacity {config.archive['capacity']}",
             f"  stress worlds {config.stress_worlds or 'none configured'}",
             f"  advantages    floor {config.advantages.get('floor', 'none')}",
             "  channels (active marked *):"]
    for ch in CHANNELS:
        on = "*" if ch.name in active else " "
        lines.append(f"    {on} {ch.id:<4} {ch.name:<18} priority {config.priorities[ch.name]:g}")
    lines += [f"  note          {n}" for n in shown.notes]
    if shown.fingerprint is not None:
        lines.append(f"  fingerprint   {shown.fingerprint}")
    return "\n".join(lines)


def shown_env(args: argparse.Namespace, config: Any) -> Shown:
    """The environment ``score`` builds from ``args`` (``config`` = ``args.env_id``'s), as shown.

    Built by the one ``make_env`` path with the archive left unseeded (seeding evaluates the
    101 alphas; the seed corpus changes the config, not the data or stress worlds), then given
    back its configured seed, so the config and fingerprint are ``score``'s exactly.  A config
    on a user market shown without ``--market`` is shown as configured (nothing to build on).
    """
    if config.market == "user" and args.market is None and args.split is None:
        return Shown(config, "pass --market FILE to resolve the split and the fingerprint")
    env = make_env(args, args.env_id, archive={"seed": "none"})
    shown = env.config.replace(archive={"seed": config.archive["seed"]})
    m = env.market
    where = f"{args.market}, " if args.market is not None else ""
    line = (f"{where}{len(m.tickers)} stocks, {m.dates[0]} .. {m.dates[-1]} ({len(m.dates)} "
            f"sessions), data fingerprint {env.data_fingerprint[:16]}")
    notes = tuple(n for n in env.notes if n != env.split_note)  # make_env printed the split's
    return Shown(shown, line, shown.fingerprint(env.data_fingerprint, env.stress_digest),
                 tuple(env.channels), notes)


def run(args: argparse.Namespace) -> int:
    """``gymkit env list`` / ``gymkit env show ID``."""
    from pathlib import Path

    from gymkit.config import EnvConfig
    from gymkit.registry import ENVIRONMENTS, list_envs

    if args.env_command == "list":
        width = max(len(k) for k in ENVIRONMENTS)
        for k in sorted(ENVIRONMENTS):
            cfg = ENVIRONMENTS[k]
            print(f"{k:<{width}}  {len(cfg.channels):>2} channels  {cfg.description}")
        return 0
    if args.env_id in ENVIRONMENTS:
        cfg = ENVIRONMENTS[args.env_id]
    elif args.env_id.endswith(".toml") and Path(args.env_id).is_file():
        cfg = EnvConfig.load(args.env_id)
    else:
        raise ValueError(f"unknown environment {args.env_id!r}; registered: {list_envs()}")
    shown = shown_env(args, cfg)
    print(shown.config.to_toml() if args.toml else env_summary(shown.config, shown),
          end="\n" if not args.toml else "")
    return 0
