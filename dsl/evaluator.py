"""Evaluate a formula on a panel: AST -> calls of the Numba kernels, with a sub-expression cache.

``evaluate(expr_or_text, panel)`` returns the formula's (T, N) float64 values, exactly
as the operator table of :mod:`gymkit.dsl.kernels` (DESIGN §3) defines them.

- Literals stay Python floats while they only meet element-wise operators (``x * 2``
  is one pass, not a broadcast first); they become (T, N) arrays only where an
  operator needs a panel (time series, cross-sectional), and the final result is
  always (T, N).
- With a cache (the default, :data:`gymkit.dsl.cache.DEFAULT_CACHE`) the tree is first
  put in exact form (:func:`gymkit.dsl.canonical.exact_form`), and every operator call is
  looked up under ``(canonical_key(subtree), panel.fingerprint)`` before it is computed:
  the answers of a GRPO group and the stress worlds' re-scores share sub-trees.  Equal
  keys are bit-identical by the canonical_key contract, so results are identical with
  the cache on or off (a test).  ``cache=None`` evaluates the tree as given, uncached.
- The returned array is READ-ONLY (a view whose base is read-only, so its flag cannot be
  flipped back): it may be shared with the cache or be a panel field, and no caller can
  corrupt either.  Call ``.copy()`` for a writable array.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from gymkit.dsl.ast import Call, Field, Level, Node, Num, Window
from gymkit.dsl.cache import DEFAULT_CACHE, EvalCache
from gymkit.dsl.canonical import exact_form
from gymkit.dsl.errors import DSLError
from gymkit.dsl.kernels import ELEMENTWISE, KERNELS
from gymkit.dsl.operators import EXPR, FIELDS, LEVELS, OPERATORS
from gymkit.dsl.parser import parse
from gymkit.dsl.printer import to_text

__all__ = ["EvalCache", "evaluate"]


class PanelLike(Protocol):
    """What the evaluator needs of a panel (``gymkit.data.Panel`` provides it)."""

    T: int
    N: int
    fingerprint: str

    def field(self, name: str) -> np.ndarray: ...
    def has_field(self, name: str) -> bool: ...
    def group_codes(self, level: str) -> np.ndarray: ...


Value = np.ndarray | float


def evaluate(expr: str | Node, panel: PanelLike, *,
             cache: EvalCache | None = DEFAULT_CACHE) -> np.ndarray:
    """Values of ``expr`` (DSL text or AST) on ``panel``: a read-only (T, N) float64 array.

    Text is parsed with :func:`gymkit.dsl.parser.parse` (its ``DSLError`` propagates).
    A field the panel lacks raises ``DSLError('field_unavailable')``, a group level it
    lacks ``DSLError('group_unavailable')``.  ``cache`` is the sub-expression cache to
    use (``None``: no caching); results are bit-identical either way.  A pandas/polars
    frame (long or wide) is read by ``gymkit.data.load_panel`` first, as ``make`` reads it.
    """
    if not hasattr(panel, "has_field"):
        from gymkit.data.loaders import is_frame, load_panel

        if is_frame(panel):
            panel = load_panel(panel)
    node = _parse_for(expr, panel) if isinstance(expr, str) else expr
    if cache is not None:
        node = exact_form(node)
    value = _Evaluation(panel, cache).value(node)
    return _read_only_result(value, (panel.T, panel.N))


def _parse_for(text: str, panel: PanelLike) -> Node:
    """Parse ``text``, checking its fields and group levels against ``panel`` (with positions)."""
    fields = [name for name in FIELDS if panel.has_field(name)]
    has_groups = getattr(panel, "has_groups", None)
    levels = None if has_groups is None else [lv for lv in LEVELS if has_groups(lv)]
    return parse(text, fields=fields, levels=levels)


def _read_only_result(value: Value, shape: tuple[int, int]) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        value = np.full(shape, float(value))
    if value.flags.writeable:
        value.setflags(write=False)  # we own it: nobody else holds a writable reference
    return value.view()


class _Evaluation:
    """One evaluation of one tree on one panel (keys built on the way down)."""

    __slots__ = ("cache", "panel", "shape")

    def __init__(self, panel: PanelLike, cache: EvalCache | None) -> None:
        self.panel = panel
        self.cache = cache
        self.shape = (panel.T, panel.N)

    def value(self, node: Node) -> Value:
        if isinstance(node, Num):
            return float(node.value)
        if isinstance(node, Field):
            return self.field(node.name)
        if not isinstance(node, Call):
            raise DSLError("syntax", -1, f"cannot evaluate a bare {type(node).__name__} node")
        if self.cache is None:
            return self.call(node)
        key = (to_text(node), self.panel.fingerprint)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        out = self.call(node)
        if isinstance(out, np.ndarray):
            out = self.cache.put(key, out)
        return out

    def field(self, name: str) -> np.ndarray:
        if not self.panel.has_field(name):
            raise DSLError("field_unavailable", -1,
                           f"field '{name}' is not available on this panel")
        return self.panel.field(name)

    def call(self, node: Call) -> Value:
        spec = OPERATORS.get(node.op)
        if spec is None or len(spec.args) != len(node.args):
            raise DSLError("unknown_operator", -1, f"cannot evaluate operator '{node.op}'")
        if node.op == "adv":
            return KERNELS["adv"](self.field("close"), self.field("volume"), node.args[0].days)
        elementwise = node.op in ELEMENTWISE
        args: list[object] = []
        for kind, arg in zip(spec.args, node.args, strict=True):
            if isinstance(arg, Window):
                args.append(arg.days)
            elif isinstance(arg, Level):
                args.append(self.group_codes(arg.name))
            else:
                if kind != EXPR:
                    raise DSLError("window_type", -1, f"'{node.op}' got an expression where a "
                                   f"{kind} belongs")
                v = self.value(arg)
                args.append(v if elementwise or isinstance(v, np.ndarray)
                            else np.full(self.shape, v))
        return KERNELS[node.op](*args)

    def group_codes(self, level: str) -> np.ndarray:
        has = getattr(self.panel, "has_groups", None)
        available = has(level) if has is not None else True
        if available:
            try:
                return self.panel.group_codes(level)
            except (KeyError, ValueError):
                pass
        raise DSLError("group_unavailable", -1,
                       f"group level '{level}' is not available on this panel")
