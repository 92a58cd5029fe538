"""``gymkit train rl``: the seed's recipe in a small, explicit torch loop (CPU-deterministic).

This is the in-house loop (the default, ``--trainer gymkit``). ``--trainer trl`` runs the same
policy and recipe through ``trl.GRPOTrainer`` (:mod:`.trl_trainer`: TRL's own CISPO, KL and
batch scaling; REPO-R and its thermostat added in a subclass). The in-house loop stays the
default because every term is visible in ~150 lines, it is byte-identical from a seed, and on CPU
TRL's generation path is the slow part. The checkpoints are plain ``LlamaForCausalLM``
folders, so TRL or vLLM load them as they are.

Per step: ``briefs_per_step`` briefs drawn from the **train** family split, ``group``
unconstrained samples each (temperature 1); each group scored by ``env.score_group`` and
turned into GDPO advantages by ``env.group_advantages`` (validity projection: an invalid
answer never gets a positive advantage; the environment's advantage floor, or ``floor``),
then divided by the step's population std over all its answers (GDPO's batch-wise
normalisation: the sum of K priority-weighted z-scores would otherwise grow with K — it
reached |A| = 27 here — and drown the KL term; ``batch_norm=False`` turns it off);
the valid answers are committed to the novelty archive.  Then ``passes`` optimiser passes of

    loss_t = -sg(min(r_t, cap)) * A'_t * log pi(t)  +  beta * KL_t          (CISPO + KL)

over every answer token (full-token loss), with ``r_t = pi / pi_sample``, ``A'`` the REPO-R
rescaled advantage ``A(1 - zeta log p)`` for A > 0, ``A(1 + zeta log p)`` for A < 0 (the
multiplier floored at 0), ``KL_t`` the k3 estimator against the frozen warm start.  The
entropy thermostat sets zeta: its target is the mean entropy of the first five steps; below
target zeta doubles (to at most ``zeta_max``), above it halves.

Every ``probe_every`` steps (and at step 0 and the last step) :mod:`.protocol` takes greedy
probe answers, scores them on the train window and saves the checkpoint; at the end the
holdout is scored once for every checkpoint through the holdout ledger.

Files in ``RUN/rl/``: ``config.json``, ``log.jsonl`` (one line per step: reward, channel
means, valid share, share of non-zero advantages, KL, entropy, zeta, families, the largest
advantage of an invalid answer), ``rollouts.jsonl`` (every answer, its validity, reward,
advantage), ``probe.jsonl``, ``checkpoints/step-NNNN/``, ``table.json`` and
``timings.jsonl`` (wall-clock per phase: the only file that differs between repeated runs).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gymkit.verifiers.archive import NoveltyArchive

from .policy import answer_logprobs, deterministic, load_policy, sample, save_policy

__all__ = ["RLConfig", "batch_scale", "run_rl", "update_policy"]


@dataclass(frozen=True)
class RLConfig:
    """RL settings (defaults: the seed's recipe at laptop scale)."""

    env_id: str = "us46-default"
    seed: int = 0
    steps: int = 500  # chosen by the fixed train-CPCV rule over 2 seeds (benchmarks/RESULTS.md)
    group: int = 12
    briefs_per_step: int = 4
    lr: float = 3e-4
    temperature: float = 1.0
    max_new: int = 40
    cap: float = 1.2
    kl_beta: float = 0.08
    passes: int = 2
    batch_norm: bool = True  # GDPO's batch-wise advantage normalisation (divide by the step's std)
    zeta0: float = 1e-3
    zeta_max: float = 0.05
    thermostat_window: int = 5
    probe_every: int = 20
    probe_size: int = 50
    floor: float | None = None  # None: the environment's own advantage floor
    no_floor: bool = False      # True: force the floor off whatever the environment says
    threads: int = 1
    commit: bool = True
    device: str = "cpu"  # "cuda" where a GPU exists; CPU runs are the byte-identical ones


#: The JSONL logs of an RL run (either trainer), ``RUN/rl/<name>.jsonl``.
RUN_LOGS = ("log", "rollouts", "probe", "timings")
#: What an RL run writes in ``RUN/rl`` (either trainer) and the report in ``RUN/report``.
RL_OUTPUTS = ("config.json", *(f"{k}.jsonl" for k in RUN_LOGS), "table.json", "checkpoints", "trl")
REPORT_OUTPUTS = ("index.html", "report.json")


def fresh_rl_dir(run_dir: Path, log: Any = None) -> Path:
    """``run_dir/rl`` cleared of an earlier RL run's outputs (:data:`RL_OUTPUTS`), and
    ``run_dir/report`` of its report (:data:`REPORT_OUTPUTS`; the folder too if then empty),
    ``checkpoints/`` made; one line to ``log`` when there was anything to clear.  Nothing else
    in either folder is touched (a ledger kept there, a user's own ``report/``).  A re-run into
    the same folder used to overwrite the logs and the config but leave the earlier run's
    checkpoints, table and report beside them: cut short, ``gymkit train report`` printed the
    old table over the new curves.  A warm start that lies inside ``run_dir/rl`` (``sft`` a link
    to an earlier checkpoint) is refused, before anything is removed."""
    import shutil

    out = run_dir / "rl"
    sft, rl = (run_dir / "sft").resolve(), out.resolve()
    if sft == rl or rl in sft.parents:
        raise ValueError(f"{run_dir / 'sft'} lies inside {out}, which a new RL run clears: copy "
                         "that warm start to a run folder of its own")
    old = [p for p in [*(out / n for n in RL_OUTPUTS), *(run_dir / "report" / n for n in REPORT_OUTPUTS)]
           if p.exists() or p.is_symlink()]
    for p in old:
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    if old:
        try:
            (run_dir / "report").rmdir()  # only when nothing else is in it
        except OSError:
            pass
        if log is not None:
            log(f"cleared the earlier RL run from {out} (and its report)")
    (out / "checkpoints").mkdir(parents=True)
    return out


def _print(line: str) -> None:
    print(line, flush=True)


def _dump(x: Any) -> str:
    from gymkit.card import json_safe

    return json.dumps(json_safe(x), sort_keys=True)


def probe_checkpoint(policy: Any, tok: Any, env: Any, probe_briefs: Any, seed_archive: Any,
                     step: int, max_new: int, probe_file: Any, out: Path, log: Any,
                     pool: Any = None) -> tuple[dict[str, Any], list[Any]]:
    """One probe of the protocol (module doc), shared by both trainers: ``policy``'s greedy
    answers at ``step`` written to ``probe_file``, scored on the train window
    (:func:`protocol.train_row`), the checkpoint saved as ``out/checkpoints/step-NNNN``; one log
    line; ``pool``: an :class:`~gymkit.answer_pool.AnswerStatePool` for the scoring (same
    figures).  Returns (row with ``step``, the answers' train P&L)."""
    from . import protocol

    t = time.perf_counter()
    answers = protocol.probe_answers(policy, tok, probe_briefs, str(step), max_new)
    for a in answers:
        probe_file.write(_dump(a) + "\n")
    row, pnls = protocol.train_row(env, answers, probe_briefs, seed_archive, pool=pool)
    row["step"] = step
    save_policy(policy, tok, out / "checkpoints" / f"step-{step:04d}")
    log(f"probe step {step:4d}: train CPCV {row['train_cpcv']:+.3f}  valid "
        f"{row['n_valid']}/{row['n']}  families {row['families']}  "
        f"({time.perf_counter() - t:.1f}s)")
    return row, pnls


def env_factory(cfg: RLConfig) -> Any:
    """A picklable zero-argument builder of ``cfg``'s environment (its advantage floor as
    configured): the loop's own environment and its scoring workers' are built by it."""
    import functools

    import gymkit

    if cfg.no_floor:
        return functools.partial(gymkit.make, cfg.env_id, advantages={})
    if cfg.floor is not None:
        return functools.partial(gymkit.make, cfg.env_id, advantages={"floor": cfg.floor})
    return functools.partial(gymkit.make, cfg.env_id)


def make_env(cfg: RLConfig) -> Any:
    """The environment of ``cfg`` with its advantage floor as configured."""
    return env_factory(cfg)()


def repo_r(adv: torch.Tensor, logp: torch.Tensor, zeta: float) -> torch.Tensor:
    """REPO-R per-token advantage: A(1 - zeta log p) for A > 0, A(1 + zeta log p) for A < 0, multiplier >= 0."""
    lp = logp.detach()
    mult = torch.where(adv > 0, 1.0 - zeta * lp, 1.0 + zeta * lp).clamp(min=0.0)
    return adv * mult


def cispo_kl_loss(logp: torch.Tensor, old: torch.Tensor, ref: torch.Tensor, adv_tok: torch.Tensor,
                  mask: torch.Tensor, cap: float, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(summed loss, summed KL) of CISPO (weight sg(min(r, cap))) plus beta * k3 KL, over masked tokens."""
    weight = torch.exp(logp - old).clamp(max=cap).detach()
    d = ref - logp
    kl = torch.exp(d) - d - 1.0
    loss = (-(weight * adv_tok * logp) + beta * kl) * mask
    return loss.sum(), (kl * mask).sum().detach()


def batch_scale(advs: np.ndarray, on: bool = True) -> float:
    """GDPO's second stage: the std of one step's advantages over all its answers (each group
    is zero-sum, so only the scale changes: signs, order and zero-sum are kept); 1.0 when
    ``on`` is False or the std is 0."""
    scale = float(advs.std()) if on else 1.0
    return scale if scale > 1e-12 else 1.0


def update_policy(model: Any, ref: Any, opt: Any, logprobs: Any, advs: list[np.ndarray],
                  adv_scale: float, zeta: float, *, cap: float, kl_beta: float,
                  passes: int) -> tuple[float, float, float]:
    """``passes`` CISPO + KL optimiser steps (module doc) over the step's groups, shared by the
    single-turn and the research loops.  ``logprobs(policy, i)`` gives group ``i``'s
    (token log-probs, token entropies, token mask) under ``policy``; ``advs[i]`` its
    advantages.  Returns (KL per token, mean token entropy of the sampling policy, tokens)."""
    n = len(advs)
    with torch.no_grad():
        olds = [logprobs(model, i) for i in range(n)]
        refs = [logprobs(ref, i)[0] for i in range(n)]
    n_tok = float(sum(o[2].sum() for o in olds))
    per_tok = max(n_tok, 1.0)
    kl_sum = 0.0
    for _ in range(passes):
        opt.zero_grad(set_to_none=True)
        kl_sum = 0.0
        for i, ((old, _, mask), r) in enumerate(zip(olds, refs, strict=True)):
            logp, _, _ = logprobs(model, i)
            a_tok = repo_r(torch.tensor(advs[i] / adv_scale, dtype=torch.float32,
                                        device=logp.device).unsqueeze(1), logp, zeta)
            loss, kl = cispo_kl_loss(logp, old, r, a_tok, mask, cap, kl_beta)
            (loss / per_tok).backward()
            kl_sum += float(kl)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    entropy = float(sum(float(o[1].sum()) for o in olds)) / per_tok
    return kl_sum / per_tok, entropy, n_tok


class Thermostat:
    """REPO-R's entropy thermostat (module doc)."""

    def __init__(self, zeta0: float, zeta_max: float, window: int) -> None:
        self.zeta, self.zeta0, self.zeta_max, self.window = zeta0, zeta0, zeta_max, window
        self.seen: list[float] = []
        self.target: float | None = None

    def update(self, entropy: float) -> float:
        """Feed one step's mean entropy; returns the zeta for the next step."""
        if self.target is None:
            self.seen.append(entropy)
            if len(self.seen) >= self.window:
                self.target = float(np.mean(self.seen))
            return self.zeta
        if entropy < self.target:
            self.zeta = min(self.zeta_max, max(self.zeta * 2.0, self.zeta0 * 1e-3))
        else:
            self.zeta = self.zeta / 2.0
        return self.zeta


def run_rl(cfg: RLConfig, run_dir: str | Path, *, ledger: Any = None, force_holdout: bool = False,
           log: Any = None, workers: int = 1) -> dict[str, Any]:
    """Run RL from ``run_dir/sft`` into ``run_dir/rl``; returns the table (also ``table.json``).

    ``workers``: processes scoring the answers' archive-free layers
    (:class:`~gymkit.answer_pool.AnswerStatePool`); every file but ``timings.jsonl`` is the
    same for any number.  The workers are spawned, so a script calling this with ``workers > 1``
    needs the ``if __name__ == "__main__":`` guard (Python's rule for spawned processes)."""
    from gymkit.answer_pool import AnswerStatePool
    from gymkit.briefs import generate_briefs, split_briefs
    from gymkit.probe import family_of

    from . import protocol

    log = log or _print
    deterministic(cfg.threads)
    run_dir = Path(run_dir)
    model, tok = load_policy(run_dir / "sft")
    ref, _ = load_policy(run_dir / "sft")
    out = fresh_rl_dir(run_dir, log)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=1, sort_keys=True) + "\n")
    model, ref = model.to(cfg.device), ref.to(cfg.device)
    for p in ref.parameters():
        p.requires_grad_(False)
    model.train()
    torch.manual_seed(cfg.seed)
    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    env = make_env(cfg)
    pool = AnswerStatePool(env_factory(cfg), workers, expect_fingerprint=env.fingerprint)
    seed_archive = NoveltyArchive.restore(env.archive.snapshot())  # the read-out's reference
    train_briefs = split_briefs(generate_briefs(), "train")
    probe_briefs = protocol.probe_set()[:cfg.probe_size]
    thermo = Thermostat(cfg.zeta0, cfg.zeta_max, cfg.thermostat_window)
    files = {k: (out / f"{k}.jsonl").open("w", encoding="utf-8", buffering=1)  # line by line:
             for k in RUN_LOGS}  # a killed run's files agree
    rows: list[dict[str, Any]] = []
    pnls_of: dict[str, list[Any]] = {}

    def do_probe(step: int) -> None:
        row, pnls_of[str(step)] = probe_checkpoint(model, tok, env, probe_briefs, seed_archive,
                                                   step, cfg.max_new, files["probe"], out, log, pool)
        rows.append(row)

    with pool, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # low-signal groups are logged, not warned
        do_probe(0)
        for step in range(1, cfg.steps + 1):
            times: dict[str, float] = {}
            t = time.perf_counter()
            picks = rng.choice(len(train_briefs), size=cfg.briefs_per_step, replace=False)
            groups = []
            for i in picks:
                b = train_briefs[int(i)]
                prompt = tok.encode_brief(b.text)
                ids = sample(model, tok, prompt, cfg.group, max_new=cfg.max_new,
                             temperature=cfg.temperature, generator=gen)
                groups.append((b, prompt, ids))
            times["sample"] = time.perf_counter() - t
            t = time.perf_counter()
            scored = []
            decoded = [[tok.decode(a) for a in ids] for _, _, ids in groups]
            pre = pool.states(decoded) or [None] * len(groups)
            for (b, _prompt, _ids), comps, states in zip(groups, decoded, pre, strict=True):
                cards = env.score_group(comps, brief=b.text, states=states)
                adv, info = env.group_advantages(cards)
                scored.append((cards, adv, info))
                for c, a, comp in zip(cards, adv, comps, strict=True):
                    files["rollouts"].write(_dump({
                        "step": step, "brief_id": b.brief_id, "completion": comp, "valid": c.valid,
                        "reward": c.reward, "advantage": float(a), "cpcv": c.channels.get("cpcv")}) + "\n")
                if cfg.commit:
                    env.commit([c for c in cards if c.valid])
            times["score"] = time.perf_counter() - t
            advs = np.concatenate([a for _, a, _ in scored])  # the env's GDPO advantages
            adv_scale = batch_scale(advs, cfg.batch_norm)
            t = time.perf_counter()
            zeta = thermo.zeta
            kl, entropy, n_tok = update_policy(
                model, ref, opt, lambda m, i, g=groups: answer_logprobs(m, g[i][1], g[i][2], tok.pad_id),
                [a for _, a, _ in scored], adv_scale, zeta, cap=cfg.cap, kl_beta=cfg.kl_beta,
                passes=cfg.passes)
            times["update"] = time.perf_counter() - t
            thermo.update(entropy)
            cards = [c for cs, _, _ in scored for c in cs]
            valid = np.array([c.valid for c in cards])
            chans = sorted({k for c in cards for k in c.channels})
            rec = {
                "step": step, "reward": float(np.mean([c.reward for c in cards])),
                "channels": {k: float(np.mean([c.channels.get(k, 0.0) for c in cards])) for k in chans},
                "valid_share": float(valid.mean()),
                "nonzero_adv_share": float(np.mean(np.abs(advs) > 1e-9)),
                "max_invalid_adv": float(advs[~valid].max()) if (~valid).any() else None,
                "kl": kl, "entropy": entropy, "zeta": zeta, "adv_scale": adv_scale,
                "families": len({family_of(c.canonical) for c in cards if c.valid and c.canonical}),
                "mean_tokens": n_tok / len(cards),
            }
            files["log"].write(_dump(rec) + "\n")
            files["timings"].write(_dump({"step": step, **times}) + "\n")
            if step % 5 == 0 or step == 1:
                log(f"step {step:4d}  reward {rec['reward']:+.3f}  valid {rec['valid_share']:.0%}  "
                    f"adv!=0 {rec['nonzero_adv_share']:.0%}  KL {rec['kl']:.4f}  H {entropy:.3f}  "
                    f"zeta {zeta:.5f}  fam {rec['families']}  "
                    + " ".join(f"{k} {v:.1f}s" for k, v in times.items()))
            if step % cfg.probe_every == 0 or step == cfg.steps:
                do_probe(step)
    for f in files.values():
        f.close()
    best = protocol.best_checkpoint(rows)
    look = protocol.holdout_table(env, rows, ledger=ledger, force=force_holdout)
    for row in rows:
        top = sorted(range(len(row["answers"])), key=lambda i: -row["answers"][i]["reward"])[:20]
        for i, c in zip(top, protocol.pnl_correlations(pnls_of[row["checkpoint"]], top), strict=True):
            row["answers"][i]["top_rank"] = top.index(i) + 1
            row["answers"][i]["peer_corr"] = c
    table = {"config": asdict(cfg), "env_fingerprint": env.fingerprint, "shipped": best,
             "holdout": look, "rows": rows}
    (out / "table.json").write_text(_dump(table) + "\n", encoding="utf-8")
    log(f"shipped checkpoint: step {best} (best probe train CPCV); holdout {look['status']}")
    return table
