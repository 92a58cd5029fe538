"""``gymkit score-file --engine ray`` on a local two-CPU Ray, through the CLI as a user types it:
the same bytes as ``--workers 1`` (rows in input order although the first answer is the
slowest), error rows in place, groups and Parquet, resume, and a one-line error without Ray."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gymkit.cli import main

pytest.importorskip("ray")

# The first answer costs several times the others, so a second actor finishes later rows
# first: rows written as they complete (not in input order) would differ from the serial bytes.
SLOW = "ts_corr(rank(ts_std(close, 120)), rank(ts_mean(volume, 250)), 250)"
FORMULAS = [SLOW, "rank(-ts_sum(returns, 5))", "rank(close", "rank(ts_std(volume, 20))",
            "rank(-returns)", "foo(bar)", "rank(ts_delta(volume, 3))", "rank(ts_mean(close, 60))",
            "-ts_corr(open, volume, 10)", "rank(high - low)", "rank(volume / adv(20))",
            "scale(-ts_delta(close, 2))", "rank(ts_rank(close, 10))", "rank(-ts_skew(returns, 20))",
            "rank(ts_argmax(close, 30))", "rank(vwap - close)", "rank(ts_decay_linear(returns, 9))",
            "rank(-ts_delta(log(close), 5))", "rank(ts_min(low, 5) - close)", "rank(cap)",
            "rank(ts_max(high, 10) - close)", "rank(-ts_mean(returns, 3))", "x - x", "rank(open)"]


def _mixed(path: Path) -> Path:
    lines = [json.dumps({"id": f"a{i}", "completion": f"<alpha>{f}</alpha>"}).encode()
             for i, f in enumerate(FORMULAS)]
    lines[3:3] = [b"{not json", json.dumps({"id": "noans"}).encode(), b'{"id": "x\xff"}']
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _serial(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score-file", *map(str, args), "--no-progress", "--workers", "1"]) == 0
    capsys.readouterr()


def _ray(*args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [str(Path(sys.executable).with_name("gymkit")), "score-file", *map(str, args),
           "--no-progress", "--engine", "ray", "--workers", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def test_ray_writes_the_serial_bytes_in_input_order(tmp_path: Path, capsys) -> None:
    src = _mixed(tmp_path / "in.jsonl")
    _serial(src, "--out", tmp_path / "serial.jsonl", capsys=capsys)
    want = (tmp_path / "serial.jsonl").read_bytes()
    rows = [json.loads(x) for x in want.splitlines()]
    assert len(rows) == 27 and rows[0]["id"] == "a0" and rows[3]["error"]["code"] == "bad_record"
    res = _ray(src, "--out", tmp_path / "ray.jsonl")
    assert (tmp_path / "ray.jsonl").read_bytes() == want
    assert "27 scored" in res.stderr and "3 bad records" in res.stderr


def test_ray_groups_parquet_and_resume(tmp_path: Path, capsys) -> None:
    rows = [{"id": i, "prompt": i // 4, "formula": f} for i, f in enumerate(FORMULAS)]
    src = tmp_path / "g.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    _serial(src, "--out", tmp_path / "serial.parquet", "--group-field", "prompt", capsys=capsys)
    _serial(src, "--out", tmp_path / "serial.jsonl", "--group-field", "prompt", capsys=capsys)
    # a run that died after two groups and in the middle of a row's line
    lines = (tmp_path / "serial.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "ray.parquet.partial.jsonl").write_bytes(b"".join(lines[:8]) + lines[8][:25])
    res = _ray(src, "--out", tmp_path / "ray.parquet", "--group-field", "prompt")
    assert "8 already in" in res.stderr
    assert (tmp_path / "ray.parquet").read_bytes() == (tmp_path / "serial.parquet").read_bytes()


def test_without_ray_the_error_is_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    src = _mixed(tmp_path / "in.jsonl")
    rc = main(["score-file", str(src), "--out", str(tmp_path / "o.jsonl"), "--engine", "ray"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "pip install 'gymkit[ray]'" in err
    assert not (tmp_path / "o.jsonl").exists()
    rc = main(["score-file", str(src), "--out", str(tmp_path / "o.jsonl"), "--ray-address", "auto"])
    assert rc == 1 and "--ray-address needs --engine ray" in capsys.readouterr().err


def test_an_address_with_no_cluster_is_a_one_line_error_in_seconds(tmp_path: Path, capsys) -> None:
    """A --ray-address where nothing listens (ray.init would retry for minutes, printing only
    its own logs) and ``auto`` with no cluster running are user errors (exit 1), in one line,
    before any output is written."""
    import socket
    import time

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src = tmp_path / "a.txt"
    src.write_text("rank(-returns)\n")
    out = tmp_path / "cards.jsonl"
    t0 = time.monotonic()
    rc = main(["score-file", str(src), "--out", str(out), "--engine", "ray", "--ray-address",
               f"127.0.0.1:{port}", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and time.monotonic() - t0 < 30
    assert err[-1].startswith(f"gymkit score-file: error: --ray-address 127.0.0.1:{port}: nothing "
                              f"answers at 127.0.0.1:{port}")
    assert not out.exists() or out.read_text() == ""
    rc = main(["score-file", str(src), "--out", str(out), "--engine", "ray", "--ray-address",
               "auto", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err[-1].startswith("gymkit score-file: error: --ray-address auto: no "
                                          "running Ray cluster found there (")
