"""Selective shift directions (``gymkit jepa worlds --shifts selective``).

* :func:`selective_coefficients` returns the least-norm coefficients whose first-order response
  moves the own statistic by 1 and every other by at most the margin (hypothesis property
  against random feasible points; a known answer).
* Through the CLI as typed, on the embedded market and the shipped checkpoint (into a temp
  folder, never the package): the manifest records the fit, every channel's predicted response
  is within the margin, and ``gymkit jepa check --out`` regenerates the fit, the shift
  responses and every kept world bit for bit; a manifest whose calibration seed is edited fails
  the check.  The shipped manifest (stored directions) has no ``shift_directions`` key.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.jepa.shifts import SELECTIVE_MARGIN, selective_coefficients

torch = pytest.importorskip("torch")

MATRIX = arrays(np.float64, st.tuples(st.just(4), st.integers(4, 8)),
                elements=st.floats(-1.0, 1.0, allow_nan=False, width=32))


@settings(max_examples=60, deadline=None)
@given(response=MATRIX, k=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_selective_coefficients_are_feasible_and_least_norm(response, k, seed) -> None:
    a = selective_coefficients(response, k, SELECTIVE_MARGIN)
    if a is None:  # no solution: the own row is (numerically) inside the others' span
        assert np.linalg.matrix_rank(response, tol=1e-6) < 4 or np.abs(response[k]).max() < 1e-6
        return
    others = np.arange(4) != k
    assert response[k] @ a == pytest.approx(1.0, abs=1e-9)
    assert (np.abs(response[others] @ a) <= SELECTIVE_MARGIN + 1e-9).all()
    # every feasible point is at least as long: project random points onto own @ x = 1
    rng = np.random.default_rng(seed)
    own = response[k]
    for _ in range(200):
        x = a + rng.normal(scale=rng.choice([1e-3, 1e-1, 1.0]), size=a.size)
        x += (1.0 - own @ x) / (own @ own) * own
        if (np.abs(response[others] @ x) <= SELECTIVE_MARGIN).all():
            assert x @ x >= a @ a - 1e-9


def test_selective_coefficients_known_answer() -> None:
    # basis 0 moves statistics 0 and 1 together, basis 1 moves statistic 1 alone
    r = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    a = selective_coefficients(r, 0, 0.25)
    np.testing.assert_allclose(a, [1.0, -0.75, 0.0], atol=1e-12)  # statistic 1 held at +0.25
    assert selective_coefficients(r, 3, 0.25) is None  # nothing moves statistic 3


def _gymkit(*args: str, timeout: int = 1200) -> subprocess.CompletedProcess:
    from gymkit.jepa import portable

    env = {k: v for k, v in os.environ.items() if k != portable.FLAG}
    return subprocess.run([str(Path(sys.executable).with_name("gymkit")), "jepa", *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.slow  # the embedded market's worlds with the ranking gate: ~1.5 min CPU
def test_selective_worlds_as_typed_regenerate_bit_for_bit(tmp_path, manifest) -> None:
    from gymkit.jepa.shifts import SHIFT_ORDER
    from gymkit.jepa.train import SHIPPED_CHECKPOINT
    from gymkit.jepa.worlds import SHIPPED_DIR

    assert "shift_directions" not in manifest  # stored directions: the shipped manifest as before
    shutil.copy(SHIPPED_DIR / SHIPPED_CHECKPOINT, tmp_path / SHIPPED_CHECKPOINT)
    out = ["--out", str(tmp_path), "--checkpoint", str(tmp_path / SHIPPED_CHECKPOINT)]
    r = _gymkit("worlds", "--shifts", "selective", "--threads", "1", *out)
    assert r.returncode == 0, r.stderr[-3000:]
    path = tmp_path / "us46_worlds.json"
    man = json.loads(path.read_text(encoding="utf-8"))
    fit = man["shift_directions"]
    assert fit["method"] == "selective" and fit["calibration_seed"] == man["seed"] + 200
    assert np.array(fit["response_matrix"]).shape == (4, fit["basis"])
    for k, name in enumerate(SHIFT_ORDER):
        pred = np.array(fit["channels"][name]["predicted"])
        assert pred[k] == pytest.approx(1.0) and (np.abs(np.delete(pred, k)) <= fit["margin"] + 1e-9).all()
    r = _gymkit("check", *out)
    assert r.returncode == 0 and "regenerates bit for bit" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    fit["calibration_seed"] += 1  # another calibration draw: another fit, which check must see
    path.write_text(json.dumps(man), encoding="utf-8")
    r = _gymkit("check", *out)
    assert r.returncode == 1 and "selective shift directions: their fit differs" in r.stdout
