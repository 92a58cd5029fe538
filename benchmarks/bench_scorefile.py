"""``gymkit score-file`` throughput per engine and worker count, the CLI as a user types it.

Writes ``--n`` random formulas (``gymkit.audit.formulas.random_formula`` on the default
environment's train panel, seed 0) to a JSONL file, runs ``gymkit score-file`` ``--rounds``
times per configuration (interleaved, ``--restart``), checks every output is byte-identical,
and prints the median wall time (startup, a local Ray's start and environment builds
included) and answers/s.  ``--runs local:1,local:2,ray:2`` picks the configurations
(``ENGINE:WORKERS``; a bare number means ``local``).  ``--market FILE`` scores on a user's
market (``gymkit score-file --market FILE``; formulas drawn on its train panel);
``--synthetic-n N`` first writes a seeded synthetic N-stock panel of 3,556 NYSE sessions there
(``gymkit.audit.lookahead.synthetic_panel``'s prices) as long Parquet.
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
    ap.add_argument("--runs", default="local:1,local:2", help="ENGINE:WORKERS, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--market", default=None, help="score on this market file (default: embedded)")
    ap.add_argument("--synthetic-n", type=int, default=None,
                    help="write a seeded synthetic panel of this many stocks to --market first")
    args = ap.parse_args()
    import numpy as np

    import gymkit
    from gymkit.audit.formulas import random_formula
    from gymkit.dsl import to_text

    market = []
    if args.market:
        from gymkit.data import load_panel

        if args.synthetic_n:  # seeded prices on NYSE sessions, tickers in sorted order
            from gymkit.audit.lookahead import synthetic_panel
            from gymkit.cli.market import panel_to_long
            from gymkit.data.calendar import nyse_sessions
            from gymkit.data.panel import Panel

            n = args.synthetic_n
            s = synthetic_panel(seed=n, t=3556, n=n)
            panel = Panel(nyse_sessions("2012-06-29", "2030-12-31")[:3556],
                          [f"S{i:04d}" for i in range(n)], s.open, s.high, s.low, s.close,
                          s.volume, cap=s.cap, sector=s.sector, industry=s.industry)
            panel_to_long(panel).write_parquet(args.market)
        market = ["--market", args.market]
        train = gymkit.make("us46-default", market=load_panel(args.market)).setup.train
    else:
        train = gymkit.make("us46-default").setup.train
    rng = np.random.default_rng(0)
    d = Path(tempfile.mkdtemp(prefix="bench-scorefile-"))
    src = d / "formulas.jsonl"
    src.write_text("".join(json.dumps({"id": i, "formula": to_text(random_formula(rng, train))}) + "\n"
                           for i in range(args.n)), encoding="utf-8")
    script = Path(sys.executable).with_name("gymkit")  # the console script, as a user types it
    exe = [str(script)] if script.is_file() else [sys.executable, "-m", "gymkit.cli"]
    confs = [(c.split(":")[0], int(c.split(":")[1])) if ":" in c else ("local", int(c))
             for c in args.runs.split(",")]
    times: dict[tuple[str, int], list[float]] = {c: [] for c in confs}
    outputs: set[bytes] = set()
    for _ in range(args.rounds):
        for engine, w in confs:
            out = d / f"cards-{engine}-{w}.jsonl"
            t0 = time.perf_counter()
            subprocess.run([*exe, "score-file", str(src), "--out", str(out), "--workers", str(w),
                            "--engine", engine, "--no-progress", "--restart", *market], check=True,
                           capture_output=True)
            times[(engine, w)].append(time.perf_counter() - t0)
            outputs.add(out.read_bytes())
    base = statistics.median(times[confs[0]])
    for engine, w in confs:
        med = statistics.median(times[(engine, w)])
        print(f"{engine} workers={w}: median {med:.2f} s ({args.n / med:.1f} answers/s), runs "
              f"{', '.join(f'{t:.2f}' for t in times[(engine, w)])}; speed vs "
              f"{confs[0][0]}:{confs[0][1]}: {base / med:.2f}x")
    print(f"outputs byte-identical: {len(outputs) == 1}")


if __name__ == "__main__":
    main()
