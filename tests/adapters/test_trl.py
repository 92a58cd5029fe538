"""TRL adapter: per-channel reward functions, memo, picklability, GDPO under TRL's aggregation.

TRL is an optional extra (it pulls torch/transformers).  Tests that need it skip with the reason
when it is absent; the aggregation property is also proved on a numpy re-statement of TRL's
``normalize_then_sum`` branch (trl 1.16 ``GRPOTrainer._generate_and_score_completions``:
per-group nanmean / nanstd with Bessel correction + 1e-4, weighted ``nansum``, rows where every
function is NaN are unscorable, batch centring and scaling, NaN advantages → 0).
"""

from __future__ import annotations

import inspect
import pickle
import textwrap
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.adapters import common
from gymkit.adapters.trl import grpo_config_kwargs, reward_funcs, valid_weight

from .conftest import GROUP, VALID


def _batch(brief_ids):
    """Two groups of 6: GROUP for brief 0, GROUP reversed for brief 1."""
    completions = GROUP + GROUP[::-1]
    ids = [brief_ids[0]] * 6 + [brief_ids[1]] * 6
    prompts = [f"prompt {i}" for i in ids]
    return prompts, completions, ids


def _restated_normalize_then_sum(r: np.ndarray, w: np.ndarray, g: int) -> np.ndarray:
    grouped = r.reshape(-1, g, r.shape[1])
    mean = np.nanmean(grouped, axis=1, keepdims=True)
    cnt = np.sum(~np.isnan(grouped), axis=1, keepdims=True)
    var = np.nanmean((grouped - mean) ** 2, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(var * np.where(cnt > 1, cnt / (cnt - 1), np.nan))
    z = ((grouped - mean) / (std + 1e-4)).reshape(-1, r.shape[1])
    rewards = np.nansum(z * w, axis=1)
    rewards[np.isnan(r).all(axis=1)] = np.nan
    adv = (rewards - np.nanmean(rewards)) / (np.nanstd(rewards, ddof=1) + 1e-4)
    return np.nan_to_num(adv, nan=0.0)


def _matrix(funcs, prompts, completions, ids) -> np.ndarray:
    cols = [f(prompts=prompts, completions=completions, brief_id=ids) for f in funcs]
    return np.array([[np.nan if v is None else v for v in col] for col in cols], dtype=float).T


def test_channels_valid_and_none_for_invalid(env, brief_ids) -> None:
    """One function per active channel and R13 (brief compliance: the advantage mode counts it
    on briefed rows, so channel mode must too), then valid; the weights are the priorities."""
    funcs = reward_funcs("us46-default", mode="channels")
    names = [*env.channels, "brief_compliance"]
    assert [f.__name__ for f in funcs] == [f"gymkit_{c}" for c in names] + ["gymkit_valid"]
    w = grpo_config_kwargs("us46-default", mode="channels")["reward_weights"]
    assert w[:-1] == [env.config.priorities[c] for c in names] and w[-2] == 1.0
    prompts, comps, ids = _batch(brief_ids)
    x = _matrix(funcs, prompts, comps, ids)
    valid = np.array(VALID + VALID[::-1])
    assert np.array_equal(x[:, -1], valid.astype(float))
    assert np.isnan(x[~valid, :-1]).all() and np.isfinite(x[valid, :-1]).all()
    cards = env.score_group(GROUP, brief=common.brief_text_of(brief_ids[0]))
    assert any(c.channels["brief_compliance"] < 0 for c in cards if c.valid)  # R13 bites here
    for i, c in enumerate(cards):
        if c.valid:
            assert x[i, :-1].tolist() == [c.channels[k] for k in names]
    unbriefed = _matrix(funcs, prompts, comps, None)  # no brief: R13 is absent, not 0
    assert np.isnan(unbriefed[:, len(names) - 1]).all()


def test_memo_scores_a_batch_once(env, brief_ids, monkeypatch) -> None:
    calls = []
    real = env.score_group
    monkeypatch.setattr(env, "score_group", lambda c, brief=None: calls.append(len(c)) or real(c, brief=brief))
    prompts, comps, ids = _batch(brief_ids)
    for f in reward_funcs("us46-default", mode="channels"):
        f(prompts=prompts, completions=comps, brief_id=ids)
    assert calls == [6, 6]  # one score_group per group, however many channels read it


def test_callables_pickle_and_kwargs(env) -> None:
    funcs = pickle.loads(pickle.dumps(reward_funcs("us46-default", mode="channels")))
    assert funcs[0](prompts=["p"], completions=[[{"role": "assistant", "content": GROUP[0]}]],
                    trainer_state=None, log_extra=None, log_metric=None) == \
        [env.score(GROUP[0]).channels[env.channels[0]]]
    kw = grpo_config_kwargs("us46-default", mode="channels")
    assert kw["multi_objective_aggregation"] == "normalize_then_sum"
    pri = [*map(float, env.priorities), env.config.priorities["brief_compliance"]]
    assert kw["reward_weights"] == [*pri, valid_weight(pri)]


def test_internal_error_is_none_everywhere(env, monkeypatch) -> None:
    def boom(c, brief=None):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(env, "score_group", boom)
    for f in reward_funcs("us46-default", mode="channels"):
        assert f(prompts=["p", "p"], completions=GROUP[:2]) == [None, None]


def test_restated_aggregation_invalid_nonpositive_zero_sum(env, brief_ids) -> None:
    prompts, comps, ids = _batch(brief_ids)
    x = _matrix(reward_funcs("us46-default", mode="channels"), prompts, comps, ids)
    w = np.array(grpo_config_kwargs("us46-default", mode="channels")["reward_weights"])
    adv = _restated_normalize_then_sum(x, w, 6)
    valid = np.array(VALID + VALID[::-1])
    assert (adv[~valid] <= 0).all() and (adv[~valid] < 0).all()
    assert abs(adv[:6].sum()) < 1e-9 and abs(adv[6:].sum()) < 1e-9


def test_advantage_mode_is_gymkit_gdpo(env, brief_ids) -> None:
    prompts, comps, ids = _batch(brief_ids)
    (f,) = reward_funcs("us46-default", mode="advantage", num_generations=6)
    got = f(prompts=prompts, completions=comps, brief_id=ids)
    want, _ = env.group_advantages(env.score_group(GROUP, brief=common.brief_text_of(ids[0])))
    np.testing.assert_array_equal(np.array(got[:6]), want)
    assert grpo_config_kwargs(mode="advantage")["scale_rewards"] == "none"
    with pytest.raises(ValueError, match="whole groups of 6"):
        f(prompts=prompts[:4], completions=comps[:4], brief_id=ids[:4])


# ----------------------------------------------------------------- the real TRL
trl = pytest.importorskip("trl", reason="TRL is an optional extra (pip install 'gymkit[adapters]')")


def _trl_aggregate(rewards_per_func, weights, g):
    """Run TRL's own aggregation block, cut from GRPOTrainer's source, on our reward matrix."""
    import torch
    from trl.trainer import grpo_trainer

    src = inspect.getsource(grpo_trainer.GRPOTrainer._generate_and_score_completions)
    start = src.index("        unscorable_mask = torch.isnan(rewards_per_func)")
    end = src.index("        advantages = torch.nan_to_num(advantages, nan=0.0)")
    block = textwrap.dedent(src[start:end] + "        advantages = torch.nan_to_num(advantages, nan=0.0)\n")
    fake = types.SimpleNamespace(multi_objective_aggregation="normalize_then_sum",
                                 reward_weights=torch.tensor(weights, dtype=torch.float32),
                                 reward_funcs=[None] * len(weights), scale_rewards="group")
    ns = {"torch": torch, "self": fake, "rewards_per_func": rewards_per_func,
          "num_generations": g, "device": "cpu", "nanstd": grpo_trainer.nanstd}
    exec(compile(block, "trl-aggregation", "exec"), ns)  # library source, not user text
    return ns["advantages"].numpy()


def test_real_trl_reward_call_and_gdpo_aggregation(env, brief_ids) -> None:
    """TRL's _calculate_rewards calls our functions; TRL's aggregation keeps invalid ≤ 0, zero-sum."""
    import torch
    from trl.trainer.grpo_trainer import GRPOTrainer

    prompts, comps, ids = _batch(brief_ids)
    funcs = reward_funcs("us46-default", mode="channels")
    fake = types.SimpleNamespace(
        accelerator=types.SimpleNamespace(device="cpu", is_main_process=True),
        reward_funcs=funcs, reward_processing_classes=[None] * len(funcs),
        reward_func_names=[f.__name__ for f in funcs], state=types.SimpleNamespace(global_step=0),
        args=types.SimpleNamespace(report_to=[]), _log_completion_extra=None, _log_metric=None,
        environments=None, async_loop=None)
    inputs = [{"prompt": p, "completion": c, "brief_id": i} for p, c, i in zip(prompts, comps, ids, strict=True)]
    rpf = GRPOTrainer._calculate_rewards(fake, inputs, prompts, comps, [[0]] * len(comps))
    assert isinstance(rpf, torch.Tensor) and rpf.shape == (12, len(funcs))
    x = rpf.numpy().astype(float)
    np.testing.assert_allclose(x, _matrix(funcs, prompts, comps, ids).astype(np.float32), equal_nan=True)
    w = grpo_config_kwargs("us46-default", mode="channels")["reward_weights"]
    adv = _trl_aggregate(rpf, w, 6)
    valid = np.array(VALID + VALID[::-1])
    assert (adv[~valid] < 0).all()
    assert abs(adv[:6].sum()) < 1e-4 and abs(adv[6:].sum()) < 1e-4
    np.testing.assert_allclose(adv, _restated_normalize_then_sum(x, np.array(w), 6), atol=1e-4)


def test_real_grpo_config_accepts_kwargs(tmp_path) -> None:
    from trl import GRPOConfig

    cfg = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False,
                     **grpo_config_kwargs("us46-default", mode="channels"))
    assert cfg.multi_objective_aggregation == "normalize_then_sum"
    assert list(cfg.reward_weights) == grpo_config_kwargs("us46-default", mode="channels")["reward_weights"]


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.integers(2, 16).flatmap(lambda g: st.tuples(
    st.just(g),
    arrays(np.float64, (2 * g, 3), elements=st.floats(-20, 20, allow_nan=False)),
    arrays(np.bool_, (2 * g,)),
    arrays(np.float64, (3,), elements=st.floats(0, 5, allow_nan=False)))))
