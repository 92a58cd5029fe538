"""Every notebook in notebooks/ runs top to bottom (their asserts are part of the test).

Notebooks are stored without outputs; this executes each in a fresh kernel from a temporary
working folder, so a run leaves nothing in the repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_four_notebooks_exist_and_are_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    names = [p.stem for p in NOTEBOOKS]
    assert names == ["01_quickstart", "02_reward_hacks", "03_train_loop", "04_your_data"]
    for p in NOTEBOOKS:
        book = nbformat.read(p, as_version=4)
        nbformat.validate(book)
        for cell in book.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{p.name} has outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(book, timeout=180, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
