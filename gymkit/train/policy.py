"""The policy: a small decoder-only transformer from a Hugging Face ``LlamaConfig``, from scratch.

No pretrained weights: :func:`new_policy` initialises a ``LlamaForCausalLM`` from a seed, so
the same checkpoint loads in TRL or vLLM.  Sampling is unconstrained (every token of the
vocabulary, brief words included, can follow any other), so malformed answers are possible
and the gate matters.  :func:`sample` draws answers with a ``torch.Generator`` (deterministic
on CPU for a given seed and thread count); :func:`answer_logprobs` recomputes per-token log
probabilities and entropies of answers under a model in one batched forward pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from .tokenizer import Tokenizer

__all__ = ["PolicyConfig", "answer_logprobs", "deterministic", "load_policy", "new_policy", "sample", "save_policy"]


@dataclass(frozen=True)
class PolicyConfig:
    """Size of the transformer (defaults: 3 layers, width 96, ~0.4 M parameters)."""

    layers: int = 3
    width: int = 96
    heads: int = 4
    max_positions: int = 96


def deterministic(threads: int = 1) -> None:
    """Pin torch to a fixed thread count and deterministic kernels (byte-identical CPU runs)."""
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def new_policy(tok: Tokenizer, cfg: PolicyConfig, seed: int) -> Any:
    """A freshly initialised ``LlamaForCausalLM`` over ``tok``'s vocabulary (seeded)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    hf = LlamaConfig(vocab_size=len(tok), hidden_size=cfg.width, intermediate_size=4 * cfg.width,
                     num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
                     num_key_value_heads=cfg.heads, max_position_embeddings=cfg.max_positions,
                     tie_word_embeddings=True, pad_token_id=tok.pad_id, bos_token_id=tok.bos_id,
                     eos_token_id=tok.eos_id, attn_implementation="eager")
    model = LlamaForCausalLM(hf)
    model.generation_config.pad_token_id = tok.pad_id
    return model


def save_policy(model: Any, tok: Tokenizer, path: str | Path, cfg: PolicyConfig | None = None) -> None:
    """Write the model (``save_pretrained``, safetensors) and ``tokenizer.json`` into ``path``."""
    import json

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    tok.save(path / "tokenizer.json")
    if cfg is not None:
        (path / "policy.json").write_text(json.dumps(asdict(cfg), sort_keys=True) + "\n")


def load_policy(path: str | Path) -> tuple[Any, Tokenizer]:
    """Load a policy written by :func:`save_policy`: (model in eval mode, tokenizer).  A folder
    with no policy, or one that cannot be loaded (a file missing, cut short or damaged), is a
    ValueError naming it (it was transformers' or safetensors' own error, an internal one)."""
    from transformers import LlamaForCausalLM

    path = Path(path)
    if not (path / "config.json").is_file():
        raise ValueError(f"{path}: no policy there (no config.json)")
    try:
        model = LlamaForCausalLM.from_pretrained(path, attn_implementation="eager")
        tok = Tokenizer.load(path / "tokenizer.json")
    except Exception as exc:  # OSError, safetensors' and json's errors, a version's refusal
        what = " ".join(str(exc).split())[:200]
        raise ValueError(f"{path}: cannot load the policy saved there ({type(exc).__name__}: "
                         f"{what}); a save cut short must be written again") from exc
    return model.eval(), tok


def _cache_kw() -> str:
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters \
        else "past_key_values"


#: The key-value cache argument of this transformers version (``cache`` from 5.2x on).
_CACHE_KW = _cache_kw()


def _cache_of(out: Any) -> Any:
    return out.get("cache", out.get("past_key_values"))


@torch.no_grad()
def sample(model: Any, tok: Tokenizer, prompt: list[int], n: int, *, max_new: int,
           temperature: float, generator: torch.Generator | None, greedy: bool = False
           ) -> list[list[int]]:
    """``n`` answers to one prompt (token ids, ``<eos>`` included when produced).

    ``greedy``: arg-max decoding (the probe); otherwise multinomial at ``temperature``
    with ``generator``.  Unconstrained: any token may be drawn at any position.
    """
    was_training = model.training
    model.eval()
    ids = torch.tensor([prompt] * n, dtype=torch.long, device=model.device)
    out = model(input_ids=ids, use_cache=True)
    past, logits = _cache_of(out), out.logits[:, -1, :]
    done = torch.zeros(n, dtype=torch.bool, device=model.device)
    answers: list[list[int]] = [[] for _ in range(n)]
    for _ in range(max_new):
        if greedy:
            nxt = logits.argmax(dim=-1)
        else:
            probs = torch.softmax(logits.float() / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        nxt = torch.where(done, torch.full_like(nxt, tok.pad_id), nxt)
        for i, (d, t) in enumerate(zip(done.tolist(), nxt.tolist(), strict=True)):
            if not d:
                answers[i].append(t)
        done |= nxt == tok.eos_id
        if bool(done.all()):
            break
        out = model(input_ids=nxt.unsqueeze(1), use_cache=True, **{_CACHE_KW: past})
        past, logits = _cache_of(out), out.logits[:, -1, :]
    model.train(was_training)
    return answers


def answer_logprobs(model: Any, prompt: list[int], answers: list[list[int]], pad_id: int
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logp, entropy, mask), each (n, L): per-token log prob and entropy of ``answers`` after ``prompt``.

    Answers are right-padded to the longest (mask 0 on pads); gradients flow through ``logp``.
    """
    n, p = len(answers), len(prompt)
    length = max(1, max(len(a) for a in answers))
    ids = torch.full((n, p + length), pad_id, dtype=torch.long)
    mask = torch.zeros((n, length))
    ids[:, :p] = torch.tensor(prompt, dtype=torch.long)
    for i, a in enumerate(answers):
        if a:
            ids[i, p:p + len(a)] = torch.tensor(a, dtype=torch.long)
            mask[i, :len(a)] = 1.0
    ids, mask = ids.to(model.device), mask.to(model.device)
    logits = model(input_ids=ids).logits[:, p - 1:p + length - 1, :].float()
    logsm = torch.log_softmax(logits, dim=-1)
    logp = logsm.gather(-1, ids[:, p:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logsm.exp() * logsm).sum(-1).detach()
    return logp * mask, entropy * mask, mask
