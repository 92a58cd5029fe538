"""Throughput and parity of the torch batch scorer (gymkit.bulk) vs the CPU (Numba) scorer.

    # the CPU scorer here (answers/s, one process and a pool of P processes)
    python benchmarks/bench_bulk.py cpu --n 46,500,3000 --procs 2
    # on the device machine: numba reference on all its cores, the torch scorer on cuda,
    # the parity gate (every formula bit for bit), bytes moved, and whole cards
    python benchmarks/bench_bulk.py device --n 46,500,3000 --procs 16 --out DIR
    # ... plus where the device time goes: a per-operator table (profile.json/.txt in DIR)
    python benchmarks/bench_bulk.py device --n 46,500,3000 --profile --out DIR
    # the same table for the torch path on this CPU, launches counted as CUDA would run them
    python benchmarks/bench_bulk.py profile --n 46 --device cpu --as-cuda

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

Profile (``--profile``, or the ``profile`` mode alone): one chunk per N, three passes over
the same plan: (1) a device sync around every batched call, its wall time per operator;
(2) every torch operation counted (launches, host waits: ``.item``/``nonzero``/copies to
the host, bytes written) plus the Triton kernels; (3) on CUDA, ``torch.profiler``'s kernel
time per operator (kernels fall in their call's window thanks to the syncs of (1)).  With
``--as-cuda`` on a CPU the Triton paths are counted as one launch each (their torch chain
runs uncounted), and an estimate of the device time is given: launches x LAUNCH_S + 3 x
bytes written / H200_BW.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
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
LAUNCH_S = 7e-6  # s per launch for the estimate (CUDA launch + torch dispatch, a typical figure)
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

    from gymkit.bulk import DevicePanel, book_many, libm, libm_triton, moments_triton, rowsum, scans
    from gymkit.bulk.evaluator import plan, run_plan

    dp = DevicePanel(p, device)
    fwd = torch.as_tensor(forward_returns(p.field("open")), device=device)
    rows = slice(BOOK_FIRST, p.T)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    digests, t_eval, t_book, nbytes = [], 0.0, 0.0, 0
    libm.stats.update(cells=0, host=0)
    t_host = 0.0
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
        t3 = time.perf_counter()
        v_np, g_np, tv_np = vals.cpu().numpy(), book.gross.cpu().numpy(), book.turnover.cpu().numpy()
        t_host += time.perf_counter() - t3
        digests.extend(_digests(v_np[i], g_np[i], tv_np[i]) for i in range(len(part)))
        del vals, book
    total = t_eval + t_book
    return {"eval_s": round(t_eval, 3), "book_s": round(t_book, 3), "to_host_s": round(t_host, 3),
            "answers_per_s": round(len(fs) / total, 2), "digests": digests,
            "bytes_per_formula": nbytes // len(fs), "achieved_GBps": round(nbytes / total / 1e9, 1),
            "share_of_bw": round(nbytes / total / H200_BW, 4),
            "libm_values": libm.stats["cells"], "libm_host_values": libm.stats["host"],
            "triton_rowsum": rowsum.status["triton"], "triton_group": rowsum.status.get("group"),
            "triton_scans": scans.status["triton"], "triton_libm": libm_triton.status["triton"],
            "triton_moments": moments_triton.status["triton"]}


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


def chunk_for(args: argparse.Namespace, n: int, count: int) -> int:
    """Formulas per chunk at N = n: ``--chunk N:K``, else all at N <= 100, 256 at N <= 1000, 64."""
    if n in args.chunk:
        return max(1, args.chunk[n])
    return count if n <= 100 else (256 if n <= 1000 else 64)


_VIEWS = ("view", "slice", "select", "expand", "alias", "unsqueeze", "squeeze", "as_strided", "detach",
          "t.default", "transpose", "permute", "unfold", "split", "unbind", "_unsafe_view", "lift_fresh",
          "_reshape_alias", "reshape", "_to_copy.default_noop")
_WAITS = ("aten._local_scalar_dense", "aten.nonzero", "aten.item")


def _op_key(node) -> str:
    from gymkit.bulk.evaluator import _FAST_POWERS

    if node.op in ("power", "signed_power") and isinstance(node.args[1], float) and node.args[1] in _FAST_POWERS:
        return node.op + "_fast"
    return node.op


def profile_chunk(fs: list[str], p, device: str, as_cuda: bool = False) -> dict:
    """Where the time of one chunk goes, per operator (module doc: the three passes)."""
    import contextlib

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from gymkit.bulk import evaluator as ev
    from gymkit.bulk import libm, libm_triton, moments_triton, ops, rowsum, scans

    is_cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if is_cuda else (lambda: None)
    dp = ev.DevicePanel(p, device)
    t0 = time.perf_counter()
    pl = ev.plan(fs, p)
    plan_s = time.perf_counter() - t0
    rows: dict[str, dict] = {}
    state = {"key": None, "paused": 0, "counting": False}
    real_call = ev._call

    def row(key: str) -> dict:
        return rows.setdefault(key, {"groups": 0, "nodes": 0, "wall_s": 0.0, "launches": 0, "triton": 0,
                                     "waits": 0, "out_MB": 0.0, "host_values": 0, "kernel_s": 0.0})

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = str(func)
            if state["paused"] or any(v in name for v in _VIEWS):
                return out
            r = row(state["key"] or "(stack, literals)")  # run_plan's own operations
            if any(name.startswith(w) for w in _WAITS):
                r["waits"] += 1
            elif name.startswith("aten._to_copy") and is_cuda and isinstance(out, torch.Tensor) and out.device.type == "cpu":
                r["waits"] += 1
            r["launches"] += 1
            for o in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(o, torch.Tensor):
                    r["out_MB"] += o.numel() * o.element_size() / 1e6
            return out

    def counted(fn, chain=None):
        def wrapper(*a, **k):
            if state["counting"] and not state["paused"]:
                r = row(state["key"] or "(stack, literals)")
                r["triton"] += 1
                r["launches"] += 1
            state["paused"] += 1
            try:
                return (chain or fn)(*a, **k)
            finally:
                state["paused"] -= 1
        return wrapper

    patches = [(scans, "_triton_window_sums"), (scans, "_triton_ema"), (rowsum, "_triton_seq"), (rowsum, "_triton_neu"),
               (rowsum, "_triton_group"), (libm_triton, "log_codes"), (libm_triton, "pow_codes"),
               (moments_triton, "moments"), (moments_triton, "comoments"), (moments_triton, "extreme")]
    saved = {(m, n): getattr(m, n) for m, n in patches}
    saved_api = {(m, n): getattr(m, n) for m, n in ((scans, "window_sums"), (scans, "ema"), (rowsum, "neumaier_sum"),
                                                  (rowsum, "seq_sum"), (rowsum, "group_sums"), (libm_triton, "use"),
                                                  (moments_triton, "use"))}

    def codes(chain_out):  # the libm kernels' (value, code) from the torch chain's three
        v, hard, ok = chain_out
        return v, torch.where(hard, 2, torch.where(ok, 1, 0)).to(torch.int8)

    def run(mode: str) -> float:
        def call(op, node, args, dpanel):
            key = _op_key(node)
            r = row(key)
            state["key"] = key
            host0 = libm.stats["host"]
            if mode == "wall":
                sync()
                c0 = time.perf_counter()
            ctx = prof_ctx(key) if mode == "kernel" else contextlib.nullcontext()
            with ctx:
                out = real_call(op, node, args, dpanel)
                if mode in ("wall", "kernel"):
                    sync()
            if mode == "wall":
                r["wall_s"] += time.perf_counter() - c0
                r["groups"] += 1
                r["nodes"] += int(out.shape[0])
                r["host_values"] += libm.stats["host"] - host0
            state["key"] = None
            return out

        ev._call = call
        try:
            sync()
            c0 = time.perf_counter()
            if mode == "count":
                state["counting"] = True
                with Count():
                    ev.run_plan(pl, dp)
                state["counting"] = False
            else:
                ev.run_plan(pl, dp)
            sync()
            return time.perf_counter() - c0
        finally:
            ev._call = real_call

    def prof_ctx(key):
        return torch.profiler.record_function("op:" + key)

    out: dict = {"formulas": len(fs), "nodes": len(pl.nodes), "groups": len(pl.groups), "plan_s": round(plan_s, 3)}
    try:
        if as_cuda and not is_cuda:  # the Triton paths as one (counted) launch, run as the torch chain
            scans.window_sums = counted(scans.window_sums, scans.window_sums_chain)
            scans.ema = counted(scans.ema, scans.ema_chain)
            rowsum.neumaier_sum = counted(rowsum.neumaier_sum, rowsum._chain_neumaier)
            rowsum.seq_sum = counted(rowsum.seq_sum, rowsum._chain_sum)
            rowsum.group_sums = counted(rowsum.group_sums, lambda xv, valid, codes, codes_l, g:
                                        rowsum._chain_group(xv, valid, codes_l, g))
            libm.force_device_path = True  # log/pow as on the device: double-double + host fallback
            libm_triton.use = lambda dev: True  # ... in one (counted) kernel each
            libm_triton.log_codes = counted(None, lambda a: codes(libm._log_chain(a)))
            libm_triton.pow_codes = counted(None, lambda a, b, signed: codes(libm._pow_chain(
                *torch.broadcast_tensors(a, b), signed)))
            moments_triton.use = lambda dev: True  # the block moments: one kernel a call
            moments_triton.moments = counted(None, ops._moments_chain)
            moments_triton.comoments = counted(None, ops._comoments_chain)
            moments_triton.extreme = counted(None, lambda x, d, minimum, arg: ops._extreme_chain(
                x, d, -1.0 if minimum else 1.0, arg))
        else:
            for m, n in patches:
                setattr(m, n, counted(getattr(m, n)))
        if is_cuda:
            run("plain")  # warm: compiles, allocator
            out["run_s"] = round(run("plain"), 3)  # no per-call sync
        out["run_synced_s"] = round(run("wall"), 3)
        run("count")
        if is_cuda:
            try:
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                        torch.profiler.ProfilerActivity.CUDA]) as prof:
                    run("kernel")
                _kernel_times(prof, rows)
            except Exception as exc:  # the table above stands without it
                out["profiler_error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        for (m, n), f in {**saved, **saved_api}.items():
            setattr(m, n, f)
        libm.force_device_path = False
    if "run_synced_s" in out:  # what run_plan does between the calls (stacking operands)
        row("(stack, literals)")["wall_s"] = max(0.0, out["run_synced_s"] - sum(r["wall_s"] for r in rows.values()))
    total_wall = sum(r["wall_s"] for r in rows.values()) or 1.0
    table = []
    for key, r in sorted(rows.items(), key=lambda kv: -kv[1]["wall_s"]):
        est = r["launches"] * LAUNCH_S + 3 * r["out_MB"] * 1e6 / H200_BW
        table.append({"op": key, **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()},
                      "share": round(r["wall_s"] / total_wall, 4), "est_cuda_s": round(est, 4)})
    out["launches"] = sum(r["launches"] for r in rows.values())
    out["waits"] = sum(r["waits"] for r in rows.values())
    out["est_cuda_s"] = round(sum(t["est_cuda_s"] for t in table), 3)
    out["table"] = table
    return out


def _kernel_times(prof, rows: dict) -> None:
    """Device kernel seconds per operator: each kernel falls in its call's op:KEY window."""
    import bisect

    from torch.autograd import DeviceType

    wins = sorted((e.time_range.start, e.time_range.end, e.name[3:]) for e in prof.events()
                  if e.name.startswith("op:") and e.device_type == DeviceType.CPU)
    starts = [w[0] for w in wins]
    for e in prof.events():
        if e.device_type != DeviceType.CUDA:
            continue
        i = bisect.bisect_right(starts, e.time_range.start) - 1
        if i >= 0 and e.time_range.start <= wins[i][1] and wins[i][2] in rows:
            rows[wins[i][2]]["kernel_s"] += (e.time_range.end - e.time_range.start) / 1e6


