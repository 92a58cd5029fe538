"""Cold start (issue 22): a fresh install's first ``gymkit demo`` and a warm ``gymkit.make``.

Each case runs in a new process; CPU time is the child's user + system time
(``resource.getrusage(RUSAGE_CHILDREN)``), wall time around it.

* ``fresh demo``: ``gymkit demo --out DIR`` with an empty ``NUMBA_CACHE_DIR`` and an empty
  ``GYMKIT_CACHE_DIR`` (what a fresh install sees: nothing compiled, nothing cached);
* ``fresh demo, seed evaluated``: the same with ``GYMKIT_SEED_ARCHIVE=evaluate`` (the 101
  alphas evaluated and backtested as before the shipped seed P&L);
* ``warm make``: ``python -c "import gymkit; gymkit.make('us46-default')"`` once the caches of
  the first case are filled, ``--rounds`` times (the median is printed), plus the CPU of
  ``import gymkit.env`` alone in the same state (the part that is not the make itself).

``--profile``: instead, one fresh ``gymkit demo`` in a child that records every Numba
compilation (``numba:compile`` events, outermost only, CPU time) and prints the total and the
25 costliest functions, and the CPU of ``import gymkit.env`` in that cold state.

Run: ``.venv/bin/python benchmarks/bench_coldstart.py [--rounds 3] [--skip-evaluated] [--profile]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = str(Path(sys.executable).with_name("gymkit"))

_PROFILE = """
import collections, sys, time
from numba.core import event
spent, count, stack = collections.defaultdict(float), collections.Counter(), []
class Rec(event.Listener):
    def on_start(self, ev):
        f = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
        stack.append((f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
                      time.process_time()))
    def on_end(self, ev):
        name, t0 = stack.pop()
        if not stack:
            spent[name] += time.process_time() - t0
            count[name] += 1
event.register("numba:compile", Rec())
t0 = time.process_time()
import gymkit.env
t_import = time.process_time() - t0
from gymkit.cli import main
assert main(["demo", "--out", sys.argv[1], "--no-timestamp"]) == 0
total = time.process_time() - t0
print(f"cold: import gymkit.env {t_import:.1f} s CPU; whole demo {total:.1f} s CPU (this process); "
      f"Numba compiling {sum(spent.values()):.1f} s in {sum(count.values())} compilations",
      file=sys.stderr)
for name, sec in sorted(spent.items(), key=lambda kv: -kv[1])[:25]:
    print(f"  {sec:6.2f} s  x{count[name]}  {name}", file=sys.stderr)
"""


def _child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(child CPU seconds, wall seconds, stderr) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, res.stderr


def main() -> None:
    """Run the cases (module doc) and print one line each."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-evaluated", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GYMKIT_"))}
    if args.profile:
        d = Path(tempfile.mkdtemp(prefix="bench-cold-"))
        env = {**base, "NUMBA_CACHE_DIR": str(d / "numba"), "GYMKIT_CACHE_DIR": str(d / "gymkit")}
        _, _, err = _child([sys.executable, "-c", _PROFILE, str(d / "report")], env)
        print("\n".join(ln for ln in err.splitlines() if ln.startswith(("cold:", "  "))))
        return
    cases = [("fresh demo", {})]
    if not args.skip_evaluated:
        cases.append(("fresh demo, seed evaluated", {"GYMKIT_SEED_ARCHIVE": "evaluate"}))
    warm_env: dict[str, str] = {}
    for label, extra in cases:
        d = Path(tempfile.mkdtemp(prefix="bench-cold-"))
        env = {**base, "NUMBA_CACHE_DIR": str(d / "numba"), "GYMKIT_CACHE_DIR": str(d / "gymkit"),
               "GYMKIT_COMPILE_NOTICE": "1", **extra}
        cpu, wall, err = _child([EXE, "demo", "--out", str(d / "report"), "--no-timestamp"], env)
        said = "compiling Numba kernels once" in err
        print(f"{label}: {cpu:.1f} s CPU, {wall:.1f} s wall (compile notice printed: {said})")
        warm_env = warm_env or {k: v for k, v in env.items() if k != "GYMKIT_COMPILE_NOTICE"}
    make = [sys.executable, "-c", "import gymkit; gymkit.make('us46-default')"]
    imp = [sys.executable, "-c", "import gymkit.env"]
    for label, cmd in (("warm make", make), ("warm import gymkit.env only", imp)):
        runs = [_child(cmd, warm_env) for _ in range(args.rounds)]
        cpus = [r[0] for r in runs]
        print(f"{label}: median {statistics.median(cpus):.2f} s CPU "
              f"({', '.join(f'{c:.2f}' for c in cpus)}), median wall "
              f"{statistics.median(r[1] for r in runs):.2f} s")


if __name__ == "__main__":
    main()
