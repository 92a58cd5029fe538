"""Formulas and answers the audit scores: probes, known-good, naive baselines, random and
mutated formulas.  Everything is deterministic (fixed lists or a seeded ``numpy`` generator).

- :data:`KNOWN_GOOD`: textbook formulas (short-term reversal, its sector-neutral version, a
  volume-surprise formula, two of the seed's winners); hand-play scores them.
- :data:`NAIVE_BASELINES`: answers that must never earn a positive reward (empty, refusals,
  constants, ``x - x``, data-availability masks, warm-up indicators, pure noise).
- :func:`random_formula`: a random AST over the WHOLE operator registry as it is at call time
  (an operator added to :data:`gymkit.dsl.operators.OPERATORS`, even by a test, is drawn too).
- :func:`unit_formulas`: one call of every operator on panel fields.
- :func:`sample_groups`: the built-in answer sampler of the variance check — groups of 8
  answers, each group a 101-alpha formula and seven mutations of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gymkit.dsl.ast import Call, Field, Level, Node, Num, Window
from gymkit.dsl.operators import EXPR, LEVEL, OPERATORS, WINDOW

__all__ = ["KNOWN_GOOD", "NAIVE_BASELINES", "probe_answers", "random_formula", "sample_groups",
           "tag", "unit_formulas"]


def tag(formula: str) -> str:
    """Wrap a formula in the answer tag."""
    return f"<alpha>{formula}</alpha>"


#: Textbook formulas a competent human would try first (hand-play): reversal, volume
#: surprise, volume-price correlation, abnormal volume.  (On the real 46-stock panel only the
#: last one earns a positive reward with the default configuration.)
KNOWN_GOOD: tuple[str, ...] = (
    "rank(-ts_sum(returns, 5))",
    "rank(group_neutralize(-ts_sum(returns, 5), sector))",
    "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))",
    "rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))",
    "rank(-ts_delta(close, 3) / ts_std(returns, 21))",
    "rank(-ts_corr(rank(volume), rank(close), 10))",
    "rank(group_neutralize(-ts_mean(volume / adv(63), 10), sector))",  # quiet-volume, sector-neutral
)

#: (label, completion): answers that must never earn a positive reward.  The DSL has no
#: ticker, date or random field, so "reads only ticker order / the calendar" and "pure
#: noise" are approximated by their closest expressible forms (see tests/leak docstrings).
NAIVE_BASELINES: tuple[tuple[str, str], ...] = (
    ("empty answer", ""),
    ("whitespace", "   \n"),
    ("empty tag", "<alpha></alpha>"),
    ("refusal", "I cannot answer this question from the information given."),
    ("reasoning only", "<think>rank the stocks by momentum</think>"),
    ("two tags", "<alpha>rank(close)</alpha><alpha>rank(open)</alpha>"),
    ("constant 0", tag("0")),
    ("constant 1", tag("1")),
    ("rank of a constant", tag("rank(5)")),
    ("x - x", tag("rank(close) - rank(close)")),
    ("x - x, two motifs", tag("rank(volume) * ts_rank(returns, 5) - "
                              "rank(volume) * ts_rank(returns, 5)")),
    ("delayed constant (calendar warm-up)", tag("delay(1, 5)")),
    ("data-availability mask", tag("rank(close == close)")),
    ("warm-up indicator (calendar)", tag("rank(ts_max(close, 252) > 0)")),
    ("group membership only", tag("rank(group_neutralize(1, sector))")),
    ("noise: parity of volume", tag("rank(power(-1, volume))")),
    ("noise: smoothed parity 20", tag("rank(ts_mean(power(-1, volume), 20))")),
    ("noise: smoothed parity 120", tag("rank(ts_mean(power(-1, volume), 120))")),
    ("same-close look-ahead (Aug 9)", tag("rank(returns)")),
)

_HACKS: tuple[str, ...] = (
    "rank(ts_std(returns, 63))",                       # bare motif, IC ~ 0 (Jul 6)
    "rank(ts_mean(close, 250))",                       # static tilt (Jul 7)
    "rank(close * (1 + 2 * returns))",                 # price-level tilt (Jul 6)
    "scale(ts_rank(ts_delta(volume, 23), 47) - ts_rank(ts_delta(volume, 23), 47))",
)


def probe_answers(env: Any) -> list[str]:
    """A fixed mix of answers for comparisons: known-good, hacks, invalid ones, a duplicate
    and one with reasoning (so group channels and every error layer are exercised)."""
    out = [tag(f) for f in KNOWN_GOOD[:4]] + [tag(f) for f in _HACKS]
    out += ["<think>fade the last week</think>" + tag("rank(-ts_sum(returns, 4))"),
            tag("rank(-ts_sum(returns, 5))"), tag("rank(clos)"), "no tag at all",
            tag("ts_mean(ts_mean(close, 200), 100)"), tag("close - close")]
    return out


def _fields(panel: Any) -> list[str]:
    from gymkit.dsl.operators import FIELDS

    return [f for f in FIELDS if panel.has_field(f)]


def _levels(panel: Any) -> list[str]:
    from gymkit.dsl.operators import LEVELS

    has = getattr(panel, "has_groups", None)
    return [lv for lv in LEVELS if has is not None and has(lv)]


def random_formula(rng: np.random.Generator, panel: Any, *, max_depth: int = 4,
                   max_window: int = 12) -> Node:
    """A random AST over every registered operator that ``panel`` supports (module doc)."""
    fields = _fields(panel)
    levels = _levels(panel)
    ops = sorted(op for op, spec in OPERATORS.items()
                 if op != "adv" and (levels or LEVEL not in spec.args))
    numbers = (0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e-9)

    def leaf() -> Node:
        u = rng.random()
        if u < 0.2:
            return Num(numbers[int(rng.integers(len(numbers)))])
        if u < 0.3 and "adv" in OPERATORS:
            return Call("adv", (Window(int(rng.integers(1, max_window + 1))),))
        return Field(fields[int(rng.integers(len(fields)))])

    def node(depth: int) -> Node:
        if depth == 0 or rng.random() < 0.25:
            return leaf()
        spec = OPERATORS[ops[int(rng.integers(len(ops)))]]
        args: list[Node] = []
        for kind in spec.args:
            if kind == EXPR:
                args.append(node(depth - 1))
            elif kind == WINDOW:
                args.append(Window(int(rng.integers(1, max_window + 1))))
            else:
                args.append(Level(levels[int(rng.integers(len(levels)))]))
        return Call(spec.name, tuple(args))

    return node(max_depth)


def unit_formulas(panel: Any, window: int) -> list[tuple[str, Node]]:
    """``(op, op(fields..., window, level))`` for every registered operator ``panel`` supports.

    Expression arguments are distinct fields (close, volume, open) so that every argument
    position is exercised; a perturbation of one row perturbs all of them.
    """
    levels = _levels(panel)
    out = []
    for op, spec in OPERATORS.items():
        if LEVEL in spec.args and not levels:
            continue
        fields = iter(("close", "volume", "open"))
        args: list[Node] = []
        for kind in spec.args:
            if kind == EXPR:
                args.append(Field(next(fields)))
            elif kind == WINDOW:
                args.append(Window(window))
            else:
                args.append(Level(levels[0]))
        out.append((op, Call(op, tuple(args))))
    return out


# ------------------------------------------------------------ the built-in answer sampler
_OP_SWAPS = {"ts_mean": "ts_sum", "ts_sum": "ts_decay_linear", "ts_decay_linear": "ts_mean",
             "ts_max": "ts_min", "ts_min": "ts_max", "rank": "scale", "scale": "rank",
             "ts_argmax": "ts_argmin", "ts_argmin": "ts_argmax", "ts_corr": "ts_cov",
             "ts_cov": "ts_corr"}
_FIELD_SWAPS = {"close": "vwap", "vwap": "open", "open": "close", "high": "low", "low": "high",
                "volume": "returns", "returns": "volume"}


def _map(node: Node, fn) -> Node:
    if isinstance(node, Call):
        node = Call(node.op, tuple(_map(a, fn) for a in node.args))
    return fn(node)


def _mutate(expr: Node, other: Node, rng: np.random.Generator, fields: list[str]) -> Node:
    kind = int(rng.integers(6))
    if kind == 0:  # window jitter
        return _map(expr, lambda n: Window(max(1, n.days + int(rng.integers(-3, 4))))
                    if isinstance(n, Window) else n)
    if kind == 1:
        return Call("neg", (expr,))
    if kind == 2:  # operator swap, each call with probability 1/2
        return _map(expr, lambda n: Call(_OP_SWAPS[n.op], n.args)
                    if isinstance(n, Call) and n.op in _OP_SWAPS and rng.random() < 0.5 else n)
    if kind == 3:
        return _map(expr, lambda n: Field(_FIELD_SWAPS[n.name])
                    if isinstance(n, Field) and _FIELD_SWAPS.get(n.name) in fields
                    and rng.random() < 0.5 else n)
    if kind == 4:
        return Call("add", (Call("rank", (expr,)), Call("rank", (other,))))
    return Call("rank", (Call("ts_delta", (expr, Window(int(rng.integers(1, 6))))),))


def sample_groups(panel: Any, n_groups: int = 12, group_size: int = 8,
                  seed: int = 0) -> list[list[str]]:
    """Groups of answers from the 101-alpha corpus with mutations (module doc).

    Each group: one corpus formula and ``group_size - 1`` mutations of it (window jitter,
    negation, operator or field swaps, a combination with another alpha, a delta); one answer
    in four of the groups loses its tag or is truncated, as a base model's answers do.
    """
    from gymkit.dsl import DSLError, parse, to_text
    from gymkit.seed_archive import alpha101_formulas

    fields = _fields(panel)
    levels = _levels(panel)
    rng = np.random.default_rng(seed)
    corpus = []
    for _, text in alpha101_formulas():
        try:
            corpus.append(parse(text, fields=fields, levels=levels))
        except DSLError:
            continue
    groups = []
    for g in range(n_groups):
        base = corpus[int(rng.integers(len(corpus)))]
        other = corpus[int(rng.integers(len(corpus)))]
        answers = [tag(to_text(base))]
        while len(answers) < group_size:
            answers.append(tag(to_text(_mutate(base, other, rng, fields))))
        if g % 4 == 3:
            answers[-1] = answers[-1][: len(answers[-1]) // 2]
        groups.append(answers)
    return groups
