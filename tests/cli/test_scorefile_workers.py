"""``gymkit score-file --workers N``: the same bytes as ``--workers 1``, and resume after a
truncated parallel run, through the CLI as a user types it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FORMULAS = ["rank(-ts_sum(returns, 5))", "rank(ts_std(volume, 20))", "rank(close", "rank(-returns)",
            "rank(ts_mean(close, 250))", "rank(ts_delta(volume, 3))", "foo(bar)", "rank(volume)"]


def _mixed(path: Path) -> Path:
    """Valid and invalid answers plus bad records (bad JSON, no answer, not UTF-8)."""
    lines = [json.dumps({"id": f"a{i}", "completion": f"<alpha>{f}</alpha>"}).encode()
             for i, f in enumerate(FORMULAS)]
    lines[2:2] = [b"{not json", json.dumps({"id": "noans"}).encode(), b'{"id": "x\xff"}']
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _score_file(*args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [str(Path(sys.executable).with_name("gymkit")), "score-file", *map(str, args), "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    d = tmp_path_factory.mktemp("workers")
    src = _mixed(d / "in.jsonl")
    _score_file(src, "--out", d / "serial.jsonl", "--workers", "1")
    return src, (d / "serial.jsonl").read_bytes()


def test_two_workers_write_the_serial_bytes(serial: tuple[Path, bytes], tmp_path: Path) -> None:
    src, want = serial
    rows = [json.loads(x) for x in want.splitlines()]
    assert len(rows) == 11 and sum((r.get("error") or {}).get("code") == "bad_record" for r in rows) >= 2
    res = _score_file(src, "--out", tmp_path / "par.jsonl", "--workers", "2")
    assert (tmp_path / "par.jsonl").read_bytes() == want
    assert "11 scored" in res.stderr


def test_resume_after_a_truncated_parallel_run(serial: tuple[Path, bytes], tmp_path: Path) -> None:
    src, want = serial
    out = tmp_path / "part.jsonl"
    lines = want.splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:4]) + lines[4][:30])  # died while writing row 5
    res = _score_file(src, "--out", out, "--workers", "2")
    assert out.read_bytes() == want
    assert "4 already in" in res.stderr


def test_groups_stay_whole_and_parquet_bytes_match(tmp_path: Path) -> None:
    rows = [{"id": i, "prompt": i // 3, "formula": f} for i, f in enumerate(FORMULAS)]
    src = tmp_path / "g.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for w in ("1", "2"):
        _score_file(src, "--out", tmp_path / f"g{w}.parquet", "--group-field", "prompt", "--workers", w)
    assert (tmp_path / "g1.parquet").read_bytes() == (tmp_path / "g2.parquet").read_bytes()


def test_the_default_worker_count_fits_the_memory_of_a_wide_market(monkeypatch) -> None:
    """On a 3,000-stock market each process needs ~3 GB (its train context and a full 1 GiB
    evaluation cache; more with stress worlds), so "all cores" on a 16-core, 16 GB machine
    would run out of memory.  The default counts cores and memory; the embedded market never
    binds."""
    from types import SimpleNamespace

    from gymkit.scorefile import BYTES_PER_CELL, default_workers

    monkeypatch.setattr("os.cpu_count", lambda: 16)
    wide = SimpleNamespace(setup=SimpleNamespace(train=SimpleNamespace(T=3304, N=3000), worlds=()))
    stressed = SimpleNamespace(setup=SimpleNamespace(train=SimpleNamespace(T=3304, N=3000), worlds=(1, 2)))
    small = SimpleNamespace(setup=SimpleNamespace(train=SimpleNamespace(T=3304, N=46), worlds=(1, 2)))
    gib = 1024 ** 3
    assert default_workers(wide, available=4 * gib) == 1  # never none
    assert default_workers(wide, available=16 * gib) == 3
    assert default_workers(wide, available=64 * gib) == 13
    assert default_workers(stressed, available=64 * gib) == 4  # each world is another panel's worth
    assert default_workers(wide, available=1024 * gib) == 16
    assert default_workers(small, available=4 * gib) == 16  # 0.2 GB a process
    assert default_workers(None) == 16
    # the measured peak (RESULTS.md: 2.98 GiB, serial score-file, 60 answers at N = 3,000) fits
    assert BYTES_PER_CELL * 3304 * 3000 > 2.98 * gib


def test_forked_workers_score_with_the_callers_environment(tmp_path: Path) -> None:
    """On Linux the pool is forked from the calling process, so its workers score with the
    environment the caller passed, not a fresh ``make``: here one whose archive grew by a
    commit.  ``workers=2`` writes the serial bytes on that environment, and those differ from a
    fresh environment's (the card names the archive state), so a worker that rebuilt its own
    environment would fail this test."""
    from gymkit.registry import make  # not the CLI tests' shared environment: this one changes
    from gymkit.scorefile import pool_start_method, score_file

    if pool_start_method() != "fork":
        pytest.skip("workers are spawned on this platform (they build the environment themselves)")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "formula": f}) + "\n"
                           for i, f in enumerate(FORMULAS)), encoding="utf-8")
    env = make("us46-default")
    assert env.commit(["<alpha>rank(-ts_sum(returns, 6))</alpha>"]) == 1
    outs = {}
    for name, w, e in (("serial", 1, env), ("pool", 2, env), ("fresh", 1, make("us46-default"))):
        counts = score_file(src, tmp_path / f"{name}.jsonl", progress=False, env=e, workers=w)
        assert counts["workers"] == w
        outs[name] = (tmp_path / f"{name}.jsonl").read_bytes()
    assert outs["pool"] == outs["serial"]
    assert outs["fresh"] != outs["serial"]


def test_spawned_workers_write_the_serial_bytes(serial: tuple[Path, bytes], tmp_path: Path) -> None:
    """Where workers are spawned (macOS, Windows), each builds the environment from the
    factory; the bytes are still the serial run's.  Forced here on Linux, in a fresh process."""
    src, want = serial
    out = tmp_path / "spawned.jsonl"
    code = ("import gymkit.scorefile as s; s.pool_start_method = lambda: 'spawn'; "
            f"c = s.score_file({str(src)!r}, {str(out)!r}, workers=2, progress=False); "
            "print(c['workers'])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["2"] and out.read_bytes() == want


def test_the_fork_warning_of_python_312_does_not_break_the_pool(serial: tuple[Path, bytes],
                                                                 tmp_path: Path) -> None:
    """Python 3.12+ warns (DeprecationWarning) when a process with threads forks, and the
    command's process has Polars' and BLAS' threads; under ``-W error`` the warning became an
    exception inside the pool's start.  Simulated here (this suite's Python is 3.11): ``os.fork``
    warns as 3.12's does, warnings are errors, and the pool still writes the serial bytes."""
    from gymkit.scorefile import pool_start_method

    if pool_start_method() != "fork":
        pytest.skip("workers are spawned on this platform")
    src, want = serial
    out = tmp_path / "w.jsonl"
    code = ("import os, warnings\n"
            "real = os.fork\n"
            "def fork():\n"
            "    warnings.warn('This process (pid=%d) is multi-threaded, use of fork() may lead '\n"
            "                  'to deadlocks in the child.' % os.getpid(), DeprecationWarning, 2)\n"
            "    return real()\n"
            "os.fork = fork\n"
            "import gymkit.scorefile as s\n"
            f"c = s.score_file({str(src)!r}, {str(out)!r}, workers=2, progress=False)\n"
            "print(c['workers'])\n")
    res = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["2"] and out.read_bytes() == want
