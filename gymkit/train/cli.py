"""The ``gymkit train`` subcommand: ``sft``, ``rl``, ``report`` (one run directory, RUN).

``gymkit train sft --run RUN`` then ``gymkit train rl --run RUN`` then
``gymkit train report RUN``; ``--ci`` picks the short configuration of the CI test
(2 layers, width 64, 20 RL steps).  Exit codes are the CLI's (1 for a user error).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

__all__ = ["CI_POLICY", "ci_configs", "configure", "run"]


def ci_configs(env_id: str = "us46-default", seed: int = 0, steps: int = 20) -> tuple[Any, Any]:
    """(SFTConfig, RLConfig) of the short CI configuration."""
    from .policy import PolicyConfig
    from .rl import RLConfig
    from .sft import SFTConfig

    return (SFTConfig(env_id=env_id, seed=seed, pairs=2000, steps=250, batch=32, lr=3e-3, per_brief=1,
                      measure=60, policy=PolicyConfig(layers=2, width=64, heads=4)),
            RLConfig(env_id=env_id, seed=seed, steps=steps, probe_every=10, probe_size=20,
                     group=12, briefs_per_step=4, max_new=32))


CI_POLICY = "2 layers, width 64"


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit train``."""
    from gymkit.cli.options import non_negative_int, positive_int

    sub = p.add_subparsers(dest="train_cmd", required=True)
    for name, help_ in (("sft", "warm start on random-grammar formulas (syntax, not alpha)"),
                        ("rl", "GDPO + CISPO + REPO-R + KL from the warm start; probe; holdout once")):
        q = sub.add_parser(name, help=help_, description=help_)
        q.add_argument("--run", required=True, help="run directory (RUN/sft, RUN/rl)")
        q.add_argument("--env", default="us46-default", help="environment id (default us46-default)")
        q.add_argument("--seed", type=non_negative_int, default=0)
        q.add_argument("--steps", type=positive_int, default=None, help="optimiser steps")
        q.add_argument("--threads", type=positive_int, default=1, help="torch threads (part of determinism)")
        q.add_argument("--ci", action="store_true", help="the short CI configuration")
        q.add_argument("--device", default="cpu", help="torch device: cpu (default, byte-identical) "
                       "or cuda where a GPU exists")
        if name == "sft":
            q.add_argument("--layers", type=positive_int, default=None, help="policy layers (default 3)")
            q.add_argument("--width", type=positive_int, default=None, help="policy width (default 96)")
            q.add_argument("--heads", type=positive_int, default=None, help="attention heads (default 4)")
            q.add_argument("--pairs", type=positive_int, default=None, help="warm-start pairs (default 6000)")
        if name == "rl":
            q.add_argument("--workers", type=positive_int, default=None, help="processes scoring the answers' "
                           "archive-free layers (default: the machine's cores, at most 8; any number "
                           "gives the same run, byte for byte)")
            q.add_argument("--probe-every", type=positive_int, default=None)
            q.add_argument("--lr", type=float, default=None, help="RL learning rate (default 3e-4)")
            q.add_argument("--kl-beta", type=float, default=None, help="KL weight to the warm start "
                           "(default 0.08)")
            q.add_argument("--floor", type=float, default=None, help="GDPO advantage floor on R1")
            q.add_argument("--no-floor", action="store_true", help="force the advantage floor off")
            q.add_argument("--ledger", default=None, help="holdout ledger file")
            q.add_argument("--force-holdout", action="store_true")
            q.add_argument("--trainer", choices=("gymkit", "trl"), default="gymkit",
                           help="gymkit: the in-house loop (default); trl: trl.GRPOTrainer with "
                           "gymkit's reward adapter and a REPO-R subclass (gymkit/train/trl_trainer.py)")
    report_help = "HTML + JSON: train vs holdout table, curves, red-team read-out"
    q = sub.add_parser("report", help=report_help, description=report_help)
    q.add_argument("run_dir", metavar="RUN")
    from . import research_cli

    research_cli.configure(sub)  # research (multi-turn RL) and serve (issue 25)


