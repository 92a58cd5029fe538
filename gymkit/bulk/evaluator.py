"""Evaluate MANY formulas on one panel held on a torch device, sharing sub-expressions.

``evaluate_many(exprs, panel, device=...)`` returns one float64 (T, N) tensor per formula,
equal to ``gymkit.dsl.evaluate`` of it (the gate: tests/bulk).  How:

1. Every formula is put in exact form (:func:`gymkit.dsl.canonical.exact_form`), and its
   calls are numbered bottom-up by operator and operands (node ids, literals by their
   bits): equal sub-trees of the exact form (equal texts, bit-identical by the
   canonical_key contract) get one number, so a sub-tree shared by several formulas (or
   twice by one) is one node.
2. Nodes are scheduled by height (a node's height is 1 + its children's highest); at each
   height, nodes of the same operator, window, group level and operand kinds (panel or
   literal; the exponent where ``power`` has a fast path) are stacked along a batch axis
   and computed in ONE call of the :mod:`gymkit.bulk.ops` kernel.
3. A node's tensor is released once its last consumer has run (roots are kept).

Literals stay Python floats as long as they only meet element-wise operators, exactly as
the CPU evaluator keeps them (a call of literals only is computed as a scalar); they are
broadcast to the panel where a cross-sectional or time-series operator needs one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from gymkit.bulk import ops
from gymkit.dsl.ast import Call, Field, Level, Node, Num, Window
from gymkit.dsl.canonical import exact_form
from gymkit.dsl.errors import DSLError
from gymkit.dsl.operators import FIELDS, LEVELS, OPERATORS
from gymkit.dsl.parser import parse

__all__ = ["DevicePanel", "Plan", "evaluate_many", "plan"]

_FAST_POWERS = (2.0, 0.5, 1.0)


class DevicePanel:
    """A panel's fields and group codes as torch tensors on ``device`` (loaded on first use)."""

    def __init__(self, panel, device: str | torch.device = "cpu") -> None:
        self.panel = panel
        self.device = torch.device(device)
        self.T, self.N = panel.T, panel.N
        self._fields: dict[str, torch.Tensor] = {}
        self._codes: dict[str, torch.Tensor] = {}

    def field(self, name: str) -> torch.Tensor:
        """The (T, N) float64 tensor of field ``name`` (DSLError if the panel lacks it)."""
        if name not in self._fields:
            if not self.panel.has_field(name):
                raise DSLError("field_unavailable", -1, f"field '{name}' is not available on this panel")
            a = self.panel.field(name)
            self._fields[name] = torch.as_tensor(a.copy(), dtype=torch.float64, device=self.device)
        return self._fields[name]

    def codes(self, level: str) -> torch.Tensor:
        """The (N,) int64 group codes of ``level`` (-1: no group)."""
        if level not in self._codes:
            has = getattr(self.panel, "has_groups", None)
            if has is not None and not has(level):
                raise DSLError("group_unavailable", -1, f"group level '{level}' is not available on this panel")
            c = self.panel.group_codes(level)
            self._codes[level] = torch.as_tensor(c.copy(), dtype=torch.int64, device=self.device)
        return self._codes[level]


@dataclass(slots=True)
class _Node:
    op: str
    args: tuple  # int (node id) | float (literal) | ("w", d) | ("l", level) | ("f", field)
    height: int


@dataclass(slots=True)
class Plan:
    """The shared DAG of a batch: ``nodes`` by id, ``roots[i]`` = formula i's node id or
    literal value, ``groups`` = the batched kernel calls in execution order."""

    nodes: list[_Node]
    roots: list[int | float | tuple]
    groups: list[list[int]]

    @property
    def n_calls(self) -> int:
        """Number of distinct operator calls (after sharing)."""
        return len(self.nodes)


def _parse_for(text: str, panel) -> Node:
    fields = [name for name in FIELDS if panel.has_field(name)]
    has_groups = getattr(panel, "has_groups", None)
    levels = None if has_groups is None else [lv for lv in LEVELS if has_groups(lv)]
    return parse(text, fields=fields, levels=levels)


