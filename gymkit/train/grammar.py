"""Random formulas from the DSL grammar: the warm start's syntax lessons (not alpha).

:func:`sample_formula` draws a random expression tree with random fields, operators and
windows from a ``numpy`` generator; every returned formula parses, stays inside the DSL
limits (lookback <= 252, depth, tokens) and has at most ``max_nodes`` nodes.  Nothing here
looks at returns, so the corpus carries no alpha; :func:`corpus_sharpe` measures that.
:func:`warm_start_pairs` gives each brief a few random formulas of its own and keeps every
formula whose canonical form is one of the 101 paper alphas (they seed the novelty archive) out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["alpha101_canonicals", "corpus_sharpe", "sample_formula", "warm_start_pairs"]

FIELDS = ("open", "high", "low", "close", "vwap", "returns", "volume")
UNARY = ("rank", "abs", "sign", "log", "-")
TS1 = ("delay", "ts_delta", "ts_mean", "ts_std", "ts_sum", "ts_max", "ts_min", "ts_rank",
       "ts_decay_linear", "ts_argmax", "ts_argmin", "ts_skew", "ts_slope", "ts_ema")
TS2 = ("ts_corr", "ts_cov")
BINARY = ("+", "-", "*", "/")
WINDOWS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 20, 21, 25, 30, 40, 50, 60, 63, 90, 120)


def _expr(rng: np.random.Generator, depth: int) -> str:
    leaf_p = 0.15 + 0.25 * depth
    u = rng.random()
    if depth >= 4 or u < leaf_p:
        return FIELDS[int(rng.integers(len(FIELDS)))]
    kind = rng.choice(4, p=[0.2, 0.45, 0.1, 0.25])
    if kind == 0:
        op = UNARY[int(rng.integers(len(UNARY)))]
        inner = _expr(rng, depth + 1)
        return f"-{inner}" if op == "-" and inner[:1].isalpha() else (
            f"{op}({inner})" if op != "-" else f"-({inner})")
    d = WINDOWS[int(rng.integers(len(WINDOWS)))]
    if kind == 1:
        return f"{TS1[int(rng.integers(len(TS1)))]}({_expr(rng, depth + 1)}, {d})"
    if kind == 2:
        return (f"{TS2[int(rng.integers(len(TS2)))]}({_expr(rng, depth + 1)}, "
                f"{_expr(rng, depth + 1)}, {d})")
    op = BINARY[int(rng.integers(len(BINARY)))]
    return f"({_expr(rng, depth + 1)} {op} {_expr(rng, depth + 1)})"


def sample_formula(rng: np.random.Generator, max_nodes: int = 16) -> str:
    """One random formula that parses within the DSL limits (printed in canonical spacing)."""
    from gymkit.dsl import DSLError, parse
    from gymkit.dsl.analysis import node_count
    from gymkit.dsl.printer import to_text

    while True:
        text = _expr(rng, 0)
        if rng.random() < 0.5 and not text.startswith("rank("):
            text = f"rank({text})"
        try:
            expr = parse(text)
        except DSLError:
            continue
        if node_count(expr) <= max_nodes and any(f in text for f in FIELDS):
            return to_text(expr)


def alpha101_canonicals() -> set[str]:
    """Canonical forms of the 101 paper alphas (``dsl/alpha101.tsv``)."""
    from importlib.resources import files

    from gymkit.dsl import canonical, parse

    text = files("gymkit.dsl").joinpath("alpha101.tsv").read_text(encoding="utf-8")
    out = set()
    for line in text.splitlines()[1:]:
        if line.strip():
            out.add(canonical(parse(line.split("\t")[1])))
    return out


def warm_start_pairs(briefs: Sequence[str], n: int, seed: int, per_brief: int = 2,
                     accept: Callable[[str], bool] | None = None) -> list[tuple[str, str]]:
    """``n`` (brief, formula) pairs: briefs drawn uniformly, each with ``per_brief`` random formulas.

    Brief ``i``'s formulas come from ``default_rng([seed, i])`` (:func:`sample_formula`), so
    the answer depends on the brief (greedy answers to different briefs differ) while the
    mapping carries no alpha.  A formula whose canonical form is a paper alpha is redrawn, and
    so is one ``accept`` rejects (the warm start passes the gate: valid, not profitable).
    """
    from gymkit.dsl import canonical, parse

    rng = np.random.default_rng(seed)
    banned = alpha101_canonicals()
    pools: dict[int, list[str]] = {}

    def pool(i: int) -> list[str]:
        if i not in pools:
            r = np.random.default_rng([seed, i])
            got: list[str] = []
            while len(got) < per_brief:
                f = sample_formula(r)
                if canonical(parse(f)) not in banned and (accept is None or accept(f)):
                    got.append(f)
            pools[i] = got
        return pools[i]

    out = []
    for _ in range(n):
        i = int(rng.integers(len(briefs)))
        out.append((briefs[i], pool(i)[int(rng.integers(per_brief))]))
    return out


def corpus_sharpe(env: Any, formulas: Sequence[str]) -> dict[str, float]:
    """Score ``formulas`` on the train window: valid share; mean net/gross Sharpe and CPCV of the valid."""
    cards = [env.score(f"<alpha>{f}</alpha>") for f in formulas]
    valid = [c for c in cards if c.valid]
    sh = [float(c.metrics["sharpe"]) for c in valid]
    gross = [float(c.metrics["gross_sharpe"]) for c in valid]
    return {"n": len(cards), "valid_share": len(valid) / max(1, len(cards)),
            "mean_sharpe": float(np.mean(sh)) if sh else float("nan"),
            "mean_gross_sharpe": float(np.mean(gross)) if gross else float("nan"),
            "mean_abs_sharpe": float(np.mean(np.abs(sh))) if sh else float("nan"),
            "mean_cpcv": float(np.mean([c.channels["cpcv"] for c in valid])) if valid else float("nan")}
