"""The parser and the dispatcher of ``gymkit``: one row of :data:`COMMANDS` per subcommand.

A row names the command's module, ``gymkit.cli.<module>``, which defines ``configure(p)`` (its
arguments) and ``run(args) -> int`` (its handler).  That module is imported only when its
command is on the line (the one lazy-import idiom), so ``gymkit --help`` imports no command
module and a command line imports one.  Adding a command = one module + one row.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, NoReturn

from .errors import USER_ERRORS, UsageError, missing_dependency


@dataclass(frozen=True)
class Command:
    """One CLI subcommand: its name, its module under ``gymkit.cli``, one-line help, examples."""

    name: str
    module: str  # gymkit.cli.<module> defines configure(p) and run(args)
    help: str
    examples: tuple[str, ...] = ()  # shown in `gymkit --help` and `gymkit NAME --help`

    def configure(self, p: argparse.ArgumentParser) -> None:
        """Add the command's arguments to its subparser ``p`` (imports its module)."""
        import_module(f"gymkit.cli.{self.module}").configure(p)

    def run(self, args: argparse.Namespace) -> int:
        """Run the command's handler (the module's ``run``, looked up at call time)."""
        return import_module(f"gymkit.cli.{self.module}").run(args)


COMMANDS: tuple[Command, ...] = (
    Command("demo", "demo",
            "score a sample group of answers on the embedded market; write a tear sheet",
            ("gymkit demo", "gymkit demo --out /tmp/tear-sheet", "gymkit demo --json --no-report")),
    Command("market", "market",
            "summarise the embedded default market or a panel file; clean a file once",
            ("gymkit market", "gymkit market prices.csv --columns date=Date,ticker=Name",
             "gymkit market clean raw.csv.gz clean.parquet --adjust")),
    Command("score", "score",
            "score formulas: a card as a table (channels, why, backtest) or --json",
            ("gymkit score 'rank(-ts_sum(returns, 5))'",
             "gymkit score 'rank(ts_std(volume, 20))' 'rank(-returns)' --json",
             "cat formulas.txt | gymkit score -")),
    Command("score-file", "score_file",
            "score a JSONL/Parquet/text file of answers into cards (resumable)",
            ("gymkit score-file answers.jsonl --out cards.jsonl",
             "gymkit score-file rollouts.parquet --out cards.parquet --group-field prompt_id")),
    Command("report", "report",
            "write a static HTML tear sheet of a formula or of a file of answers",
            ("gymkit report 'rank(-ts_sum(returns, 5))' --out report/",
             "gymkit report --answers answers.jsonl --out group-report/")),
    Command("jepa", "jepa",
            "train the JEPA world model or build its stress worlds (needs torch)",
            ("gymkit jepa train --threads 2", "gymkit jepa worlds")),
    Command("env", "env",
            "list the registered environments or show one's configuration",
            ("gymkit env list", "gymkit env show us46-default --toml")),
    Command("audit", "audit",
            "pre-run checklist: leak, canary, determinism, hand-play, variance checks",
            ("gymkit audit", "gymkit audit --market prices.csv --checks static_lookback,fill_timing",
             "gymkit audit --list")),
    Command("briefs", "briefs",
            "generate design briefs (train/holdout/probe split, difficulty filter)",
            ("gymkit briefs --n 100 --split train --out briefs.jsonl",
             "gymkit briefs --split probe --format verl-parquet --out probe.parquet")),
    Command("probe", "probe",
            "train-CPCV checkpoint table; --holdout scores the holdout once",
            ("gymkit probe --corpus alpha101",
             "gymkit probe --answers answers.jsonl --holdout --out probe-results")),
    Command("book", "book",
            "equal-weight and correlation-capped books of valid answers",
            ("gymkit book --corpus alpha101", "gymkit book --answers answers.jsonl --window holdout")),
    Command("export-sft", "export_sft",
            "verified (brief, formula, card) pairs for supervised fine-tuning",
            ("gymkit export-sft --answers answers.jsonl --threshold 0.5 --out sft.jsonl",)),
    Command("serve", "serve",
            "HTTP verifier server: cards identical to the Python API, worker processes",
            ("gymkit serve", "gymkit serve --host 0.0.0.0 --port 8000 --workers 4 --token $TOKEN")),
    Command("train", "train",
            "train a small policy from scratch: sft, rl (GDPO+CISPO), report (needs torch)",
            ("gymkit train sft --run runs/a", "gymkit train rl --run runs/a",
             "gymkit train report runs/a")),
)


_DESCRIPTION = """\
gymkit: a deterministic verifier and RL gym for models that write trading formulas.
A formula (the 101 Formulaic Alphas vocabulary) becomes a daily dollar-neutral long-short
book on the train window; the card reports validity, 12 reward channels (13 with a brief) and the reward."""

_EXIT_CODES = """\
exit codes:
  0 ok   1 user error (bad input, unknown id, missing file; a worker killed from outside)
  2 usage error   3 internal error (a bug; --debug shows the traceback)   130 interrupted
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


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose "invalid choice" error names the nearest choice (a mistyped
    command, subcommand or option value: ``gymkit scroe`` → did you mean 'score'?).  Every
    subparser is one too (``add_subparsers`` builds them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = [c.strip().strip("'") for c in m.group(2).split(",")]
            near = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if near:
                message += f"; did you mean {near[0]!r}?"
        super().error(message)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Return the argument parser with one subparser per row of ``COMMANDS``.

    With ``argv``, only the subcommand it names is configured (the others keep their name and
    help, so ``--help`` lists them): building the parser imports nothing heavy."""
    wanted = None if argv is None else _command_of(argv)
    def fmt(prog: str) -> argparse.HelpFormatter:
        return argparse.RawDescriptionHelpFormatter(prog, max_help_position=20, width=100)

    parser = _Parser(prog="gymkit", description=_DESCRIPTION, epilog=_epilog(),
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


def _warnings_as_notes() -> None:
    """Print each distinct warning once as a ``gymkit: note:`` line on stderr (a CLI user gets
    no Python source lines); ``--debug`` or ``PYTHONWARNINGS`` keep Python's own format."""
    import warnings

    if os.environ.get("PYTHONWARNINGS"):
        return
    seen: set[str] = set()

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        text = " ".join(str(message).split())
        if text in seen:
            return
        seen.add(text)
        print(f"gymkit: note: {text}", file=sys.stderr if file is None else file)

    warnings.showwarning = show


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
    if not debug:
        _warnings_as_notes()
    try:
        from gymkit.numba_cache import notify_compiles

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
        missing = missing_dependency(exc) if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None:
            print(f"{name}: error: {missing}", file=sys.stderr)
            return 1
        print(f"{name}: internal error: {type(exc).__name__}: {_one_line(exc)} "
              "(run again with --debug for the traceback)", file=sys.stderr)
        return 3
