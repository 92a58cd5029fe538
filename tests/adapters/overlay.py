"""Overlay venvs: a venv on top of the test environment, for a library the extras cannot hold.

The overlay's own site-packages come first on its path, then this environment's (a
``site.addsitedir`` .pth, so its .pth files, gymkit's editable finder included, still apply):
torch, transformers and gymkit are reused, and only what the install commands add or pin
differently lives in the overlay.  Built once per (this environment, commands) under
``$GYMKIT_TEST_VENVS`` (default ``~/.cache/gymkit/test-venvs``), then reused; a file lock keeps
two builders apart.  An install that fails (no reachable package index, nothing cached) skips the
calling test, saying which command failed and why.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest


def overlay_venv(name: str, install: list[list[str]]) -> Path:
    """The overlay venv ``name-<key>`` with each ``install`` command (``pip ...``) run in it."""
    root = Path(os.environ.get("GYMKIT_TEST_VENVS",
                               Path.home() / ".cache" / "gymkit" / "test-venvs"))
    root.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(repr((sys.prefix, install)).encode()).hexdigest()[:12]
    path = root / f"{name}-{key}"
    py = path / "bin" / "python"
    with open(root / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / ".ready").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
            purelib = subprocess.run(
                [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                capture_output=True, text=True, check=True).stdout.strip()
            lines = [f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages()]
            Path(purelib, "_gymkit_parent_env.pth").write_text("".join(lines))
            for cmd in install:
                p = subprocess.run([str(py), "-m", *cmd, "-q"], capture_output=True, text=True,
                                   timeout=1800)
                if p.returncode:
                    tail = [ln for ln in (p.stdout + p.stderr).splitlines()
                            if ln.strip() and "is ignored" not in ln][-3:]
                    pytest.skip(f"`{' '.join(cmd)}` failed in the overlay venv {path} (no "
                                f"reachable package index or cache?): {' | '.join(tail)}")
            (path / ".ready").touch()
    return path
