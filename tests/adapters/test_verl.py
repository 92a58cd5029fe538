"""verl adapter, against a re-statement of verl's calling convention.

verl itself is not installed here: it pulls ray, vLLM/SGLang and a CUDA stack that do not
install on this 2-core CPU machine.  Convention re-stated from verl 0.9 (naive and batch reward
managers): ``compute_score(data_source, solution_str, ground_truth, extra_info)`` returns a
float or a dict with 'score' whose keys are collected per sample into ``reward_extra_info``
(so every sample must carry the same keys); ``reward_manager=batch`` calls
``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)``.
"""

from __future__ import annotations

import math

import pyarrow.parquet as pq

from gymkit.adapters.common import brief_text_of
from gymkit.adapters.datasets import verl_rows
from gymkit.adapters.verl import compute_score, compute_score_batch
from gymkit.briefs import generate_briefs, probe_briefs

from .conftest import GROUP, VALID


def _naive_manager(samples):
    """verl's naive manager loop (re-stated): one call per sample, extra keys collected."""
    scores, extra = [], {}
    for s in samples:
        res = compute_score(s["data_source"], s["solution"], s["reward_model"]["ground_truth"],
                            s["extra_info"])
        scores.append(res["score"] if isinstance(res, dict) else float(res))
        for k, v in res.items():
            extra.setdefault(k, []).append(v)
    assert all(len(v) == len(samples) for v in extra.values()), "keys differ between samples"
    return scores, extra


def test_naive_manager_gets_the_card(env) -> None:
    rows = verl_rows(probe_briefs(generate_briefs())[:1])
    samples = [{**rows[0], "solution": c} for c in GROUP]
    scores, extra = _naive_manager(samples)
    for s, c, ok in zip(scores, GROUP, VALID, strict=True):
        card = env.score_group([c], brief=brief_text_of(rows[0]["extra_info"]["brief_id"]))[0]
        assert s == card.reward and card.valid == ok
    assert extra["valid"] == [float(v) for v in VALID] and set(env.channels) <= set(extra)
    assert all(isinstance(v, float) and math.isfinite(v) for vs in extra.values() for v in vs)


def test_batch_groups_by_brief(env, brief_ids) -> None:
    out = compute_score_batch(data_sources=["gymkit/us46-default"] * 6, solution_strs=GROUP,
                              ground_truths=[brief_ids[0]] * 6,
                              extra_infos=[{"brief_id": brief_ids[0]}] * 6)
    cards = env.score_group(GROUP, brief=brief_text_of(brief_ids[0]))
    assert [o["score"] for o in out] == [c.reward for c in cards]
    assert [o["pbo"] for o in out] == [c.channels["pbo"] for c in cards]  # group channel filled
    assert len({tuple(sorted(o)) for o in out}) == 1


def test_internal_error_is_flagged_not_invalid(env, monkeypatch) -> None:
    def boom(c, brief=None):
        raise RuntimeError("worker died")
    monkeypatch.setattr(env, "score_group", boom)
    res = compute_score("gymkit/us46-default", GROUP[0], "x", None)
    assert res["internal_error"] == 1.0 and res["score"] == 0.0 and res["valid"] == 0.0


def test_verl_parquet_carries_brief_id_only(tmp_path) -> None:
    from gymkit.cli import main

    path = tmp_path / "train.parquet"
    assert main(["briefs", "--split", "probe", "--format", "verl-parquet", "--out", str(path)]) == 0
    t = pq.read_table(path).to_pylist()
    assert len(t) == 50 and set(t[0]) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert t[0]["reward_model"]["ground_truth"] == t[0]["extra_info"]["brief_id"]
    assert [m["role"] for m in t[0]["prompt"]] == ["system", "user"]
