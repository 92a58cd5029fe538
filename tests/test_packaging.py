"""The package layout: one namespace gymkit.*, nothing shadowing PyPI's `verifiers` or `jepa`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SUBPACKAGES = ("gymkit.data", "gymkit.dsl", "gymkit.verifiers", "gymkit.jepa")
REPO = Path(__file__).resolve().parents[1]


def _run(code: str, cwd: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackage_maps_to_its_design_card_folder(name: str) -> None:
    folder = name.split(".")[1]
    mod = __import__(name, fromlist=["_"])
    assert Path(mod.__file__).resolve().parent == REPO / folder


def test_outside_verifiers_and_jepa_import_beside_gymkit(tmp_path: Path) -> None:
    # Stand-ins for the PyPI packages `verifiers` and `jepa`, found first on sys.path.
    for name in ("verifiers", "jepa"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"MARK = 'outside-{name}'\n")
    res = _run(
        """
        import gymkit, gymkit.verifiers, gymkit.jepa, gymkit.dsl, gymkit.data
        import verifiers, jepa
        assert verifiers.MARK == 'outside-verifiers', verifiers.__file__
        assert jepa.MARK == 'outside-jepa', jepa.__file__
        assert gymkit.verifiers is not verifiers and gymkit.jepa is not jepa
        print('ok')
        """,
        cwd=tmp_path, extra_path=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_no_top_level_project_folders_are_importable(tmp_path: Path) -> None:
    res = _run(
        """
        import importlib.util, gymkit, gymkit.verifiers, gymkit.jepa, gymkit.dsl, gymkit.data
        for n in ('verifiers', 'jepa', 'dsl', 'data'):
            spec = importlib.util.find_spec(n)  # the PyPI package of that name may be installed
            print(n, None if spec is None else spec.origin)
        """,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    for line in res.stdout.strip().splitlines():
        name, origin = line.split(" ", 1)
        assert origin == "None" or not origin.startswith(str(REPO / name) + "/"), (name, origin)
