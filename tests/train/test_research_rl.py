"""``gymkit train research``: the multi-turn policy on the research episode (issue 25).

The CI configuration runs through the CLI as a user types it (``gymkit train research --run B
--from A --ci``), twice, from a tiny seeded single-turn warm start; the test then reads what
the run wrote: every episode ended by the episode's own rules with the episode's own reward,
the policy's tool calls reached the tools, no invalid episode got a positive advantage, the
holdout ledger was never opened, and the repeat is byte-identical (timings aside).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.train.research_rl import (
    Rollout,
    action_call,
    action_ids,
    observation_pieces,
    policy_context,
)
from gymkit.train.tokenizer import RESEARCH_TOKENS, build_tokenizer, research_tokenizer

REPO = Path(__file__).resolve().parents[2]
FORMULAS = ("rank(-ts_sum(returns, 5))", "rank(ts_mean(volume, 20))", "-ts_std(returns, 10)",
            "rank(close / ts_mean(close, 20))", "-rank(ts_corr(close, volume, 10))",
            "rank(vwap - close)", "rank(ts_delta(close, 3))", "-rank(ts_rank(volume, 8))")


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@pytest.fixture(scope="module")
def renv():
    from gymkit.research import make_research

    return make_research("us46-research")


# ------------------------------------------------------------------ tokenizer and token stream
def test_research_tokenizer_keeps_every_single_turn_id(tok, tmp_path) -> None:
    """Backward compatible: old ids, encodings and the saved single-turn bytes are unchanged."""
    grown = research_tokenizer(tok)
    assert grown.tokens[:len(tok)] == tok.tokens
    assert grown.tokens[len(tok):] == [t for t in RESEARCH_TOKENS if t not in tok.ids]
    assert research_tokenizer(grown).tokens == grown.tokens           # idempotent
    for f in FORMULAS:
        assert grown.encode_answer(f) == tok.encode_answer(f)
        assert grown.decode(grown.encode_answer(f)) == tok.decode(tok.encode_answer(f))
    brief = "Design an alpha around volume spikes."
    assert grown.encode_brief(brief) == tok.encode_brief(brief)
    tok.save(tmp_path / "a.json")
    build_tokenizer().save(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.dictionaries(
    st.sampled_from(["tool", "result", "calls_left", "error"]),
    st.one_of(st.none(), st.integers(-5, 50), st.text(max_size=8), st.floats(allow_nan=True),
              st.dictionaries(st.sampled_from(["valid", "train_reward", "cpcv",
                                               "max_abs_corr_earlier", "valid_a", "valid_b"]),
                              st.one_of(st.booleans(), st.floats(allow_nan=True), st.none())))
).map(json.dumps)))
def test_any_tool_message_renders_to_research_tokens(text) -> None:
    """Total: whatever a harness sends as a tool message, the policy reads only its own tokens."""
    pieces = observation_pieces(text)
    assert pieces[0] == "<obs>" and pieces[-1] == "</obs>"
    assert set(pieces) <= set(RESEARCH_TOKENS)


def test_episode_observations_render_their_numbers(renv) -> None:
    """A real backtest's train reward and CPCV land in their buckets; an error reads as one."""
    ep = renv.episode(None, budget=3)
    res = ep.call("backtest", formula="rank(-ts_sum(returns, 5))")
    payload = json.loads(res.observation)["result"]
    pieces = observation_pieces(res.observation)
    from gymkit.train.research_rl import REWARD_EDGES

    assert pieces[1] == "obs:valid" and pieces[-2] == "obs:calls:2"
    assert pieces[2] == f"obs:reward:{sum(payload['train_reward'] >= e for e in REWARD_EDGES)}"
    assert pieces[3] == f"obs:cpcv:{sum(payload['cpcv'] >= e for e in REWARD_EDGES)}"
    assert observation_pieces(ep.step("no tool here").observation)[1:] == \
        ["obs:error", "obs:calls:1", "</obs>"]


def test_actions_round_trip_and_submit_names_a_backtest(tok) -> None:
    from gymkit.dsl import canonical_key, parse

    grown = research_tokenizer(tok)
    for f in (*FORMULAS, "ts_zscore(vwap, 15)"):  # ids -> call -> ids is exact (an unknown
        # operator's <unk> included); the formula text is the same formula
        ids = action_ids(grown, {"name": "backtest", "arguments": {"formula": f}})
        call = action_call(grown, ids)
        assert call["name"] == "backtest" and action_ids(grown, call) == ids
        if f in FORMULAS:
            assert canonical_key(parse(call["arguments"]["formula"])) == canonical_key(parse(f))
    assert action_call(grown, action_ids(grown, {"name": "describe", "arguments": {}})) == \
        {"name": "describe", "arguments": {}}
    sub = [grown.ids["<submit>"], grown.ids["2"], grown.eos_id]
    assert action_call(grown, sub, FORMULAS[:2]) == \
        {"name": "submit", "arguments": {"formula": FORMULAS[1]}}
    assert action_call(grown, sub, FORMULAS[:1]) == "<submit> 2"      # no 2nd backtest: an error
    text = action_call(grown, grown.encode_answer(FORMULAS[1]))
    assert text == f"<alpha>{FORMULAS[1]}</alpha>"  # the single-turn answer: a submit


