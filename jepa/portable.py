"""Portable arithmetic for the JEPA pipeline: the same bits on every x86-64 machine.

torch, numpy and OpenBLAS each choose their kernels from the CPU they run on (AVX-512, AVX2,
SSE): oneDNN convolutions, MKL matrix products, ATen's vectorised reductions and
transcendentals, numpy's SIMD ``log``/``exp``/``power`` and OpenBLAS's level-3 blocking give
float results that differ in the last bits from one CPU model to the next, and the float32
encoder amplifies them (a world file's sha256 and the gate figures moved at ~1e-8 relative
between an Intel and an AMD machine).  Portable mode pins every one of those choices to a
code path that exists on every x86-64-v3 machine (AVX2 + FMA):

=========================  ==================================================================
torch (ATen kernels)        ``ATEN_CPU_CAPABILITY=default`` (the non-vectorised kernels)
torch (MKL BLAS)            ``MKL_CBWR=COMPATIBLE`` (Intel's conditional numerical
                            reproducibility: the same code path on Intel and non-Intel CPUs)
torch (oneDNN)              off (``torch.backends.mkldnn.enabled = False``)
numpy (SIMD dispatch)       ``NPY_DISABLE_CPU_FEATURES`` = every dispatch target above the
                            build's baseline that this CPU has (libm transcendentals)
OpenBLAS (numpy, scipy)     ``OPENBLAS_CORETYPE=Haswell`` (the AVX2 kernels on every CPU)
threads                     one (torch, OpenMP, MKL, OpenBLAS): no reduction-order races
=========================  ==================================================================

The environment variables are read when the libraries start, so portable mode is a property
of a *process*: :func:`portable_env` builds the environment, :func:`run_portable` runs a
command in it, and ``gymkit jepa`` re-executes itself in it (:func:`reexec_if_needed`).
:func:`problems` says what keeps the current process from being portable.  Bit-identity across
machines assumes the same versions of torch, numpy and OpenBLAS (the manifest records them).
Scoring never uses this module: cards are numpy + Numba arithmetic that is portable as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

__all__ = ["FLAG", "describe", "enter", "portable_env", "problems", "reexec_if_needed",
           "run_portable"]

#: Set in a portable process's environment.
FLAG = "GYMKIT_JEPA_PORTABLE"
OPENBLAS_CORE = "Haswell"

_FIXED = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "OPENBLAS_CORETYPE": OPENBLAS_CORE,
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    FLAG: "1",
}


def _numpy_dispatch_to_disable() -> list[str]:
    """numpy's dispatch targets above its baseline that this CPU supports (in numpy's names)."""
    from numpy._core import _multiarray_umath as m

    base = set(m.__cpu_baseline__)
    return [f for f in m.__cpu_dispatch__ if f not in base and m.__cpu_features__.get(f)]


def portable_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) plus the portable-mode settings of the module table."""
    env = dict(os.environ if base is None else base)
    env.update(_FIXED)
    env["NPY_DISABLE_CPU_FEATURES"] = " ".join(_numpy_dispatch_to_disable())
    return env


def problems() -> list[str]:
    """Why the current process is not in portable mode ([] when it is).

    Call after :func:`enter`; checks the flag, numpy's active dispatch targets, OpenBLAS's
    kernel family and (when torch is loaded) torch's CPU capability and oneDNN switch.
    """
    out = []
    if os.environ.get(FLAG) != "1":
        out.append(f"{FLAG} is not set (start the process with portable_env())")
    live = _numpy_dispatch_to_disable()  # what is still active: none once disabled
    if live:
        out.append(f"numpy dispatches to {' '.join(live)}")
    try:
        import threadpoolctl

        for lib in threadpoolctl.threadpool_info():
            if lib.get("internal_api") == "openblas" and lib.get("architecture") != OPENBLAS_CORE:
                out.append(f"OpenBLAS runs {lib.get('architecture')} kernels, not {OPENBLAS_CORE}")
    except ImportError:  # threadpoolctl is optional: the environment variable then stands alone
        pass
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.backends.cpu.get_cpu_capability() != "DEFAULT":
            out.append(f"torch runs {torch.backends.cpu.get_cpu_capability()} kernels "
                       "(ATEN_CPU_CAPABILITY must be set before torch's first operation)")
        if torch.backends.mkldnn.enabled:
            out.append("torch's oneDNN is enabled (call enter())")
        if torch.get_num_threads() != 1:
            out.append(f"torch uses {torch.get_num_threads()} threads")
    return out


def enter() -> None:
    """Switch the in-process settings (torch: one thread, oneDNN off) and check the process.

    Raises ``RuntimeError`` naming every setting that is not portable.
    """
    import torch

    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    bad = problems()
    if bad:
        raise RuntimeError("not in portable mode: " + "; ".join(bad))


def describe() -> dict[str, str]:
    """The versions and settings that a portable result depends on (for manifests)."""
    import numpy as np

    d = {"numpy": np.__version__, "openblas_coretype": OPENBLAS_CORE,
         "aten_cpu_capability": "default", "mkl_cbwr": "COMPATIBLE", "threads": "1"}
    if "torch" in sys.modules:
        d["torch"] = sys.modules["torch"].__version__
    return d


def run_portable(args: Sequence[str], *, env: Mapping[str, str] | None = None,
                 **kwargs) -> subprocess.CompletedProcess:
    """Run ``python args...`` (this interpreter) in portable mode; ``kwargs`` go to
    :func:`subprocess.run` (``env`` entries are added on top of the portable environment)."""
    full = portable_env()
    full.update(env or {})
    return subprocess.run([sys.executable, *args], env=full, **kwargs)


def reexec_if_needed(argv: Sequence[str]) -> None:
    """Replace this process by ``gymkit argv...`` in portable mode unless it already is."""
    if os.environ.get(FLAG) == "1":
        return
    code = "import sys; from gymkit.cli import main; sys.exit(main(sys.argv[1:]))"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-c", code, *argv], portable_env())
