"""``gymkit score-file --workers N`` throughput: N random formulas, the CLI as a user types it.

Writes ``--n`` random formulas (``gymkit.audit.formulas.random_formula`` on the default
environment's train panel, seed 0) to a JSONL file, runs ``gymkit score-file`` ``--rounds``
times per worker count (interleaved, ``--restart``), checks every output is byte-identical,
and prints the median wall time (startup and environment builds included) and answers/s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    """Run the benchmark (module doc) and print one line per worker count."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import numpy as np

    import gymkit
    from gymkit.audit.formulas import random_formula
    from gymkit.dsl import to_text

    train = gymkit.make("us46-default").setup.train
    rng = np.random.default_rng(0)
    d = Path(tempfile.mkdtemp(prefix="bench-scorefile-"))
    src = d / "formulas.jsonl"
    src.write_text("".join(json.dumps({"id": i, "formula": to_text(random_formula(rng, train))}) + "\n"
                           for i in range(args.n)), encoding="utf-8")
    exe = str(Path(sys.executable).with_name("gymkit"))
    counts = [int(w) for w in args.workers.split(",")]
    times: dict[int, list[float]] = {w: [] for w in counts}
    outputs: set[bytes] = set()
    for _ in range(args.rounds):
        for w in counts:
            out = d / f"cards-{w}.jsonl"
            t0 = time.perf_counter()
            subprocess.run([exe, "score-file", str(src), "--out", str(out), "--workers", str(w),
                            "--no-progress", "--restart"], check=True, capture_output=True)
            times[w].append(time.perf_counter() - t0)
            outputs.add(out.read_bytes())
    base = statistics.median(times[counts[0]])
    for w in counts:
        med = statistics.median(times[w])
        print(f"workers={w}: median {med:.2f} s ({args.n / med:.1f} answers/s), runs "
              f"{', '.join(f'{t:.2f}' for t in times[w])}; speed vs workers={counts[0]}: {base / med:.2f}x")
    print(f"outputs byte-identical: {len(outputs) == 1}")


if __name__ == "__main__":
    main()
