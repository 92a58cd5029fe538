"""Whole score cards with the formulas evaluated in bulk on a torch device (issue 26).

A card is the CPU scorer's card: :class:`BulkScorer` evaluates the book input of many
answers at once (:func:`gymkit.bulk.evaluate_many`, one shared DAG per chunk) on the train
panel and on every stress world, and puts each value array into the environment's
evaluation cache under the key the CPU evaluator looks up (``(canonical text, panel
fingerprint)``).  ``env.score`` then finds the values there and computes everything else
— book, costs, metrics, IC, CPCV slices and paths, factors, stress drops, novelty, every
channel — with the CPU code.  Since the torch values are bit-identical to the Numba ones
(tests/bulk, benchmarks/RESULTS.md), the cards are BYTE-identical to ``env.score``'s: the
same keys hit the same arrays as a CPU re-evaluation would produce (the cache contract).

What the device does here is the evaluation only; the book-level statistics run on the
CPU per answer (the vectorised book of :mod:`gymkit.bulk.book` is not on the card path).
An answer the torch path cannot evaluate is simply not pre-filled: the CPU evaluates it,
and its card is still the CPU's card.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from gymkit.bulk.evaluator import DevicePanel, evaluate_many
from gymkit.dsl.ast import Call
from gymkit.dsl.canonical import exact_form
from gymkit.dsl.printer import to_text

__all__ = ["BulkEnv", "BulkScorer", "bulk_env", "check_device"]


class BulkScorer:
    """Pre-fills ``env``'s evaluation cache from a torch ``device`` (module doc).

    ``chunk``: answers evaluated together (default: as many as a quarter of the cache holds
    on every panel).  Raises ``ValueError`` if the environment has no evaluation cache."""

    def __init__(self, env: Any, device: str | torch.device = "cuda", chunk: int | None = None) -> None:
        setup = env.setup
        if setup.cache is None:
            raise ValueError("the torch engine needs the environment's evaluation cache (cache=None given)")
        self.env, self.setup, self.device = env, setup, torch.device(device)
        self.panels = [setup.train, *(w.panel for w in setup.worlds)]
        self._dp = [DevicePanel(p, self.device) for p in self.panels]
        per_answer = sum(p.T * p.N * 8 for p in self.panels)
        self.chunk = chunk or max(1, min(256, setup.cache.max_bytes // (4 * per_answer)))
        self.filled = 0  # answers whose values were put in the cache
        self.failed = 0  # answers left to the CPU evaluator

    def _book_inputs(self, completions: Sequence[str]) -> list[Any]:
        from gymkit.scoring import book_input, gate_text

        out = []
        for c in completions:
            st = gate_text(c, self.setup)
            if st.error is None and st.expr is not None:
                node = exact_form(book_input(st.expr))
                if isinstance(node, Call):  # a bare field or literal costs the CPU nothing
                    out.append(node)
        unique = {to_text(n): n for n in out}
        return list(unique.values())

    def prefill(self, completions: Sequence[str]) -> int:
        """Evaluate the book inputs of ``completions`` on every panel and cache them; the
        number of (formula, panel) arrays stored."""
        nodes = self._book_inputs(completions)
        stored = 0
        for panel, dp in zip(self.panels, self._dp, strict=True):
            for vals, node in self._evaluate(nodes, panel, dp):
                if vals is None:
                    self.failed += 1
                    continue
                arr = np.array(vals.cpu().numpy(), dtype=np.float64, copy=True)  # not a view of a batch
                self.setup.cache.put((to_text(node), panel.fingerprint), arr)
                stored += 1
        self.filled += len(nodes)
        return stored

    def _evaluate(self, nodes: list[Any], panel: Any, dp: DevicePanel):
        if not nodes:
            return []
        try:
            return list(zip(evaluate_many(nodes, panel, dpanel=dp), nodes, strict=True))
        except Exception:  # one bad formula spoils the batch: evaluate one by one
            out = []
            for n in nodes:
                try:
                    out.append((evaluate_many([n], panel, dpanel=dp)[0], n))
                except Exception:
                    out.append((None, n))
            return out

    def score_many(self, completions: Sequence[str], brief: str | None = None) -> list[Any]:
        """``[env.score(c, brief) for c in completions]``, each chunk pre-filled first."""
        cards = []
        for i in range(0, len(completions), self.chunk):
            part = completions[i:i + self.chunk]
            self.prefill(part)
            cards.extend(self.env.score(c, brief) for c in part)
        return cards


class BulkEnv:
    """``env`` whose ``score`` / ``score_group`` pre-fill the cache chunk by chunk, in the
    order of ``completions`` (the answers that will be scored, in order); every other
    attribute is ``env``'s.  Cards are ``env``'s cards, byte for byte."""

    def __init__(self, env: Any, completions: Sequence[str], device: str | torch.device = "cuda",
                 chunk: int | None = None) -> None:
        self._env = env
        self._scorer = BulkScorer(env, device, chunk)
        self._queue = list(completions)
        self._next = 0  # position in the queue of the next answer to be scored
        self._filled_to = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def _advance(self, k: int) -> None:
        """Pre-fill the next chunk when the ``k`` answers about to be scored are not yet."""
        if self._next + k > self._filled_to and self._next < len(self._queue):
            start = max(self._next, self._filled_to)
            end = min(len(self._queue), max(self._next + k, start + self._scorer.chunk))
            self._scorer.prefill(self._queue[start:end])
            self._filled_to = end
        self._next += k

    def score(self, completion: str, brief: str | None = None) -> Any:
        """``env.score`` (module doc)."""
        self._advance(1)
        return self._env.score(completion, brief)

    def score_group(self, completions: Sequence[str], brief: str | None = None) -> list[Any]:
        """``env.score_group`` (module doc)."""
        self._advance(len(completions))
        return self._env.score_group(completions, brief)


def check_device(device: str) -> torch.device:
    """``torch.device(device)``, usable here; ``ValueError`` naming ``--device`` otherwise."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"--device {device!r}: not a torch device ({exc})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device!r}: torch sees no CUDA device here (try --device cpu)")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"--device {device!r}: only cpu and cuda are supported")
    return dev


def bulk_env(env: Any, batches: Sequence[Sequence[Any]], device: str = "cuda") -> BulkEnv:
    """A :class:`BulkEnv` over ``env`` for ``batches`` (lists of records with a
    ``completion``, scored in this order) on ``device`` (checked by :func:`check_device`)."""
    dev = check_device(device)
    return BulkEnv(env, [r.completion for b in batches for r in b], dev)
