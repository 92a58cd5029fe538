"""``gymkit.make`` runs no compiled kernel (issue 22's warm path), counted, never timed.

A fresh process (the test run's own Numba cache, warm or not) builds ``us46-default``: Numba
compiles nothing (``numba:compile`` events), no gymkit kernel holds a compiled or
cache-loaded overload afterwards, and the imports no card on the embedded market needs
(``scipy.stats``, a second; polars, the file loaders) stay unimported.  Then the same process scores an answer, which does
load its kernels (so the probe can see them).
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = r"""
import json, sys
from numba.core import event

compiled = []

class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(getattr((ev.data or {}).get("dispatcher"), "py_func", None).__qualname__)

    def on_end(self, ev):
        pass

event.register("numba:compile", Count())
import gymkit
from numba.core.dispatcher import Dispatcher

env = gymkit.make("us46-default")

def overloads():
    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith(("gymkit.dsl", "gymkit.verifiers")):
            for attr, obj in vars(mod).items():
                if isinstance(obj, Dispatcher) and obj.overloads:
                    out[f"{name}.{attr}"] = len(obj.overloads)
    return out

after_make = {"compiled": list(compiled), "overloads": overloads(),
              "scipy_stats": "scipy.stats" in sys.modules, "polars": "polars" in sys.modules,
              "archive": len(env.archive)}
card = env.score("<alpha>rank(-ts_sum(returns, 5))</alpha>")
print(json.dumps({"make": after_make, "valid": card.valid, "after_score": len(overloads())}))
"""


def test_make_compiles_and_runs_no_kernel() -> None:
    res = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    made = out["make"]
    assert made["compiled"] == [], f"make() compiled {made['compiled']}"
    assert made["overloads"] == {}, f"make() ran compiled kernels: {made['overloads']}"
    assert not made["scipy_stats"], "make() imported scipy.stats"
    assert not made["polars"], "make() on the embedded market imported polars (the file loaders)"
    assert made["archive"] > 0  # the shipped seed archive was read, not evaluated
    # the probe can see kernels: scoring one answer loads (here: compiles) several
    assert out["valid"] and out["after_score"] > 3