def plan(exprs: Sequence[str | Node], panel) -> Plan:
    """Build the shared DAG and the batched schedule of ``exprs`` (texts or ASTs) on ``panel``.

    Text is parsed against the panel's fields and levels (DSLError propagates)."""
    ids: dict[tuple, int] = {}
    nodes: list[_Node] = []

    def visit(node: Node):
        if isinstance(node, Num):
            return float(node.value)
        if isinstance(node, Field):
            return ("f", node.name)
        if not isinstance(node, Call):
            raise DSLError("syntax", -1, f"cannot evaluate a bare {type(node).__name__} node")
        spec = OPERATORS.get(node.op)
        if spec is None or len(spec.args) != len(node.args):
            raise DSLError("unknown_operator", -1, f"cannot evaluate operator '{node.op}'")
        args: list = []
        for arg in node.args:
            if isinstance(arg, Window):
                args.append(("w", arg.days))
            elif isinstance(arg, Level):
                args.append(("l", arg.name))
            else:
                args.append(visit(arg))
        if node.op in ops.ELEMENTWISE and all(isinstance(a, float) for a in args):
            return _scalar_call(node.op, args)
        key = (node.op, tuple(_arg_key(a) for a in args))
        if key in ids:
            return ids[key]
        height = 1 + max((nodes[a].height for a in args if isinstance(a, int)), default=0)
        ids[key] = len(nodes)
        nodes.append(_Node(node.op, tuple(args), height))
        return ids[key]

    roots = []
    for e in exprs:
        tree = _parse_for(e, panel) if isinstance(e, str) else e
        roots.append(visit(exact_form(tree)))
    buckets: dict[tuple, list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        buckets[(n.height, *_signature(n))].append(i)
    groups = [buckets[k] for k in sorted(buckets, key=lambda k: (k[0], repr(k[1:])))]
    return Plan(nodes, roots, groups)


def _arg_key(a) -> tuple:
    """A call's operand in its node key: a node id, a literal by its exact bits (-0.0 is not
    0.0), or the window / level / field tuple as is.  Equal keys are equal sub-trees (their
    operands already merged), so this numbers calls as their text does, in one pass (the
    text of every sub-tree was printed again at every level: ~1/3 of a cold plan)."""
    if isinstance(a, int):
        return ("c", a)
    if isinstance(a, float):
        return ("x", a.hex())
    return a


def _signature(n: _Node) -> tuple:
    """What nodes must share to be stacked into one kernel call."""
    kinds = []
    for i, a in enumerate(n.args):
        if isinstance(a, int) or (isinstance(a, tuple) and a[0] == "f"):
            kinds.append("P")
        elif isinstance(a, float):
            fast = n.op in ("power", "signed_power") and i == 1 and a in _FAST_POWERS
            kinds.append(("S", a) if fast else "S")
        elif n.op == "ts_ema" and a[0] == "w":
            kinds.append("w*")  # one recurrence for every window (ops.ts_ema takes a list)
        else:
            kinds.append(a)  # ("w", d) or ("l", level)
    return (n.op, tuple(kinds))


def _scalar_call(op: str, args: list[float]) -> float:
    """An element-wise call of literals only, computed as a scalar (as the CPU evaluator)."""
    t = [torch.tensor(a, dtype=torch.float64) for a in args]
    return float(ops.ELEMENTWISE[op](*t))


def evaluate_many(exprs: Sequence[str | Node], panel, *, device: str | torch.device = "cpu",
                  dpanel: DevicePanel | None = None) -> list[torch.Tensor]:
    """Values of every formula of ``exprs`` on ``panel``: float64 (T, N) tensors on ``device``,
    equal to ``gymkit.dsl.evaluate`` (NaN masks identical; values within the gate of
    tests/bulk).  ``dpanel`` reuses a :class:`DevicePanel` already on the device."""
    dp = dpanel if dpanel is not None else DevicePanel(panel, device)
    p = plan(exprs, panel)
    return run_plan(p, dp)


def run_plan(p: Plan, dp: DevicePanel) -> list[torch.Tensor]:
    """Execute plan ``p`` on device panel ``dp``; one (T, N) tensor per root."""
    shape = (dp.T, dp.N)
    refs = [0] * len(p.nodes)
    for n in p.nodes:
        for a in n.args:
            if isinstance(a, int):
                refs[a] += 1
    keep = {r for r in p.roots if isinstance(r, int)}
    values: dict[int, torch.Tensor] = {}

    def panel_arg(a) -> torch.Tensor:
        if isinstance(a, int):
            return values[a]
        return dp.field(a[1])

    for group in p.groups:
        first = p.nodes[group[0]]
        op = first.op
        stacked: list = []
        for pos, a0 in enumerate(first.args):
            if op == "ts_ema" and isinstance(a0, tuple) and a0[0] == "w":
                stacked.append([p.nodes[i].args[pos][1] for i in group])
            elif isinstance(a0, tuple) and a0[0] in ("w", "l"):
                stacked.append(a0[1] if a0[0] == "w" else dp.codes(a0[1]))
            elif isinstance(a0, float):
                col = [p.nodes[i].args[pos] for i in group]
                s = torch.tensor(col, dtype=torch.float64, device=dp.device).view(-1, 1, 1)
                stacked.append(s if op in ops.ELEMENTWISE else s.expand(len(group), *shape))
            elif len(group) == 1:  # a view, not a copy (no kernel writes into its operands)
                stacked.append(panel_arg(first.args[pos])[None])
            else:
                stacked.append(torch.stack([panel_arg(p.nodes[i].args[pos]) for i in group]))
        out = _call(op, first, stacked, dp)
        for j, i in enumerate(group):
            values[i] = out[j]
        for i in group:
            for a in p.nodes[i].args:
                if isinstance(a, int):
                    refs[a] -= 1
                    if refs[a] == 0 and a not in keep:
                        del values[a]
    result = []
    for r in p.roots:
        if isinstance(r, int):
            result.append(values[r])
        elif isinstance(r, float):
            result.append(torch.full(shape, r, dtype=torch.float64, device=dp.device))
        else:
            result.append(dp.field(r[1]))
    return result


def _call(op: str, node: _Node, args: list, dp: DevicePanel) -> torch.Tensor:
    if op == "adv":
        close, volume = dp.field("close")[None], dp.field("volume")[None]
        return ops.adv(close, volume, int(args[0]))
    if op in ops.ELEMENTWISE:
        fn = ops.ELEMENTWISE[op]
        if op in ("power", "signed_power") and isinstance(node.args[1], float) \
                and node.args[1] in _FAST_POWERS and not isinstance(node.args[0], float):
            return fn(args[0], args[1], fast=node.args[1])
        out = fn(*args)
        return out
    kernel = ops.PANEL_OPS.get(op)
    if kernel is None:
        raise DSLError("unknown_operator", -1, f"operator '{op}' has no torch kernel in gymkit.bulk.ops")
    return kernel(*args)
