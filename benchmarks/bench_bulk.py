"""Throughput and parity of the torch batch scorer (gymkit.bulk) vs the CPU (Numba) scorer.

    # the CPU scorer here (answers/s, one process and a pool of P processes)
    python benchmarks/bench_bulk.py cpu --n 46,500,3000 --procs 2
    # on the device machine: numba reference on all its cores, the torch scorer on cuda,
    # the parity gate (every formula bit for bit), bytes moved, and whole cards
    python benchmarks/bench_bulk.py device --n 46,500,3000 --procs 16 --out DIR

Panels: gymkit.bulk.panels.synthetic (seeded random walks, T sessions x N stocks).
Formulas: the 101 alphas plus ``--count`` seeded random formulas (gymkit.audit.formulas).
An answer = values + the train-cost book (weights, gross, turnover, long/short legs): the
CPU scorer is ``gymkit.dsl.evaluate`` + ``verifiers.book.book_pnl``, the torch scorer
``gymkit.bulk.evaluate_many`` + ``book_many`` over chunks of formulas.  The gate: NaN-mask,
value, gross and turnover digests of every formula equal to numba's (the worst failing
formula named).  Bytes moved: the evaluator's minimum traffic (each distinct node reads its
tensor operands once and writes its output once; the book reads values and forward returns
and writes weights), divided by the measured time, against the 4.3 TB/s device-to-device
copy measured on the H200 (KINDS.md).  Cards: ``gymkit score-file`` with ``--engine local
--workers P`` vs ``--engine torch --device cuda`` on random answers on the default market,
output bytes compared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
try:  # installed (here), or laid out as a package by bench_bulk_device.sh (the device)
    import gymkit.dsl  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))

from gymkit.audit.formulas import random_formula  # noqa: E402
from gymkit.bulk.panels import forward_returns, synthetic  # noqa: E402
from gymkit.dsl import to_text  # noqa: E402

BOOK_FIRST = 60  # judged signal rows: BOOK_FIRST .. T
H200_BW = 4.3e12  # bytes/s, device-to-device copy (read + write) measured there
_STATE: dict = {}


def formulas(panel, count: int, seed: int = 26) -> list[str]:
    """The 101 alphas plus ``count`` seeded random formulas."""
    rows = (ROOT / "dsl" / "alpha101.tsv").read_text().splitlines()[1:]
    out = [r.split("\t")[1] for r in rows if r.strip()]
    rng = np.random.default_rng(seed)
    return out + [to_text(random_formula(rng, panel)) for _ in range(count)]


def _digests(v: np.ndarray, gross: np.ndarray, tov: np.ndarray) -> tuple[str, str, str, str]:
    v = np.ascontiguousarray(v, dtype=np.float64)
    mask = np.isnan(v)
    h = [hashlib.sha256(np.packbits(mask).tobytes()).hexdigest()]
    for a in (v, gross, tov):
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.append(hashlib.sha256(np.where(np.isnan(a), np.nan, a).tobytes()).hexdigest())
    return tuple(h)  # type: ignore[return-value]


def _cpu_answer(i: int) -> tuple[int, tuple[str, str, str, str]]:
    from gymkit.dsl import evaluate
    from gymkit.verifiers.book import book_pnl

    p, fs, fwd = _STATE["panel"], _STATE["formulas"], _STATE["fwd"]
    v = np.asarray(evaluate(fs[i], p, cache=None))
    b = book_pnl(v, fwd, slice(BOOK_FIRST, p.T))
    return i, _digests(v, b.gross, b.turnover)


def _warm(fs: list[str]) -> None:
    """Compile every numba specialisation the formulas need (before the pool forks)."""
    small = synthetic(8, 90, seed=1)
    _STATE.update(panel=small, formulas=fs, fwd=forward_returns(small.field("open")))
    for i in range(len(fs)):
        _cpu_answer(i)


def cpu_scorer(fs: list[str], p, procs: int, single: int) -> dict:
    """answers/s of the CPU scorer: one process on ``single`` formulas, then a fork pool of
    ``procs`` on all; the digests of every formula."""
    _STATE.update(panel=p, formulas=fs, fwd=forward_returns(p.field("open")))
    t0 = time.perf_counter()
    for i in range(single):
        _cpu_answer(i)
    t1 = time.perf_counter()
    out = {"cpu1_formulas": single, "cpu1_answers_per_s": round(single / (t1 - t0), 2)}
    digests: list = [None] * len(fs)
    if procs > 1:
        ctx = multiprocessing.get_context("fork")
        t2 = time.perf_counter()
        with ctx.Pool(procs) as pool:
            for i, d in pool.imap_unordered(_cpu_answer, range(len(fs)), chunksize=4):
                digests[i] = d
        t3 = time.perf_counter()
        out.update(procs=procs, cpuP_answers_per_s=round(len(fs) / (t3 - t2), 2))
    else:
        for i in range(len(fs)):
            digests[i] = _cpu_answer(i)[1]
    return {**out, "digests": digests}


def _node_bytes(pl, t: int, n: int) -> int:
    """Minimum traffic of a plan: every node reads its tensor operands and writes its output."""
    cell = t * n * 8
    total = 0
    for node in pl.nodes:
        reads = sum(1 for a in node.args if isinstance(a, int) or (isinstance(a, tuple) and a[0] == "f"))
        total += (reads + 1) * cell
    return total


def torch_scorer(fs: list[str], p, device: str, chunk: int) -> dict:
    """The torch scorer over chunks: seconds (evaluate, book), digests, bytes moved."""
    import torch

    from gymkit.bulk import DevicePanel, book_many, libm, rowsum
    from gymkit.bulk.evaluator import plan, run_plan

    dp = DevicePanel(p, device)
    fwd = torch.as_tensor(forward_returns(p.field("open")), device=device)
    rows = slice(BOOK_FIRST, p.T)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    digests, t_eval, t_book, nbytes = [], 0.0, 0.0, 0
    libm.stats.update(cells=0, host=0)
    for c0 in range(0, len(fs), chunk):
        part = fs[c0:c0 + chunk]
        sync()
        t0 = time.perf_counter()
        pl = plan(part, p)
        vals = torch.stack(run_plan(pl, dp))
        sync()
        t1 = time.perf_counter()
        book = book_many(vals, fwd, rows)
        sync()
        t2 = time.perf_counter()
        t_eval += t1 - t0
        t_book += t2 - t1
        nbytes += _node_bytes(pl, p.T, p.N) + len(part) * (2 * p.T + (p.T - BOOK_FIRST)) * p.N * 8
        v_np, g_np, tv_np = vals.cpu().numpy(), book.gross.cpu().numpy(), book.turnover.cpu().numpy()
        digests.extend(_digests(v_np[i], g_np[i], tv_np[i]) for i in range(len(part)))
        del vals, book
    total = t_eval + t_book
    return {"eval_s": round(t_eval, 3), "book_s": round(t_book, 3),
            "answers_per_s": round(len(fs) / total, 2), "digests": digests,
            "bytes_per_formula": nbytes // len(fs), "achieved_GBps": round(nbytes / total / 1e9, 1),
            "share_of_bw": round(nbytes / total / H200_BW, 4),
            "libm_values": libm.stats["cells"], "libm_host_values": libm.stats["host"],
            "triton_rowsum": rowsum.status["triton"]}


def gate(fs: list[str], ref: list, got: list) -> dict:
    """Every formula's four digests equal; the worst (first failing, by kind) named."""
    kinds = ("nan mask", "values", "gross", "turnover")
    fails = [(i, kinds[next(k for k in range(4) if r[k] != g[k])])
             for i, (r, g) in enumerate(zip(ref, got, strict=True)) if tuple(r) != tuple(g)]
    fails.sort(key=lambda f: kinds.index(f[1]))
    return {"formulas": len(fs), "bit_identical": len(fs) - len(fails), "fails": len(fails),
            "worst": [(fs[i], k) for i, k in fails[:3]]}


