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


def _subparsers(parser):
    """(path, parser) of every parser under ``parser``, depth first."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sp in action.choices.items():
                yield name, sp
                for sub_name, sub in _subparsers(sp):
                    yield f"{name} {sub_name}", sub


def test_every_subcommand_help_says_what_it_does():
    """``gymkit train research --help`` printed only its usage and options (the fourth
    walkthrough): every command and nested subcommand's help starts with a description."""
    names = []
    for path, sp in _subparsers(build_parser()):
        names.append(path)
        assert sp.description, f"gymkit {path} --help has no description"
        assert sp.format_help().split("\n\n")[1].strip(), path
    assert {"score", "train sft", "train research", "train serve", "env show"} <= set(names)
