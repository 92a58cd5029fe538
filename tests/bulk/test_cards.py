"""Whole cards through the torch engine equal the CPU scorer's, byte for byte (issue 26).

The door: ``gymkit score-file --engine torch`` as a user types it, and ``BulkScorer`` /
``BulkEnv`` around the environment ``gymkit.make`` returns.  Every channel (CPCV slices and
paths, IC, factors, stress drops, novelty) is in the compared card JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gymkit  # noqa: E402
from gymkit.bulk.cards import BulkEnv, BulkScorer  # noqa: E402
from gymkit.dsl.cache import EvalCache  # noqa: E402
from gymkit.env import Environment  # noqa: E402

ANSWERS = [
    "<alpha>rank(ts_mean(close, 5))</alpha>",
    "<alpha>-rank(ts_delta(log(close), 3))</alpha>",
    "<alpha>signed_power(ts_corr(close, volume, 10), 3)</alpha>",
    "<alpha>power(ts_std(returns, 20), 1.5) * rank(volume)</alpha>",
    "<alpha>rank(ts_mean(close, 5))</alpha>",  # a repeat
    "<alpha>close</alpha>",                    # a bare field (no device work)
    "<alpha>close - close</alpha>",            # degenerate book
    "<alpha>rank(nosuchfield)</alpha>",        # parse error
    "<alpha>scale(group_neutralize(ts_rank(vwap, 7), sector))</alpha>",
    "<alpha>ts_decay_linear(power(abs(returns), 0.7), 9)</alpha>",
]


@pytest.fixture(scope="module")
def envs() -> tuple[Environment, Environment]:
    """(the CPU reference, a twin with its own cache and stress memo for the torch engine)."""
    ref = gymkit.make("us46-default")
    return ref, Environment(ref.config, ref.market, cache=EvalCache())


def _dumps(cards) -> list[str]:
    return [json.dumps(c.to_dict(timings=False), sort_keys=True, allow_nan=True) for c in cards]


def test_cards_byte_identical_to_the_cpu_scorer(envs: tuple[Environment, Environment]) -> None:
    ref_env, env = envs
    ref = _dumps(ref_env.score(a) for a in ANSWERS)
    env.setup.cache.clear()
    scorer = BulkScorer(env, "cpu", chunk=4)
    hits = env.setup.cache.hits
    cards = scorer.score_many(ANSWERS)
    got = _dumps(cards)
    assert scorer.filled >= 6 and scorer.failed == 0
    # every answer with a call reads its train values from the cache, a valid one its two
    # stress worlds' too: all of them put there by the device
    n_calls = 8
    assert env.setup.cache.hits - hits == n_calls + 2 * sum(c.valid for c in cards)
    assert env.setup.cache.misses == 0
    for a, r, g in zip(ANSWERS, ref, got, strict=True):
        assert r == g, f"card of {a} differs"


def test_bulk_env_groups_and_order(envs: tuple[Environment, Environment]) -> None:
    ref_env, env = envs
    ref = _dumps(ref_env.score_group(ANSWERS[:5]))
    benv = BulkEnv(env, ANSWERS[:5], "cpu", chunk=2)
    assert _dumps(benv.score_group(ANSWERS[:5])) == ref
    assert benv.channels == env.channels


def test_score_file_engine_torch_byte_identical(tmp_path: Path) -> None:
    src = tmp_path / "answers.txt"
    rng = np.random.default_rng(0)
    lines = [a[len("<alpha>"):-len("</alpha>")] for a in ANSWERS]
    src.write_text("\n".join(lines[i] for i in rng.permutation(len(lines))) + "\n")
    outs = {}
    for engine in ("local", "torch"):
        out = tmp_path / f"{engine}.jsonl"
        cmd = [sys.executable, "-m", "gymkit.cli", "score-file", str(src), "--out", str(out),
               "--no-progress", "--workers", "1", "--engine", engine]
        if engine == "torch":
            cmd += ["--device", "cpu"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        outs[engine] = out.read_bytes()
    assert outs["torch"] == outs["local"]
    assert outs["local"].count(b"\n") == len(lines)


def test_engine_torch_bad_device_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_text("rank(close)\n")
    r = subprocess.run([sys.executable, "-m", "gymkit.cli", "score-file", str(src), "--out",
                        str(tmp_path / "o.jsonl"), "--engine", "torch", "--device", "nosuch"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "--device" in r.stderr.strip().splitlines()[-1]
