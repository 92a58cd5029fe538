"""Every ``gymkit ...`` command form the user documentation shows parses with the real CLI parser.

A user types these forms as written, so a form the parser refuses (``gymkit score-file IN OUT``
when the output is ``--out OUT``) is a bug of the page.  The forms are read from the pages
(``docs/*.md`` and ``data/README.md``):

* docs/cli.md's command table: each form in a row's first column, and each option a row's
  second column names (``--answers FILE``) appended to one of that row's forms;
* every line of a shell/console block that runs ``gymkit`` (``$ gymkit ...`` lines where the
  block has prompts, else lines starting with ``gymkit``);
* every inline ```gymkit ...``` span of the prose; a bare command path such as ```gymkit
  report``` or ```gymkit train research``` is a reference to the command and only has to exist.

Placeholders are filled in before parsing: capitals are the user's values (``FILE``, ``ID``,
``N``; ``FORMULA…`` = one formula), ``$VAR`` and ``…`` stand for any value, ``[...]`` is
optional (both with and without it must parse), and a pipe, redirection or comment ends a
command.  Options must be spelled in full (argparse would accept a prefix; a page should not
teach one).  The parser is :func:`gymkit.cli.build_parser`, the one ``gymkit`` itself uses.
"""

from __future__ import annotations

import argparse
import re
import shlex
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from gymkit.cli import COMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]
CLI_PAGE = REPO / "docs" / "cli.md"
PAGES = [*sorted((REPO / "docs").glob("*.md")), REPO / "data" / "README.md"]

#: values of the placeholders whose argument has a type; any other placeholder is its name.
VALUES = {"N": "2", "K": "2", "PORT": "8000", "ID": "us46-default",
          "FORMULA": "rank(-ts_sum(returns, 5))"}
PLACEHOLDER = re.compile(r"([A-Z][A-Z0-9_]*)(?:…|\.\.\.)?")
ENDS = {"|", "||", ">", ">>", "<", "&"}


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()  # every command configured


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sp for a in p._actions if isinstance(a, argparse._SubParsersAction)
            for name, sp in a.choices.items()}


