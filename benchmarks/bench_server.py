"""Benchmark: the verifier server under load vs in-process scoring on the same cores (issue 10).

Starts ``gymkit serve`` as a subprocess on 127.0.0.1 (free port, ``--workers W``), then
32 concurrent clients (asyncio + httpx keep-alive connections) send a fixed number of
``POST /v1/score_group`` requests, each a group of 12 answers (seeded formula variants, so
the workers' evaluation caches see new sub-expressions as in training).  Every request must
be answered 200 and every card must be byte-identical to the in-process card; the run stops
by itself (fixed count, per-request timeout, overall deadline).

Reported (markdown): latency p50/p99 and throughput of the server; in-process throughput
of the same groups in 1 process and in W forked processes (the same cores, no HTTP); the
ratio server / in-process(W); and the HTTP overhead per request at concurrency 1: the p50 of
``/v1/score_group`` for one fixed group (warm caches) minus the p50 of the same job sent
straight to a pool in this process (no HTTP, also warm), and the p50 of ``GET /health`` (the
bare HTTP round trip).

Run: ``.venv/bin/python benchmarks/bench_server.py [--requests 160] [--workers 2]``
(loopback only; about 1-2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time

import httpx
import numpy as np

import gymkit

TEMPLATES = [
    "rank(-ts_sum(returns, {a}))",
    "rank(ts_std(volume, {a}) / ts_mean(volume, {b}))",
    "-ts_corr(rank(open), rank(volume), {a})",
    "rank(group_neutralize(-ts_delta(close, {a}), sector))",
    "rank(ts_mean(returns, {a}) - ts_mean(returns, {b}))",
    "scale(-ts_delta(close, {a})) + 0.5 * rank(ts_mean(returns, {b}))",
    "rank(ts_rank(volume, {a}) * -ts_sum(returns, {b}))",
    "(close - ts_min(low, {a})) / (ts_max(high, {a}) - ts_min(low, {a}) + 0.001)",
]
GROUP = 12
CLIENTS = 32


def make_groups(n: int, seed: int = 7) -> list[list[str]]:
    """``n`` groups of 12 answers from the templates with seeded windows (a few invalid)."""
    rng = np.random.default_rng(seed)
    groups = []
    for _ in range(n):
        g = []
        for _ in range(GROUP):
            t = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
            a, b = int(rng.integers(2, 40)), int(rng.integers(2, 60))
            g.append(f"<think>variant</think><alpha>{t.format(a=a, b=b)}</alpha>")
        if rng.random() < 0.2:
            g[-1] = "no tag here"
        groups.append(g)
    return groups


_ENV: gymkit.Environment | None = None


def _score_group(group: list[str]) -> list[str]:
    assert _ENV is not None
    return [c.to_json() for c in _ENV.score_group(group)]


def in_process(env: gymkit.Environment, groups: list[list[str]], workers: int
               ) -> tuple[float, float, list[list[str]]]:
    """(seconds in 1 process, seconds in ``workers`` forked processes, expected card JSON)."""
    global _ENV
    _ENV = env
    t0 = time.perf_counter()
    expected = [_score_group(g) for g in groups]
    t1 = time.perf_counter()
    env.setup.cache.clear() if env.setup.cache is not None else None
    with mp.get_context("fork").Pool(workers) as pool:
        t2 = time.perf_counter()
        pool.map(_score_group, groups, chunksize=1)
        t3 = time.perf_counter()
    return t1 - t0, t3 - t2, expected


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def load(url: str, groups: list[list[str]], expected: list[list[str]],
               deadline_s: float) -> tuple[list[float], dict[int, int], int]:
    """Send every group once from 32 clients; return (latencies, status counts, card mismatches)."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(groups)):
        queue.put_nowait(i)
    lat: list[float] = []
    status: dict[int, int] = {}
    bad = 0
    stop = time.monotonic() + deadline_s

    async def client() -> None:
        nonlocal bad
        async with httpx.AsyncClient(base_url=url, timeout=60.0) as c:
            while not queue.empty() and time.monotonic() < stop:
                i = queue.get_nowait()
                t0 = time.perf_counter()
                r = await c.post("/v1/score_group", json={"completions": groups[i]})
                lat.append(time.perf_counter() - t0)
                status[r.status_code] = status.get(r.status_code, 0) + 1
                if r.status_code == 200:
                    got = [json.dumps(e["card"], separators=(",", ":"), ensure_ascii=False)
                           for e in r.json()["cards"]]
                    bad += sum(1 for a, b in zip(got, expected[i], strict=True) if a != b)

    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return lat, status, bad


