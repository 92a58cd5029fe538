"""Benchmark: load the 23 MB real file and build panels, against a plain pandas baseline.

Run: ``.venv/bin/python benchmarks/bench_load.py [--repeats 5]``.  Prints a Markdown table
(median seconds over the repeats, after one warm-up call that also builds the NYSE
calendar) for:

* ``real_panel`` build (read, select 46, validate, adjust, pivot), cache bypassed;
* ``load_panel(path)`` on the whole file (504 tickers, raw) and with ``adjust=True``;
* baseline: ``pandas.read_csv`` + ``DataFrame.pivot`` of the five OHLCV fields (no
  validation, no adjustment, no session check) on the whole file.

Skips with a message when the real data is absent.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: imports, calendar, file cache
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bench_file(path: str, repeats: int) -> int:
    """``load_panel(path)`` (CPU and wall, median) beside pandas' read + pivot of the same file."""
    import warnings

    import pandas as pd

    from gymkit.data.loaders import load_panel

    warnings.simplefilter("ignore")  # the file's data-quality notes

    def cpu_and_wall(fn: Callable[[], object]) -> tuple[float, float]:
        fn()
        runs = []
        for _ in range(repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            runs.append((time.process_time() - c0, time.perf_counter() - t0))
        return statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)

    def pandas_baseline() -> object:
        df = pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)
        return df.pivot(index="date", columns="ticker",
                        values=["open", "high", "low", "close", "volume"])

    panel = load_panel(path)
    ours, base = cpu_and_wall(lambda: load_panel(path)), cpu_and_wall(pandas_baseline)
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"command: .venv/bin/python benchmarks/bench_load.py --file {path} --repeats {repeats}")
    print(f"file: {panel.T} sessions x {panel.N} tickers\n")
    print("| step | median CPU s | median wall s |")
    print("|---|---:|---:|")
    print(f"| load_panel(file), every rule checked | {ours[0]:.2f} | {ours[1]:.2f} |")
    print(f"| baseline: pandas read + pivot, no checks | {base[0]:.2f} | {base[1]:.2f} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a Markdown table; return a process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--file", default=None, help="time load_panel on this long CSV or "
                        "Parquet file instead (e.g. a synthetic 3,000-stock panel: "
                        "bench_scorefile.py --synthetic-n), beside pandas read + pivot")
    args = parser.parse_args(argv)

    import pandas as pd

    from gymkit.data.loaders import load_panel
    from gymkit.data.real import _real_panel, real_data_path

    if args.file is not None:
        return _bench_file(args.file, args.repeats)

    path = real_data_path()
    if not path.is_file():
        print(f"real data not found at {path} (../shared is not part of a fresh clone); skipped")
        return 0

    def pandas_baseline() -> object:
        df = pd.read_csv(path, parse_dates=["date"])
        return df.pivot(
            index="date", columns="ticker", values=["open", "high", "low", "close", "volume"]
        )

    t0 = time.perf_counter()
    _real_panel.__wrapped__(str(path.resolve()), 46)
    cold = time.perf_counter() - t0
    rows = {
        "real_panel(n=46) build, cache bypassed": _median_time(
            lambda: _real_panel.__wrapped__(str(path.resolve()), 46), args.repeats
        ),
        "load_panel(path) whole file, raw (504 tickers)": _median_time(
            lambda: load_panel(path), args.repeats
        ),
        "load_panel(path, adjust=True) whole file": _median_time(
            lambda: load_panel(path, adjust=True), args.repeats
        ),
    }
    base = _median_time(pandas_baseline, args.repeats)
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    )
    print(f"command: .venv/bin/python benchmarks/bench_load.py --repeats {args.repeats}")
    print(
        f"first real_panel build in a fresh process (incl. the one-off NYSE calendar build): {cold:.2f} s\n"
    )
    print("| step | median s | vs pandas baseline |")
    print("|---|---:|---:|")
    for name, t in rows.items():
        print(f"| {name} | {t:.2f} | {t / base:.2f}x |")
    print(f"| baseline: pandas read_csv + pivot (whole file, no checks) | {base:.2f} | 1.00x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
