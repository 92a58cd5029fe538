"""A process's start on a user's market file, phase by phase: what every command pays first.

Run: ``.venv/bin/python benchmarks/bench_wide_start.py --file MARKET.parquet [--repeats 3]``.
Each repeat is a fresh Python process (the disk caches warm: Numba's, the seed archive's
and the stress worlds' for this market, filled by one untimed process first) that times
``load_panel(file)``, ``gymkit.make("us46-default", market=panel)``, the first card (it
builds the train window's context: window panel, forward returns, factor model) and a
second card, each in wall and CPU seconds.  Prints one Markdown row of medians.  Run it
under another ``PYTHONPATH`` (a laid-out package of an older tree, as
``benchmarks/device_layout.sh`` lays one out) to compare trees in the same session.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
def clock():
    return time.perf_counter(), time.process_time()
def since(t):
    w, c = clock()
    return [w - t[0], c - t[1]]
out = {}
t = clock()
import gymkit
from gymkit.data import load_panel
out["import"] = since(t)
t = clock(); panel = load_panel(sys.argv[1]); out["load"] = since(t)
t = clock(); env = gymkit.make("us46-default", market=panel); out["make"] = since(t)
t = clock(); env.score("<alpha>rank(-ts_sum(returns, 5))</alpha>"); out["first card"] = since(t)
t = clock(); env.score("<alpha>ts_corr(rank(open), rank(volume), 10)</alpha>"); out["second card"] = since(t)
print(json.dumps(out))
"""

PHASES = ("import", "load", "make", "first card", "second card")


def main() -> int:
    """Run the benchmark (module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", required=True, help="a market file (long Parquet/CSV)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="this tree", help="the row's name")
    args = ap.parse_args()
    env = dict(os.environ)
    run = [sys.executable, "-c", _CHILD, args.file]
    subprocess.run(run, check=True, env=env, capture_output=True)  # warm the disk caches
    rows = []
    for _ in range(args.repeats):
        res = subprocess.run(run, check=True, env=env, capture_output=True, text=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    med = {p: [statistics.median(r[p][k] for r in rows) for k in (0, 1)] for p in PHASES}
    total = [sum(med[p][k] for p in PHASES) for k in (0, 1)]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"Python {platform.python_version()}; {args.repeats} fresh processes; median wall / CPU s")
    print("| tree | " + " | ".join(PHASES) + " | total |")
    print("|---" * (len(PHASES) + 2) + "|")
    cells = [f"{med[p][0]:.2f} / {med[p][1]:.2f}" for p in PHASES]
    print(f"| {args.label} | " + " | ".join(cells) + f" | {total[0]:.2f} / {total[1]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
