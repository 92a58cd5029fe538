"""benchmarks/bench_bulk.py's profile (the lead's one device call reads it): counts are
attributed to the operator that made them, the Triton paths count one launch each under
--as-cuda, and every patched function is restored afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_bulk.py"


def test_profile_table_as_cuda(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench_bulk
    finally:
        sys.path.remove(str(BENCH.parent))
    from gymkit.bulk import libm, libm_triton, rowsum, scans
    from gymkit.bulk.panels import synthetic

    before = (scans.window_sums, scans.ema, rowsum.neumaier_sum, rowsum.group_sums, libm.force_device_path,
              libm_triton.use, libm_triton.log_codes, libm_triton.pow_codes)
    p = synthetic(12, 90)
    fs = ["ts_corr(close, volume, 10)", "ts_ema(close, 5) + ts_ema(open, 9)",
          "group_neutralize(returns, sector)", "scale(close)", "log(volume)", "rank(close) * 2",
          "signed_power(returns, 0.3)"]
    pr = bench_bulk.profile_chunk(fs, p, "cpu", as_cuda=True)
    rows = {r["op"]: r for r in pr["table"]}
    assert rows["ts_corr"]["triton"] == 1 and rows["ts_corr"]["launches"] < 10  # the whole operator: one kernel
    assert rows["ts_ema"]["groups"] == 1 and rows["ts_ema"]["triton"] == 1  # both windows, one recurrence
    assert rows["group_neutralize"]["triton"] == 1  # every sector's chain in one kernel
    assert rows["scale"]["triton"] == 1
    # log and signed_power: one kernel each (the double-double chain was > 50 launches), the
    # host fallback's one wait, and the device pow beside the signed_power kernel
    assert rows["log"]["triton"] == 1 and rows["log"]["launches"] < 12, rows["log"]
    assert rows["signed_power"]["triton"] == 1 and rows["signed_power"]["launches"] < 15, rows["signed_power"]
    assert rows["log"]["waits"] == 2 and rows["log"]["host_values"] > 0  # nonzero, then the count read
    assert rows["group_neutralize"]["waits"] == 0  # one_hot checked its range on the host: 2 a call
    assert pr["launches"] == sum(r["launches"] for r in pr["table"]) > 0
    assert (scans.window_sums, scans.ema, rowsum.neumaier_sum, rowsum.group_sums, libm.force_device_path,
            libm_triton.use, libm_triton.log_codes, libm_triton.pow_codes) == before


def test_profile_mode_as_typed(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(BENCH), "profile", "--n", "9", "--t", "70", "--count", "5",
                        "--device", "cpu", "--as-cuda", "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-800:]
    prof = json.loads((tmp_path / "profile.json").read_text())
    assert prof[0]["n"] == 9 and prof[0]["formulas"] == 106 and prof[0]["table"]
    assert "est_cuda_s" in (tmp_path / "profile.txt").read_text().splitlines()[1]
