"""Benchmark: tear-sheet build time and page size (``gymkit report``), on ``us46-default``.

For each page: the study (scoring plus the report's own backtests and statistics), the page
(every figure rendered to SVG, HTML assembled), and the size of ``index.html``; best of
``--reps`` with the environment built once and the evaluator cache warm after the first run
(what a second ``gymkit report`` in one process costs; a fresh process adds ``gymkit.make``).
Prints markdown.

Run: ``.venv/bin/python benchmarks/bench_report.py [--reps 3]``
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import gymkit
from gymkit.report.analysis import study_formula, study_group
from gymkit.report.api import write_page
from gymkit.report.build import answers_page, formula_page

FORMULA = "rank(-ts_sum(returns, 5))"
GROUP = ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20))</alpha>",
         "<alpha>rank(-ts_sum(returns, 4))</alpha>", "<alpha>rank(ts_mean(close, 250))</alpha>",
         "no tag", "<alpha>rank(close</alpha>"]


def _best(fn, reps: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    """Measure each page; print one markdown table row per page."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    reps = ap.parse_args().reps
    t0 = time.perf_counter()
    env = gymkit.make("us46-default")
    make_s = time.perf_counter() - t0
    cases = {
        "formula, train only (default)": (lambda: study_formula(env, FORMULA, holdout=False), formula_page),
        "formula, --holdout": (lambda: study_formula(env, FORMULA, holdout=True), formula_page),
        "answers (6), train only": (lambda: study_group(env, GROUP, holdout=False), answers_page),
        "answers (6), --holdout": (lambda: study_group(env, GROUP, holdout=True), answers_page),
    }
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; gymkit.make {make_s:.1f} s\n")
    print("| page | study (s) | page render (s) | total (s) | index.html (KB) | inline SVGs |")
    print("|---|---|---|---|---|---|")
    for name, (study_fn, page_fn) in cases.items():
        ts, study = _best(study_fn, reps)
        tp, html = _best(lambda study=study, page_fn=page_fn: page_fn(study, env.notes), reps)
        with tempfile.TemporaryDirectory() as d:
            size = write_page(html, Path(d)).stat().st_size
        print(f"| {name} | {ts:.2f} | {tp:.2f} | {ts + tp:.2f} | {size / 1024:.0f} | {html.count('<svg')} |")


if __name__ == "__main__":
    main()