def test_trl_aggregation_never_ranks_an_invalid_answer_above_a_valid_one(case) -> None:
    """Channel mode through TRL's own normalize_then_sum block: with the valid weight of
    valid_weight(), every invalid answer's advantage is below every valid answer's of its
    group, for any channel values and priorities (two groups per batch, G = 2..16)."""
    import torch

    g, x, valid, w = case
    rpf = np.where(valid[:, None], x, np.nan)  # channels are None (NaN) on invalid rows
    rpf = np.column_stack([rpf, valid.astype(float)])
    weights = [*w, valid_weight(w, g)]
    adv = _trl_aggregate(torch.tensor(rpf, dtype=torch.float32), weights, g)
    for grp in (slice(0, g), slice(g, 2 * g)):
        a, v = adv[grp], valid[grp]
        if v.any() and (~v).any():
            assert a[~v].max() < a[v].min(), (a, v)


def test_real_trl_advantage_mode_one_valid_answer_among_invalid_ones(env, brief_ids) -> None:
    """Early training: one valid answer in a group of missing tags.  Its R1 (≈ −1.1) is below a
    missing tag's −1.0, so its GDPO sum is below theirs; the projection used to tie it with them
    at 0 and the whole group carried no gradient (TRL logged loss 0, grad_norm 0).  Through TRL's
    own reward call, the valid answer now gets a positive advantage and each missing tag a
    negative one; the group stays zero-sum, so TRL's centring (scale_rewards="none") keeps it."""
    import torch
    from trl.trainer.grpo_trainer import GRPOTrainer

    g = 4
    comps = ["<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>"] + ["no tag at all"] * (g - 1)
    ids = [brief_ids[0]] * g
    prompts = [f"prompt {ids[0]}"] * g
    funcs = reward_funcs("us46-default", mode="advantage", num_generations=g)
    fake = types.SimpleNamespace(
        accelerator=types.SimpleNamespace(device="cpu", is_main_process=True),
        reward_funcs=funcs, reward_processing_classes=[None], reward_func_names=[funcs[0].__name__],
        state=types.SimpleNamespace(global_step=0), args=types.SimpleNamespace(report_to=[]),
        _log_completion_extra=None, _log_metric=None, environments=None, async_loop=None)
    inputs = [{"prompt": p, "completion": c, "brief_id": i} for p, c, i in zip(prompts, comps, ids, strict=True)]
    rpf = GRPOTrainer._calculate_rewards(fake, inputs, prompts, comps, [[0]] * g)
    adv = rpf.numpy()[:, 0].astype(float)
    cards = env.score_group(comps, brief=common.brief_text_of(ids[0]))
    assert cards[0].valid and not any(c.valid for c in cards[1:])
    assert cards[0].channels["cpcv"] < cards[1].channels["cpcv"]  # the case that zeroed the group
    assert adv[0] > 0 and (adv[1:] < 0).all(), adv
    assert abs(adv.sum()) < 1e-4
    assert isinstance(rpf, torch.Tensor)
