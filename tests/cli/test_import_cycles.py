"""The CLI package: one module per command, one lazy-import idiom, no import cycles (issue 23)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import gymkit
from gymkit.cli import COMMANDS

ROOT = Path(gymkit.__file__).parent
CLI = ROOT / "cli"
HEAVY = ("numba", "torch", "polars", "scipy", "fastapi", "uvicorn", "matplotlib")
#: Folders of the one gymkit namespace (pyproject's package-dir) -> their module prefix.
FOLDERS = {"gymkit": "gymkit", "dsl": "gymkit.dsl", "verifiers": "gymkit.verifiers",
           "jepa": "gymkit.jepa", "data": "gymkit.data"}


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports (top level or inside functions)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_demo_does_not_import_the_cli_that_dispatches_to_it():
    assert "gymkit.demo" in _imports(CLI / "demo.py")
    assert not {m for m in _imports(ROOT / "demo.py") if m.startswith("gymkit.cli")}


def test_market_summary_is_a_module_of_its_own_used_by_demo_and_market():
    from gymkit import cli
    from gymkit.market_summary import market_summary

    assert not hasattr(cli, "market_summary")
    for path in (ROOT / "demo.py", CLI / "market.py"):
        assert "gymkit.market_summary" in _imports(path), path
    from gymkit.data import default_market

    text = market_summary(default_market(), "title")
    assert text.startswith("title\n") and "fingerprint" in text


# ------------------------------------------------------------------ the static import graph
def _module_files() -> dict[str, Path]:
    """Module name -> file for every module of the gymkit namespace in this checkout."""
    repo = ROOT.parent
    out: dict[str, Path] = {}
    for folder, prefix in FOLDERS.items():
        for path in (repo / folder).rglob("*.py"):
            parts = path.relative_to(repo / folder).with_suffix("").parts
            if "__pycache__" in parts or any(p.startswith(".") for p in parts):
                continue
            name = ".".join((prefix, *parts))
            out[name.removesuffix(".__init__")] = path
    return out


def _graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the gymkit modules it names in an import statement (top level or inside a
    function; a package's ``__init__`` is not implied), plus the CLI's dispatch: the table
    imports each row's module by name when its command runs."""
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in files and t != name}
        graph[name] = edges
    graph["gymkit.cli.app"] |= {f"gymkit.cli.{c.module}" for c in COMMANDS}
    return graph


def _cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path start -> ... -> start in ``graph``, or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_no_import_cycle_runs_through_the_cli_package():
    files = _module_files()
    graph = _graph(files)
    cli = sorted(m for m in files if m == "gymkit.cli" or m.startswith("gymkit.cli."))
    assert "gymkit.cli.app" in cli and len(cli) >= len(COMMANDS) + 4
    cycles = [c for c in (_cycle_through(graph, m) for m in cli) if c]
    assert not cycles, cycles[0]


def test_the_cycle_finder_sees_a_cycle():
    """The check can fail: the old layout (cli imports demo, demo imports cli) is a cycle."""
    graph = {"gymkit.cli": {"gymkit.demo"}, "gymkit.demo": {"gymkit.market_summary", "gymkit.cli"}}
    assert _cycle_through(graph, "gymkit.cli") == ["gymkit.cli", "gymkit.demo", "gymkit.cli"]
    assert _cycle_through({"a": {"b"}, "b": set()}, "a") is None


# ------------------------------------------------------------ one module per command, lazily
@pytest.mark.parametrize("cmd", COMMANDS, ids=[c.name for c in COMMANDS])
def test_each_command_is_one_module_importing_only_the_cli_at_top_level(cmd):
    """Every row's module defines configure and run; at import time it loads only the standard
    library and gymkit.cli's own modules (everything else is imported inside the functions)."""
    path = CLI / f"{cmd.module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"configure", "run"} <= defined, path
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["gymkit.cli"] if node.level == 1 else [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "__future__" or \
                name.startswith("gymkit.cli"), f"{path.name} imports {name} at top level"


def _imported_by(argv: list[str]) -> tuple[int, set[str]]:
    """Exit code and ``sys.modules`` after the ``gymkit`` console script ran ``argv`` in a
    fresh interpreter (``-X importtime`` would miss modules loaded by ``import_module``)."""
    script = Path(sys.executable).with_name("gymkit")
    code = (f"import runpy, sys; sys.argv = ['gymkit', *{argv!r}]\n"
            "try:\n"
            f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    rc = e.code\n"
            "print('MODULES', rc, ' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tempfile.gettempdir())
    last = res.stderr.strip().splitlines()[-1].split(" ")
    assert last[0] == "MODULES", res.stderr[-2000:]
    return int(last[1]), set(last[2:])


def test_cold_help_imports_no_heavy_library_and_no_command_module():
    """`gymkit --help` and `--version`, as typed: numba, torch, polars, scipy, FastAPI and
    matplotlib stay unloaded, and no command module is imported (only the table's)."""
    for argv in (["--help"], ["--version"]):
        rc, names = _imported_by(argv)
        assert rc == 0 and "gymkit.cli.app" in names, (argv, rc)
        assert not {n for n in names if n.split(".")[0] in HEAVY}, argv
        commands = {f"gymkit.cli.{c.module}" for c in COMMANDS}
        assert not names & commands, (argv, sorted(names & commands))
    rc, names = _imported_by(["score", "--help"])
    assert rc == 0 and "gymkit.cli.score" in names and "gymkit.cli.env" not in names
    assert not {n for n in names if n.split(".")[0] in HEAVY}
