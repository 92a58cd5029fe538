"""The training loop's scoring workers (gymkit.answer_pool) give the serial loop's cards.

The archive-free layers of each answer run in spawned workers; novelty, channels and reward
run in the caller, group by group, with commits in between.  The cards must be the serial
ones byte for byte (JSON without timings, and the P&L), including the group's duplicate
sharing: the same text twice, two texts of one canonical form, and invalid answers of each
layer (text gate, book gate).  The one-process property runs without workers.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gymkit
from gymkit.answer_pool import AnswerStatePool
from gymkit.briefs import generate_briefs
from gymkit.scoring import score_answers, share_group_duplicates

TEXTS = [
    "<alpha>rank(-returns)</alpha>",
    "<alpha>-rank(returns)</alpha>",             # another text, the same canonical form
    "<alpha>rank(-ts_sum(returns, 5))</alpha>",
    "<think>reversal</think><alpha>rank(-ts_sum(returns, 5))</alpha>",
    "<alpha>close - close</alpha>",              # parses, refused by the book gate
    "<alpha>ts_mean(close, 250)</alpha>",        # a slow book (turnover floor)
    "<alpha>rank(</alpha>",                      # refused by the text gate
    "no tag at all",
    "<alpha>ts_corr(rank(open), rank(volume), 10)</alpha>",
]


@pytest.fixture(scope="module")
def env() -> gymkit.Environment:
    return gymkit.make("us46-default")


def _same(a: list, b: list) -> None:
    assert [c.to_json() for c in a] == [c.to_json() for c in b]
    for x, y in zip(a, b, strict=True):
        assert (x.pnl is None) == (y.pnl is None)
        if x.pnl is not None:
            assert np.array_equal(x.pnl, y.pnl)


def test_cards_from_the_workers_equal_the_serial_cards_with_commits_between_groups(env) -> None:
    briefs = [b.text for b in generate_briefs()[:3]]
    groups = [TEXTS, [TEXTS[0], TEXTS[0], TEXTS[2], TEXTS[6]], list(reversed(TEXTS))]
    snap = env.archive_snapshot()
    serial = []
    for g, b in zip(groups, briefs, strict=True):
        cards = env.score_group(g, brief=b)
        serial.append(cards)
        env.commit([c for c in cards if c.valid])
    env.archive_restore(snap)
    with AnswerStatePool(functools.partial(gymkit.make, "us46-default"), 2,
                         expect_fingerprint=env.fingerprint) as pool:
        pre = pool.states(groups)
    assert pre is not None
    pooled = []
    for g, b, states in zip(groups, briefs, pre, strict=True):
        cards = env.score_group(g, brief=b, states=states)
        pooled.append(cards)
        env.commit([c for c in cards if c.valid])
    env.archive_restore(snap)
    for a, b in zip(serial, pooled, strict=True):
        _same(a, b)
    # the commits mattered: the third group's novelty saw the first two groups' answers
    assert serial[2][-1].metrics["novelty"] != env.score_group(groups[2], brief=briefs[2])[-1].metrics["novelty"]


def test_a_worker_of_another_environment_is_refused(env) -> None:
    with pytest.raises(ValueError, match="other environments"):
        AnswerStatePool(functools.partial(gymkit.make, "us46-harsh"), 2,
                        expect_fingerprint=env.fingerprint)


def test_states_must_be_the_completions_own(env) -> None:
    states = score_answers(TEXTS[:2], env.setup)
    with pytest.raises(ValueError, match="states"):
        env.score_group(TEXTS[1:3], states=states)


def test_one_worker_spawns_nothing() -> None:
    pool = AnswerStatePool(lambda: None, 1)
    assert pool.states([TEXTS]) is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=10))
def test_one_by_one_states_shared_as_a_group_equal_the_group_states(env, group) -> None:
    one_by_one = [score_answers([c], env.setup)[0] for c in group]
    shared = share_group_duplicates(one_by_one)
    direct = score_answers(group, env.setup)
    for s, d in zip(shared, direct, strict=True):
        assert s.completion == d.completion and s.canonical == d.canonical
        assert (s.error is None) == (d.error is None)
        assert s.error == d.error
        assert (s.bt is None) == (d.bt is None) and s.stress == d.stress
        if s.bt is not None:
            assert np.array_equal(s.bt.net, d.bt.net) and s.bt.cpcv.score == d.bt.cpcv.score
        zero = {k for k, v in d.timings.items() if k in ("evaluate", "book", "stress") and v == 0.0}
        assert zero <= {k for k, v in s.timings.items() if v == 0.0}
    assert [c.to_json() for c in env.score_group(group, states=shared)] == \
        [c.to_json() for c in env.score_group(group)]


def test_a_scoring_worker_leaves_ctrl_c_to_the_training_command(monkeypatch):
    """Ctrl-C reaches the whole process group: each spawn worker printed its KeyboardInterrupt
    traceback above the command's own one-line "interrupted" (as score-file's did)."""
    import signal

    from gymkit import answer_pool

    seen = []
    monkeypatch.setattr(signal, "signal", lambda sig, handler: seen.append((sig, handler)))
    monkeypatch.setattr(answer_pool, "_ENV", None)  # restored after the test
    parents = []  # (the death signal itself is tested with real processes below)
    monkeypatch.setattr(answer_pool, "die_with_parent", parents.append)
    answer_pool._init_worker(lambda: "env", 123)
    assert seen == [(signal.SIGINT, signal.SIG_IGN)] and answer_pool._ENV == "env"
    assert parents == [123]


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="Linux signals")
def test_the_workers_end_with_a_killed_training_process(processes_left) -> None:
    """``kill -9`` of a training command left its scoring workers waiting on their queue for
    ever (spawned processes outlive their parent); they now ask for the parent's death signal."""
    import os
    import signal
    import subprocess
    import sys

    code = ("import functools, time, gymkit\n"
            "from gymkit.answer_pool import AnswerStatePool\n"
            "pool = AnswerStatePool(functools.partial(gymkit.make, 'us46-default'), 2)\n"
            "print('ready', flush=True)\n"
            "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        kids = [int(x) for x in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                               text=True).stdout.split()]
        assert len(kids) >= 2  # the two workers (and the resource tracker, where there is one)
        proc.kill()
        proc.wait(timeout=30)
        left = processes_left(kids)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        except ProcessLookupError:
            pass
    assert not left, f"processes left running: {left}"


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="Linux signals")
def test_ctrl_c_twice_during_scoring_neither_hangs_nor_leaves_workers(processes_left) -> None:
    """A training command's pool closed gracefully on Ctrl-C (letting its workers finish what
    they held); a second Ctrl-C cut that close short.  The workers are now terminated on an
    error, with SIGINT held off until they are joined (score-file's pool does the same)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = ("import functools, gymkit\n"
            "from gymkit.answer_pool import AnswerStatePool\n"
            "texts = [f'<alpha>rank(-ts_sum(returns, {w}))</alpha>' for w in range(2, 202)]\n"
            "with AnswerStatePool(functools.partial(gymkit.make, 'us46-default'), 2) as pool:\n"
            "    pool.states([texts[:4]])\n"
            "    print('ready', flush=True)\n"
            "    while True:\n"
            "        pool.states([texts])\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        kids = [int(x) for x in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                               text=True).stdout.split()]
        assert len(kids) >= 2
        time.sleep(0.5)  # the workers busy with a long map
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("the training process hung after Ctrl-C twice") from None
        left = processes_left(kids)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    err = proc.stderr.read() if proc.stderr else ""
    assert rc in (1, 130, -signal.SIGINT), err
    assert not left, f"processes left running: {left}"
    assert "Exception in thread" not in err, err  # the pool's own thread failed on the way out


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="Linux signals")
def test_a_killed_scoring_worker_is_a_stop_from_outside_not_a_bug(env) -> None:
    """As in score-file: a worker killed from outside (the out-of-memory killer) was
    "internal error: BrokenProcessPool" (exit 3, "a bug") in ``gymkit train rl``."""
    import os
    import signal

    from gymkit.cli.errors import USER_ERRORS, RunStopped

    with AnswerStatePool(functools.partial(gymkit.make, "us46-default"), 2,
                         expect_fingerprint=env.fingerprint) as pool:
        os.kill(next(iter(pool._pool._processes)), signal.SIGKILL)
        with pytest.raises(RunStopped, match="a scoring worker process was killed"):
            pool.states([TEXTS])
    assert issubclass(RunStopped, USER_ERRORS)
