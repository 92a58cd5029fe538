"""Throughput and parity of the torch batch scorer (gymkit.bulk) vs the CPU (Numba) scorer.

Two steps, because the device machine has torch and numpy only (no numba, no install):

    # here (numba): CPU scorer answers/s and the reference digests of its values and books
    python benchmarks/bench_bulk.py ref --n 46,500 --out benchmarks/bulk_ref
    # on the device: the same panels and formulas on cuda, gated against those digests
    python benchmarks/bench_bulk.py gpu --n 46,500,3000 --ref benchmarks/bulk_ref --device cuda

Panels are numpy-only synthetic random walks (seeded; ``T`` sessions, ``N`` stocks, 11
sectors, 40 industries, 0.1% missing values); formulas are the 101 alphas and seeded
random formulas (gymkit.audit.formulas.random_formula).  The gate: NaN-mask digests equal
for every formula, value and gross-P&L digests equal where the formula has no
libm-dependent operator (parity.inexact_ops), else gross within parity.REL_TOL.  Where no
reference exists (N = 3,000), cuda is gated against torch on the device's CPU, itself
bit-gated against numba in tests/bulk.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _bootstrap() -> None:
    """Make gymkit.dsl importable from a bare working tree (no pip install on the device)."""
    sys.path.insert(0, str(ROOT))
    try:
        import gymkit.dsl  # noqa: F401
    except ImportError:
        spec = importlib.util.spec_from_file_location(
            "gymkit.dsl", ROOT / "dsl" / "__init__.py", submodule_search_locations=[str(ROOT / "dsl")])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["gymkit.dsl"] = mod
        spec.loader.exec_module(mod)


_bootstrap()

from gymkit.audit.formulas import random_formula  # noqa: E402
from gymkit.dsl import parse, to_text  # noqa: E402

BOOK_FIRST = 60  # judged signal rows: BOOK_FIRST .. T


class ArrayPanel:
    """A numpy-only panel (the evaluator's PanelLike): fields, group codes, a fingerprint."""

    def __init__(self, fields: dict[str, np.ndarray], codes: dict[str, np.ndarray]) -> None:
        self.fields, self.codes = fields, codes
        self.T, self.N = fields["close"].shape
        h = hashlib.sha256()
        for k in sorted(fields):
            h.update(k.encode() + np.ascontiguousarray(fields[k]).tobytes())
        for k in sorted(codes):
            h.update(k.encode() + codes[k].tobytes())
        self.fingerprint = h.hexdigest()

    def has_field(self, name: str) -> bool:
        return name in self.fields

    def field(self, name: str) -> np.ndarray:
        return self.fields[name]

    def has_groups(self, level: str) -> bool:
        return level in self.codes

    def group_codes(self, level: str) -> np.ndarray:
        return self.codes[level]


def synthetic(n: int, t: int, seed: int = 26) -> ArrayPanel:
    """A seeded random-walk panel of ``t`` sessions and ``n`` stocks (numpy only)."""
    rng = np.random.Generator(np.random.PCG64(seed + n))
    lr = 0.0005 + 0.02 * rng.standard_normal((t, n))
    close = 50.0 * np.exp(np.cumsum(lr, axis=0))
    open_ = np.vstack([close[:1], close[:-1]]) * np.exp(0.005 * rng.standard_normal((t, n)))
    high = np.maximum(open_, close) * np.exp(np.abs(0.01 * rng.standard_normal((t, n))))
    low = np.minimum(open_, close) * np.exp(-np.abs(0.01 * rng.standard_normal((t, n))))
    volume = np.round(1e6 * np.exp(0.5 * rng.standard_normal((t, n))))
    hole = rng.random((t, n)) < 0.001
    for a in (open_, high, low, close, volume):
        a[hole] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        returns = np.full_like(close, np.nan)
        returns[1:] = close[1:] / close[:-1] - 1.0
        vwap = (high + low + close) / 3.0
    for a in (returns, vwap):
        a[~np.isfinite(a)] = np.nan
    cap = close * np.round(1e7 * np.exp(rng.standard_normal(n)))
    codes = {"sector": rng.integers(0, 11, n).astype(np.int64),
             "industry": rng.integers(0, 40, n).astype(np.int64)}
    fields = {"open": open_, "high": high, "low": low, "close": close, "volume": volume,
              "returns": returns, "vwap": vwap, "cap": cap}
    return ArrayPanel(fields, codes)


def forward_returns(open_: np.ndarray) -> np.ndarray:
    """open(t+2)/open(t+1) − 1, NaN where undefined (as verifiers.book.forward_open_returns)."""
    out = np.full(open_.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = open_[1:-1], open_[2:]
        r = b / a - 1.0
    r[~(np.isfinite(r) & (a > 0) & (b > 0))] = np.nan
    out[:-2] = r
    return out


def formulas(panel: ArrayPanel, count: int, seed: int = 26) -> list[str]:
    """The 101 alphas plus ``count`` seeded random formulas."""
    rows = (ROOT / "dsl" / "alpha101.tsv").read_text().splitlines()[1:]
    out = [r.split("\t")[1] for r in rows if r.strip()]
    rng = np.random.default_rng(seed)
    return out + [to_text(random_formula(rng, panel)) for _ in range(count)]


def _digest(a: np.ndarray) -> tuple[str, str]:
    a = np.ascontiguousarray(a, dtype=np.float64)
    mask = np.isnan(a)
    canon = np.where(mask, np.nan, a)
    return hashlib.sha256(np.packbits(mask).tobytes()).hexdigest(), hashlib.sha256(canon.tobytes()).hexdigest()


def run_ref(args: argparse.Namespace) -> None:
    """CPU (numba) scorer: answers/s and the digests of every formula's values and book."""
    from gymkit.dsl import evaluate
    from gymkit.dsl.cache import EvalCache
    from gymkit.verifiers.book import book_pnl

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for n in args.n:
        p = synthetic(n, args.t)
        fs = formulas(p, args.count)
        fwd = forward_returns(p.field("open"))
        rows = slice(BOOK_FIRST, p.T)
        evaluate("rank(close)", p, cache=None)  # compile
        t0 = time.perf_counter()
        recs = []
        cache = EvalCache()
        for f in fs:
            v = np.asarray(evaluate(f, p, cache=cache))
            b = book_pnl(v, fwd, rows)
            recs.append((v, b.gross, b.turnover))
        dt = time.perf_counter() - t0
        digests = [(*_digest(v), _digest(g)[1], _digest(tv)[1]) for v, g, tv in recs]
        gross = np.stack([g for _, g, _ in recs])
        np.savez_compressed(out_dir / f"ref_{n}.npz", gross=gross)
        meta = {"n": n, "t": p.T, "fingerprint": p.fingerprint, "formulas": fs, "digests": digests,
                "cpu_seconds": dt, "cpu_answers_per_s": len(fs) / dt}
        (out_dir / f"ref_{n}.json").write_text(json.dumps(meta))
        print(json.dumps({"n": n, "t": p.T, "formulas": len(fs), "cpu_s": round(dt, 2),
                          "cpu_answers_per_s": round(len(fs) / dt, 1)}), flush=True)


def _score_torch(fs: list[str], p: ArrayPanel, device: str, chunk: int):
    import torch

    from gymkit.bulk import DevicePanel, book_many, evaluate_many

    dp = DevicePanel(p, device)
    fwd = torch.as_tensor(forward_returns(p.field("open")), device=device)
    rows = slice(BOOK_FIRST, p.T)
    vals_np, gross_np, tov_np = [], [], []
    t_eval = t_book = 0.0
    for c0 in range(0, len(fs), chunk):
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        sync()
        t0 = time.perf_counter()
        vals = torch.stack(evaluate_many(fs[c0:c0 + chunk], p, dpanel=dp))
        sync()
        t1 = time.perf_counter()
        book = book_many(vals, fwd, rows)
        sync()
        t2 = time.perf_counter()
        t_eval += t1 - t0
        t_book += t2 - t1
        vals_np.extend(vals.cpu().numpy())
        gross_np.extend(book.gross.cpu().numpy())
        tov_np.extend(book.turnover.cpu().numpy())
        del vals, book
    return vals_np, gross_np, tov_np, t_eval, t_book


def run_gpu(args: argparse.Namespace) -> None:
    """Torch batch scorer on ``args.device``: answers/s and the parity gate."""
    import torch

    from gymkit.bulk.parity import REL_TOL, inexact_ops

    print(json.dumps({"torch": torch.__version__, "cuda": torch.cuda.is_available(),
                      "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}), flush=True)
    for n in args.n:
        p = synthetic(n, args.t)
        fs = formulas(p, args.count)
        chunk = len(fs) if n <= 100 else (args.chunk if n <= 1000 else max(args.chunk // 4, 1))
        _score_torch(fs[:8], p, args.device, chunk)  # warm-up (CUDA context, allocator)
        vals, gross, tov, t_eval, t_book = _score_torch(fs, p, args.device, chunk)
        row = {"n": n, "t": p.T, "formulas": len(fs), "device": args.device, "chunk": chunk,
               "eval_s": round(t_eval, 3), "book_s": round(t_book, 3),
               "answers_per_s": round(len(fs) / (t_eval + t_book), 1)}
        ref_json = Path(args.ref) / f"ref_{n}.json"
        inexact = [bool(inexact_ops(parse(f, limits=False))) for f in fs]
        if ref_json.exists():
            meta = json.loads(ref_json.read_text())
            assert meta["fingerprint"] == p.fingerprint, "synthetic panel differs from the reference's"
            ref_gross = np.load(Path(args.ref) / f"ref_{n}.npz")["gross"]
            fails = []
            for i, f in enumerate(fs):
                mask_d, val_d = _digest(vals[i])
                rm, rv, rg, rt = meta["digests"][i]
                if mask_d != rm:
                    fails.append((i, "nan mask", f))
                elif not inexact[i] and (val_d != rv or _digest(gross[i])[1] != rg or _digest(tov[i])[1] != rt):
                    fails.append((i, "bits", f))
                elif inexact[i]:
                    d = np.abs(gross[i] - ref_gross[i])
                    if np.nanmax(d / np.maximum(1.0, np.abs(ref_gross[i])), initial=0.0) > REL_TOL:
                        fails.append((i, "gross beyond REL_TOL", f))
            row.update(gate="numba digests", exact_formulas=len(fs) - sum(inexact), fails=len(fails),
                       worst=fails[:3], cpu_answers_per_s_ref_machine=round(meta["cpu_answers_per_s"], 1))
        else:
            k = min(args.cpu_check, len(fs))
            cv, _, _, ct_e, ct_b = _score_torch(fs[:k], p, "cpu", 16)
            fails = [i for i in range(k) if _digest(cv[i])[0] != _digest(vals[i])[0]
                     or (not inexact[i] and _digest(cv[i])[1] != _digest(vals[i])[1])]
            row.update(gate=f"torch-cpu on the device, first {k}", fails=len(fails),
                       worst=[fs[i] for i in fails[:3]], torch_cpu_answers_per_s=round(k / (ct_e + ct_b), 2))
        print(json.dumps(row), flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["ref", "gpu"])
    ap.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")], default=[46])
    ap.add_argument("--t", type=int, default=1000)
    ap.add_argument("--count", type=int, default=1000, help="random formulas (plus the 101 alphas)")
    ap.add_argument("--out", default="benchmarks/bulk_ref")
    ap.add_argument("--ref", default="benchmarks/bulk_ref")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--cpu-check", type=int, default=64)
    args = ap.parse_args(argv)
    (run_ref if args.mode == "ref" else run_gpu)(args)


if __name__ == "__main__":
    main()
