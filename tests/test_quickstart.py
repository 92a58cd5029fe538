"""The README Quickstart: exactly two one-line commands, the second being what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "README has no '## Quickstart' section"
    blocks = re.findall(r"```bash\n(.*?)```", section.group(1), re.S)
    assert len(blocks) == 1, f"Quickstart must hold one bash block, found {len(blocks)}"
    return [ln for ln in blocks[0].splitlines() if ln.strip()]


def test_quickstart_has_exactly_two_one_line_commands() -> None:
    cmds = quickstart_commands()
    assert len(cmds) == 2, cmds
    assert all(not c.rstrip().endswith("\\") for c in cmds)


def test_ci_runs_the_quickstart_test_command() -> None:
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert quickstart_commands()[1] in ci_lines


def test_quickstart_main_job_is_the_demo() -> None:
    assert quickstart_commands()[0].endswith("gymkit demo")