def check_device(name: str) -> None:
    """A ValueError naming ``--device`` unless torch can put a tensor there (a CUDA device
    on a build or machine without one was an internal error, after minutes of work)."""
    import torch

    try:
        torch.empty(1, device=torch.device(name))
    except Exception as exc:  # RuntimeError, AssertionError ("not compiled with CUDA"), ...
        what = " ".join(str(exc).split())[:160]
        raise ValueError(f"--device {name}: torch cannot use it here ({what}); "
                         "--device cpu runs anywhere") from None


def check_writable(folder: Path) -> None:
    """A ValueError naming ``folder`` unless a file can be written in it (made if missing): a
    read-only run folder failed only when the trained policy was saved."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ValueError(f"{folder}: cannot write the run there ({exc.strerror or exc})") from None


def run(args: argparse.Namespace) -> int:
    """Run one ``gymkit train`` subcommand."""
    from dataclasses import replace

    from . import research_cli

    if research_cli.run(args) is not None:
        return 0
    if args.train_cmd == "report":
        from .report import format_table, holdout_line, write_report

        if not (Path(args.run_dir) / "rl" / "table.json").is_file():
            raise ValueError(f"{args.run_dir}: no rl/table.json (run `gymkit train rl` first)")
        rep = write_report(args.run_dir)
        print(format_table(rep))
        print("red-team flags:", ", ".join(f"{k} {'n/a' if v is None else v}"
                                            for k, v in rep["flag_counts"].items()))
        line = holdout_line(rep)
        if line:
            print(line)
        print(f"wrote {Path(args.run_dir) / 'report' / 'index.html'}")
        return 0
    from gymkit.registry import env_config

    from .rl import RLConfig, run_rl
    from .sft import SFTConfig, run_sft

    env_config(args.env)  # an unknown environment: one line, before any folder is made
    check_device(args.device)

    sft_cfg, rl_cfg = ci_configs(args.env, args.seed) if args.ci else (
        SFTConfig(env_id=args.env, seed=args.seed), RLConfig(env_id=args.env, seed=args.seed))
    if args.train_cmd == "sft":
        size = {k: getattr(args, k) for k in ("layers", "width", "heads") if getattr(args, k) is not None}
        if size.get("width", sft_cfg.policy.width) % size.get("heads", sft_cfg.policy.heads):
            raise ValueError("--width must be a multiple of --heads")
        check_writable(Path(args.run) / "sft")
        cfg = replace(sft_cfg, threads=args.threads, device=args.device,
                      policy=replace(sft_cfg.policy, **size),
                      **({"steps": args.steps} if args.steps is not None else {}),
                      **({"pairs": args.pairs} if args.pairs is not None else {}))
        run_sft(cfg, args.run)
        print(f"wrote {Path(args.run) / 'sft'}; next: gymkit train rl --run {args.run}")
        return 0
    if not (Path(args.run) / "sft" / "config.json").is_file():
        raise ValueError(f"{args.run}: no warm start (run `gymkit train sft --run {args.run}` first)")
    if args.trainer == "trl" and args.workers not in (None, 1):
        raise ValueError("--workers applies to --trainer gymkit (TRL scores in its own loop)")
    check_writable(Path(args.run) / "rl")
    over: dict[str, Any] = {"threads": args.threads, "no_floor": args.no_floor, "floor": args.floor,
                            "device": args.device}
    if args.steps is not None:
        over["steps"] = args.steps
    if args.probe_every:
        over["probe_every"] = args.probe_every
    if args.lr is not None:
        over["lr"] = args.lr
    if args.kl_beta is not None:
        over["kl_beta"] = args.kl_beta
    if args.trainer == "trl":
        from .trl_trainer import run_rl_trl

        run_rl_trl(replace(rl_cfg, **over), args.run, ledger=args.ledger,
                   force_holdout=args.force_holdout)
    else:
        workers = min(os.cpu_count() or 1, 8) if args.workers is None else args.workers
        run_rl(replace(rl_cfg, **over), args.run, ledger=args.ledger,
               force_holdout=args.force_holdout, workers=workers)
    print(f"wrote {Path(args.run) / 'rl'}; next: gymkit train report {args.run}")
    return 0
