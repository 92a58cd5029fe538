"""Determinism: the same completion, environment and archive state give byte-identical cards
(``to_dict(timings=False)``) in-process, after snapshot/restore, and in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import gymkit

from .conftest import tag

ANSWERS = [
    tag("rank(group_neutralize(-ts_sum(returns, 5), sector))"),
    "<think>volume surprise relative to volatility</think>"
    + tag("rank(ts_std(volume, 20) / ts_mean(volume, 20) / ts_std(returns, 20))"),
    tag("rank(ts_std(returns, 63))"),
    tag("rank(ts_mean(close, 250))"),
    tag("close - close"),
    tag("rank(clos)"),
    "no tag",
]
COMMIT = tag("rank(ts_corr(close, volume, 10))")

_CHILD = """
import json, sys
import gymkit
answers, commit = json.loads(sys.stdin.read())
env = gymkit.make("us46-default")
out = [c.to_json() for c in env.score_group(answers)]
env.commit([commit])
out += [c.to_json() for c in env.score_group(answers)]
out.append(env.archive.digest)
print(json.dumps(out))
"""


def _cards(env: gymkit.Environment) -> list[str]:
    return [c.to_json() for c in env.score_group(ANSWERS)]


def test_cards_are_identical_on_rescoring(env) -> None:
    assert _cards(env) == _cards(env)
    single = env.score(ANSWERS[0]).to_dict(timings=False)
    member = env.score_group(ANSWERS)[0].to_dict(timings=False)
    # Only the group channel R2 (and so the reward) may differ between a group of one and a
    # group member; everything else is the same bytes.
    assert single["channels"].pop("pbo") == 0.0
    member["channels"].pop("pbo")
    single.pop("reward"), member.pop("reward")
    assert json.dumps(single) == json.dumps(member)


def test_restored_archive_gives_identical_cards(scratch_env) -> None:
    env = scratch_env
    env.commit([COMMIT])
    committed = _cards(env)
    fresh = gymkit.make("us46-default")
    assert _cards(fresh) != committed  # a different archive version shows on the card
    fresh.archive_restore(env.archive_snapshot())
    assert _cards(fresh) == committed


def test_cards_are_byte_identical_in_another_process(scratch_env) -> None:
    env = scratch_env
    here = _cards(env)
    env.commit([COMMIT])
    here += [*_cards(env), env.archive.digest]
    threads = {k: "1" for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                "MKL_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps([ANSWERS, COMMIT]),
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **threads, "PYTHONHASHSEED": "123"}, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    there = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(there) == len(here)
    for a, b in zip(here, there, strict=True):
        assert a == b
