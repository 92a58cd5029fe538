"""jepa reads data and writes panels: no jepa module imports the DSL or the verifiers (issue 23).

Re-scoring formulas in a world and the ranking gate live with scoring (``gymkit.scoring``,
``gymkit.stress_ranking``).  The scan reads every ``jepa/*.py`` with :mod:`ast`, so imports
inside functions, relative imports (``from ..dsl import x``) and ``importlib.import_module``
calls with a literal name count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gymkit.jepa

JEPA_DIR = Path(gymkit.jepa.__file__).resolve().parent
PACKAGE = "gymkit.jepa"
FORBIDDEN = ("gymkit.dsl", "gymkit.verifiers")


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of ``from <level dots><module> import ...`` inside ``package``."""
    if level == 0:
        return module or ""
    base = package.split(".")[: len(package.split(".")) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imported_modules(source: str, package: str = PACKAGE) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source`` (a module of ``package``):
    ``import``, ``from ... import`` (a name imported from a package counts as its submodule)
    and ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                out.append((node.lineno, node.args[0].value))
    return out


def forbidden_imports(source: str, package: str = PACKAGE) -> list[tuple[int, str]]:
    """The imports of ``source`` that reach ``gymkit.dsl`` or ``gymkit.verifiers``."""
    return [(line, m) for line, m in imported_modules(source, package)
            if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_no_jepa_module_imports_the_dsl_or_the_verifiers() -> None:
    files = sorted(JEPA_DIR.glob("*.py"))
    assert len(files) >= 10  # the scan sees the package
    bad = [f"{p.name}:{line}: {m}" for p in files
           for line, m in forbidden_imports(p.read_text(encoding="utf-8"))]
    assert not bad, "jepa imports scoring code: " + ", ".join(bad)


@pytest.mark.parametrize("snippet", [
    "from gymkit.dsl import parse",
    "import gymkit.verifiers.cpcv",
    "def f():\n    from gymkit.verifiers.metrics import _sharpe\n",
    "from .. import dsl",
    "from ..verifiers.oracle import backtest",
    "import importlib\nimportlib.import_module('gymkit.dsl.evaluator')",
    "from gymkit import verifiers",
])
def test_the_scan_sees_every_form_of_import(snippet: str) -> None:
    assert forbidden_imports(snippet), snippet


@pytest.mark.parametrize("snippet", [
    "from gymkit.data.panel import Panel",
    "from .worlds import world_panel",
    "from gymkit.stress_ranking import RankingSet",
    "import gymkit.dslx",
])
def test_the_scan_passes_other_imports(snippet: str) -> None:
    assert not forbidden_imports(snippet), snippet
