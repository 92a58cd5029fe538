"""``gymkit env list|show``: the registered environments, or one environment's configuration."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .options import add_market_args, make_env

__all__ = ["configure", "env_summary", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit env list|show``."""
    sub = p.add_subparsers(dest="env_command", metavar="list|show", required=True)
    sub.add_parser("list", help="registered environments", description="registered environments")
    sp = sub.add_parser("show", help="one environment's configuration",
                        description="one environment's configuration")
    sp.add_argument("env_id", help="a registered id or a .toml path")
    sp.add_argument("--toml", action="store_true", help="print the configuration as TOML")
    add_market_args(sp)


def env_summary(config: Any) -> str:
    """A readable multi-line summary of an EnvConfig (no market loading)."""
    from gymkit.verifiers.channels import CHANNELS

    s, c = config.split, config.cpcv
    lines = [f"{config.env_id}: {config.description}",
             f"  market        {config.market}",
             f"  split         train {s['train_start']} .. {s['train_end']}, holdout "
             f"{s['holdout_start']} .. {s['holdout_end']}; burn-in {config.burn_in} sessions",
             f"  train costs   {json.dumps(config.train_costs, sort_keys=True)}",
             f"  holdout costs {json.dumps(config.holdout_costs, sort_keys=True)} (report/probe only)",
             f"  cpcv          {c['n_blocks']} blocks, {c['n_test_blocks']} test blocks, purge "
             f"{c['purge']}, embargo {c['embargo']}",
             f"  archive       {config.archive['seed']} seed, capacity {config.archive['capacity']}",
             f"  stress worlds {config.stress_worlds or 'none configured'}",
             f"  advantages    floor {config.advantages.get('floor', 'none')}",
             "  channels (active marked *):"]
    for ch in CHANNELS:
        on = "*" if ch.name in config.channels else " "
        lines.append(f"    {on} {ch.id:<4} {ch.name:<18} priority {config.priorities[ch.name]:g}")
    return "\n".join(lines)


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
    if args.market is not None or args.split is not None:  # the split this market would get
        cfg = make_env(args, args.env_id, archive={"seed": "none"}).config
    print(cfg.to_toml() if args.toml else env_summary(cfg), end="\n" if not args.toml else "")
    return 0
