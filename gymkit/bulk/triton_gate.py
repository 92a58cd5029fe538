"""The one first-use rule of the batch scorer's Triton kernels (scans, rowsum, libm, moments).

Each kernel module keeps ``interpret`` (run in Triton's interpreter on CPU tensors: the tests),
a ``status`` dict (None: not tried; True: in use; else why not) and ``_build`` / ``_self_check``.
A kernel runs only on CUDA (on CPU when interpreted), only after it has been built and has
matched its torch chain bit for bit once; any failure keeps the chain for good.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import torch

__all__ = ["first_use", "launch_opts", "load_jit"]


def first_use(mod: ModuleType, device: torch.device, what: str, *, key: str = "triton",
              build=None, check=None) -> bool:
    """Whether ``mod``'s kernels (``status[key]``) run on ``device``: built by ``build``
    (default ``mod._build``) and checked by ``check(device)`` (default ``mod._self_check``) on
    the first call; ``what`` names the kernel in the status when its check fails."""
    if device.type != ("cpu" if mod.interpret else "cuda"):
        return False
    if mod.status.get(key) is None:
        try:
            (build or mod._build)()
            mod.status[key] = True if (check or mod._self_check)(device) else f"self-check: {what} differs from the torch chain"
        except Exception as exc:  # no Triton, or it cannot compile here
            mod.status[key] = f"{type(exc).__name__}: {exc}"[:200]
    return mod.status[key] is True


def launch_opts(mod: ModuleType) -> dict:
    """Launch options of ``mod``'s kernels: float fusion off (no mul+add becomes an FMA); the
    interpreter takes none."""
    return {} if mod.interpret else {"enable_fp_fusion": False}


def load_jit(mod: ModuleType, name: str) -> ModuleType:
    """The kernel module ``gymkit.bulk.<name>`` decorated afresh: interpreted when ``mod`` is
    (Triton reads ``TRITON_INTERPRET`` when a kernel is decorated)."""
    if mod.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    return importlib.reload(importlib.import_module(f"gymkit.bulk.{name}"))
