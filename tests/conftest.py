"""Suite-wide isolation: the holdout ledger of every test lives in a temporary file.

Without this, ``probe --holdout`` / ``book --window holdout`` in one test run would be
refused in the next (the ledger is persistent by design: ``gymkit.holdout``).  Subprocesses
inherit the variable.  Tests that need a fresh ledger set their own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_holdout_ledger(tmp_path_factory: pytest.TempPathFactory):
    old = os.environ.get("GYMKIT_HOLDOUT_LEDGER")
    os.environ["GYMKIT_HOLDOUT_LEDGER"] = str(tmp_path_factory.mktemp("ledger") / "holdout.sqlite")
    yield
    if old is None:
        os.environ.pop("GYMKIT_HOLDOUT_LEDGER", None)
    else:
        os.environ["GYMKIT_HOLDOUT_LEDGER"] = old


#: The verifiers 0.4 throwaway venv's base install (tests/adapters and tests/research share it).
VERIFIERS_04_BASE = ["verifiers==0.4.0", "uv", "pytest"]


@pytest.fixture(scope="session")
def verifiers04_venv():
    """A venv with verifiers 0.4.0, uv, pytest and gymkit (editable, this checkout), built once
    under ``$GYMKIT_TEST_VENVS`` (default ``~/.cache/gymkit/test-venvs``) behind a file lock and
    reused while the base install and gymkit's pyproject are unchanged; skips, saying why, when
    the package index cannot be reached."""
    import fcntl
    import hashlib
    import subprocess
    import sys
    from pathlib import Path

    def run(cmd):
        return subprocess.run(cmd, capture_output=True, text=True, timeout=1200)

    def tail(p, n=3):
        lines = [ln for ln in (p.stdout + p.stderr).splitlines()
                 if ln.strip() and "is ignored: it is neither" not in ln]
        return " | ".join(lines[-n:])

    repo = Path(__file__).resolve().parents[1]
    root = Path(os.environ.get("GYMKIT_TEST_VENVS", Path.home() / ".cache" / "gymkit" / "test-venvs"))
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"verifiers-0.4.0-py{sys.version_info.major}.{sys.version_info.minor}"
    py = path / "bin" / "python"
    with open(root / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time
        base = path / f".base-{hashlib.sha256(repr(VERIFIERS_04_BASE).encode()).hexdigest()[:12]}"
        if not base.exists():
            if not py.exists():
                subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
            p = run([str(py), "-m", "pip", "install", "-q", *VERIFIERS_04_BASE])
            if p.returncode:
                pytest.skip(f"verifiers 0.4.0 could not be installed into a throwaway venv at {path} "
                            f"(no reachable package index or cache?): pip exited {p.returncode}: "
                            f"{tail(p)}")
            base.touch()
        stamp = hashlib.sha256(str(repo).encode() + (repo / "pyproject.toml").read_bytes())
        mark = path / f".gymkit-{stamp.hexdigest()[:16]}"
        # The venv is shared by every checkout on the machine (a CI clone, a worktree): the
        # mark says this checkout's pyproject was installed once, not that the editable
        # install still points here, so where gymkit imports from is checked too.
        if not mark.exists() or not _imports_from(py, "gymkit", repo):
            p = run([str(py), "-m", "pip", "install", "-q", "-e", str(repo)])
            assert p.returncode == 0, f"pip install -e {repo} into {path}: {tail(p, 8)}"
            mark.touch()
    return path


def _imports_from(py, module: str, root) -> bool:
    """True when ``module`` imports in the venv of interpreter ``py`` from a file under ``root``
    (an editable install of this checkout, not another one's)."""
    import subprocess
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([str(py), "-c", f"import {module}; print({module}.__file__)"],
                       capture_output=True, text=True, cwd=Path(py).parents[2], env=env, timeout=300)
    return p.returncode == 0 and Path(p.stdout.strip()).resolve().is_relative_to(Path(root).resolve())


@pytest.fixture(scope="session")
def imports_from():
    """:func:`_imports_from`, for tests that install more of this checkout into a shared venv."""
    return _imports_from


class CountingStr(str):
    """A str whose ``find`` adds the characters each call scans to ``CountingStr.scanned``:
    a deterministic measure of a scan's cost (counts, not clocks)."""

    scanned = 0

    def find(self, sub, start=None, end=None):  # str.find, counting what it scans
        lo = 0 if start is None else start
        hi = len(self) if end is None else end
        hit = str.find(self, sub, lo, hi)
        CountingStr.scanned += max(0, (hit + len(sub) if hit >= 0 else hi) - lo)
        return hit


@pytest.fixture
def counting_str():
    """The :class:`CountingStr` class with its counter at zero."""
    CountingStr.scanned = 0
    return CountingStr


@pytest.fixture(scope="session")
def serial_pytest_opts() -> tuple[str, ...]:
    """pytest options for this suite run inside another venv that has no pytest-xdist: the
    project's addopts without ``-n`` (the parallel run), as an ``-o addopts=`` override."""
    return ("-o", "addopts=-ra --import-mode=importlib -p no:cacheprovider")


def _fit_tiny_warm_start(run, formulas, n_briefs: int, steps: int) -> None:
    """A seeded 2-layer, width-32 policy fitted to (train brief i -> formulas[i % len]) for the
    first ``n_briefs`` train briefs over ``steps`` full-batch AdamW steps, saved as ``run/sft``."""
    from pathlib import Path

    import torch

    from gymkit.briefs import generate_briefs, split_briefs
    from gymkit.train.policy import PolicyConfig, deterministic, new_policy, save_policy
    from gymkit.train.sft import _batch
    from gymkit.train.tokenizer import build_tokenizer

    deterministic(1)
    tok = build_tokenizer()
    briefs = split_briefs(generate_briefs(), "train")[:n_briefs]
    pairs = [(tok.encode_brief(b.text), tok.encode_answer(formulas[i % len(formulas)]))
             for i, b in enumerate(briefs)]
    cfg = PolicyConfig(layers=2, width=32, heads=2)
    model = new_policy(tok, cfg, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        ids, labels = _batch(tok, pairs)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    save_policy(model, tok, Path(run) / "sft", cfg)


@pytest.fixture(scope="session")
def tiny_warm_start():
    """:func:`_fit_tiny_warm_start`: a tiny single-turn warm start for trainer tests."""
    return _fit_tiny_warm_start


@pytest.fixture(scope="session")
def eight_stock_csv(tmp_path_factory):
    """``make(ticker_column="ticker") -> Path``: a user's plain OHLCV CSV of the first 8 embedded
    stocks over 700 sessions (no cap, no sector or industry), its ticker column named as asked;
    each file written once per session."""
    import pandas as pd

    from gymkit.data import default_market

    made: dict[str, Path] = {}

    def make(ticker_column: str = "ticker") -> Path:
        if ticker_column not in made:
            m = default_market()
            rows = [{"date": str(m.dates[t]), ticker_column: m.tickers[j], "open": m.open[t, j],
                     "high": m.high[t, j], "low": m.low[t, j], "close": m.close[t, j],
                     "volume": m.volume[t, j]} for t in range(700) for j in range(8)]
            path = tmp_path_factory.mktemp("market") / "eight.csv"
            pd.DataFrame(rows).to_csv(path, index=False)
            made[ticker_column] = path
        return made[ticker_column]

    return make


@pytest.fixture(scope="module")
def _module_gymkit_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gymkit-cache")


@pytest.fixture
def own_gymkit_cache(_module_gymkit_cache, monkeypatch) -> Path:
    """``$GYMKIT_CACHE_DIR`` in a folder of the test module's own (seed archives and stress
    worlds of its markets are cached there, not in ~/.cache); use with ``usefixtures``."""
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(_module_gymkit_cache))
    return _module_gymkit_cache


@pytest.fixture
def cli(capsys):
    """``cli(*argv) -> (exit code, stdout, stderr)`` of ``gymkit`` run in this process."""
    from gymkit.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (Linux ``/proc``; a zombie is not running)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def processes_left():
    """``processes_left(pids, within=10)``: those of ``pids`` still running after waiting up
    to ``within`` seconds for them to end (the signal tests' "no worker left behind")."""
    import time

    def left(pids: list[int], within: float = 10.0) -> list[int]:
        deadline = time.monotonic() + within
        while any(map(_running, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return [p for p in pids if _running(p)]

    return left
