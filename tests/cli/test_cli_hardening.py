"""The CLI's door as a user types it: light --help/--version, quiet broken pipes, missing
optional dependencies named with their install command, documented exit codes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("numba", "scipy", "fastapi", "polars", "uvicorn", "torch")


def _loaded_after(argv: list[str]) -> tuple[int, list[str], str]:
    code = textwrap.dedent(f"""
        import sys
        from gymkit.cli import build_parser, main
        build_parser({argv!r})
        rc = main({argv!r})
        heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))
        print('LOADED', rc, ','.join(heavy), file=sys.stderr)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    last = res.stderr.strip().splitlines()[-1].split(" ")
    return int(last[1]), [m for m in (last[2:] or [""])[0].split(",") if m], res.stdout


def test_help_version_and_light_subcommand_help_import_nothing_heavy() -> None:
    """Assertion: building the parser and running --help, --version, serve --help and
    score --help load none of numba/scipy/fastapi/polars/uvicorn/torch (the CLI is lazy)."""
    for argv in (["--help"], ["--version"], ["serve", "--help"], ["score", "--help"],
                 ["score-file", "--help"]):
        rc, heavy, out = _loaded_after(argv)
        assert rc == 0 and heavy == [], (argv, heavy)
    rc, _, out = _loaded_after(["--help"])
    assert "141" in out and "exit codes:" in out


def test_broken_pipe_is_quiet_with_exit_141(tmp_path: Path) -> None:
    """Assertion: `gymkit score - --json < 60 formulas | head -3` (200 KB of cards) prints 3 lines, nothing on stderr (no
    BrokenPipeError traceback) and gymkit exits 141."""
    formulas = tmp_path / "f.txt"
    formulas.write_text("".join(f"rank(-ts_sum(returns, {d}))\n" for d in range(2, 62)))
    cmd = (f"{sys.executable} -m gymkit.cli score - --json < {formulas} 2>{tmp_path}/err | head -3; "
           "echo rc=${PIPESTATUS[0]}")
    res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    lines = res.stdout.splitlines()
    assert len(lines) == 4 and lines[-1] == "rc=141", res.stdout[-500:]
    assert (tmp_path / "err").read_text() == ""


def test_missing_torch_names_the_install_command(tmp_path: Path) -> None:
    """Assertion: with torch not importable, `gymkit jepa worlds` exits 1 with one line naming
    `pip install torch==2.13.0` (not a ModuleNotFoundError traceback, not exit 3)."""
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import importlib.abc, sys
        class _NoTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, _NoTorch())
    """))
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "gymkit.cli", "jepa", "worlds", "--out",
                          str(tmp_path / "w")], capture_output=True, text=True, timeout=600,
                         env=env, cwd=tmp_path)
    assert res.returncode == 1, res.stderr[-1000:]
    err = res.stderr.strip().splitlines()
    assert err == ["gymkit jepa: error: this command needs torch, which is not installed: "
                   "pip install torch==2.13.0"]