def _format_profile(n: int, t: int, device: str, pr: dict) -> str:
    head = (f"N={n} T={t} device={device} formulas={pr['formulas']} nodes={pr['nodes']} groups={pr['groups']} "
            f"plan_s={pr['plan_s']} run_s={pr.get('run_s')} run_synced_s={pr.get('run_synced_s')} "
            f"launches={pr['launches']} waits={pr['waits']} est_cuda_s={pr['est_cuda_s']}")
    cols = ("op", "groups", "nodes", "wall_s", "share", "kernel_s", "launches", "triton", "waits", "out_MB",
            "host_values", "est_cuda_s")
    lines = [head, " ".join(f"{c:>16s}" if i == 0 else f"{c:>11s}" for i, c in enumerate(cols))]
    for r in pr["table"]:
        lines.append(" ".join(f"{r[c]!s:>16s}" if i == 0 else f"{r[c]!s:>11s}" for i, c in enumerate(cols)))
    return "\n".join(lines) + "\n"


def _profile_to(out_dir: Path, fs: list[str], p, device: str, chunk: int, n: int, as_cuda: bool) -> dict:
    """Profile the first chunk of ``fs`` (a spread sample: every k-th formula) into out_dir."""
    part = fs[:: max(1, len(fs) // chunk)][:chunk]
    try:
        pr = profile_chunk(part, p, device, as_cuda=as_cuda)
    except Exception as exc:  # keep the run's other figures
        pr = {"profile_error": f"{type(exc).__name__}: {exc}"[:400]}
        print(json.dumps({"n": n, **pr}), flush=True)
        return pr
    text = _format_profile(n, p.T, device, pr)
    with open(out_dir / "profile.txt", "a") as fh:
        fh.write(text + "\n")
    prev = json.loads((out_dir / "profile.json").read_text()) if (out_dir / "profile.json").exists() else []
    (out_dir / "profile.json").write_text(json.dumps([*prev, {"n": n, "t": p.T, "device": device, **pr}], indent=1))
    print("\n".join(text.splitlines()[:10]), flush=True)  # the head and top 8; all in profile.txt
    return pr


def run_profile(args: argparse.Namespace) -> None:
    """The per-operator profile alone (any device; ``--as-cuda`` on a CPU)."""
    import torch

    if args.device == "cpu":
        torch.set_num_threads(1)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for n in args.n:
        p = synthetic(n, args.t)
        fs = formulas(p, args.count)
        _profile_to(out_dir, fs, p, args.device, chunk_for(args, n, len(fs)), n, as_cuda=args.as_cuda)


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
        chunk = chunk_for(args, n, len(fs))
        single = min(len(fs), args.single.get(n, len(fs)))
        cpu = cpu_scorer(fs, p, args.procs, single)
        t0 = time.perf_counter()
        torch_scorer(fs, p, args.device, chunk)  # warm-up: context, allocator, every Triton specialisation
        warm_s = round(time.perf_counter() - t0, 1)
        gpu = torch_scorer(fs, p, args.device, chunk)
        row = {"n": n, "t": p.T, "chunk": chunk, "torch_warm_s": warm_s,
               **{k: v for k, v in cpu.items() if k != "digests"},
               **{k: v for k, v in gpu.items() if k != "digests"}, "gate": gate(fs, cpu["digests"], gpu["digests"])}
        for fam in args.ab_off:  # the same run with one kernel family off (its torch chain)
            mod = importlib.import_module(f"gymkit.bulk.{fam}_triton")
            kept = mod.status["triton"]
            mod.status["triton"] = f"off for the A/B (--ab-off {fam})"
            try:
                chain = torch_scorer(fs, p, args.device, chunk)
            finally:
                mod.status["triton"] = kept
            row[f"{fam}_chain"] = {"eval_s": chain["eval_s"], "answers_per_s": chain["answers_per_s"],
                                   "gate": gate(fs, cpu["digests"], chain["digests"])}
        results.append(row)
        print(json.dumps(row), flush=True)
        (out_dir / "bench_device.json").write_text(json.dumps(results, indent=1))
        if args.profile:
            _profile_to(out_dir, fs, p, args.device, chunk, n, as_cuda=False)
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
    ap.add_argument("mode", choices=["cpu", "device", "profile"])
    ap.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")], default=[46])
    ap.add_argument("--t", type=int, default=1000)
    ap.add_argument("--count", type=int, default=1000, help="random formulas (plus the 101 alphas)")
    ap.add_argument("--single", type=lambda s: {int(k): int(v) for k, v in (kv.split(":") for kv in s.split(","))},
                    default={46: 1101, 500: 200, 3000: 40}, help="N:K formulas timed in one process")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default="bench_bulk_out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--chunk", type=lambda s: {int(k): int(v) for k, v in (kv.split(":") for kv in s.split(","))},
                    default={}, help="N:K formulas per chunk (default: all at N <= 100, 256 at N <= 1000, else 64)")
    ap.add_argument("--profile", action="store_true", help="device mode: also the per-operator profile")
    ap.add_argument("--ab-off", type=lambda v: [f for f in v.split(",") if f], default=[],
                    help="device mode: also time the scorer with these kernel families off, one at a "
                         "time (libm, moments)")
    ap.add_argument("--as-cuda", action="store_true", help="profile mode on a CPU: count Triton paths as one launch")
    ap.add_argument("--cards", type=int, default=0, help="random answers for the card comparison (0: none)")
    args = ap.parse_args(argv)
    {"cpu": run_cpu, "device": run_device, "profile": run_profile}[args.mode](args)


if __name__ == "__main__":
    main()
