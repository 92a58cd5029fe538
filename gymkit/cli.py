"""The ``gymkit`` command line.  Subcommands are rows of one table, ``COMMANDS``.

Exit codes (every command): 0 ok, 1 user error (bad input, unknown id, missing file, a
missing optional dependency: the message names the install command), 2 usage error (bad
arguments), 3 internal error (a bug: please report it), 130 interrupted, 141 the output pipe
closed early (``gymkit score ... | head``: quiet, no traceback).
Errors print as one line on stderr; ``--debug`` (anywhere on the line) adds the traceback.

Startup is light: ``gymkit --help`` / ``--version`` configure no subcommand, and a command line
configures only its own subcommand, so numba, scipy, polars and FastAPI load only when a
command needs them.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One CLI subcommand: its name, one-line help, argument setup and handler."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    examples: tuple[str, ...] = ()  # shown in `gymkit --help` and `gymkit NAME --help`


def _cmd_demo(args: argparse.Namespace) -> int:
    from gymkit.demo import run_cli

    return run_cli(args)


def _configure_demo(p: argparse.ArgumentParser) -> None:
    from gymkit.demo import configure

    configure(p)


def _lazy(module: str, attr: str) -> Callable:
    """A callable that imports ``module`` on first call and forwards to ``module.attr``."""
    def call(arg: object) -> object:
        return getattr(__import__(module, fromlist=[attr]), attr)(arg)
    return call


COMMANDS: tuple[Command, ...] = (
    Command("demo", "score a sample group of answers on the embedded market; write a tear sheet",
            _configure_demo, _cmd_demo,
            ("gymkit demo", "gymkit demo --out /tmp/tear-sheet", "gymkit demo --json --no-report")),
    Command("market", "summarise the embedded default market or a panel file; clean a file once",
            _lazy("gymkit.market_cli", "configure"), _lazy("gymkit.market_cli", "run"),
            ("gymkit market", "gymkit market prices.csv --columns date=Date,ticker=Name",
             "gymkit market clean raw.csv.gz clean.parquet --adjust")),
    Command("score", "score formulas: a card as a table (channels, why, backtest) or --json",
            _lazy("gymkit.score_cli", "configure_score"), _lazy("gymkit.score_cli", "run_score"),
            ("gymkit score 'rank(-ts_sum(returns, 5))'",
             "gymkit score 'rank(ts_std(volume, 20))' 'rank(-returns)' --json",
             "cat formulas.txt | gymkit score -")),
    Command("score-file", "score a JSONL/Parquet/text file of answers into cards (resumable)",
            _lazy("gymkit.scorefile", "configure"), _lazy("gymkit.scorefile", "run_cli"),
            ("gymkit score-file answers.jsonl --out cards.jsonl",
             "gymkit score-file rollouts.parquet --out cards.parquet --group-field prompt_id")),
    Command("report", "write a static HTML tear sheet of a formula or of a file of answers",
            _lazy("gymkit.report.command", "configure"), _lazy("gymkit.report.command", "run"),
            ("gymkit report 'rank(-ts_sum(returns, 5))' --out report/",
             "gymkit report --answers answers.jsonl --out group-report/")),
    Command("jepa", "train the JEPA world model or build its stress worlds (needs torch)",
            _lazy("gymkit.jepa.train", "configure"), _lazy("gymkit.jepa.train", "run"),
            ("gymkit jepa train --threads 2", "gymkit jepa worlds")),
    Command("env", "list the registered environments or show one's configuration",
            _lazy("gymkit.score_cli", "configure_env"), _lazy("gymkit.score_cli", "run_env"),
            ("gymkit env list", "gymkit env show us46-default --toml")),
    Command("audit", "pre-run checklist: leak, canary, determinism, hand-play, variance checks",
            lambda p: __import__("gymkit.audit.command", fromlist=["configure"]).configure(p),
            lambda a: __import__("gymkit.audit.command", fromlist=["run"]).run(a)),
    Command("briefs", "generate design briefs (train/holdout/probe split, difficulty filter)",
            lambda p: __import__("gymkit.adapters.datasets", fromlist=["x"]).configure_briefs_cli(p),
            lambda a: __import__("gymkit.adapters.datasets", fromlist=["x"]).run_briefs_cli(a)),
    Command("probe", "train-CPCV checkpoint table; --holdout scores the holdout once",
            lambda p: __import__("gymkit.probe", fromlist=["x"]).configure_cli(p),
            lambda a: __import__("gymkit.probe", fromlist=["x"]).run_probe_cli(a)),
    Command("book", "equal-weight and correlation-capped books of valid answers",
            lambda p: __import__("gymkit.book", fromlist=["x"]).configure_cli(p),
            lambda a: __import__("gymkit.book", fromlist=["x"]).run_book_cli(a)),
    Command("export-sft", "verified (brief, formula, card) pairs for supervised fine-tuning",
            lambda p: __import__("gymkit.sft", fromlist=["x"]).configure_cli(p),
            lambda a: __import__("gymkit.sft", fromlist=["x"]).run_export_cli(a)),
    Command("serve", "HTTP verifier server: cards identical to the Python API, worker processes",
            _lazy("gymkit.server.serve", "configure_serve"), _lazy("gymkit.server.serve", "run_serve"),
            ("gymkit serve", "gymkit serve --host 0.0.0.0 --port 8000 --workers 4 --token $TOKEN")),
    Command("train", "train a small policy from scratch: sft, rl (GDPO+CISPO), report (needs torch)",
            _lazy("gymkit.train.cli", "configure"), _lazy("gymkit.train.cli", "run"),
            ("gymkit train sft --run runs/a", "gymkit train rl --run runs/a",
             "gymkit train report runs/a")),
)


_DESCRIPTION = """\
gymkit: a deterministic verifier and RL gym for models that write trading formulas.
A formula (the 101 Formulaic Alphas vocabulary) becomes a daily dollar-neutral long-short
book on the train window; the card reports validity, 12 reward channels and the reward."""

_EXIT_CODES = """\
exit codes:
  0 ok   1 user error (bad input, unknown id, missing file)   2 usage error
  3 internal error (a bug; --debug shows the traceback)   130 interrupted
  141 output pipe closed early (e.g. | head), quietly

  --debug (anywhere on the line) prints the traceback of an error; NO_COLOR=1 turns colour off."""


def _epilog() -> str:
    rows = [f"  {ex}" for cmd in COMMANDS for ex in cmd.examples[:2]]
    start = "start here:\n  gymkit demo            score a sample group, write ./gymkit-demo-report/index.html"
    return start + "\n\nexamples:\n" + "\n".join(rows) + "\n\n" + _EXIT_CODES


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand an argument list names: its first token that is not an option."""
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Return the argument parser with one subparser per row of ``COMMANDS``.

    With ``argv``, only the subcommand it names is configured (the others keep their name and
    help, so ``--help`` lists them): building the parser imports nothing heavy."""
    wanted = None if argv is None else _command_of(argv)
    def fmt(prog: str) -> argparse.HelpFormatter:
        return argparse.RawDescriptionHelpFormatter(prog, max_help_position=20, width=100)

    parser = argparse.ArgumentParser(prog="gymkit", description=_DESCRIPTION, epilog=_epilog(),
                                     formatter_class=fmt)
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.add_argument("--version", action="version", version=f"gymkit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for cmd in COMMANDS:
        epilog = ("examples:\n" + "\n".join(f"  {e}" for e in cmd.examples)) if cmd.examples else None
        sp = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help, epilog=epilog,
                            formatter_class=fmt)
        if argv is None or cmd.name == wanted:
            cmd.configure(sp)
        sp.set_defaults(_run=cmd.run)
    return parser


def _version() -> str:
    from gymkit import __version__

    return __version__


class UsageError(Exception):
    """Raised by a handler for a bad combination of arguments: exit code 2."""


#: Exceptions that mean "the user's input is wrong" (exit 1), not "gymkit is broken" (exit 3).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, FileNotFoundError,
                                                IsADirectoryError, NotADirectoryError,
                                                PermissionError)


#: Optional packages a command may need -> the install command named in its error.
INSTALL_HINTS: dict[str, str] = {
    "torch": "pip install torch==2.13.0",
    "transformers": "pip install torch==2.13.0 'gymkit[train]'",
    "fastapi": "pip install 'gymkit[server]'",
    "uvicorn": "pip install 'gymkit[server]'",
    "matplotlib": "pip install 'gymkit[report]'",
    "gymnasium": "pip install 'gymkit[adapters]'",
    "trl": "pip install 'gymkit[adapters]'",
    "datasets": "pip install 'gymkit[adapters]'",
    "verifiers": "pip install 'gymkit[adapters]'",
}


def _missing_dependency(exc: ModuleNotFoundError) -> str | None:
    top = (exc.name or "").split(".")[0]
    hint = INSTALL_HINTS.get(top)
    return None if hint is None else f"this command needs {top}, which is not installed: {hint}"


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _one_line(exc: BaseException) -> str:
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return " ".join(str(text).split()) or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gymkit`` console script; returns the process exit code (module doc)."""
    raw = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in raw
    raw = [a for a in raw if a != "--debug"]
    try:
        parser = build_parser(raw)
        args = parser.parse_args(raw)
    except SystemExit as exc:  # argparse: --help/--version exit 0, bad usage exits 2
        return exc.code if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    name = f"gymkit {args.command}"
    try:
        from .numba_cache import notify_compiles

        notify_compiles()  # a progress line while a one-time Numba compile runs
        rc = int(args._run(args))
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"{name}: usage error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except USER_ERRORS as exc:
        if debug:
            traceback.print_exc()
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            traceback.print_exc()
        missing = _missing_dependency(exc) if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None:
            print(f"{name}: error: {missing}", file=sys.stderr)
            return 1
        print(f"{name}: internal error: {type(exc).__name__}: {_one_line(exc)} "
              "(run again with --debug for the traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    raise SystemExit(main())
