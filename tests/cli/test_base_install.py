"""The Quickstart's first command installs only the base dependencies: the CLI must build, and
every subcommand's help must work, without importing any test-only or optional-extra package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Packages of the test extra and the optional extras that the base install does not have.
OPTIONAL = ("torch", "trl", "transformers", "datasets", "verifiers", "gymnasium", "nbclient",
            "nbformat", "ipykernel", "schemathesis", "httpx", "lark", "hypothesis", "skfolio",
            "pytest")


def test_optional_packages_are_not_base_dependencies() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower() for d in deps}
    assert not names & set(OPTIONAL)


def test_cli_help_and_every_subcommand_help_work_without_optional_packages(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        from gymkit.cli import COMMANDS, main
        for argv in [['--help']] + [[c.name, '--help'] for c in COMMANDS]:
            try:
                main(argv)
            except SystemExit as e:
                assert e.code in (0, None), (argv, e.code)
        loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({OPTIONAL!r}))
        print('ok', len(COMMANDS), loaded)
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith("ok") and last.endswith("[]"), last  # no optional package imported