def run_cpu(args: argparse.Namespace) -> None:
    """The CPU scorer on this machine."""
    for n in args.n:
        p = synthetic(n, args.t)
        fs = formulas(p, args.count)
        _warm(fs)
        single = min(len(fs), args.single.get(n, len(fs)))
        r = cpu_scorer(fs[:single], p, args.procs, single)
        r.pop("digests")
        print(json.dumps({"n": n, "t": p.T, **r}), flush=True)


def cards(args: argparse.Namespace, out_dir: Path) -> dict:
    """score-file --engine local --workers P vs --engine torch on the default market."""
    import gymkit

    env = gymkit.make("us46-default")
    rng = np.random.default_rng(7)
    src = out_dir / "cards_in.txt"
    src.write_text("\n".join(to_text(random_formula(rng, env.market)) for _ in range(args.cards)) + "\n")
    res = {"answers": args.cards}
    outs = {}
    for engine, extra in (("local", ["--workers", str(args.procs)]), ("torch", ["--device", args.device])):
        out = out_dir / f"cards_{engine}.jsonl"
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "gymkit.cli", "score-file", str(src), "--out", str(out),
                            "--no-progress", "--engine", engine, *extra], capture_output=True, text=True,
                           cwd=out_dir)  # not the checkout: its gymkit/ would shadow the package
        dt = time.perf_counter() - t0
        res[f"{engine}_s"] = round(dt, 2)
        res[f"{engine}_rc"] = r.returncode
        if r.returncode:
            res[f"{engine}_err"] = r.stderr[-600:]
        outs[engine] = out.read_bytes() if out.exists() else b""
    res["bytes_equal"] = bool(outs["local"]) and outs["local"] == outs["torch"]
    return res