def _options(p: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``p`` and of its subcommands, recursively."""
    out = set(p._option_string_actions)
    for sp in _subparsers(p).values():
        out |= _options(sp)
    return out


def _expand(form: str) -> list[str]:
    """``form`` with each ``[...]`` group dropped and kept (innermost first)."""
    m = re.search(r"\[([^\[\]]*)\]", form)
    if not m:
        return [" ".join(form.split())]
    return [f for mid in ("", m.group(1)) for f in _expand(form[:m.start()] + mid + form[m.end():])]


def _fill(tok: str) -> str:
    if tok.startswith("$") or tok in ("…", "..."):
        return "x"
    m = PLACEHOLDER.fullmatch(tok)
    return VALUES.get(m.group(1), m.group(1).lower()) if m else tok


def _commands(text: str) -> list[list[str]]:
    """The ``gymkit`` argument lists of one shell line (without ``gymkit``), placeholders filled."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out, cur = [], []
    for tok in [*lex, "&&"]:
        if tok in ("&&", ";"):
            if cur and cur[0] == "gymkit":
                cut = next((i for i, t in enumerate(cur) if t in ENDS), len(cur))
                out.append([_fill(t) for t in cur[1:cut]])
            cur = []
        else:
            cur.append(tok)
    return out


def _parse_error(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """None when ``gymkit argv`` parses (``--help`` included), else argparse's message."""
    err = StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(StringIO()):
            parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            lines = err.getvalue().strip().splitlines()
            return lines[-1] if lines else f"exit {exc.code}"
    known = _options(parser)
    unknown = [a.split("=")[0] for a in argv if a.startswith("--") and a.split("=")[0] not in known]
    return f"options not spelled in full: {unknown}" if unknown else None


def _is_path(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """``argv`` is a bare command path (``report``, ``train research``, ``jepa worlds``)."""
    cur = parser
    for i, tok in enumerate(argv):
        subs = _subparsers(cur)
        if tok in subs:
            cur = subs[tok]
        elif i == len(argv) - 1 and any(tok in (a.choices or ()) for a in cur._actions
                                        if not a.option_strings):
            return True
        else:
            return False
    return bool(argv)


def _table_rows() -> list[tuple[list[str], list[str]]]:
    """(forms of the first column, option spans of the second) per row of cli.md's table."""
    rows = []
    for line in CLI_PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `gymkit"):
            first, rest = line.strip("|").split("|", 1)
            rows.append((re.findall(r"`(gymkit [^`]*)`", first),
                         [s for s in re.findall(r"`([^`]*)`", rest) if s.startswith("-")]))
    return rows


def _block_lines(text: str) -> list[str]:
    """The command lines of the page's shell/console blocks (python and yaml blocks skipped)."""
    out = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if lang not in ("", "bash", "sh", "shell", "console"):
            continue
        lines = body.replace("\\\n", " ").splitlines()
        prompted = [ln[2:] for ln in lines if ln.startswith("$ ")]
        out += prompted if prompted else [ln for ln in lines if ln.startswith("gymkit ")]
    return out


def _prose_spans(text: str) -> list[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"`(gymkit(?: [^`]*)?)`", text)


def test_the_table_forms_parse(parser) -> None:
    rows = _table_rows()
    assert len(rows) >= len(COMMANDS), "docs/cli.md: the command table was not found"
    bad = []
    for forms, options in rows:
        argvs = [argv for form in forms for f in _expand(form) for argv in _commands(f)]
        assert argvs, f"docs/cli.md: a table row without a gymkit form: {forms}"
        for form in forms:
            for f in _expand(form):
                for argv in _commands(f):
                    if (why := _parse_error(parser, argv)) is not None:
                        bad.append(f"`{form}` (as `gymkit {shlex.join(argv)}`): {why}")
        for option in options:  # an option the row names applies to one of the row's forms
            for o in _expand(option):
                extra = [_fill(t) for t in shlex.split(o)]
                if all(_parse_error(parser, argv + extra) for argv in argvs):
                    bad.append(f"`{option}` (in the row of {forms}): no form of the row takes "
                               f"`{o}`: {_parse_error(parser, argvs[0] + extra)}")
    assert not bad, "docs/cli.md command table:\n" + "\n".join(bad)


def test_the_table_has_a_row_per_command() -> None:
    named = {form.split()[1] for forms, _ in _table_rows() for form in forms}
    assert named == {c.name for c in COMMANDS}, (
        f"missing rows: {sorted({c.name for c in COMMANDS} - named)}; "
        f"unknown commands: {sorted(named - {c.name for c in COMMANDS})}")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_documented_command_line_parses(page, parser) -> None:
    text = page.read_text(encoding="utf-8")
    bad = []
    for line in _block_lines(text):
        for form in _expand(line):
            for argv in _commands(form):
                if (why := _parse_error(parser, argv)) is not None:
                    bad.append(f"`{line.strip()}`: {why}")
    for span in _prose_spans(text):
        for form in _expand(span):
            for argv in _commands(form):
                if _is_path(parser, argv):
                    continue  # a reference to a command by name
                if (why := _parse_error(parser, argv)) is not None:
                    bad.append(f"`{span}`: {why}")
    assert not bad, f"{_rel(page)}:\n" + "\n".join(bad)


def test_the_market_paragraph_names_the_commands_that_take_market(parser) -> None:
    """cli.md's `--market FILE` paragraph lists exactly the commands with ``--market``, and
    names those of them without ``--split``."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    para = next(p for p in text.split("\n\n") if p.startswith("`--market FILE`"))
    names = {c.name for c in COMMANDS}
    listed = {w for w in re.findall(r"`([a-z][a-z -]*)`", para) if w.split()[0] in names}
    from gymkit.cli.options import add_market_args

    ref = argparse.ArgumentParser()
    add_market_args(ref)
    split_help = ref._option_string_actions["--split"].help  # the market's split, not briefs'
    with_market, without_split = set(), set()
    for name, sp in _subparsers(parser).items():
        nested = _subparsers(sp)
        for path, p in ([(name, sp)] if not nested else
                        [(f"{name} {n}", s) for n, s in nested.items()]):
            if "--market" in p._option_string_actions:
                with_market.add(path)
                split = p._option_string_actions.get("--split")
                if split is None or split.help != split_help:
                    without_split.add(path)
    but_for = re.search(r"but for ((?:`[a-z -]+`(?:, | and )?)+)", para)
    assert listed == with_market, (f"listed but no --market: {sorted(listed - with_market)}; "
                                   f"take --market, not listed: {sorted(with_market - listed)}")
    assert but_for and set(re.findall(r"`([a-z -]+)`", but_for.group(1))) == without_split


def test_a_wrong_form_is_caught(parser) -> None:
    """The check itself: the form the table used to show, and an abbreviated option, fail."""
    assert "--out" in _parse_error(parser, _commands("gymkit score-file IN OUT")[0])
    assert "spelled in full" in _parse_error(parser, _commands("gymkit score-file IN --ou OUT")[0])
    variants = [_commands(f)[0] for f in _expand("gymkit score-file IN --out OUT [--workers N]")]
    assert variants == [["score-file", "in", "--out", "out"],
                        ["score-file", "in", "--out", "out", "--workers", "2"]]
    assert all(_parse_error(parser, argv) is None for argv in variants)
    assert _commands("gymkit briefs --split train > t.jsonl  # a comment") == [["briefs", "--split", "train"]]
    assert _is_path(parser, ["train", "research"]) and not _is_path(parser, ["train", "nope"])
