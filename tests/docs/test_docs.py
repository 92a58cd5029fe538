"""The user documentation: every Python example runs as written, the DSL reference is the
operator table's current rendering, links resolve, and nothing cites a document users lack."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# pages of this set (trainers.md is tested by tests/adapters/test_docs.py)
PAGES = ["README.md", "concepts.md", "dsl.md", "data.md", "server.md", "cli.md"]
# words that point at documents a user of the package does not have
INTERNAL = re.compile(r"DESIGN\s*§|\bDESIGN\b (?:leaves|says)|playbook|\bissue \d+|hack log|the seed's",
                      re.IGNORECASE)


def _reference():
    sys.path.insert(0, str(DOCS))
    try:
        import make_dsl_reference
    finally:
        sys.path.pop(0)
    return make_dsl_reference


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_pages_exist_and_the_index_links_each():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in [*PAGES[1:], "trainers.md"]:
        assert (DOCS / page).is_file(), page
        assert f"]({page})" in index, page


def test_dsl_reference_is_current():
    ref = _reference()
    assert (DOCS / "dsl.md").read_text(encoding="utf-8") == ref.render(), (
        "docs/dsl.md is stale: run .venv/bin/python docs/make_dsl_reference.py")
    from gymkit.dsl.operators import FIELDS, OPERATORS

    text = ref.render()
    assert all(f"`{name}(" in text for name in OPERATORS)
    assert all(f"| `{name}` |" in text for name in FIELDS)


def test_dsl_reference_refuses_an_undocumented_operator(monkeypatch):
    ref = _reference()
    monkeypatch.delitem(ref.MEANING, "ts_rank")
    with pytest.raises(ValueError, match="ts_rank"):
        ref.render()


@pytest.mark.parametrize("page", [p for p in PAGES if _python_blocks((DOCS / p).read_text(encoding="utf-8"))])
def test_page_examples_run(page, tmp_path, monkeypatch):
    """Each page's Python blocks, in order, in one namespace, from an empty working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GYMKIT_HOLDOUT_LEDGER", str(tmp_path / "ledger.sqlite"))
    namespace: dict = {"__name__": "__docs__"}
    for k, block in enumerate(_python_blocks((DOCS / page).read_text(encoding="utf-8"))):
        exec(compile(block, f"docs/{page} (python block {k + 1})", "exec"), namespace)


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (DOCS / target).resolve().exists(), f"docs/{page} links to missing {target}"


def test_no_reference_to_documents_users_do_not_have():
    files = [DOCS / p for p in PAGES] + sorted((REPO / "notebooks").glob("*.ipynb")) + [REPO / "README.md"]
    files += sorted((REPO / "gymkit" / "report").glob("*.py"))
    hits = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if INTERNAL.search(line):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not hits, "\n".join(hits)


def test_readme_links_the_docs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/README.md)" in readme and "(docs/dsl.md)" in readme
    assert os.path.isfile(REPO / "docs" / "README.md")


def test_data_page_explains_the_warning_its_example_prints(tmp_path, monkeypatch):
    """docs/data.md's own-market example reports an `unadjusted-split` warning on synthetic
    data (an earnings gap, not a split); the page quotes that warning word for word, so the
    explanation cannot drift from what a user sees."""
    monkeypatch.chdir(tmp_path)
    text = (DOCS / "data.md").read_text(encoding="utf-8")
    namespace: dict = {"__name__": "__docs__"}
    for block in _python_blocks(text)[:2]:
        exec(compile(block, "docs/data.md", "exec"), namespace)
    checks = namespace["checks"]
    assert checks.warned == {"unadjusted-split": 2}
    quoted = checks.warned_first["unadjusted-split"]
    flat = " ".join(text.split())
    assert f"`{quoted}`" in flat, quoted
    assert "The synthetic market has no splits" in flat