def run_device(args: argparse.Namespace) -> None:
    """Everything on the device machine (module doc); a JSON line per step, all in --out."""
    import torch

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    head = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "cpus": os.cpu_count(), "numpy": np.__version__}
    try:
        import numba

        head["numba"] = numba.__version__
    except ImportError:
        head["numba"] = None
    results = [head]
    print(json.dumps(head), flush=True)
    for n in args.n:
        p = synthetic(n, args.t)
        fs = formulas(p, args.count)
        if n == args.n[0]:
            t0 = time.perf_counter()
            _warm(fs)
            results.append({"numba_warm_s": round(time.perf_counter() - t0, 1)})
        chunk = len(fs) if n <= 100 else (args.chunk if n <= 1000 else max(args.chunk // 4, 1))
        single = min(len(fs), args.single.get(n, len(fs)))
        cpu = cpu_scorer(fs, p, args.procs, single)
        torch_scorer(fs[:8], p, args.device, chunk)  # warm-up (context, allocator, triton)
        gpu = torch_scorer(fs, p, args.device, chunk)
        row = {"n": n, "t": p.T, "chunk": chunk, **{k: v for k, v in cpu.items() if k != "digests"},
               **{k: v for k, v in gpu.items() if k != "digests"}, "gate": gate(fs, cpu["digests"], gpu["digests"])}
        results.append(row)
        print(json.dumps(row), flush=True)
        (out_dir / "bench_device.json").write_text(json.dumps(results, indent=1))
    if args.cards:
        try:
            row = cards(args, out_dir)
        except Exception as exc:  # report it; keep the figures above
            row = {"cards_error": f"{type(exc).__name__}: {exc}"}
        results.append(row)
        print(json.dumps(row), flush=True)
    (out_dir / "bench_device.json").write_text(json.dumps(results, indent=1))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["cpu", "device"])
    ap.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")], default=[46])
    ap.add_argument("--t", type=int, default=1000)
    ap.add_argument("--count", type=int, default=1000, help="random formulas (plus the 101 alphas)")
    ap.add_argument("--single", type=lambda s: {int(k): int(v) for k, v in (kv.split(":") for kv in s.split(","))},
                    default={46: 1101, 500: 200, 3000: 40}, help="N:K formulas timed in one process")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default="bench_bulk_out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--cards", type=int, default=0, help="random answers for the card comparison (0: none)")
    args = ap.parse_args(argv)
    (run_cpu if args.mode == "cpu" else run_device)(args)


if __name__ == "__main__":
    main()
