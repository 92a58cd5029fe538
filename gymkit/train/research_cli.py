"""``gymkit train research`` and ``gymkit train serve``: their arguments and handlers.

Standard library only at import time (``gymkit train --help`` loads no torch): the work is in
:mod:`.research_rl` and :mod:`.serve`.

* ``gymkit train research --run RUN [--from SFTRUN] [--ci] [--steps N] [--budget B] [--seed S]``:
  the multi-turn research policy in ``RUN/research`` from the single-turn warm start
  ``SFTRUN/sft`` (default ``RUN/sft``).
* ``gymkit train serve RUN [--port 8000] [--host 127.0.0.1] [--temperature 0] [--seed 0]``: the
  policy of ``RUN/research/policy`` (or a policy folder) behind ``/v1/chat/completions``.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["configure", "run"]


def configure(sub: Any) -> None:
    """Add the ``research`` and ``serve`` subcommands to ``gymkit train``'s subparsers."""
    research_help = ("RL of a multi-turn policy on the research episode (tools on the train "
                     "window, one submit, reward net of its own mining)")
    q = sub.add_parser("research", help=research_help, description=research_help)
    q.add_argument("--run", required=True, help="run directory (writes RUN/research)")
    q.add_argument("--from", dest="from_run", default=None, metavar="SFTRUN",
                   help="single-turn warm start to start from (SFTRUN/sft; default RUN/sft)")
    q.add_argument("--env", default="us46-research", help="environment id (default us46-research)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--steps", type=int, default=None, help="RL steps (default 60)")
    q.add_argument("--budget", type=int, default=None, help="tool calls per episode besides "
                   "submit (default 3)")
    q.add_argument("--group", type=int, default=None, help="episodes per brief (default 8)")
    q.add_argument("--eval-every", type=int, default=None, help="steps between evaluations")
    q.add_argument("--lr", type=float, default=None, help="RL learning rate (default 1e-4)")
    q.add_argument("--threads", type=int, default=1, help="torch threads (part of determinism)")
    q.add_argument("--ci", action="store_true", help="the short CI configuration")
    q.add_argument("--device", default="cpu", help="torch device (cpu: the byte-identical path)")
    serve_help = ("OpenAI-compatible /v1/chat/completions around a research policy (tool calls "
                  "in OpenAI's tool_calls format)")
    s = sub.add_parser("serve", help=serve_help, description=serve_help)
    s.add_argument("run_dir", metavar="RUN", help="a `gymkit train research` run (or a policy folder)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); else "
                   "sampling seeded by --seed and the request's messages")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--budget", type=int, default=8, help="budget assumed when the system prompt "
                   "does not state one (default 8)")
    s.add_argument("--model-name", default="gymkit-research", help="the id /v1/models lists")


def run(args: argparse.Namespace) -> int | None:
    """Run ``research`` or ``serve``; None for any other subcommand."""
    from dataclasses import replace

    if args.train_cmd == "serve":
        from .serve import serve

        serve(args.run_dir, host=args.host, port=args.port, temperature=args.temperature,
              seed=args.seed, budget=args.budget, model_name=args.model_name)
        return 0
    if args.train_cmd != "research":
        return None
    from .research_rl import ResearchRLConfig, ci_config, run_research

    cfg = ci_config(args.seed) if args.ci else ResearchRLConfig(seed=args.seed)
    over: dict[str, Any] = {"env_id": args.env, "threads": args.threads, "device": args.device}
    for key in ("steps", "budget", "group", "eval_every"):
        if getattr(args, key) is not None:
            if getattr(args, key) < (0 if key == "budget" else 1):
                raise ValueError(f"--{key.replace('_', '-')} must be "
                                 f"{'>= 0' if key == 'budget' else '>= 1'}, got {getattr(args, key)}")
            over[key] = getattr(args, key)
    if args.lr is not None:
        if not args.lr > 0:
            raise ValueError(f"--lr must be > 0, got {args.lr}")
        over["lr"] = args.lr
    run_research(replace(cfg, **over), args.run, args.from_run)
    return 0
