"""``gymkit train sft``: the warm start on brief -> random-grammar formula pairs.

The policy learns the syntax and to follow a brief, not alpha: each train brief gets two
formulas from :mod:`.grammar` that meet its checkable facets (mechanism, horizon, input rule,
hint, forbidden pattern; :func:`.grammar.brief_formula`: random fields, operator variants,
windows and a coin-flip sign; ``directed=False``: plain random-grammar formulas), the 101
paper alphas kept out, kept only when they pass the gate and fit the RL answer budget (valid,
so step 0 writes mostly valid answers; validity is not profit).  The mean Sharpe on the train window of the
warm-start corpus and of a raw grammar sample is measured and written to ``sft/summary.json``
(gross ~ 0; net < 0 from costs).  Cross-entropy on answer tokens only,
AdamW, fixed batch order from the seed: the same config and seed give byte-identical weights.
Output: ``RUN/sft/`` (model, ``tokenizer.json``, ``policy.json``, ``log.jsonl``, ``summary.json``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .grammar import corpus_sharpe, sample_formula, warm_start_pairs
from .policy import PolicyConfig, deterministic, new_policy, save_policy
from .tokenizer import Tokenizer, build_tokenizer

__all__ = ["SFTConfig", "run_sft"]


@dataclass(frozen=True)
class SFTConfig:
    """Warm-start settings (defaults: the default configuration)."""

    env_id: str = "us46-default"
    seed: int = 0
    pairs: int = 6000
    steps: int = 500
    batch: int = 32
    lr: float = 2e-3
    measure: int = 200  # raw grammar formulas scored to measure their Sharpe and validity
    per_brief: int = 2  # formulas of each brief
    valid_only: bool = True  # keep the warm start to formulas that pass the gate
    directed: bool = True  # formulas meet their brief's checkable facets (grammar.brief_formula)
    max_answer_tokens: int = 38  # answers the RL sampler (max_new 40) can finish, tags included
    threads: int = 1
    device: str = "cpu"  # "cuda" where a GPU exists; CPU runs are the byte-identical ones
    policy: PolicyConfig = field(default_factory=PolicyConfig)


def _batch(tok: Tokenizer, pairs: list[tuple[list[int], list[int]]]
           ) -> tuple[torch.Tensor, torch.Tensor]:
    length = max(len(p) + len(a) for p, a in pairs)
    ids = torch.full((len(pairs), length), tok.pad_id, dtype=torch.long)
    labels = torch.full((len(pairs), length), -100, dtype=torch.long)
    for i, (p, a) in enumerate(pairs):
        seq = p + a
        ids[i, :len(seq)] = torch.tensor(seq)
        labels[i, len(p):len(seq)] = torch.tensor(a)
    return ids, labels


def _print(line: str) -> None:
    print(line, flush=True)


def _dump(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _compliant_share(pairs: list[tuple[str, str]]) -> float:
    """Share of distinct (brief, formula) pairs whose formula meets every checkable facet."""
    from gymkit.briefs import brief_from_text, check_compliance
    from gymkit.dsl import parse

    uniq = sorted(set(pairs))
    ok = 0
    for b, f in uniq:
        brief = brief_from_text(b)
        ok += brief is not None and not check_compliance(parse(f), brief).failed
    return ok / max(1, len(uniq))


def run_sft(cfg: SFTConfig, run_dir: str | Path, *, log: Any = None) -> dict[str, Any]:
    """Train the warm start into ``run_dir/sft``; returns the summary (also written as JSON)."""
    from gymkit.briefs import generate_briefs, split_briefs

    log = log or _print
    deterministic(cfg.threads)
    out = Path(run_dir) / "sft"
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    briefs = [b.text for b in split_briefs(generate_briefs(), "train")]
    import gymkit

    env = gymkit.make(cfg.env_id)
    t0 = time.perf_counter()
    rng_m = np.random.default_rng([cfg.seed, 99])
    rejected = [sample_formula(rng_m) for _ in range(cfg.measure)]  # the grammar, before the gate
    def fits(f: str) -> bool:  # inside the RL answer budget (RLConfig.max_new) and, if asked, valid
        if len(tok.encode_answer(f)) > cfg.max_answer_tokens:
            return False
        return not cfg.valid_only or env.score(f"<alpha>{f}</alpha>").valid

    pairs = warm_start_pairs(briefs, cfg.pairs, cfg.seed, per_brief=cfg.per_brief, accept=fits,
                             directed=cfg.directed)
    encoded = [(tok.encode_brief(b), tok.encode_answer(f)) for b, f in pairs]
    model = new_policy(tok, cfg.policy, cfg.seed).to(cfg.device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * max(0.05, 1.0 - s / max(1, cfg.steps)))
    rng = np.random.default_rng(cfg.seed + 1)
    lines = []
    for step in range(cfg.steps):
        idx = rng.choice(len(encoded), size=cfg.batch, replace=False)
        ids, labels = _batch(tok, [encoded[int(i)] for i in idx])
        loss = model(input_ids=ids.to(cfg.device), labels=labels.to(cfg.device)).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        rec = {"step": step, "loss": round(loss.item(), 6)}
        lines.append(_dump(rec))
        if step % 50 == 0 or step == cfg.steps - 1:
            log(f"sft step {step:4d}  loss {loss.item():.4f}")
    train_s = time.perf_counter() - t0
    save_policy(model.cpu(), tok, out, cfg.policy)
    (out / "log.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    measured = corpus_sharpe(env, sorted({f for _, f in pairs})[:cfg.measure])
    grammar = corpus_sharpe(env, rejected)
    summary = {"config": asdict(cfg), "corpus": measured, "grammar": grammar, "final_loss": loss.item(),
               "brief_compliant_share": _compliant_share(pairs),
               "train_seconds": round(train_s, 1), "n_pairs": len(pairs),
               "vocab": len(tok), "parameters": int(sum(p.numel() for p in model.parameters()))}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    for name, m in (("grammar sample", grammar), ("warm-start corpus", measured)):
        log(f"sft: {name} of {m['n']} formulas: valid {m['valid_share']:.0%}, mean net Sharpe "
            f"{m['mean_sharpe']:+.2f}, gross {m['mean_gross_sharpe']:+.2f}, CPCV {m['mean_cpcv']:+.2f}")
    log(f"sft: {summary['brief_compliant_share']:.0%} of the warm-start pairs meet their brief")
    return summary
