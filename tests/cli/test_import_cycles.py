"""The CLI's modules import no command module that imports them back (issue 23)."""

from __future__ import annotations

import ast
from pathlib import Path

import gymkit

ROOT = Path(gymkit.__file__).parent


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
    assert "gymkit.demo" in _imports(ROOT / "cli.py")
    assert "gymkit.cli" not in _imports(ROOT / "demo.py")


def test_market_summary_is_a_module_of_its_own_used_by_demo_and_market():
    from gymkit import cli
    from gymkit.market_summary import market_summary

    assert not hasattr(cli, "market_summary")
    for mod in ("demo.py", "market_cli.py"):
        assert "gymkit.market_summary" in _imports(ROOT / mod), mod
    from gymkit.data import default_market

    text = market_summary(default_market(), "title")
    assert text.startswith("title\n") and "fingerprint" in text
