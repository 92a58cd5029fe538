"""THE operator registry of the DSL: one row per operator, one per field.

Parser, limits, canonical form, printer, analysis and evaluator all read these tables;
adding an operator is one :class:`OpSpec` row here plus one kernel in
``gymkit.dsl.kernels.KERNELS`` under the same name.

Name resolution is case-insensitive (the paper writes ``Ts_Rank``, ``ts_rank``,
``IndNeutralize``, ``indneutralize``, ``Log``, ``Sign``): every identifier is lower-cased
before it is looked up in :data:`NAMES`, and the printer writes canonical lower-case names.
"""

from __future__ import annotations

from dataclasses import dataclass

EXPR, WINDOW, LEVEL = "expr", "window", "level"

# Lookback rules (DESIGN §3): how a call's lookback follows from its children's and window.
LB_MAX = "max"                # max over expression children
LB_ADD_D = "add_d"            # max(children) + d            (delay, ts_delta)
LB_ADD_D_MINUS_1 = "add_d_1"  # max(children) + d - 1        (every other window)
LB_D = "d"                    # d                            (adv(d), a field-like call)

# Printer precedence levels; the parser has one function per level.
PREC_TERNARY, PREC_OR, PREC_AND, PREC_CMP, PREC_ADD, PREC_MUL, PREC_UNARY, PREC_POWER = range(1, 9)
PREC_ATOM = 9

