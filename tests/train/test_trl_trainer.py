"""``gymkit train rl --trainer trl``: the policy through TRL's own ``GRPOTrainer.train`` loop.

A tiny warm start (2 layers, width 32, trained here on six valid formulas so that sampled
groups mix valid and malformed answers), then 4 RL steps of
:func:`gymkit.train.trl_trainer.run_rl_trl` (TRL's generation, CISPO loss, KL, optimiser).
Proves: the advantages TRL optimised are gymkit's GDPO advantages (batch-scaled by TRL) of exactly the cards
``env.score_group`` gives those answers; no invalid answer gets a positive advantage; the loss
moved the policy (weights changed, KL to the warm start > 0, the REPO-R thermostat ran); the
probe/table/report files are the in-house trainer's, so ``gymkit train report`` reads the run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gymkit.advantages import ZERO_TOL

pytest.importorskip("trl")

FORMULAS = ("rank(-ts_sum(returns, 5))", "rank(ts_mean(volume, 20))", "-ts_std(returns, 10)",
            "rank(close / ts_mean(close, 20))", "-rank(ts_corr(close, volume, 10))",
            "ts_zscore(vwap, 15)")


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory: pytest.TempPathFactory, tiny_warm_start) -> Path:
    from gymkit.train.rl import RLConfig
    from gymkit.train.trl_trainer import run_rl_trl

    run = tmp_path_factory.mktemp("trl-run")
    tiny_warm_start(run, FORMULAS, 24, 120)
    cfg = replace(RLConfig(), steps=4, group=6, briefs_per_step=2, probe_every=2, probe_size=6,
                  max_new=24, lr=3e-3, commit=False)
    run_rl_trl(cfg, run, ledger=run / "ledger.sqlite", log=lambda line: None)
    return run


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def test_trl_rewards_are_gymkit_gdpo_of_env_cards(trl_run: Path) -> None:
    import gymkit
    from gymkit.adapters.common import brief_text_of

    env = gymkit.make("us46-default")  # a fresh environment: same cards (no commits in this run)
    rolls = _jsonl(trl_run / "rl" / "rollouts.jsonl")
    assert len(rolls) == 4 * 2 * 6
    assert {r["step"] for r in rolls} == {1, 2, 3, 4}
    groups: dict[tuple[int, str], list[dict]] = {}
    for r in rolls:
        groups.setdefault((r["step"], r["brief_id"]), []).append(r)
    assert all(len(g) == 6 for g in groups.values())
    for g in groups.values():
        cards = env.score_group([r["completion"] for r in g], brief=brief_text_of(g[0]["brief_id"]))
        adv, _ = env.group_advantages(cards)
        assert [r["reward"] for r in g] == [c.reward for c in cards]
        assert [r["valid"] for r in g] == [c.valid for c in cards]
        assert np.array_equal(np.array([r["advantage"] for r in g]), adv)
    for step in range(1, 5):  # what TRL optimised: those advantages, batch-scaled by TRL
        a = np.array([r["advantage"] for r in rolls if r["step"] == step])
        used = np.array([r["trl_advantage"] for r in rolls if r["step"] == step])
        centred = a - np.repeat(a.reshape(-1, 6).mean(axis=1), 6)
        want = centred / (a.std(ddof=1) + 1e-4)
        assert np.allclose(used, want, rtol=1e-5, atol=1e-6)
        # Same direction wherever gymkit's advantage is not zero; an exact 0 (e.g. the lowest
        # eligible answer after the validity projection) stays within TRL's centring noise.
        nz = np.abs(a) > ZERO_TOL
        assert np.array_equal(np.sign(used[nz]), np.sign(a[nz]))
        assert np.all(np.abs(used[~nz]) <= 1e-6)
    assert any(r["valid"] for r in rolls) and any(not r["valid"] for r in rolls)
    assert all(r["advantage"] <= 1e-12 for r in rolls if not r["valid"])


def test_trl_loss_moved_the_policy(trl_run: Path) -> None:
    from safetensors.numpy import load_file

    ck = trl_run / "rl" / "checkpoints"
    w0 = load_file(ck / "step-0000" / "model.safetensors")
    w4 = load_file(ck / "step-0004" / "model.safetensors")
    assert w0.keys() == w4.keys()
    moved = sum(float(np.abs(w0[k] - w4[k]).sum()) for k in w0)
    assert moved > 0.0
    ref = load_file(trl_run / "sft" / "model.safetensors")
    assert all(np.array_equal(ref[k], w0[k]) for k in ref)  # step 0 is the warm start itself
    log = _jsonl(trl_run / "rl" / "log.jsonl")
    assert [r["step"] for r in log] == [1, 2, 3, 4]
    assert any(r["nonzero_adv_share"] > 0 for r in log)
    assert all(r["kl"] >= 0.0 for r in log)  # k3, measured in each step's last pass
    assert log[-1]["kl"] > 0.0  # moved away from the warm start (TRL's reference model)
    assert all(np.isfinite(r["entropy"]) and r["zeta"] > 0 for r in log)


def test_trl_run_writes_the_protocol_files(trl_run: Path) -> None:
    from gymkit.train.report import write_report

    table = json.loads((trl_run / "rl" / "table.json").read_text())
    assert table["config"]["trainer"] == "trl"
    assert [r["step"] for r in table["rows"]] == [0, 2, 4]
    best = max(table["rows"], key=lambda r: (r["n_valid"] > 0, r["train_cpcv"]))
    assert table["shipped"] == best["checkpoint"]
    rep = write_report(trl_run)
    assert len(rep["table"]) == 3
    assert (trl_run / "report" / "index.html").is_file()


def test_trl_trainer_refuses_a_floor_override(tmp_path: Path) -> None:
    from gymkit.train.rl import RLConfig
    from gymkit.train.trl_trainer import run_rl_trl

    with pytest.raises(ValueError, match="advantage floor"):
        run_rl_trl(replace(RLConfig(), no_floor=True), tmp_path)


def test_logprob_tile_is_sized_to_the_vocabulary_and_restored() -> None:
    import trl.trainer.utils as trl_utils

    from gymkit.train.trl_trainer import logprob_tile

    before = trl_utils._CHUNKED_LOGPROB_CHUNK_SIZE
    with logprob_tile(301):
        assert trl_utils._CHUNKED_LOGPROB_CHUNK_SIZE == 320  # whole multiples of 64
    assert trl_utils._CHUNKED_LOGPROB_CHUNK_SIZE == before
    with pytest.raises(RuntimeError), logprob_tile(301):
        raise RuntimeError("the trainer failed")
    assert trl_utils._CHUNKED_LOGPROB_CHUNK_SIZE == before


def test_a_vocabulary_wide_tile_gives_trl_s_kernel_the_same_bits() -> None:
    """TRL's fused log-prob head (its own autograd function) with one tile of the vocabulary's
    width: log probs, entropies and every gradient equal the default tile's bit for bit."""
    import torch
    from trl.kernels.chunked_logprob import ChunkedLogProbFunction

    g = torch.Generator().manual_seed(0)
    n, h, v = 4500, 96, 301  # more tokens than TRL's 4,096-token chunk

    def run(chunk: int) -> list:
        hid = torch.randn(n, h, generator=torch.Generator().manual_seed(1), requires_grad=True)
        w = torch.randn(v, h, generator=torch.Generator().manual_seed(2), requires_grad=True)
        tgt = torch.randint(0, v, (n,), generator=torch.Generator().manual_seed(3))
        lp, ent, *_ = ChunkedLogProbFunction.apply(hid, w, None, tgt, 1.0, chunk, None, 1.0,
                                                   ("log_probs", "entropy"))
        ((lp * torch.randn(n, generator=g)).sum() + ent.sum()).backward()
        return [lp.detach(), ent.detach(), hid.grad, w.grad]

    wide = run(32768)
    g.manual_seed(0)
    narrow = run(320)
    for a, b in zip(wide, narrow, strict=True):
        assert torch.equal(a, b)


def test_trl_config_runs_without_activation_checkpointing(tmp_path: Path) -> None:
    """TRL turns activation checkpointing on by default; the run turns it off under the name
    this transformers uses, without its deprecation warning."""
    import warnings

    from trl import GRPOConfig

    from gymkit.train.trl_trainer import no_recompute

    with warnings.catch_warnings():  # TRL's own default goes through the deprecated name
        warnings.simplefilter("ignore", FutureWarning)
        assert GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none").gradient_checkpointing
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none",
                          **no_recompute(GRPOConfig))
    assert args.gradient_checkpointing is False