def _sum_count(text: str, series: str) -> tuple[float, float]:
    def value(suffix: str) -> float:
        m = re.search(rf"^{re.escape(series.replace('{', suffix + '{', 1))} (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0
    return value("_sum"), value("_count")


async def overhead(url: str, group: list[str], reps: int) -> dict[str, float]:
    """Concurrency 1, one fixed group (warm caches): client p50 of /v1/score_group, the
    server's own mean request time and mean pool-job time over the same requests (from
    /metrics), and the p50 of GET /health."""
    req = 'gymkit_request_duration_seconds{route="/v1/score_group"}'
    job = 'gymkit_job_duration_seconds{kind="score_group"}'
    async with httpx.AsyncClient(base_url=url, timeout=60.0) as c:
        for _ in range(3):  # warm every worker's cache for this group
            await c.post("/v1/score_group", json={"completions": group})
        before = (await c.get("/metrics")).text
        t_score, t_health = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            r = await c.post("/v1/score_group", json={"completions": group})
            t_score.append(time.perf_counter() - t0)
            assert r.status_code == 200
        after = (await c.get("/metrics")).text
        for _ in range(reps):
            t0 = time.perf_counter()
            await c.get("/health")
            t_health.append(time.perf_counter() - t0)
    (rs0, rc0), (rs1, rc1) = _sum_count(before, req), _sum_count(after, req)
    (js0, jc0), (js1, jc1) = _sum_count(before, job), _sum_count(after, job)
    return {"client_p50": statistics.median(t_score) * 1e3,
            "client_mean": statistics.fmean(t_score) * 1e3,
            "server_mean": (rs1 - rs0) / max(rc1 - rc0, 1) * 1e3,
            "job_mean": (js1 - js0) / max(jc1 - jc0, 1) * 1e3,
            "health_p50": statistics.median(t_health) * 1e3}


def direct_pool_p50(env: gymkit.Environment, group: list[str], reps: int) -> float:
    """p50 ms of the same score_group job sent straight to a 1-worker WorkerPool (no HTTP)."""
    from gymkit.server import WorkerPool

    pool = WorkerPool(env, 1).start()

    async def go() -> float:
        for _ in range(3):
            await pool.run("score_group", {"completions": group, "brief": None})
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            await pool.run("score_group", {"completions": group, "brief": None})
            ts.append(time.perf_counter() - t0)
        await pool.aclose()
        return statistics.median(ts) * 1e3

    try:
        return asyncio.run(go())
    finally:
        pool.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=160)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--deadline", type=float, default=300.0, help="overall seconds for the load")
    args = ap.parse_args()

    env = gymkit.make("us46-default")
    groups = make_groups(args.requests)
    t1, tw, expected = in_process(env, groups, args.workers)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "gymkit.cli", "serve", "--port", str(port),
                             "--workers", str(args.workers), "--queue-limit", "64"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("server did not become ready")
            time.sleep(0.2)
        t0 = time.perf_counter()
        lat, status, bad = asyncio.run(load(url, groups, expected, args.deadline))
        wall = time.perf_counter() - t0
        ov = asyncio.run(overhead(url, groups[0], 40))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    p50_direct = direct_pool_p50(env, groups[0], 40)

    n = len(lat)
    lat_ms = np.array(lat) * 1e3
    thr = n / wall
    thr1, thrw = len(groups) / t1, len(groups) / tw
    print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load {os.getloadavg()[0]:.2f}")
    print(f"command: .venv/bin/python benchmarks/bench_server.py --requests {args.requests} "
          f"--workers {args.workers}\n")
    print("| case | requests | p50 ms | p99 ms | groups/s | answers/s |")
    print("|---|---|---|---|---|---|")
    print(f"| HTTP /v1/score_group, {CLIENTS} clients, {args.workers} workers | {n} | "
          f"{np.percentile(lat_ms, 50):.1f} | {np.percentile(lat_ms, 99):.1f} | {thr:.1f} | "
          f"{thr * GROUP:.0f} |")
    print(f"| in-process score_group, 1 process | {len(groups)} | {t1 / len(groups) * 1e3:.1f} | - | "
          f"{thr1:.1f} | {thr1 * GROUP:.0f} |")
    print(f"| in-process score_group, {args.workers} forked processes | {len(groups)} | - | - | "
          f"{thrw:.1f} | {thrw * GROUP:.0f} |")
    print(f"\nstatus counts {status}; cards differing from in-process: {bad}; "
          f"server / in-process({args.workers}) throughput: {thr / thrw:.2f}")
    print(f"concurrency 1, one warm group of {GROUP}: client p50 {ov['client_p50']:.2f} ms "
          f"(mean {ov['client_mean']:.2f}); inside the server: request {ov['server_mean']:.2f} ms, "
          f"pool job {ov['job_mean']:.2f} ms -> in-server HTTP/app overhead "
          f"{ov['server_mean'] - ov['job_mean']:.2f} ms, transport + client "
          f"{ov['client_mean'] - ov['server_mean']:.2f} ms; same job straight to a pool in this "
          f"process p50 {p50_direct:.2f} ms; GET /health p50 {ov['health_p50']:.2f} ms")
    return 0 if bad == 0 and set(status) == {200} and n == len(groups) else 1


if __name__ == "__main__":
    raise SystemExit(main())
