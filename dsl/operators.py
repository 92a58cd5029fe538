"""THE operator table of the DSL: one :class:`OpSpec` row per operator holds every fact about it.

Parser (spellings, argument slots, precedence), limits (lookback rule), printer, canonical
form (commutativity, idempotence, constant folds), analysis (motif family), evaluator
(kernel), the DSL reference (docs/dsl.md, one-line semantics) and the reference tests all
read these rows; the dicts below the table are derived views of it.  Adding an operator is
one row here plus one kernel in the ``gymkit.dsl.kernels`` module its row names.

Name resolution is case-insensitive (the paper writes ``Ts_Rank``, ``ts_rank``,
``IndNeutralize``, ``indneutralize``, ``Log``, ``Sign``): every identifier is lower-cased
before it is looked up in :data:`NAMES`, and the printer writes canonical lower-case names.

Conventions every row's semantics share: values are float64 (T, N) panels, time on axis 0;
a non-finite input counts as missing and no operator outputs ±inf (it becomes NaN); a
time-series window is NaN unless all its d values are finite (``delay``, ``ts_delta`` and
``ts_ema`` state their own rule).  Lines marked * are choices where DESIGN §3 is silent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

EXPR, WINDOW, LEVEL = "expr", "window", "level"

# Lookback rules (DESIGN §3): how a call's lookback follows from its children's and window.
LB_MAX = "max"                # max over expression children
LB_ADD_D = "add_d"            # max(children) + d            (delay, ts_delta)
LB_ADD_D_MINUS_1 = "add_d_1"  # max(children) + d - 1        (every other window)
LB_D = "d"                    # d                            (adv(d), a field-like call)

# Printer precedence levels; the parser has one method per level.
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

    name: str                       # canonical (printed) name
    args: tuple[str, ...]           # argument kinds: 'expr' | 'window' | 'level'
    family: str                     # motif family for analysis.motifs
    lookback: str = LB_MAX          # one of the LB_* rules
    value_range: tuple[float, float] | None = None  # closed range of finite outputs, if known
    aliases: tuple[str, ...] = ()   # lower-case alternative spellings
    infix: str | None = None        # printer symbol for infix/prefix operators
    precedence: int = PREC_ATOM     # printer precedence of the infix form
    assoc: str | None = None        # 'left' | 'right' for binary infix operators
    commutative: bool = False       # operands may be sorted (binary ops only)
    idempotent: bool = False        # f(f(x)) == f(x): the novelty form collapses the wrapper
    kernel: str = ""                # "module.function" in gymkit.dsl.kernels
    doc: str = ""                   # one-line semantics: the value at session t
    fold: Callable[..., float] | None = None  # scalar function folding literal arguments
    fold_exact: bool = False        # fold is correctly rounded: canonical_key may use it too
    recursive: str | None = None    # why the memory is unbounded (its lookback is a warm-up)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One panel field: its lookback, motif family and whether panels may lack it."""

    name: str
    lookback: int
    family: str
    optional: bool = False


# ------------------------------------------------------------------ scalar folds
# Folds of literal arguments for the canonical forms.  fold_exact ones are correctly
# rounded, hence bit-identical to the kernels; the others (log, power, signed_power) may
# differ from the library by an ulp and are used only by the novelty form.
def _truth(x: bool) -> float:
    return 1.0 if x else 0.0


def _f_div(a: float, b: float) -> float:
    return a / b if b != 0.0 else math.nan


def _f_sqrt(a: float) -> float:
    return math.sqrt(a) if a >= 0.0 else math.nan


def _f_sign(a: float) -> float:
    return 0.0 if a == 0.0 else math.copysign(1.0, a)


def _f_min(a: float, b: float) -> float:
    """min of 0.0 and -0.0 depends on operand order: such calls stay unfolded (nan)."""
    return math.nan if a == b and math.copysign(1.0, a) != math.copysign(1.0, b) else min(a, b)


def _f_max(a: float, b: float) -> float:
    return math.nan if a == b and math.copysign(1.0, a) != math.copysign(1.0, b) else max(a, b)


def _f_pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except (OverflowError, ValueError):
        return math.nan


_E, _W, _L = EXPR, WINDOW, LEVEL
_BOOL = (0.0, 1.0)
_UNIT = (0.0, 1.0)


def _ts(name: str, family: str, doc: str, aliases: tuple[str, ...] = (), rng=None,
        lb=LB_ADD_D_MINUS_1, recursive: str | None = None) -> OpSpec:
    """An (x, d) time-series row with its kernel in kernels.rolling."""
    family_module = "ranking" if name == "ts_rank" else "rolling"
    return OpSpec(name, (_E, _W), family, lb, rng, aliases, kernel=f"{family_module}.{name}", doc=doc,
                  recursive=recursive)


def _py(name: str) -> str:
    """The Python name of an element-wise kernel (``and_`` for and: keywords and builtins)."""
    return f"{name}_" if name in ("and", "or", "abs", "min", "max") else name


