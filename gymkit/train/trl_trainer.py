"""``gymkit train rl --trainer trl``: the same policy and recipe through ``trl.GRPOTrainer``.

The warm start (``RUN/sft``, a plain ``LlamaForCausalLM``) is trained by TRL's own loop
(generation, reference model, loss, optimiser, gradient clipping), with gymkit's TRL
reward adapter (:class:`gymkit.adapters.trl.AdvantageReward`: gymkit's exact GDPO advantage
with the validity projection) as the one reward function.  Pieces of the recipe, and where
each lives (checked against trl 1.16):

* group of ``group`` answers per brief, ``briefs_per_step`` briefs per step: TRL's
  ``num_generations`` and ``per_device_train_batch_size = group * briefs_per_step``;
* ``passes`` optimiser passes per batch: TRL's ``num_iterations`` (one RL step is
  ``passes`` TRL optimiser steps);
* CISPO with the importance weight capped at ``cap``: TRL's ``loss_type="cispo"``,
  ``epsilon_high=cap`` (``-sg(min(r, cap)) * A * log pi``, summed over tokens / tokens);
* KL to the warm start: TRL's ``beta`` (k3 estimator, reference loaded from ``RUN/sft``);
* GDPO's batch-wise normalisation: TRL's ``scale_rewards="batch"`` (TRL divides by the
  sample std + 1e-4; the in-house loop by the population std: a factor sqrt(47/48) on 48);
* **REPO-R and its entropy thermostat: TRL lacks them**, so :func:`trainer_class`'s ``GymkitGRPOTrainer``
  (a subclass of ``GRPOTrainer``) turns each batch's per-answer advantage into TRL's
  supported per-token form ``A(1 - zeta log p)`` / ``A(1 + zeta log p)`` (floored at 0,
  ``log p`` the sampling-time log prob TRL computes as ``old_per_token_logps``) and feeds
  the first pass's mean entropy to :class:`gymkit.train.rl.Thermostat`;
* the seed's protocol (probe every ``probe_every`` RL steps, checkpoints, holdout once):
  a ``TrainerCallback`` calling :mod:`.protocol`, so ``gymkit train report`` reads the run.

The environment is the process's adapter environment (``gymkit.make(env_id)``, its own
advantage floor; ``floor``/``no_floor`` are refused here).  Valid answers are committed to
the novelty archive after each batch, as in the in-house loop.  Files in ``RUN/rl/`` are the
in-house loop's (``log.jsonl`` with the same keys, ``rollouts.jsonl``, ``probe.jsonl``,
``checkpoints/``, ``table.json``), plus TRL's own metrics per RL step in ``trl/log_history.json``.  Briefs are drawn by
TRL's sampler (seeded), not by the in-house loop's generator, so the two trainers do not give
the same bits.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .policy import deterministic, load_policy
from .rl import (
    RUN_LOGS,
    RLConfig,
    Thermostat,
    _dump,
    _print,
    fresh_rl_dir,
    probe_checkpoint,
    repo_r,
)

__all__ = ["hf_tokenizer", "logprob_tile", "no_recompute", "prompt_text", "run_rl_trl",
           "trainer_class"]


def hf_tokenizer(tok: Any) -> Any:
    """A ``PreTrainedTokenizerFast`` over ``tok``'s vocabulary (same ids; pieces split on spaces)."""
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    from .tokenizer import BOS, EOS, PAD, UNK

    raw = RawTokenizer(WordLevel(dict(tok.ids), unk_token=UNK))
    raw.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=raw, pad_token=PAD, bos_token=BOS,
                                   eos_token=EOS, unk_token=UNK, padding_side="left")


