"""Where Numba keeps gymkit's compiled kernels: a folder keyed by the sources it compiles.

Numba's on-disk cache (``@njit(cache=True)``) checks only the stamp of the file that defines
a function.  Kernels inline helpers defined in other files (the element-wise and rolling
engines inline ``dsl/kernels/plumbing.py``'s ``clean``), so after an upgrade that changes only
such a helper Numba would load the callers' old machine code.  gymkit
therefore points Numba's cache at ``BASE/gymkit-src-<digest>``, where ``<digest>`` hashes every
``.py`` file under the ``gymkit.dsl`` and ``gymkit.verifiers`` package folders (whatever files
exist there): any edit there gives a new folder, so nothing stale can be loaded.

``BASE`` is ``$NUMBA_CACHE_DIR`` when the user set it, else ``<gymkit cache>/numba``
(:func:`gymkit.worlds_cache.cache_root`).  :func:`configure` runs on ``import gymkit``, before
any kernel module is imported; it sets ``NUMBA_CACHE_DIR`` (so spawned workers inherit it) and,
when Numba is already imported, Numba's config too.  It never imports Numba itself.

:func:`notify_compiles` (called by the CLI) prints a progress line on stderr (a terminal, or
any stream with ``GYMKIT_COMPILE_NOTICE=1``) while Numba really compiles (a cache miss: the
first run after an install or upgrade), never on cache loads.  It hooks the import of
gymkit's kernel modules, so commands that compile nothing do not import Numba for it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

__all__ = ["MARK", "cache_dir", "configure", "notify_compiles", "source_digest", "source_roots"]

#: Prefix of the keyed folder's name (also how a NUMBA_CACHE_DIR set by gymkit is recognised).
MARK = "gymkit-src-"
#: Packages whose compiled functions are cached (and whose sources key the folder).
PACKAGES = ("gymkit.dsl", "gymkit.verifiers")


def source_roots() -> list[Path]:
    """The folders of :data:`PACKAGES` (found without importing them)."""
    roots = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for loc in (spec.submodule_search_locations or []) if spec else []:
            roots.append(Path(loc))
    return roots


def source_digest(roots: Iterable[Path] | None = None) -> str:
    """sha256 (first 16 hex) of every ``.py`` file under ``roots`` (default :func:`source_roots`):
    each file's path relative to its root and its bytes, in sorted order."""
    h = hashlib.sha256()
    for k, root in enumerate(source_roots() if roots is None else roots):
        root = Path(root)
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        for p in files:
            rel = f"{k}:{p.relative_to(root).as_posix()}"
            h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _base() -> Path:
    env = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    if env:
        p = Path(env)
        return p.parent if p.name.startswith(MARK) else p
    from .worlds_cache import cache_root

    return cache_root() / "numba"


def cache_dir(roots: Iterable[Path] | None = None) -> Path:
    """The cache folder for the current sources (module doc); not created here."""
    return _base() / f"{MARK}{source_digest(roots)}"


def configure() -> Path | None:
    """Point Numba's cache at :func:`cache_dir` (module doc); return it, or None when the
    sources cannot be read (Numba's default cache is then left as it is)."""
    try:
        path = cache_dir()
    except OSError:
        return None
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    cfg = sys.modules.get("numba.core.config")
    if cfg is not None:
        cfg.CACHE_DIR = str(path)  # type: ignore[attr-defined]
    return path


# ------------------------------------------------------------ compile notice
#: Modules whose import first needs the listener (they compile at import or on first call).
_HOOKED = ("gymkit.dsl.kernels", "gymkit.verifiers", "gymkit.bulk")


class _CompileNotice:
    """Counts Numba's real compilations (outermost only) and redraws one status line."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream, self.depth, self.count = stream, 0, 0
        self.t0 = self.last = 0.0
        self.drawn = self.said = False

    @property
    def stream(self) -> TextIO:
        """The given stream, else ``sys.stderr`` as it is now."""
        return self._stream or sys.stderr

    @property
    def tty(self) -> bool:
        """Whether the stream is a terminal (the line is redrawn in place)."""
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def write(self, text: str) -> None:
        """Write and flush; a closed or broken stream is ignored (a notice must not fail a compile)."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def start(self, name: str) -> None:
        """One compilation of ``name`` begins."""
        self.depth += 1
        if self.depth > 1:
            return
        now = time.perf_counter()
        if not self.count:
            self.t0 = now
            self.header()
        self.count += 1
        if now - self.last >= (0.2 if self.tty else 10.0):
            self.last = now
            line = f"gymkit: compiled {self.count - 1} kernels ({now - self.t0:.0f} s), now {name}"
            tty = self.tty
            self.write(f"\r{line[:100]:<100}" if tty else line + "\n")
            self.drawn = tty

    def header(self) -> None:
        """Say once that a one-time compile runs and where its result is kept."""
        if not self.said:
            self.said = True
            self.write("gymkit: compiling Numba kernels once for this install (cached in "
                       f"{os.environ.get('NUMBA_CACHE_DIR', 'numba default')}); "
                       "a first run takes a minute or more\n")

    def end(self) -> None:
        """The compilation begun last ends; the outermost one wipes a redrawn status line, so
        the command's own output never lands on it (it is redrawn at the next compile)."""
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and self.drawn:
            self.write(f"\r{'':<100}\r")
            self.drawn = False

    def close(self) -> None:
        """End a redrawn line with a newline (at exit)."""
        if self.drawn:
            self.write("\n")


_NOTICE: _CompileNotice | None = None


def _register() -> None:
    import atexit

    from numba.core import event

    notice = _NOTICE
    assert notice is not None

    class _Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            disp = (ev.data or {}).get("dispatcher")
            notice.start(getattr(getattr(disp, "py_func", None), "__name__", "a kernel"))

        def on_end(self, ev: Any) -> None:
            notice.end()

    event.register("numba:compile", _Listener())
    atexit.register(notice.close)
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    if folder and not any(Path(folder).rglob("*.nbi")):  # nothing cached yet: say so now
        notice.header()


class _Hook:
    """A meta-path finder that registers the listener just before a kernel module is imported."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name.startswith(_HOOKED):
            sys.meta_path[:] = [f for f in sys.meta_path if f is not _Hook]
            _register()
        return None


def notify_compiles(stream: TextIO | None = None) -> None:
    """Print a progress line on ``stream`` (default: ``sys.stderr`` at the time of writing)
    whenever Numba compiles (module doc), when the stream is a terminal or
    ``GYMKIT_COMPILE_NOTICE=1``; idempotent."""
    global _NOTICE
    if _NOTICE is not None:
        return
    notice = _CompileNotice(stream)
    if not (notice.tty or os.environ.get("GYMKIT_COMPILE_NOTICE", "").strip() == "1"):
        return  # pipes and logs stay as they were unless asked
    _NOTICE = notice
    if "numba.core.event" in sys.modules or any(m.startswith(_HOOKED) for m in sys.modules):
        _register()
    else:
        sys.meta_path.insert(0, _Hook)  # type: ignore[arg-type]