def test_loss_mask_covers_only_the_policys_tokens(renv, tok) -> None:
    """Prompt and tool observations are masked; every action token counts."""
    grown = research_tokenizer(tok)
    ctx = policy_context(grown, None, 3)
    r = Rollout("x", renv.episode(None, budget=3), list(ctx), [0.0] * len(ctx))
    acts = [action_ids(grown, {"name": "backtest", "arguments": {"formula": FORMULAS[0]}}),
            [grown.ids["<submit>"], grown.ids["1"], grown.eos_id]]
    for a in acts:
        r.apply(grown, a)
    assert r.ep.done and r.ep.result.submitted and r.ep.final_card.valid
    assert sum(r.mask) == sum(len(a) for a in acts)
    policy = [t for t, m in zip(r.ids, r.mask, strict=True) if m]
    assert policy == acts[0] + acts[1]
    obs = [grown.tokens[t] for t, m in zip(r.ids, r.mask, strict=True) if not m][len(ctx):]
    assert obs[0] == "<obs>" and obs[-1] == "</obs>"


# ------------------------------------------------------------------ the CI run, as typed
def _cli(args: list[str], ledger: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GYMKIT_HOLDOUT_LEDGER": str(ledger)}
    env.pop("PYTHONPATH", None)
    exe = Path(sys.executable).with_name("gymkit")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=900,
                          env=env, cwd=REPO)


@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory, tiny_warm_start):
    base = tmp_path_factory.mktemp("research-ci")
    tiny_warm_start(base / "warm", FORMULAS, 32, 100)
    ledger = base / "ledger.sqlite"
    outs = []
    for name in ("a", "b"):
        p = _cli(["train", "research", "--run", str(base / name), "--from", str(base / "warm"),
                  "--ci", "--seed", "0"], ledger)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
        outs.append(base / name / "research")
    return outs, ledger, p.stdout


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def test_ci_run_is_byte_identical_when_repeated(ci_runs) -> None:
    (a, b), _, _ = ci_runs
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()
                   and p.name not in ("timings.jsonl", "timings.json"))
    assert {p.relative_to(b) for p in b.rglob("*") if p.is_file()
            and p.name not in ("timings.jsonl", "timings.json")} == set(files)
    assert len(files) > 10
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_ci_run_episodes_are_the_episodes_own(ci_runs, renv) -> None:
    """Every episode ended by the episode's rules with its reward; replaying an evaluation
    transcript's actions in a fresh Python episode gives the same transcript, byte for byte."""
    from gymkit.adapters.common import brief_text_of
    from gymkit.research import NO_SUBMIT_REWARD

    (out, _), _, stdout = ci_runs
    cfg = json.loads((out / "config.json").read_text())
    rows = _jsonl(out / "episodes.jsonl")
    assert len(rows) == cfg["steps"] * cfg["briefs_per_step"] * cfg["group"]
    for r in rows:
        assert r["n_calls"] <= cfg["budget"]
        if not r["submitted"]:
            assert r["reward"] == NO_SUBMIT_REWARD and not r["valid"]
        elif r["valid"]:
            assert r["reward"] >= -2.0 and r["card_reward"] is not None
        else:
            assert r["reward"] == r["card_reward"] <= -2.5
        assert not (r["advantage"] > 0 and not r["valid"])  # the validity projection
    assert any(r["valid"] for r in rows)
    # the policy's tool calls reached the tools: its compact actions parsed into tool turns
    assert any(a.startswith("backtest ") for r in rows for a in r["actions"])
    evals = _jsonl(out / "eval.jsonl")
    assert {e["step"] for e in evals} == {0, 2, 4}
    for e in evals:
        t = e["transcript"]
        if e["step"] == 0:  # before the run's first archive commit: a fresh environment's episode
            ep = renv.episode(brief_text_of(e["brief_id"]), budget=cfg["budget"])
            for turn in t["turns"]:
                a = turn["action"]
                ep.step(a["raw"] if "raw" in a else a)
            assert ep.transcript() == t
            assert hashlib.sha256(ep.transcript_json().encode()).hexdigest() == \
                e["transcript_sha256"]
        else:  # the run committed its valid submissions: tools see a later archive
            assert t["header"]["archive_version"] >= renv.env.archive.version
        assert sum(a.startswith("backtest ") for a in e["actions"]) == \
            sum(turn["action"].get("name") == "backtest" for turn in t["turns"])
    summary = json.loads((out / "summary.json").read_text())
    assert [x["step"] for x in summary["evals"]] == [0, 2, 4]
    assert set(summary["baseline"]) == {"hill_climb", "single_shot"}
    assert "research: eval reward" in stdout


def test_ci_run_never_touches_the_holdout(ci_runs) -> None:
    """The ledger the CLI was pointed at was never created: no holdout look was claimed."""
    (out, _), ledger, _ = ci_runs
    assert not ledger.exists()
    assert (out / "summary.json").is_file()


def test_ci_run_logs_its_first_and_last_step(ci_runs) -> None:
    """The console showed step 1 and every 5th step only, so a run whose length is not a
    multiple of 5 (the --ci one) never printed its last step's line."""
    (a, _), _, out = ci_runs
    steps = json.loads((a / "summary.json").read_text(encoding="utf-8"))["config"]["steps"]
    assert f"step {1:4d}  reward" in out and f"step {steps:4d}  reward" in out
