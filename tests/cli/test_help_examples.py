"""Every example the help shows is a command line the parser accepts (issue 23)."""

from __future__ import annotations

import shlex

import pytest

from gymkit.cli import COMMANDS, build_parser


def _argv(example: str) -> list[str]:
    """The gymkit arguments of an example line (the command after a pipe, if any)."""
    line = example.rsplit("|", 1)[-1].strip()
    words = shlex.split(line)
    assert words[0] == "gymkit", example
    return words[1:]


@pytest.mark.parametrize("cmd", COMMANDS, ids=[c.name for c in COMMANDS])
def test_every_example_parses_as_its_command(cmd):
    assert cmd.examples, f"gymkit {cmd.name} --help shows no example"
    for example in cmd.examples:
        argv = _argv(example)
        args = build_parser(argv).parse_args(argv)
        assert args.command == cmd.name and args._run == cmd.run, example


def test_a_wrong_example_is_caught():
    argv = _argv("gymkit probe --corpus alpha102")
    with pytest.raises(SystemExit):
        build_parser(argv).parse_args(argv)
