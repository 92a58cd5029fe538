"""Cards are bit-identical across x86-64 machines: the frozen probe cards and the seeded archive
digest, recomputed in a process that runs the kernels another CPU would run.

Two libraries choose code from the CPU that scores: numpy dispatches its SIMD loops (AVX-512 or
AVX2 ``log``/``exp``/``power`` give other last bits than the baseline's libm), and Numba compiles
for the host CPU.  The subprocess switches numpy's dispatch off above its baseline
(``NPY_DISABLE_CPU_FEATURES``), makes Numba compile for a generic x86-64 CPU (no AVX, no FMA)
into an empty cache, and pins OpenBLAS to its Haswell kernels; every probe card of
``test_probes.py``, the environment fingerprint and the seeded archive digest must be the same
bytes as in this process (whose own values ``test_probes.py`` checks against the frozen ones).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_CODE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("frozen_probes", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
import gymkit
from gymkit.dsl import kernels  # noqa: F401  (compiled for the generic CPU below)
import numba
assert numba.config.CPU_NAME == "generic", numba.config.CPU_NAME
import json
env = gymkit.make("us46-default")
print(json.dumps(mod.digests(env)))
"""


def _probes_module(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("frozen_probes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_probe_cards_hold_with_generic_kernels(target, tmp_path) -> None:
    import json

    from gymkit.jepa.portable import portable_env

    # numpy's dispatch and OpenBLAS pinned as in the JEPA's portable mode, Numba generic.
    # The seed archive is evaluated there (not read from the shipped P&L), so its digest is
    # recomputed with the generic kernels too.
    env = {**portable_env(), "NUMBA_CPU_NAME": "generic",
           "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "GYMKIT_SEED_ARCHIVE": "evaluate"}
    probes = Path(__file__).with_name("test_probes.py")
    r = subprocess.run([sys.executable, "-c", _CODE, str(probes)], env=env, capture_output=True,
                       text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    here = _probes_module(probes).digests(target.env)
    assert json.loads(r.stdout) == here
