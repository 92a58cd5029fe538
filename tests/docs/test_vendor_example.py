"""data/README.md's worked example ("a vendor file") replayed as written, on the shared real data.

Its Python block builds ``vendor_prices.csv`` from ``gymkit.data.REAL_DATA_PATH`` in an empty
folder; then every ``$ `` line of its console block runs there in bash, standard error merged
into standard output as a terminal shows them, and the output must be the one printed under
it.  In the printed output ``…`` stands for cut text (any characters on that line), and a line
that is only ``…`` for any number of lines; nothing else is left out.  The holdout ledger is
this test's own, so the first ``probe --holdout`` is the first look and the second is refused.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gymkit.data import REAL_DATA_PATH

REPO = Path(__file__).resolve().parents[2]
README = REPO / "data" / "README.md"

pytestmark = [pytest.mark.real, pytest.mark.slow,
              pytest.mark.skipif(not REAL_DATA_PATH.is_file(),
                                 reason=f"{REAL_DATA_PATH} is absent (../shared/data/real)")]


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"^## Worked example: a vendor file\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "data/README.md has no worked example"
    return m.group(1)


def _transcript(section: str) -> list[tuple[str, list[str]]]:
    """(command, printed output lines) per ``$ `` line of the section's console block."""
    m = re.search(r"^```console\n(.*?)^```", section, re.S | re.M)
    assert m, "the worked example has no console block"
    steps: list[tuple[str, list[str]]] = []
    for line in m.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
    return steps


def _pattern(lines: list[str]) -> re.Pattern[str]:
    """Printed lines as a regex: ``…`` = any text of one line, a bare ``…`` line = any lines."""
    parts = []
    for line in lines:
        if line.strip() == "…":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("…")) + r"\n")
    return re.compile("".join(parts))


def test_pattern_semantics() -> None:
    pat = _pattern(["a …!", "…", "z"])
    assert pat.fullmatch("a bc!\nx\ny\nz\n") and pat.fullmatch("a !\nz\n")
    assert not pat.fullmatch("a bc?\nz\n") and not pat.fullmatch("a b!\nz\nextra\n")


def test_the_worked_example_prints_what_the_page_shows(tmp_path, monkeypatch) -> None:
    section = _section()
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, "the worked example builds its file in one Python block"
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "data/README.md (worked example)", "exec"),  # our own doc
         {"__name__": "__docs__"})
    assert (tmp_path / "vendor_prices.csv").is_file()
    shell = {k: v for k, v in os.environ.items() if k != "GYMKIT_COMPILE_NOTICE"}
    shell.update(PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                 GYMKIT_HOLDOUT_LEDGER=str(tmp_path / "ledger.sqlite"), PYTHONUNBUFFERED="1")
    steps = _transcript(section)
    assert len(steps) >= 8
    for command, printed in steps:
        p = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=shell, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        assert _pattern(printed).fullmatch(p.stdout), (
            f"data/README.md: `{command}` printed (exit {p.returncode}):\n{p.stdout}\n"
            f"the page shows:\n" + "\n".join(printed))
        # a command the page shows failing fails (exit 1), every other one succeeds
        assert p.returncode == (1 if any(": error: " in ln for ln in printed) else 0), command
