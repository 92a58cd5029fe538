"""Numba's cache of gymkit's kernels is keyed by the sources of dsl/ and verifiers/, so editing a
helper that another module's kernels inline (``plumbing.clean``, inlined by the element-wise
engines) recompiles those kernels instead of loading stale code.

The end-to-end test runs a temporary copy of the package (gymkit/, with dsl/ and verifiers/
inside, as a wheel lays them out) in subprocesses with an empty ``NUMBA_CACHE_DIR``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gymkit
from gymkit import numba_cache

ROOT = Path(gymkit.__file__).resolve().parent.parent
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")

# Calls an element-wise kernel (its engine inlines plumbing.clean) and prints numba's cache log.
_PROBE = """
import numpy as np, gymkit
from gymkit.dsl.kernels import add
assert gymkit.__file__.startswith({tree!r}), gymkit.__file__
w = add(np.arange(12.0).reshape(3, 4), np.inf)
print("ADD", repr(np.isnan(w).sum()))
"""


def test_digest_follows_every_source_file(tmp_path: Path) -> None:
    for name in ("dsl", "verifiers"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=_IGNORE)
    roots = [tmp_path / "dsl", tmp_path / "verifiers"]
    before = numba_cache.source_digest(roots)
    assert numba_cache.source_digest(roots) == before  # deterministic
    kernel = sorted((tmp_path / "dsl").rglob("*.py"))[-1]
    kernel.write_text(kernel.read_text() + "\n# edited\n")
    assert numba_cache.source_digest(roots) != before
    (tmp_path / "dsl" / "new_kernels").mkdir()  # a package split: new files count too
    (tmp_path / "dsl" / "new_kernels" / "x.py").write_text("")
    assert len({before, numba_cache.source_digest(roots)}) == 2


def test_cache_dir_is_keyed_and_honours_numba_cache_dir(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    import numba  # this process configured numba when gymkit was imported

    assert numba.config.CACHE_DIR == os.environ["NUMBA_CACHE_DIR"]
    assert Path(numba.config.CACHE_DIR).name == f"{numba_cache.MARK}{numba_cache.source_digest()}"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    d = numba_cache.cache_dir()
    assert d == tmp_path / "mine" / f"{numba_cache.MARK}{numba_cache.source_digest()}"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(d))  # inherited from a gymkit parent: not nested
    assert numba_cache.cache_dir() == d
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path / "gk"))
    assert numba_cache.cache_dir().parent == tmp_path / "gk" / "numba"


def _run(tree: Path, cache: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GYMKIT_"))}
    env.update(PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache), NUMBA_DEBUG_CACHE="1")
    res = subprocess.run([sys.executable, "-c", _PROBE.format(tree=str(tree))], env=env, cwd=tree,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


@pytest.mark.slow
def test_editing_an_inlined_helper_recompiles_its_callers(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "gymkit", tree / "gymkit", ignore=_IGNORE)
    for name in ("dsl", "verifiers"):
        shutil.rmtree(tree / "gymkit" / name, ignore_errors=True)
        shutil.copytree(ROOT / name, tree / "gymkit" / name, ignore=_IGNORE)
    cache = tmp_path / "numba"

    def engine_loaded(log: str) -> bool:
        return any("data loaded" in ln and "_add_engine" in ln for ln in log.splitlines())

    first = _run(tree, cache)
    assert not engine_loaded(first) and "ADD" in first  # compiled into an empty cache
    again = _run(tree, cache)
    assert engine_loaded(again)  # the cache works: nothing edited, the engine is loaded
    # edit only the module that defines the helper the engine inlines (not the engine's file)
    (src,) = [p for p in (tree / "gymkit" / "dsl").rglob("*.py") if "def clean(" in p.read_text()]
    src.write_text(src.read_text() + "\n# an upgrade touched this kernel module\n")
    edited = _run(tree, cache)
    assert not engine_loaded(edited), "stale engine code loaded after an edit of what it inlines"
    assert edited.splitlines()[-1] == first.splitlines()[-1]
    assert len([p for p in cache.iterdir() if p.name.startswith(numba_cache.MARK)]) == 2


@pytest.mark.slow
def test_the_cli_says_so_while_a_one_time_compile_runs(tmp_path: Path) -> None:
    """``gymkit score`` into an empty Numba cache prints the progress line; the next run is quiet."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GYMKIT_"))}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "numba"), GYMKIT_CACHE_DIR=str(tmp_path / "gk"),
               GYMKIT_COMPILE_NOTICE="1")
    cmd = [str(Path(sys.executable).with_name("gymkit")), "score", "rank(-ts_sum(returns, 5))", "--json"]
    runs = [subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    assert "compiling Numba kernels once for this install" in runs[0].stderr
    assert "compiling" not in runs[1].stderr and runs[0].stdout == runs[1].stdout


def test_the_terminal_status_line_is_wiped_when_compiling_pauses() -> None:
    """On a terminal the status line is redrawn in place; when the outermost compilation ends it
    is wiped, so a command's next line does not land on it (the demo's header did)."""
    import io

    from gymkit.numba_cache import _CompileNotice

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    notice = _CompileNotice(tty)
    notice.start("outer")
    notice.start("inner")  # nested: not drawn, not ended yet
    notice.end()
    assert notice.drawn
    notice.end()
    assert not notice.drawn
    text = tty.getvalue()
    last = text.rsplit("\r", 2)
    assert text.endswith("\r") and last[-2].strip() == ""  # the line is blank again
    tty.write("gymkit 0.2.1 demo\n")
    assert tty.getvalue().splitlines()[-1].split("\r")[-1] == "gymkit 0.2.1 demo"
    notice.close()
    assert tty.getvalue().endswith("demo\n")  # nothing drawn: no extra newline at exit