@contextlib.contextmanager
def logprob_tile(vocab: int) -> Iterator[None]:
    """TRL's fused log-prob head sized to ``vocab`` while the block runs.

    TRL scores tokens in tiles of (4,096 tokens × 32,768 vocabulary columns), a 512 MB buffer
    allocated on every forward and backward, sized for a hub vocabulary; ours has a few hundred
    words, so each call paid the kernel's page zeroing for columns it never used.  One tile of
    the vocabulary's width computes the same products (benchmarks/RESULTS.md, issue 20)."""
    import trl.trainer.utils as trl_utils

    name = "_CHUNKED_LOGPROB_CHUNK_SIZE"
    if not hasattr(trl_utils, name):  # another TRL: nothing to size
        yield
        return
    old = getattr(trl_utils, name)
    setattr(trl_utils, name, min(old, max(64, -(-int(vocab) // 64) * 64)))
    try:
        yield
    finally:
        setattr(trl_utils, name, old)


def no_recompute(config_cls: type) -> dict[str, bool]:
    """The keyword that turns off TRL's default activation checkpointing: a policy of a few
    hundred thousand parameters has no memory to save, and recomputing its forward pass in
    every backward costs time and changes no bit.  ``activation_checkpointing`` on
    transformers ≥ 5 (``gradient_checkpointing`` there is a deprecated alias), else the old
    name."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(config_cls)}
    return {"activation_checkpointing" if "activation_checkpointing" in names
            else "gradient_checkpointing": False}


def prompt_text(tok: Any, brief: str) -> str:
    """The prompt string whose :func:`hf_tokenizer` ids are ``tok.encode_brief(brief)``."""
    return " ".join(tok.tokens[i] for i in tok.encode_brief(brief))


class _Reward:
    """gymkit's TRL adapter reward, fed our decoding of TRL's completion ids; records each batch."""

    def __init__(self, env_id: str, group: int, tok: Any, commit: bool) -> None:
        from gymkit.adapters.trl import AdvantageReward

        self.inner = AdvantageReward(env_id, group)
        self.env_id, self.tok, self.commit = env_id, tok, commit
        self.__name__ = self.inner.__name__
        self.last: dict[str, Any] | None = None

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: list[list[int]],
                 brief_id: list[str], **kwargs: Any) -> list[float | None]:
        """Per answer: gymkit's GDPO advantage (adapter), scored on our decoding of its ids."""
        from gymkit.adapters.common import get_env, score_rows

        texts = [self.tok.decode(ids) for ids in completion_ids]
        t = time.perf_counter()
        adv = self.inner(prompts=prompts, completions=texts, brief_id=brief_id,
                         log_metric=kwargs.get("log_metric"))
        env = get_env(self.env_id)
        cards = score_rows(env, prompts, texts, brief_id)  # the adapter's memo: no re-scoring
        if self.commit:
            env.commit([c for c in cards if getattr(c, "valid", False)])
        self.last = {"texts": texts, "cards": cards, "brief_id": list(brief_id),
                     "adv": [0.0 if a is None else float(a) for a in adv],
                     "score_s": time.perf_counter() - t}
        return adv


@functools.cache
def trainer_class() -> type:
    """``GymkitGRPOTrainer``: ``trl.GRPOTrainer`` + REPO-R per-token advantages + its thermostat.

    Built on first call (importing this module needs no trl).  Extra keyword argument
    ``thermostat`` (a :class:`gymkit.train.rl.Thermostat`); needs ``num_iterations`` > 1 with
    one generation per step so TRL computes the sampling-time log probs REPO-R reads.
    """
    from trl import GRPOTrainer

    class GymkitGRPOTrainer(GRPOTrainer):
        """``GRPOTrainer`` + REPO-R per-token advantages + the REPO-R entropy thermostat (module doc)."""

        def __init__(self, *a: Any, thermostat: Thermostat, **k: Any) -> None:
            super().__init__(*a, **k)
            self.thermostat = thermostat
            self.zeta_used = thermostat.zeta
            self.batch_entropy = float("nan")
            self.batch_kl = 0.0
            self.batch_adv: torch.Tensor | None = None
            self._pass = 0

        def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
            """TRL's batch, its (B,) advantages replaced by REPO-R's (B, T) per-token form."""
            out = super()._generate_and_score_completions(inputs)
            old = out.get("old_per_token_logps")
            if old is None:
                raise RuntimeError("REPO-R needs the sampling-time log probs: num_iterations must "
                                   "exceed gradient_accumulation_steps / steps_per_generation")
            self.zeta_used = self.thermostat.zeta
            adv = out["advantages"]
            self.batch_adv = adv.detach().clone()
            out["advantages"] = repo_r(adv.unsqueeze(1).expand_as(old), old, self.zeta_used)
            self._pass = 0
            return out

        def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
            """TRL's step; the first pass's entropy feeds the thermostat, the last pass's KL is kept."""
            loss = super().training_step(model, inputs, num_items_in_batch)
            self._pass += 1
            m = self._metrics["train"]
            if self._pass == 1:  # the weights that sampled the batch
                self.batch_entropy = float(m["entropy"][-1])
                self.thermostat.update(self.batch_entropy)
            self.batch_kl = float(m["kl"][-1]) if m.get("kl") else 0.0
            return loss

    return GymkitGRPOTrainer


def run_rl_trl(cfg: RLConfig, run_dir: str | Path, *, ledger: Any = None, force_holdout: bool = False,
               log: Any = None) -> dict[str, Any]:
    """RL from ``run_dir/sft`` into ``run_dir/rl`` through ``trl.GRPOTrainer``; returns the table."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig

    from gymkit.adapters.common import get_env
    from gymkit.adapters.trl import grpo_config_kwargs
    from gymkit.briefs import generate_briefs, split_briefs
    from gymkit.probe import family_of

    from . import protocol

    if cfg.floor is not None or cfg.no_floor:
        raise ValueError("--trainer trl: the advantage floor is the environment's own "
                         "(--floor/--no-floor need the in-house trainer)")
    log = log or _print
    deterministic(cfg.threads)
    run_dir = Path(run_dir)
    model, tok = load_policy(run_dir / "sft")
    out = fresh_rl_dir(run_dir, log)
    (out / "config.json").write_text(json.dumps({**asdict(cfg), "trainer": "trl"}, indent=1,
                                                sort_keys=True) + "\n")
    model.train()
    env = get_env(cfg.env_id)
    from gymkit.verifiers.archive import NoveltyArchive

    seed_archive = NoveltyArchive.restore(env.archive.snapshot())  # the read-out's reference
    train_briefs = split_briefs(generate_briefs(), "train")
    probe_briefs = protocol.probe_set()[:cfg.probe_size]
    data = Dataset.from_dict({"prompt": [prompt_text(tok, b.text) for b in train_briefs],
                              "brief_id": [b.brief_id for b in train_briefs]})
    kw = grpo_config_kwargs(cfg.env_id, mode="advantage", num_generations=cfg.group)
    kw["scale_rewards"] = "batch" if cfg.batch_norm else "none"
    args = GRPOConfig(
        output_dir=str(out / "trl"), seed=cfg.seed, data_seed=cfg.seed, use_cpu=cfg.device == "cpu",
        max_steps=cfg.steps * cfg.passes, learning_rate=cfg.lr, lr_scheduler_type="constant",
        warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0,
        per_device_train_batch_size=cfg.group * cfg.briefs_per_step, gradient_accumulation_steps=1,
        steps_per_generation=1, num_generations=cfg.group, num_iterations=cfg.passes,
        max_completion_length=cfg.max_new, temperature=cfg.temperature, top_p=1.0, top_k=0,
        loss_type="cispo", epsilon_high=cfg.cap, beta=cfg.kl_beta, logging_steps=cfg.passes,
        save_strategy="no", report_to="none", disable_tqdm=True, dataloader_num_workers=0,
        bf16=False, fp16=False, remove_unused_columns=False, **no_recompute(GRPOConfig), **kw)
    reward = _Reward(cfg.env_id, cfg.group, tok, cfg.commit)
    files = {k: (out / f"{k}.jsonl").open("w", encoding="utf-8", buffering=1) for k in RUN_LOGS}
    rows: list[dict[str, Any]] = []
    pnls_of: dict[str, list[Any]] = {}

    def do_probe(step: int, policy: Any) -> None:
        row, pnls_of[str(step)] = probe_checkpoint(policy, tok, env, probe_briefs, seed_archive,
                                                   step, cfg.max_new, files["probe"], out, log)
        rows.append(row)

    clock = {"t": time.perf_counter()}

    def on_batch(trainer: Any, step: int) -> None:
        kl = trainer.batch_kl
        last = reward.last or {}
        cards, adv = last.get("cards", []), np.asarray(last.get("adv", []), dtype=np.float64)
        used = trainer.batch_adv.tolist()  # what TRL's loss saw, before REPO-R's per-token factor
        for c, a, u, text, bid in zip(cards, adv, used, last.get("texts", []),
                                      last.get("brief_id", []), strict=True):
            files["rollouts"].write(_dump({
                "step": step, "brief_id": bid, "completion": text, "valid": bool(c.valid),
                "reward": float(c.reward), "advantage": float(a), "trl_advantage": float(u),
                "cpcv": c.channels.get("cpcv") if c.valid else None}) + "\n")
        valid = np.array([bool(c.valid) for c in cards])
        chans = sorted({k for c in cards if c.valid for k in c.channels})
        rec = {
            "step": step, "reward": float(np.mean([c.reward for c in cards])),
            "channels": {k: float(np.mean([c.channels.get(k, 0.0) if c.valid else 0.0 for c in cards]))
                         for k in chans},
            "valid_share": float(valid.mean()),
            "nonzero_adv_share": float(np.mean(np.abs(adv) > 1e-9)),
            "max_invalid_adv": float(adv[~valid].max()) if (~valid).any() else None,
            "kl": kl, "entropy": trainer.batch_entropy, "zeta": trainer.zeta_used,
            "adv_scale": float(adv.std()) if cfg.batch_norm else 1.0,
            "families": len({family_of(c.canonical) for c in cards if c.valid and c.canonical}),
            "update_adv_absmax": float(trainer.batch_adv.abs().max()),
        }
        files["log"].write(_dump(rec) + "\n")
        now = time.perf_counter()
        files["timings"].write(_dump({"step": step, "score": last.get("score_s", 0.0),
                                      "step_total": now - clock["t"]}) + "\n")
        clock["t"] = now
        if step % 5 == 0 or step == 1:
            log(f"step {step:4d}  reward {rec['reward']:+.3f}  valid {rec['valid_share']:.0%}  "
                f"adv!=0 {rec['nonzero_adv_share']:.0%}  KL {kl:.4f}  H {rec['entropy']:.3f}  "
                f"zeta {rec['zeta']:.5f}  fam {rec['families']}  (trl)")
        if step % cfg.probe_every == 0 or step == cfg.steps:
            trainer.model.eval()
            do_probe(step, trainer.model)
            trainer.model.train()

    class _Protocol(TrainerCallback):
        """After each RL step's last optimiser pass: its log line, the probe when due, a flush."""

        trainer: Any = None

        def on_step_end(self, args: Any, state: Any, control: Any, **k: Any) -> None:
            if state.global_step % cfg.passes == 0:
                on_batch(self.trainer, state.global_step // cfg.passes)
            for f in files.values():
                f.flush()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        do_probe(0, model)
        model.train()
        hook = _Protocol()
        trainer = trainer_class()(
            model=model, reward_funcs=[reward], args=args, train_dataset=data,
            processing_class=hf_tokenizer(tok), callbacks=[hook],
            thermostat=Thermostat(cfg.zeta0, cfg.zeta_max, cfg.thermostat_window))
        hook.trainer = trainer
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # TRL's metrics go to trl/log_history.json
        with logprob_tile(model.config.vocab_size):
            trainer.train()
    (out / "trl").mkdir(parents=True, exist_ok=True)
    (out / "trl" / "log_history.json").write_text(_dump(trainer.state.log_history) + "\n")
    for f in files.values():
        f.close()
    best = protocol.best_checkpoint(rows)
    look = protocol.holdout_table(env, rows, ledger=ledger, force=force_holdout,
                                  command="gymkit train rl --trainer trl")
    for row in rows:
        top = sorted(range(len(row["answers"])), key=lambda i: -row["answers"][i]["reward"])[:20]
        for i, c in zip(top, protocol.pnl_correlations(pnls_of[row["checkpoint"]], top), strict=True):
            row["answers"][i]["top_rank"] = top.index(i) + 1
            row["answers"][i]["peer_corr"] = c
    table = {"config": {**asdict(cfg), "trainer": "trl"}, "env_fingerprint": env.fingerprint,
             "shipped": best, "holdout": look, "rows": rows}
    (out / "table.json").write_text(_dump(table) + "\n", encoding="utf-8")
    log(f"shipped checkpoint: step {best} (best probe train CPCV); holdout {look['status']}")
    return table
