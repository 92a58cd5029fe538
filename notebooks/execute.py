"""Execute every notebook in this folder in place, so the committed copies carry their outputs.

    .venv/bin/python notebooks/execute.py            # all notebooks
    .venv/bin/python notebooks/execute.py 02 05      # those whose name starts with 02 or 05

Each runs top to bottom in a fresh kernel from a temporary working folder (nothing is left in
the repository but the notebook).  Outputs are made stable for review: cell ids are numbered,
execution timings and kernel versions are dropped.  Exit 1 (and the notebook left unwritten)
when a cell fails.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 300


def notebooks(prefixes: list[str]) -> list[Path]:
    """The notebooks of this folder, in name order, filtered by name prefixes (all if none)."""
    found = sorted(HERE.glob("*.ipynb"))
    return [p for p in found if not prefixes or any(p.name.startswith(x) for x in prefixes)]


def normalise(book: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Numbered cell ids, no execution timings, only the kernel's name in the metadata."""
    for k, cell in enumerate(book.cells):
        cell["id"] = f"cell-{k:02d}"
        cell.get("metadata", {}).pop("execution", None)
    book.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}}
    book.nbformat, book.nbformat_minor = 4, 5
    return book


def execute(path: Path, write: bool = True) -> nbformat.NotebookNode:
    """Run ``path`` in a fresh kernel (working folder: a temporary one); write it back if ``write``."""
    book = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="gymkit-nb-") as work:
        nbclient.NotebookClient(book, timeout=TIMEOUT_S, kernel_name="python3",
                                resources={"metadata": {"path": work}}).execute()
    book = normalise(book)
    nbformat.validate(book)
    if write:
        nbformat.write(book, path)
    return book


def main(argv: list[str]) -> int:
    """Execute the selected notebooks in place; 1 on the first failing one."""
    for path in notebooks(argv):
        print(f"executing {path.name}", flush=True)
        try:
            execute(path)
        except nbclient.exceptions.CellExecutionError as err:
            print(f"{path.name}: a cell failed\n{err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