def _bin(name: str, sym: str, prec: int, family: str, doc: str, fold: Callable, *,
         comm: bool = False, assoc: str = "left", rng=None) -> OpSpec:
    """A binary infix row with an element-wise kernel and an exact fold."""
    return OpSpec(name, (_E, _E), family, LB_MAX, rng, (), sym, prec, assoc, comm,
                  kernel=f"elementwise.{_py(name)}", doc=doc, fold=fold, fold_exact=True)


def _fn(name: str, args: tuple[str, ...], family: str, doc: str, **kw) -> OpSpec:
    """A function-call row; ``kernel`` defaults to elementwise.<name>."""
    kw.setdefault("kernel", f"elementwise.{_py(name)}")
    return OpSpec(name, args, family, doc=doc, **kw)


_NAN_EITHER = "NaN if either is NaN"
_ROWS: tuple[OpSpec, ...] = (
    # infix and prefix
    _bin("or", "||", PREC_OR, "logic", "1 if either is non-zero, else 0; * NaN if either is "
         "NaN (no short-circuit)", lambda a, b: _truth(a != 0.0 or b != 0.0), comm=True, rng=_BOOL),
    _bin("and", "&&", PREC_AND, "logic", "1 if both are non-zero, else 0; * NaN if either is "
         "NaN (no short-circuit: 0 && NaN is NaN)", lambda a, b: _truth(a != 0.0 and b != 0.0),
         comm=True, rng=_BOOL),
    _bin("lt", "<", PREC_CMP, "comparison", f"1 if x < y else 0; {_NAN_EITHER}",
         lambda a, b: _truth(a < b), rng=_BOOL),
    _bin("le", "<=", PREC_CMP, "comparison", f"1 if x ≤ y else 0; {_NAN_EITHER}",
         lambda a, b: _truth(a <= b), rng=_BOOL),
    _bin("gt", ">", PREC_CMP, "comparison", f"1 if x > y else 0; {_NAN_EITHER}",
         lambda a, b: _truth(a > b), rng=_BOOL),
    _bin("ge", ">=", PREC_CMP, "comparison", f"1 if x ≥ y else 0; {_NAN_EITHER}",
         lambda a, b: _truth(a >= b), rng=_BOOL),
    _bin("eq", "==", PREC_CMP, "comparison", f"1 if x = y else 0; {_NAN_EITHER}",
         lambda a, b: _truth(a == b), comm=True, rng=_BOOL),
    _bin("ne", "!=", PREC_CMP, "comparison", f"1 if x ≠ y else 0; {_NAN_EITHER}",
         lambda a, b: _truth(a != b), comm=True, rng=_BOOL),
    _bin("add", "+", PREC_ADD, "arithmetic", "x + y", lambda a, b: a + b, comm=True),
    _bin("sub", "-", PREC_ADD, "arithmetic", "x − y", lambda a, b: a - b),
    _bin("mul", "*", PREC_MUL, "arithmetic", "x · y", lambda a, b: a * b, comm=True),
    _bin("div", "/", PREC_MUL, "arithmetic", "x / y; division by 0 is NaN", _f_div),
    _fn("power", (_E, _E), "arithmetic", "x to the power y when real and finite, else NaN "
        "(negative x with non-integer y, 0 to a negative power); * power(x, 0) = 1 for finite x",
        infix="^", precedence=PREC_POWER, assoc="right", fold=_f_pow),
    _fn("neg", (_E,), "arithmetic", "−x", infix="-", precedence=PREC_UNARY,
        fold=lambda a: -a, fold_exact=True),
    _fn("where", (_E, _E, _E), "conditional", "c ? a : b — a where c ≠ 0 (even if b is NaN), "
        "else b; NaN where c is NaN", infix="?", precedence=PREC_TERNARY,
        fold=lambda c, a, b: a if c != 0.0 else b, fold_exact=True),
    # element-wise functions
    _fn("abs", (_E,), "transform", "|x|", idempotent=True, fold=abs, fold_exact=True),
    _fn("log", (_E,), "transform", "natural log for x > 0, else NaN",
        fold=lambda a: math.log(a) if a > 0.0 else math.nan),
    _fn("sign", (_E,), "transform", "−1, 0 or +1; sign(0) = 0", value_range=(-1.0, 1.0),
        idempotent=True, fold=_f_sign, fold_exact=True),
    _fn("sqrt", (_E,), "transform", "square root for x ≥ 0, else NaN", fold=_f_sqrt,
        fold_exact=True),
    _fn("signed_power", (_E, _E), "transform", "sign(x)·|x|^a, NaN when not finite (0 to a "
        "negative power is NaN)", aliases=("signedpower",),
        fold=lambda a, b: _f_sign(a) * _f_pow(abs(a), b)),
    _fn("min", (_E, _E), "transform", "element-wise minimum (min(x, d) with an integer d is "
        "ts_min); * −0.0 is returned as +0.0, so swapping operands keeps the bits",
        commutative=True, fold=_f_min, fold_exact=True),
    _fn("max", (_E, _E), "transform", "element-wise maximum (max(x, d) with an integer d is "
        "ts_max); * −0.0 is returned as +0.0", commutative=True, fold=_f_max, fold_exact=True),
    # cross-sectional
    _fn("rank", (_E,), "rank", "cross-sectional rank of the day, (r − 1)/(n − 1) in [0, 1] "
        "over the n finite values, ties averaged; n = 1 gives 0.5", value_range=_UNIT,
        idempotent=True, kernel="ranking.rank"),
    _fn("scale", (_E,), "scale", "cross-sectional x / Σ|x| of the day over the finite values; "
        "* Σ|x| = 0 gives a NaN row", value_range=(-1.0, 1.0), idempotent=True,
        kernel="cross_section.scale"),
    _fn("group_neutralize", (_E, _L), "group", "x minus the mean of the finite x of its sector "
        "or industry that day", aliases=("indneutralize",),
        kernel="cross_section.group_neutralize"),
    # time series (x, d)
    _ts("delay", "lag", "x, d sessions ago (NaN for the first d sessions)", lb=LB_ADD_D),
    _ts("ts_delta", "lag", "x today minus x d sessions ago", ("delta",), lb=LB_ADD_D),
    _ts("ts_mean", "ts_stat", "mean of the last d sessions"),
    _ts("ts_median", "ts_stat", "median of the last d sessions (d even: the mean of the two "
        "middle values)"),
    _ts("ts_std", "ts_stat", "standard deviation (ddof 1) of the last d sessions, as pandas; "
        "* a constant window gives 0, d = 1 gives NaN", ("stddev",)),
    _ts("ts_sum", "ts_stat", "sum of the last d sessions", ("sum",)),
    _ts("ts_max", "ts_stat", "maximum of the last d sessions"),
    _ts("ts_min", "ts_stat", "minimum of the last d sessions"),
    _ts("ts_product", "ts_stat", "product of the last d sessions", ("product",)),
    _ts("ts_decay_linear", "ts_stat", "weighted mean of the last d sessions, weights d (today) "
        "… 1", ("decay_linear",)),
    _ts("ts_ema", "ts_stat", "exponential moving average, α = 2/(d + 1), started at the first "
        "full window's mean; * a non-finite x gives NaN and restarts it", recursive=(
            "exponential recursion e_t = (1-a) e_(t-1) + a x_t (DESIGN §3): x[t-k] keeps "
            "weight a(1-a)^k forever; declared lookback d-1 is the warm-up")),
    _ts("ts_skew", "ts_stat", "skewness (bias-corrected, as pandas) of the last d sessions; "
        "zero variance or d < 3 gives NaN"),
    _ts("ts_kurt", "ts_stat", "excess kurtosis (bias-corrected, as pandas) of the last d "
        "sessions; zero variance or d < 4 gives NaN"),
    _ts("ts_slope", "ts_stat", "OLS slope of the last d sessions on 0 … d − 1; * d = 1 gives "
        "NaN, a constant window 0"),
    _ts("ts_rank", "ts_rank", "today's rank within the last d sessions, (#below + ½·#equal) / "
        "(d − 1) in [0, 1]; * d = 1 gives 0.5", rng=_UNIT),
    _ts("ts_argmax", "ts_rank", "sessions since the maximum of the last d (0 = today); * ties "
        "give the earliest", rng=(0.0, float(MAX_WINDOW - 1))),
    _ts("ts_argmin", "ts_rank", "sessions since the minimum of the last d (0 = today); * ties "
        "give the earliest", rng=(0.0, float(MAX_WINDOW - 1))),
    # time series (x, y, d)
    OpSpec("ts_corr", (_E, _E, _W), "correlation", LB_ADD_D_MINUS_1, (-1.0, 1.0),
           ("correlation",), kernel="rolling.ts_corr", doc="correlation of x and y over the "
           "last d sessions, as pandas; zero variance of x or y, or d = 1, gives NaN"),
    OpSpec("ts_cov", (_E, _E, _W), "correlation", LB_ADD_D_MINUS_1, None, ("covariance",),
           kernel="rolling.ts_cov", doc="covariance (ddof 1) of x and y over the last d "
           "sessions; a constant x or y window gives 0, d = 1 NaN"),
    # field-like: average daily dollar volume, written adv(d) or adv20
    OpSpec("adv", (_W,), "volume", LB_D, kernel="rolling.adv", doc="average daily dollar "
           "volume, mean of close · volume over d sessions (also written adv20)"),
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

RECURSIVE_OPERATORS: dict[str, str] = {
    spec.name: spec.recursive for spec in _ROWS if spec.recursive is not None}
"""Operators whose memory is unbounded by definition -> why (their lookback is a warm-up)."""
