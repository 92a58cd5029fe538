"""``gymkit train research``: RL of a multi-turn policy on the research episode (issue 25).

The policy is :mod:`.policy`'s Llama over :mod:`.tokenizer`'s vocabulary grown by
:data:`~gymkit.train.tokenizer.RESEARCH_TOKENS` (:func:`~gymkit.train.tokenizer.research_tokenizer`:
old ids unchanged, new embedding rows appended).  An episode is the research gym's own
:class:`~gymkit.research.ResearchEpisode` (``make_research``: no second copy of the tools, the
budget, the deflation or the tool cost); the policy reads and writes one token stream:

    <bos> brief facets <sep> obs:calls:B                                  (prompt)
    <backtest> formula <eos>        -> <obs> obs:valid obs:reward:i obs:cpcv:j obs:corr:k obs:calls:K </obs>
    <describe> <eos>                -> <obs> obs:described obs:calls:K </obs>
    <submit> i <eos>                -> submit the formula of this episode's i-th backtest (ends it)
    <alpha> formula </alpha> <eos>  -> submit this formula (ends the episode)

Anything else the policy writes is handed to the episode as text: its one-line action error,
a counted call (``<obs> obs:error obs:calls:K </obs>``).  :func:`action_call` turns the
policy's tokens into the episode's action, :func:`observation_pieces` turns the episode's
observation text (the tool message every interface sends) into the few bucketed tokens the
policy reads: validity, the train reward and CPCV in 9 buckets (edges :data:`REWARD_EDGES`),
max |P&L corr| with the episode's earlier tries in 4 (:data:`CORR_EDGES`), the calls left.
The reward is the episode's final research reward (deflated, net of tool costs); an episode
that never submits gets the episode's no-submit reward.

Phases, all in ``RUN/research/``:

1. **Format warm start** (``format_steps`` cross-entropy steps): the single-turn warm start
   (``--from RUN``: ``RUN/sft``) learns the turn format by imitating scripted episodes built
   from its *own* samples: per episode k ~ U{0..budget} backtests of k sampled answers,
   then ``<submit> i`` of the best by the tool's train reward (k = 0, or none valid: a
   further sampled answer submitted as ``<alpha>``).
   Loss on the policy's tokens only.  Its formulas stay the warm start's.
2. **RL** (``steps``): ``briefs_per_step`` train-split briefs, ``group`` episodes each
   (temperature 1); GDPO advantages (:func:`gymkit.advantages.gdpo_advantages`) over each
   group's episodes on the research reward's channels (the submitted card's channels with R1
   deflated, plus ``tool_cost`` at priority 1; validity = a valid submission; motif-capped
   cards guarded), divided by the step's std (:func:`.rl.batch_scale`); then ``passes``
   CISPO + KL updates (:func:`.rl.update_policy`, the single-turn loop's) with
   :class:`.rl.Thermostat`'s zeta, on the policy's own tokens only (prompt and tool observations masked), KL to the
   format warm start.  Valid submissions are committed to the novelty archive.
3. **Evaluation** every ``eval_every`` steps (and at 0 and the end): greedy episodes on the
   first ``eval_briefs`` probe briefs (holdout *families* of briefs; every tool still runs
   on the train window), and once the scripted hill climb
   (:func:`gymkit.research.agent.hill_climb`, same budget) on the same briefs.

Files: ``config.json``, ``format_log.jsonl``, ``log.jsonl`` (per step: reward, submit and
valid share, calls, trials, untested submits, non-zero advantages, KL, entropy, zeta),
``episodes.jsonl`` (every training episode: actions, outcome, advantage, transcript sha256),
``eval.jsonl`` (every evaluation episode with its transcript), ``baseline.json``,
``checkpoints/step-NNNN/``, ``policy/`` (the last step: what ``gymkit train serve`` loads),
``summary.json`` (evaluations, baseline, the read-out of the top episodes) and
``timings.jsonl`` (wall clock: the only file that differs between repeated runs).
Deterministic on CPU: the same config and warm start give the same bytes.  No holdout number
is computed: the research tools see only the train panel, and no holdout look is claimed.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gymkit.research import TOOL_COST

from .policy import deterministic, load_policy, sample, save_policy
from .rl import Thermostat, batch_scale, update_policy
from .tokenizer import TAG_CLOSE, TAG_OPEN, UNK, Tokenizer, research_tokenizer, text_pieces

__all__ = ["CORR_EDGES", "REWARD_EDGES", "ResearchRLConfig", "action_call", "ci_config",
           "observation_pieces", "policy_context", "run_research", "sequence_logprobs"]

#: Bucket edges of the train reward and CPCV the policy reads (9 buckets).
REWARD_EDGES = (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
#: Bucket edges of max |P&L corr| with the episode's earlier tries (4 buckets).
CORR_EDGES = (0.3, 0.7, 0.95)


@dataclass(frozen=True)
class ResearchRLConfig:
    """Settings of ``gymkit train research`` (module doc; defaults: the CPU run)."""

    env_id: str = "us46-research"
    seed: int = 0
    budget: int = 3
    tool_cost: float = TOOL_COST
    steps: int = 60
    group: int = 8
    briefs_per_step: int = 2
    lr: float = 1e-4
    temperature: float = 1.0
    max_action: int = 40
    cap: float = 1.2
    kl_beta: float = 0.08
    passes: int = 2
    batch_norm: bool = True
    zeta0: float = 1e-3
    zeta_max: float = 0.05
    thermostat_window: int = 5
    format_episodes: int = 240
    format_steps: int = 150
    format_batch: int = 16
    format_lr: float = 1e-3
    eval_every: int = 20
    eval_briefs: int = 20
    commit: bool = True
    threads: int = 1
    device: str = "cpu"


def ci_config(seed: int = 0) -> ResearchRLConfig:
    """The short CI configuration (budget 2, 4 RL steps of 2 briefs x 4 episodes)."""
    return ResearchRLConfig(seed=seed, budget=2, steps=4, group=4, briefs_per_step=2,
                            max_action=32, format_episodes=32, format_steps=100, format_batch=8,
                            format_lr=3e-3,
                            eval_every=2, eval_briefs=3)


# --------------------------------------------------------------------------- the token stream
def _bucket(x: Any, edges: Sequence[float]) -> int:
    if not isinstance(x, int | float) or x != x:
        return 0
    return int(sum(float(x) >= e for e in edges))


def observation_pieces(observation: str) -> list[str]:
    """The tokens the policy reads for one tool message (the episode's observation text).

    Total: text that is not the episode's JSON reads as ``obs:error``; a message without
    ``calls_left`` (the episode ended) as ``obs:over``."""
    try:
        obj = json.loads(observation)
    except (TypeError, ValueError):
        return ["<obs>", "obs:error", "</obs>"]
    if not isinstance(obj, dict) or not isinstance(obj.get("calls_left"), int):
        return ["<obs>", "obs:over" if isinstance(obj, dict) and "error" in obj else "obs:error",
                "</obs>"]
    res, tool = obj.get("result"), obj.get("tool")
    res = res if isinstance(res, dict) else {}
    if tool == "backtest" and res.get("valid") is True:
        body = ["obs:valid", f"obs:reward:{_bucket(res.get('train_reward'), REWARD_EDGES)}",
                f"obs:cpcv:{_bucket(res.get('cpcv'), REWARD_EDGES)}",
                f"obs:corr:{_bucket(res.get('max_abs_corr_earlier'), CORR_EDGES)}"]
    elif tool == "backtest" and res.get("valid") is False:
        body = ["obs:invalid"]
    elif tool == "compare" and res.get("valid_a") and res.get("valid_b"):
        body = ["obs:valid", f"obs:reward:{_bucket(res.get('train_reward_a'), REWARD_EDGES)}",
                f"obs:reward:{_bucket(res.get('train_reward_b'), REWARD_EDGES)}",
                f"obs:corr:{_bucket(abs(res.get('pnl_corr') or 0.0), CORR_EDGES)}"]
    elif tool == "compare":
        body = ["obs:invalid"]
    elif tool == "describe":
        body = ["obs:described"]
    else:
        body = ["obs:error"]
    return ["<obs>", *body, f"obs:calls:{min(32, max(0, obj['calls_left']))}", "</obs>"]


def policy_context(tok: Tokenizer, brief: str | None, budget: int) -> list[int]:
    """The prompt ids: the brief as the single-turn policy reads it, then ``obs:calls:B``."""
    return [*tok.encode_brief(brief or ""), tok.ids[f"obs:calls:{min(32, max(0, budget))}"]]


def _strip_eos(tok: Tokenizer, ids: Sequence[int]) -> list[int]:
    out = list(ids)
    return out[:out.index(tok.eos_id)] if tok.eos_id in out else out


def action_call(tok: Tokenizer, ids: Sequence[int], tested: Sequence[str] = ()
                ) -> dict[str, Any] | str:
    """The episode action for the policy's action ids (up to ``<eos>``): a ``backtest`` or
    ``describe`` tool call, ``submit`` of ``tested[i - 1]`` for ``<submit> i`` (``tested``:
    the formulas of the episode's backtests, in order), else the decoded text
    (``<alpha>f</alpha>`` submits f; anything else is the episode's counted action error)."""
    body = _strip_eos(tok, ids)
    head = tok.tokens[body[0]] if body and 0 <= body[0] < len(tok) else None
    if head == "<backtest>":
        return {"name": "backtest", "arguments": {"formula": tok.decode(body[1:])}}
    if head == "<describe>" and len(body) == 1:
        return {"name": "describe", "arguments": {}}
    if head == "<submit>" and len(body) == 2:
        i = tok.tokens[body[1]] if 0 <= body[1] < len(tok) else ""
        if i.isdigit() and 1 <= int(i) <= len(tested):
            return {"name": "submit", "arguments": {"formula": tested[int(i) - 1]}}
    return tok.decode(body)


def action_ids(tok: Tokenizer, call: dict[str, Any] | str) -> list[int]:
    """The ids of an action written as the policy writes it (the inverse of
    :func:`action_call` for its own forms; other text is encoded piece by piece)."""
    def pieces(text: str) -> list[int]:
        out: list[int] = []
        for i, part in enumerate(text.split(UNK)):  # a decoded <unk> reads back as itself
            out += [tok.unk_id] * (i > 0) + [tok.ids.get(p, tok.unk_id) for p in text_pieces(part)]
        return out

    if isinstance(call, dict):
        if call.get("name") == "backtest":
            return [tok.ids["<backtest>"], *pieces(str(call["arguments"]["formula"])), tok.eos_id]
        if call.get("name") == "describe":
            return [tok.ids["<describe>"], tok.eos_id]
        if call.get("name") == "submit":
            return [tok.ids[TAG_OPEN], *pieces(str(call["arguments"]["formula"])),
                    tok.ids[TAG_CLOSE], tok.eos_id]
        call = json.dumps(call)
    return [*pieces(call), tok.eos_id]


# --------------------------------------------------------------------------- episodes
@dataclass
class Rollout:
    """One episode as the policy saw it: the token stream, the mask of the policy's own
    tokens, the actions' texts, the episode."""

    brief_id: str
    ep: Any
    ids: list[int]
    mask: list[float]
    actions: list[str] = field(default_factory=list)
    tested: list[str] = field(default_factory=list)

    def apply(self, tok: Tokenizer, action: Sequence[int]) -> Any:
        """Append the policy's ``action`` ids, step the episode, append the observation;
        returns the episode's :class:`~gymkit.research.StepResult`."""
        self.ids += list(action)
        self.mask += [1.0] * len(action)
        call = action_call(tok, action, self.tested)
        if isinstance(call, dict) and call["name"] == "backtest":
            self.tested.append(call["arguments"]["formula"])
        self.actions.append(call if isinstance(call, str) else
                            f"{call['name']} {call['arguments'].get('formula', '')}".rstrip())
        res = self.ep.step(call)
        if not res.done:
            obs = [tok.ids[p] for p in observation_pieces(res.observation)]
            self.ids += obs
            self.mask += [0.0] * len(obs)
        return res


def play(model: Any, tok: Tokenizer, renv: Any, brief: Any, n: int, budget: int, max_action: int,
         temperature: float, generator: torch.Generator | None, greedy: bool = False
         ) -> list[Rollout]:
    """``n`` episodes of ``brief`` played to their end by ``model`` (one action per turn)."""
    ctx = policy_context(tok, brief.text, budget)
    ros = [Rollout(brief.brief_id, renv.episode(brief.text, budget), list(ctx), [0.0] * len(ctx))
           for _ in range(n)]
    first = sample(model, tok, ctx, n, max_new=max_action, temperature=temperature,
                   generator=generator, greedy=greedy)
    pending = list(enumerate(first))
    while pending:
        for i, a in pending:
            ros[i].apply(tok, a)
        pending = [(i, sample(model, tok, r.ids, 1, max_new=max_action, temperature=temperature,
                              generator=generator, greedy=greedy)[0])
                   for i, r in enumerate(ros) if not r.ep.done]
    return ros


def episode_row(r: Rollout) -> dict[str, Any]:
    """The figures of one finished episode (and what the read-out flags read)."""
    from gymkit.dsl import canonical_key, parse
    from gymkit.research.episode import canonical_json

    res = r.ep.result
    tested: list[str] = []
    keys: set[str] = set()
    repeats = errors = 0
    for t in r.ep.transcript()["turns"]:
        a, out = t["action"], t["result"]
        if "raw" in a:
            errors += 1
        elif a.get("name") == "backtest":
            f = a["arguments"]["formula"]
            repeats += f in tested
            tested.append(f)
            if (out.get("result") or {}).get("valid"):
                keys.add(canonical_key(parse(out["result"]["formula"])))
    card = r.ep.final_card
    key = None if card is None else r.ep.trial_key(card)
    return {"brief_id": r.brief_id, "actions": list(r.actions), "reward": res.reward,
            "submitted": res.submitted, "valid": res.valid, "card_reward": res.card_reward,
            "n_calls": res.n_calls, "n_trials": res.n_trials, "n_effective": res.n_effective,
            "deflation": res.deflation, "submitted_formula": None if card is None else card.formula,
            "untested_submit": bool(res.submitted and res.n_calls > 0 and key not in keys
                                    and (card is None or card.formula not in tested)),
            "invalid_submit_after_backtest": bool(res.submitted and not res.valid
                                                  and card is not None and card.formula in tested),
            "repeat_backtests": repeats, "action_errors": errors,
            "policy_tokens": int(sum(r.mask)),
            "transcript_sha256": hashlib.sha256(canonical_json(r.ep.transcript()).encode()
                                                ).hexdigest()}


def group_advantages(env: Any, ros: Sequence[Rollout]) -> tuple[np.ndarray, Any]:
    """GDPO advantages of one group of episodes on the research reward's channels (module doc)."""
    from gymkit.advantages import gdpo_advantages
    from gymkit.verifiers.channels import priority_sum

    prio = env.config.priorities
    names = [k for k in prio if any(k in r.ep.result.channels for r in ros)] or ["cpcv"]
    x = np.array([[r.ep.result.channels.get(k, 0.0) for k in names]
                  + [r.ep.result.research_channels.get("tool_cost", 0.0)] for r in ros],
                 dtype=np.float64)
    p = np.array([prio.get(k, 0.0) for k in names] + [1.0], dtype=np.float64)
    valid = np.array([bool(r.ep.result.valid) for r in ros])
    # guarded where the motif guard's cap bound: it fired and the research reward's channel sum
    # was positive (the rule of gymkit.env.Environment.group_advantages)
    guarded = np.array([r.ep.final_card is not None and bool(r.ep.final_card.motif_capped)
                        and priority_sum(r.ep.result.channels, prio) > 0.0 for r in ros])
    core = names.index("cpcv") if "cpcv" in names else 0
    return gdpo_advantages(x, p, valid, floor=env.config.advantage_floor, core=core,
                           guarded=guarded)


def sequence_logprobs(model: Any, seqs: Sequence[Sequence[int]], masks: Sequence[Sequence[float]],
                      pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logp, entropy, mask), each (n, L - 1): per-token log prob and entropy of every next
    token of ``seqs`` (right-padded), the mask 1 only where ``masks`` marks a policy token."""
    n, length = len(seqs), max(len(s) for s in seqs)
    ids = torch.full((n, length), pad_id, dtype=torch.long)
    m = torch.zeros((n, length))
    for i, (s, k) in enumerate(zip(seqs, masks, strict=True)):
        ids[i, :len(s)] = torch.tensor(list(s), dtype=torch.long)
        m[i, :len(k)] = torch.tensor(list(k))
    ids, m = ids.to(model.device), m[:, 1:].to(model.device)
    logits = model(input_ids=ids).logits[:, :-1, :].float()
    logsm = torch.log_softmax(logits, dim=-1)
    logp = logsm.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logsm.exp() * logsm).sum(-1).detach()
    return logp * m, entropy * m, m


# --------------------------------------------------------------------------- warm start
def grow_policy(model: Any, n_old: int, n_new: int, seed: int) -> Any:
    """``model`` with its (tied) embedding table grown from ``n_old`` to ``n_new`` rows: the
    new rows are the old rows' mean plus seeded noise of their std (deterministic)."""
    if n_new == n_old:
        return model
    model.resize_token_embeddings(n_new, mean_resizing=False)
    w = model.get_input_embeddings().weight
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        old = w[:n_old]
        w[n_old:] = old.mean(0) + old.std() * torch.randn(n_new - n_old, w.shape[1], generator=g)
    model.config.vocab_size = n_new
    return model


def _scripted(model: Any, tok: Tokenizer, renv: Any, brief: Any, k: int, budget: int,
              max_action: int, gen: torch.Generator) -> Rollout:
    """One format-warm-start episode (module doc): k backtests of the warm start's own
    well-formed answers, then a submit of the best by train reward."""
    ctx = policy_context(tok, brief.text, budget)
    r = Rollout(brief.brief_id, renv.episode(brief.text, budget), list(ctx), [0.0] * len(ctx))
    opens, closes = tok.ids[TAG_OPEN], tok.ids[TAG_CLOSE]
    bodies: list[list[int]] = []
    for _ in range(4):
        for a in sample(model, tok, ctx[:-1], k + 1, max_new=max_action - 1, temperature=1.0,
                        generator=gen):
            a = _strip_eos(tok, a)
            if len(a) >= 3 and a[0] == opens and a[-1] == closes and closes not in a[1:-1]:
                bodies.append(a[1:-1])
        if len(bodies) > k:
            break
    if not bodies:
        bodies = [tok.encode_answer("rank(-returns)")[1:-2]]
    best, best_r = 0, -np.inf
    for i, body in enumerate(bodies[:k]):
        step = r.apply(tok, [tok.ids["<backtest>"], *body, tok.eos_id])
        res = step.info["result"].get("result") or {}
        score = (float(res["train_reward"]) if res.get("valid") and res.get("train_reward")
                 is not None else -np.inf)
        if score > best_r:
            best, best_r = i + 1, score
    if best:
        r.apply(tok, [tok.ids["<submit>"], tok.ids[str(best)], tok.eos_id])
    else:  # no backtest, or none valid: a fresh answer of its own
        r.apply(tok, [opens, *bodies[min(k, len(bodies) - 1)], closes, tok.eos_id])
    return r


def format_warm_start(model: Any, tok: Tokenizer, renv: Any, briefs: Sequence[Any],
                      cfg: ResearchRLConfig, out: Path, log: Any) -> None:
    """Phase 1 (module doc): imitate scripted episodes of the warm start's own answers."""
    gen = torch.Generator().manual_seed(cfg.seed + 7)
    rng = np.random.default_rng([cfg.seed, 7])
    eps = []
    for _ in range(cfg.format_episodes):
        b = briefs[int(rng.integers(len(briefs)))]
        eps.append(_scripted(model, tok, renv, b, int(rng.integers(cfg.budget + 1)), cfg.budget,
                             cfg.max_action, gen))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.format_lr, weight_decay=0.0)
    with (out / "format_log.jsonl").open("w", encoding="utf-8") as f:
        for step in range(cfg.format_steps):
            idx = rng.choice(len(eps), size=min(cfg.format_batch, len(eps)), replace=False)
            batch = [eps[int(i)] for i in idx]
            logp, _, m = sequence_logprobs(model, [e.ids for e in batch], [e.mask for e in batch],
                                           tok.pad_id)
            loss = -(logp.sum() / m.sum())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            f.write(_dump({"step": step, "loss": round(loss.item(), 6)}) + "\n")
            if step % 50 == 0 or step == cfg.format_steps - 1:
                log(f"format step {step:4d}  loss {loss.item():.4f}")
    rows = [episode_row(e) for e in eps]
    log(f"format warm start: {len(eps)} scripted episodes, mean reward "
        f"{np.mean([r['reward'] for r in rows]):+.3f}, mean calls "
        f"{np.mean([r['n_calls'] for r in rows]):.2f}")


# --------------------------------------------------------------------------- evaluation
def _dump(x: Any) -> str:
    from gymkit.card import json_safe

    return json.dumps(json_safe(x), sort_keys=True)


def _print(line: str) -> None:
    print(line, flush=True)


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean reward, submit / valid share, calls, trials, untested submits of episode rows."""
    if not rows:
        return {"n": 0}
    def mean(k: str) -> float:
        return float(np.mean([float(r[k]) for r in rows]))

    return {"n": len(rows), "reward": mean("reward"), "submit_rate": mean("submitted"),
            "valid_rate": mean("valid"), "calls": mean("n_calls"), "trials": mean("n_trials"),
            "untested_submit_rate": mean("untested_submit"),
            "repeat_backtests": mean("repeat_backtests"), "action_errors": mean("action_errors")}


def evaluate(model: Any, tok: Tokenizer, renv: Any, briefs: Sequence[Any], cfg: ResearchRLConfig,
             step: int, f: Any) -> dict[str, Any]:
    """Greedy episodes on ``briefs``; each written to ``f`` with its transcript."""
    rows = []
    for b in briefs:
        r = play(model, tok, renv, b, 1, cfg.budget, cfg.max_action, 1.0, None, greedy=True)[0]
        row = {"step": step, **episode_row(r)}
        f.write(_dump({**row, "transcript": r.ep.transcript()}) + "\n")
        rows.append(row)
    return {"step": step, **summarise(rows)}


def hill_climb_baseline(renv: Any, briefs: Sequence[Any], budget: int) -> dict[str, Any]:
    """The scripted hill climb (and its start formula submitted alone) on ``briefs``, seeded
    as ``benchmarks/bench_research.py`` seeds it."""
    from gymkit.research.agent import hill_climb, valid_start

    out: dict[str, list[dict[str, Any]]] = {"hill_climb": [], "single_shot": []}
    for i, b in enumerate(briefs):
        start = valid_start(np.random.default_rng(i), renv.env)
        for name in out:
            ep = renv.episode(b.text, budget)
            if name == "hill_climb":
                hill_climb(ep, np.random.default_rng(10_000 + i), start=start)
            else:
                ep.submit(start.text())
            out[name].append(episode_row(Rollout(b.brief_id, ep, [], [])))
    return {k: summarise(v) for k, v in out.items()}


def readout(rows: Sequence[dict[str, Any]], top: int = 20) -> dict[str, Any]:
    """The top-``top`` episodes by reward, each flagged where it looks like a hack: tool spam
    (a formula backtested twice, or action errors), an untested submit (calls made, the
    submitted formula never backtested), mining (two or more calls, each a distinct valid
    backtested trial)."""
    best = sorted(rows, key=lambda r: (-r["reward"], r.get("step", 0), r["brief_id"]))[:top]
    out = []
    for r in best:
        flags = []
        if r["repeat_backtests"] or r["action_errors"]:
            flags.append("tool_spam")
        if r["untested_submit"]:
            flags.append("untested_submit")
        if r["n_calls"] >= 2 and r["n_trials"] >= r["n_calls"]:
            flags.append("mining")
        out.append({**{k: r.get(k) for k in ("step", "brief_id", "reward", "card_reward",
                                              "n_calls", "n_trials", "deflation", "actions")},
                    "flags": flags})
    counts: dict[str, int] = {}
    for r in out:
        for fl in r["flags"]:
            counts[fl] = counts.get(fl, 0) + 1
    return {"top": out, "flag_counts": counts}


# --------------------------------------------------------------------------- the run
def run_research(cfg: ResearchRLConfig, run_dir: str | Path, from_run: str | Path | None = None,
                 *, log: Any = None) -> dict[str, Any]:
    """Train a research policy into ``run_dir/research`` from the single-turn warm start
    ``from_run/sft`` (default ``run_dir/sft``); returns the summary (also ``summary.json``)."""
    from gymkit.briefs import generate_briefs, probe_briefs, split_briefs
    from gymkit.research import make_research

    log = log or _print
    if cfg.budget > 32 or cfg.budget < 0:
        raise ValueError(f"budget must be in 0..32, got {cfg.budget}")
    src = Path(from_run if from_run is not None else run_dir) / "sft"
    if not (src / "tokenizer.json").is_file():
        raise ValueError(f"{src}: no single-turn warm start (run `gymkit train sft --run "
                         f"{src.parent}` first)")
    deterministic(cfg.threads)
    out = Path(run_dir) / "research"
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({**asdict(cfg), "from": str(src)}, indent=1,
                                                sort_keys=True) + "\n")
    base, tok0 = load_policy(src)
    tok = research_tokenizer(tok0)
    model = grow_policy(base, len(tok0), len(tok), cfg.seed).to(cfg.device)
    model.config.max_position_embeddings = max(model.config.max_position_embeddings, 1024)
    renv = make_research(cfg.env_id, budget=cfg.budget, tool_cost=cfg.tool_cost)
    env = renv.env
    train_briefs = split_briefs(generate_briefs(), "train")
    eval_briefs = probe_briefs(generate_briefs())[:cfg.eval_briefs]
    torch.manual_seed(cfg.seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # low-signal groups are logged
        format_warm_start(model, tok, renv, train_briefs, cfg, out, log)
        timing = {"format": time.perf_counter() - t0}
        save_policy(model, tok, out / "format")
        ref, _ = load_policy(out / "format")
        ref = ref.to(cfg.device)
        for p in ref.parameters():
            p.requires_grad_(False)
        baseline = hill_climb_baseline(renv, eval_briefs, cfg.budget)
        (out / "baseline.json").write_text(_dump(baseline) + "\n")
        gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed)
        rng = np.random.default_rng(cfg.seed)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
        thermo = Thermostat(cfg.zeta0, cfg.zeta_max, cfg.thermostat_window)
        files = {k: (out / f"{k}.jsonl").open("w", encoding="utf-8")
                 for k in ("log", "episodes", "eval", "timings")}
        evals = []
        all_rows: list[dict[str, Any]] = []

        def do_eval(step: int) -> None:
            evals.append(evaluate(model, tok, renv, eval_briefs, cfg, step, files["eval"]))
            save_policy(model, tok, out / "checkpoints" / f"step-{step:04d}")
            e = evals[-1]
            log(f"eval step {step:4d}: reward {e['reward']:+.3f}  submit {e['submit_rate']:.0%}  "
                f"valid {e['valid_rate']:.0%}  calls {e['calls']:.2f}  untested "
                f"{e['untested_submit_rate']:.0%}")

        do_eval(0)
        for step in range(1, cfg.steps + 1):
            times: dict[str, float] = {}
            t = time.perf_counter()
            picks = rng.choice(len(train_briefs), size=cfg.briefs_per_step, replace=False)
            groups = [play(model, tok, renv, train_briefs[int(i)], cfg.group, cfg.budget,
                           cfg.max_action, cfg.temperature, gen) for i in picks]
            times["rollout"] = time.perf_counter() - t
            scored = [group_advantages(env, g) for g in groups]
            advs = np.concatenate([a for a, _ in scored])
            adv_scale = batch_scale(advs, cfg.batch_norm)
            rows = []
            for g, (adv, _) in zip(groups, scored, strict=True):
                for r, a in zip(g, adv, strict=True):
                    row = {"step": step, **episode_row(r), "advantage": float(a)}
                    rows.append(row)
                    files["episodes"].write(_dump(row) + "\n")
                if cfg.commit:
                    env.commit([r.ep.final_card for r in g
                                if r.ep.final_card is not None and r.ep.final_card.valid])
            all_rows += rows
            t = time.perf_counter()
            zeta = thermo.zeta
            kl, entropy, n_tok = update_policy(
                model, ref, opt, lambda m, i, g=groups: sequence_logprobs(
                    m, [r.ids for r in g[i]], [r.mask for r in g[i]], tok.pad_id),
                [a for a, _ in scored], adv_scale, zeta, cap=cfg.cap, kl_beta=cfg.kl_beta,
                passes=cfg.passes)
            times["update"] = time.perf_counter() - t
            thermo.update(entropy)
            valid = np.array([r["valid"] for r in rows])
            rec = {"step": step, **summarise(rows),
                   "nonzero_adv_share": float(np.mean(np.abs(advs) > 1e-9)),
                   "max_invalid_adv": float(advs[~valid].max()) if (~valid).any() else None,
                   "kl": kl, "entropy": entropy, "zeta": zeta,
                   "adv_scale": adv_scale, "policy_tokens": n_tok / len(rows)}
            files["log"].write(_dump(rec) + "\n")
            files["timings"].write(_dump({"step": step, **times}) + "\n")
            if step % 5 == 0 or step in (1, cfg.steps):
                log(f"step {step:4d}  reward {rec['reward']:+.3f}  submit {rec['submit_rate']:.0%}  "
                    f"valid {rec['valid_rate']:.0%}  calls {rec['calls']:.2f}  adv!=0 "
                    f"{rec['nonzero_adv_share']:.0%}  KL {rec['kl']:.4f}  H {entropy:.3f}  "
                    + " ".join(f"{k} {v:.1f}s" for k, v in times.items()))
            if step % cfg.eval_every == 0 or step == cfg.steps:
                do_eval(step)
        for f in files.values():
            f.close()
    save_policy(model, tok, out / "policy")
    summary = {"config": asdict(cfg), "from": str(src), "env_fingerprint": env.fingerprint,
               "evals": evals, "baseline": baseline, "readout": readout(all_rows),
               "final_eval": readout([r for r in _eval_rows(out) if r["step"] == cfg.steps],
                                     top=cfg.eval_briefs)}
    (out / "summary.json").write_text(_dump(summary) + "\n", encoding="utf-8")
    timing["total"] = time.perf_counter() - t0
    (out / "timings.json").write_text(json.dumps(timing) + "\n")
    e0, e1 = evals[0], evals[-1]
    log(f"research: eval reward {e0['reward']:+.3f} -> {e1['reward']:+.3f}, submit "
        f"{e0['submit_rate']:.0%} -> {e1['submit_rate']:.0%}; hill climb "
        f"{baseline['hill_climb']['reward']:+.3f}, single shot {baseline['single_shot']['reward']:+.3f}; "
        f"read-out flags {summary['readout']['flag_counts']}")
    return summary


def _eval_rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for line in (out / "eval.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        r.pop("transcript", None)
        rows.append(r)
    return rows