MAX_WINDOW = 252
MAX_LOOKBACK = 252
MAX_TOKENS = 256
MAX_DEPTH = 16
LEVELS = ("sector", "industry")


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One operator: everything every stage needs to know about it."""

    name: str                       # canonical name == kernel key in kernels.KERNELS
    args: tuple[str, ...]           # argument kinds: 'expr' | 'window' | 'level'
    family: str                     # motif family for analysis.motifs
    lookback: str = LB_MAX          # one of the LB_* rules
    value_range: tuple[float, float] | None = None  # closed range of finite outputs, if known
    aliases: tuple[str, ...] = ()   # lower-case alternative spellings
    infix: str | None = None        # printer symbol for infix/prefix operators
    precedence: int = PREC_ATOM     # printer precedence of the infix form
    assoc: str | None = None        # 'left' | 'right' for binary infix operators
    commutative: bool = False       # operands may be sorted (binary ops only)
    idempotent: bool = False        # f(f(x)) == f(x): canonical form collapses the wrapper

    @property
    def kernel(self) -> str:
        """Key of this operator's kernel in ``gymkit.dsl.kernels.KERNELS``."""
        return self.name


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One panel field: its lookback, motif family and whether panels may lack it."""

    name: str
    lookback: int
    family: str
    optional: bool = False


_E, _W, _L = EXPR, WINDOW, LEVEL
_BOOL = (0.0, 1.0)
_UNIT = (0.0, 1.0)


def _ts(name: str, family: str, aliases: tuple[str, ...] = (), rng=None, lb=LB_ADD_D_MINUS_1):
    return OpSpec(name, (_E, _W), family, lb, rng, aliases)


def _bin(name, sym, prec, family, *, comm=False, assoc="left", rng=None):
    return OpSpec(name, (_E, _E), family, LB_MAX, rng, (), sym, prec, assoc, comm)


_ROWS: tuple[OpSpec, ...] = (
    # infix and prefix
    _bin("or", "||", PREC_OR, "logic", comm=True, rng=_BOOL),
    _bin("and", "&&", PREC_AND, "logic", comm=True, rng=_BOOL),
    _bin("lt", "<", PREC_CMP, "comparison", rng=_BOOL),
    _bin("le", "<=", PREC_CMP, "comparison", rng=_BOOL),
    _bin("gt", ">", PREC_CMP, "comparison", rng=_BOOL),
    _bin("ge", ">=", PREC_CMP, "comparison", rng=_BOOL),
    _bin("eq", "==", PREC_CMP, "comparison", comm=True, rng=_BOOL),
    _bin("ne", "!=", PREC_CMP, "comparison", comm=True, rng=_BOOL),
    _bin("add", "+", PREC_ADD, "arithmetic", comm=True),
    _bin("sub", "-", PREC_ADD, "arithmetic"),
    _bin("mul", "*", PREC_MUL, "arithmetic", comm=True),
    _bin("div", "/", PREC_MUL, "arithmetic"),
    OpSpec("power", (_E, _E), "arithmetic", infix="^", precedence=PREC_POWER, assoc="right"),
    OpSpec("neg", (_E,), "arithmetic", infix="-", precedence=PREC_UNARY),
    OpSpec("where", (_E, _E, _E), "conditional", infix="?", precedence=PREC_TERNARY),
    # element-wise functions
    OpSpec("abs", (_E,), "transform", idempotent=True),
    OpSpec("log", (_E,), "transform"),
    OpSpec("sign", (_E,), "transform", value_range=(-1.0, 1.0), idempotent=True),
    OpSpec("sqrt", (_E,), "transform"),
    OpSpec("signed_power", (_E, _E), "transform", aliases=("signedpower",)),
    OpSpec("min", (_E, _E), "transform", commutative=True),
    OpSpec("max", (_E, _E), "transform", commutative=True),
    # cross-sectional
    OpSpec("rank", (_E,), "rank", value_range=_UNIT, idempotent=True),
    OpSpec("scale", (_E,), "scale", value_range=(-1.0, 1.0), idempotent=True),
    OpSpec("group_neutralize", (_E, _L), "group", aliases=("indneutralize",)),
    # time series (x, d)
    _ts("delay", "lag", lb=LB_ADD_D),
    _ts("ts_delta", "lag", ("delta",), lb=LB_ADD_D),
    _ts("ts_mean", "ts_stat"),
    _ts("ts_std", "ts_stat", ("stddev",)),
    _ts("ts_sum", "ts_stat", ("sum",)),
    _ts("ts_max", "ts_stat"),
    _ts("ts_min", "ts_stat"),
    _ts("ts_product", "ts_stat", ("product",)),
    _ts("ts_decay_linear", "ts_stat", ("decay_linear",)),
    _ts("ts_ema", "ts_stat"),
    _ts("ts_skew", "ts_stat"),
    _ts("ts_kurt", "ts_stat"),
    _ts("ts_slope", "ts_stat"),
    _ts("ts_rank", "ts_rank", rng=_UNIT),
    _ts("ts_argmax", "ts_rank", rng=(0.0, float(MAX_WINDOW - 1))),
    _ts("ts_argmin", "ts_rank", rng=(0.0, float(MAX_WINDOW - 1))),
    # time series (x, y, d)
    OpSpec("ts_corr", (_E, _E, _W), "correlation", LB_ADD_D_MINUS_1, (-1.0, 1.0), ("correlation",)),
    OpSpec("ts_cov", (_E, _E, _W), "correlation", LB_ADD_D_MINUS_1, None, ("covariance",)),
    # field-like: average daily dollar volume, written adv(d) or adv20
    OpSpec("adv", (_W,), "volume", LB_D),
)

OPERATORS: dict[str, OpSpec] = {spec.name: spec for spec in _ROWS}
"""Canonical operator name -> its row."""

FIELDS: dict[str, FieldSpec] = {f.name: f for f in (
    FieldSpec("open", 0, "price"),
    FieldSpec("high", 0, "price"),
    FieldSpec("low", 0, "price"),
    FieldSpec("close", 0, "price"),
    FieldSpec("vwap", 0, "price"),
    FieldSpec("returns", 1, "price"),
    FieldSpec("volume", 0, "volume"),
    FieldSpec("cap", 0, "fundamental", optional=True),
)}
"""Field name -> its row. ``cap`` is optional: not every panel has it."""

# Function-call spellings (lower-case) -> canonical operator name.  Infix-only operators
# (add, lt, ...) are also callable by their canonical names: add(x, y) == x + y.
NAMES: dict[str, str] = {}
for _spec in _ROWS:
    NAMES[_spec.name] = _spec.name
    for _alias in _spec.aliases:
        NAMES[_alias] = _spec.name

# Group-level spellings (lower-case) -> level. IndClass.subindustry maps to industry:
# panels carry two group levels only.
LEVEL_NAMES: dict[str, str] = {
    "sector": "sector",
    "industry": "industry",
    "indclass.sector": "sector",
    "indclass.industry": "industry",
    "indclass.subindustry": "industry",
    "subindustry": "industry",
}

INFIX: dict[str, str] = {spec.infix: spec.name for spec in _ROWS
                         if spec.infix is not None and len(spec.args) == 2}
"""Binary infix symbol -> canonical operator name."""

# Paper convention (#29): min/max with an integer literal second argument are ts_min/ts_max.
TS_FORM_OF = {"min": "ts_min", "max": "ts_max"}


def combine_lookback(spec: OpSpec, children: list[int] | tuple[int, ...], window: int) -> int:
    """Lookback of a call of ``spec`` given its expression children's lookbacks and window.

    DESIGN §3: fields 0 (returns 1, adv(d) d); delay/ts_delta add d; other windows add
    d - 1; several children take the max.
    """
    base = max(children) if children else 0
    rule = spec.lookback
    if rule == LB_MAX:
        return base
    if rule == LB_ADD_D_MINUS_1:
        return base + window - 1
    if rule == LB_ADD_D:
        return base + window
    return window  # LB_D


VOCABULARY: tuple[str, ...] = tuple(sorted(set(NAMES) | set(FIELDS) | set(LEVELS)))
"""Every public name of the DSL; error messages only ever suggest names from here."""
