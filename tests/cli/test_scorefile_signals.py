"""``gymkit score-file --workers 2`` stopped from outside, through the console script in its
own process group: a worker killed, the command killed, Ctrl-C twice.  Each leaves no process
behind, says what it kept, and the same command resumes to the serial bytes.  (Linux: the
pool is forked and the workers ask for their parent's death signal.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux signals")

FORMULAS = ["rank(-ts_sum(returns, {k}))", "rank(ts_std(volume, {k}))", "-ts_corr(close, volume, {k})",
            "rank(ts_mean(close, {k}) / close)", "rank(-ts_delta(close, {k}))"]


def _exe() -> list[str]:
    return [str(Path(sys.executable).with_name("gymkit")), "score-file"]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """3,000 distinct answers (long enough to be stopped mid-run) and their serial output."""
    d = tmp_path_factory.mktemp("signals")
    src = d / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "formula": FORMULAS[i % 5].format(k=2 + i // 5)})
                           + "\n" for i in range(3000)), encoding="utf-8")
    subprocess.run([*_exe(), str(src), "--out", str(d / "serial.jsonl"), "--workers", "1",
                    "--no-progress"], check=True, capture_output=True, timeout=900)
    return src, (d / "serial.jsonl").read_bytes()


def _children(pid: int) -> list[int]:
    res = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in res.stdout.split()]


def _start(src: Path, out: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """The command with SIGINT at its default (a shell's background job ignores it), once its
    two workers exist and some rows are written."""
    proc = subprocess.Popen([*_exe(), str(src), "--out", str(out), "--workers", "2"],
                            start_new_session=True, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        kids = _children(proc.pid)
        if len(kids) == 2 and out.exists() and out.stat().st_size > 0:
            return proc, kids
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the pool did not start within 120 s")


def _finish(proc: subprocess.Popen[str], kids: list[int], processes_left) -> tuple[int, str]:
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("the command hung") from None
    left = processes_left(kids)
    for k in left:
        os.kill(k, signal.SIGKILL)
    assert not left, f"workers left running: {left}"
    return rc, proc.stderr.read() if proc.stderr else ""


def _resumes(src: Path, out: Path, want: bytes) -> None:
    subprocess.run([*_exe(), str(src), "--out", str(out), "--workers", "2", "--no-progress"],
                   check=True, capture_output=True, timeout=900)
    assert out.read_bytes() == want


def test_a_killed_worker_is_a_one_line_error_and_the_run_resumes(answers, tmp_path, processes_left) -> None:
    """It was "internal error: BrokenProcessPool ..." (exit 3, "a bug"); a worker killed from
    outside (the out-of-memory killer, say) is exit 1 with what was kept."""
    src, want = answers
    out = tmp_path / "o.jsonl"
    proc, kids = _start(src, out)
    os.kill(kids[-1], signal.SIGKILL)
    rc, err = _finish(proc, kids, processes_left)
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert rc == 1, err
    assert last.startswith("gymkit score-file: error: a scoring worker process was killed")
    assert f"kept in {out}; the same command resumes" in last
    _resumes(src, out, want)


def test_a_killed_command_takes_its_workers_with_it(answers, tmp_path, processes_left) -> None:
    """``kill -9`` of the command left both workers waiting on their queue for ever."""
    src, want = answers
    out = tmp_path / "o.jsonl"
    proc, kids = _start(src, out)
    proc.kill()
    rc, _ = _finish(proc, kids, processes_left)
    assert rc == -signal.SIGKILL
    _resumes(src, out, want)


def test_ctrl_c_twice_neither_hangs_nor_leaves_workers(answers, tmp_path, processes_left) -> None:
    """A second Ctrl-C during the pool's cleanup cut it short: the command then hung joining
    workers that were never told to stop, and a third left them running."""
    src, want = answers
    out = tmp_path / "o.jsonl"
    proc, kids = _start(src, out)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    rc, err = _finish(proc, kids, processes_left)
    assert rc in (130, -signal.SIGINT), err
    assert "the same command resumes" in err
    assert "Exception in thread" not in err, err  # the pool's own thread failed on the way out
    _resumes(src, out, want)
