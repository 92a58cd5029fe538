"""Design briefs: a seeded generator from six facets, a template-family split, AST compliance.

A brief is the task prompt's variable part, in the style of the seed's example (alpha post §4)::

    Market: US-listed stocks trading on weekday sessions. Design an alpha whose PRIMARY
    mechanism is: <mechanism>. Target horizon: roughly <N>-day windows. Inputs: <input rule>.
    Structure: <structural hint>. Constraint: <forbidden pattern>. Risk preference: <risk>.

Facets (one table each below): ``MECHANISMS`` (12 template families), ``HORIZONS``,
``INPUT_RULES``, ``HINTS``, ``FORBIDDEN``, ``RISKS``.  Every option except most risk
preferences carries a deterministic check on the parsed formula (the AST), so compliance is
measured, not trusted to the prompt.

Identity and split.  ``brief_id`` = first 16 hex digits of sha256 of the brief text (the text
determines every facet).  The split is by template family (playbook §2, semantic split): the
families in :data:`HOLDOUT_FAMILIES` are held out whole, so no variant of a held-out
mechanism is ever trained on.  The probe set is 50 holdout briefs, taken round-robin over the
holdout families in ``brief_id`` order — a pure function of the generator, frozen by a test
that pins the digest of its ids.

Compliance (:func:`check_compliance`).  For a valid formula and a brief, each checkable facet
gives pass/fail; the score is ``−(failed / checked)`` in ``[−1, 0]`` (0 = every constraint
met).  It is the raw value of the optional ``brief_compliance`` reward channel (off by
default, priority 0).  A brief text that is not one of ours (:func:`brief_from_text` gives
None) is not scored (NaN → channel 0).

Difficulty filter (:func:`difficulty_filter`): given N sampled answers per brief, keep the
briefs solved (valid and reward > ``threshold``) in some but not all tries.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gymkit.dsl.analysis import node_count
from gymkit.dsl.ast import Call, Field, Node, Num, Window
from gymkit.dsl.operators import FIELDS
from gymkit.jsonl import read_jsonl

__all__ = [
    "BRIEF_ID",
    "DEFAULT_N",
    "DEFAULT_SEED",
    "FACETS",
    "FORBIDDEN",
    "HINTS",
    "HOLDOUT_FAMILIES",
    "HORIZONS",
    "INCOMPATIBLE",
    "INPUT_RULES",
    "MECHANISMS",
    "PROBE_SIZE",
    "RISKS",
    "RISK_SENTENCE",
    "Brief",
    "Compliance",
    "DifficultyReport",
    "brief_from_text",
    "brief_id_of",
    "check_compliance",
    "contradictions",
    "difficulty_filter",
    "generate_briefs",
    "live_expr",
    "probe_briefs",
    "split_briefs",
]

DEFAULT_N = 500
DEFAULT_SEED = 0
PROBE_SIZE = 50
MARKET_LINE = "Market: US-listed stocks trading on weekday sessions."

# ------------------------------------------------------------------ AST helpers
_PRICE = frozenset(n for n, s in FIELDS.items() if s.family == "price")
_LEVEL_PRICES = frozenset({"open", "high", "low", "close", "vwap"})
_TS_OPS = frozenset({"delay", "ts_delta", "ts_mean", "ts_std", "ts_sum", "ts_max", "ts_min",
                     "ts_rank", "ts_argmax", "ts_argmin", "ts_product", "ts_decay_linear",
                     "ts_ema", "ts_skew", "ts_kurt", "ts_slope", "ts_corr", "ts_cov"})
_RELATIONS = frozenset({"ts_corr", "ts_cov", "ts_slope"})


def _walk(expr: Node) -> Iterable[Node]:
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if type(node) is Call:
            stack.extend(node.args)


def _calls(expr: Node, ops: Iterable[str]) -> list[Call]:
    want = frozenset(ops)
    return [n for n in _walk(expr) if type(n) is Call and n.op in want]


def _data(expr: Node) -> frozenset[str]:
    """Data families read by ``expr``: 'price', 'volume', 'fundamental'."""
    out: set[str] = set()
    for n in _walk(expr):
        if type(n) is Field:
            out.add(FIELDS[n.name].family)
        elif type(n) is Call and n.op == "adv":
            out.add("volume")
    return frozenset(out)


def _fields(expr: Node) -> frozenset[str]:
    return frozenset(n.name for n in _walk(expr) if type(n) is Field)


def _windows(expr: Node) -> list[int]:
    return [n.days for n in _walk(expr) if type(n) is Window]


def _window_of(call: Call) -> int | None:
    return next((a.days for a in call.args if type(a) is Window), None)


def _ts_depth(expr: Node) -> int:
    if type(expr) is not Call:
        return 0
    inner = max((_ts_depth(a) for a in expr.args), default=0)
    return inner + (expr.op in _TS_OPS)


def _strip_sign_flips(expr: Node) -> Node:
    """Peel ``-x`` and ``c * x`` / ``x * c`` (c a number) off the root."""
    while type(expr) is Call:
        if expr.op == "neg":
            expr = expr.args[0]
        elif expr.op == "mul" and type(expr.args[0]) is Num:
            expr = expr.args[1]
        elif expr.op == "mul" and type(expr.args[1]) is Num:
            expr = expr.args[0]
        else:
            break
    return expr


def _has_fields(expr: Node) -> bool:
    return any(type(n) is Field or (type(n) is Call and n.op == "adv") for n in _walk(expr))


# ------------------------------------------------------------------ facet tables
@dataclass(frozen=True)
class Option:
    """One facet option: a stable key, its brief phrasing, and an AST check (None = unchecked)."""

    key: str
    text: str
    check: Callable[[Node], bool] | None = None


def _mech_extremes(e: Node) -> bool:
    return any(_data(c.args[0]) >= {"price", "volume"}
               for c in _calls(e, ("ts_max", "ts_min", "ts_argmax", "ts_argmin")))


def _mech_corr(e: Node) -> bool:
    return any(_data(c) >= {"price", "volume"} for c in _calls(e, ("ts_corr", "ts_cov")))


def _mech_volume_var(e: Node) -> bool:
    return any("volume" in _data(c.args[0]) for c in _calls(e, ("ts_std", "ts_skew", "ts_kurt")))


def _mech_reversal(e: Node) -> bool:
    short = any((_window_of(c) or 99) <= 10 and _data(c.args[0]) == {"price"}
                for c in _calls(e, ("ts_delta", "delay", "ts_sum", "ts_mean")))
    return short or "returns" in _fields(e)


def _mech_range(e: Node) -> bool:
    f = _fields(e)
    return {"high", "low"} <= f and bool(f & {"close", "open"})


def _mech_vwap(e: Node) -> bool:
    return "vwap" in _fields(e) and bool(_fields(e) & {"open", "high", "low", "close"})


def _mech_trend(e: Node) -> bool:
    return bool(_calls(e, ("ts_slope", "ts_decay_linear")))


def _mech_liquidity(e: Node) -> bool:
    if _calls(e, ("adv",)):
        return True
    return any("volume" in _data(c.args[0]) for c in _calls(e, ("ts_mean", "ts_rank", "ts_sum")))


def _mech_shape(e: Node) -> bool:
    return bool(_calls(e, ("ts_skew", "ts_kurt")))


def _mech_gap(e: Node) -> bool:
    return {"open", "close"} <= _fields(e) and bool(_calls(e, ("delay", "ts_delta")) or
                                                  "returns" in _fields(e))


def _mech_vol_scaled(e: Node) -> bool:
    return any(_calls(c.args[1], ("ts_std",)) for c in _calls(e, ("div",)))


def _mech_rank_persist(e: Node) -> bool:
    return any(_calls(c.args[0], ("rank",)) for c in _calls(e, ("ts_rank",)))


#: Template families (the split unit): key, phrasing, AST check of the mechanism.
MECHANISMS: tuple[Option, ...] = (
    Option("extremes", "mixed-signal extremes (rolling max or min of a price-volume composite)",
           _mech_extremes),
    Option("price_volume_corr", "price-volume co-movement (rolling correlation or covariance of "
           "a price series with a volume series)", _mech_corr),
    Option("volume_variability", "variability of trading volume (rolling dispersion of a "
           "volume-based series)", _mech_volume_var),
    Option("reversal", "short-term reversal (fade the last few sessions' price moves)",
           _mech_reversal),
    Option("intraday_range", "intraday range position (where the close or open sits inside the "
           "day's high-low range)", _mech_range),
    Option("vwap_deviation", "deviation of price from vwap", _mech_vwap),
    Option("trend_slope", "persistent trends (a rolling slope or a linearly decayed change)",
           _mech_trend),
    Option("liquidity_shock", "liquidity shocks (volume relative to its own recent average)",
           _mech_liquidity),
    Option("distribution_shape", "shape of the return distribution (rolling skewness or "
           "kurtosis)", _mech_shape),
    Option("overnight_gap", "overnight gaps (today's open against earlier closes)", _mech_gap),
    Option("volatility_scaled", "volatility-scaled moves (a change divided by its own rolling "
           "volatility)", _mech_vol_scaled),
    Option("rank_persistence", "persistence of cross-sectional standing (a time-series rank of "
           "a cross-sectional rank)", _mech_rank_persist),
)

#: Mechanism families held out whole (never in the train split; the probe is drawn from them).
HOLDOUT_FAMILIES: tuple[str, ...] = ("intraday_range", "distribution_shape", "overnight_gap")

#: Target horizons in sessions; the check wants one window in [N/1.5, min(252, 1.5·N)].
HORIZONS: tuple[int, ...] = (5, 10, 21, 42, 63, 126, 168, 252)


def horizon_band(days: int) -> tuple[int, int]:
    """The window band [lo, hi] that satisfies a target horizon of ``days`` sessions."""
    return max(1, math.ceil(days / 1.5)), min(252, math.floor(days * 1.5))


def _horizon_check(days: int) -> Callable[[Node], bool]:
    lo, hi = horizon_band(days)
    return lambda e: any(lo <= w <= hi for w in _windows(e))


INPUT_RULES: tuple[Option, ...] = (
    Option("one_ts_corr", "must use exactly one ts_corr",
           lambda e: len(_calls(e, ("ts_corr",))) == 1),
    Option("volume_input", "must use a volume-derived input (volume or adv)",
           lambda e: "volume" in _data(e)),
    Option("vwap_input", "must use vwap", lambda e: "vwap" in _fields(e)),
    Option("few_fields", "must use at most three distinct fields",
           lambda e: len(_fields(e) | ({"close", "volume"} if _calls(e, ("adv",)) else set())) <= 3),
    Option("price_and_volume", "must combine a price field with a volume field",
           lambda e: _data(e) >= {"price", "volume"}),
    Option("uses_returns", "must use returns", lambda e: "returns" in _fields(e)),
)


def _sign_of_relation(e: Node) -> bool:
    return any(_calls(c.args[0], _RELATIONS) for c in _calls(e, ("sign",)))


def _rank_final(e: Node) -> bool:
    root = _strip_sign_flips(e)
    return type(root) is Call and root.op in ("rank", "scale")


def _product(e: Node) -> bool:
    return any(all(_has_fields(a) for a in c.args) for c in _calls(e, ("mul",)))


HINTS: tuple[Option, ...] = (
    Option("sign_relation", "take the sign of a time-series relationship", _sign_of_relation),
    Option("rank_final", "rank (or scale) the final signal across stocks", _rank_final),
    Option("vol_normalise", "normalise by a rolling volatility", _mech_vol_scaled),
    Option("decay", "smooth the signal with a linear decay",
           lambda e: bool(_calls(e, ("ts_decay_linear",)))),
    Option("conditional", "switch between two signals with a condition (c ? a : b)",
           lambda e: bool(_calls(e, ("where",)))),
    Option("product", "multiply two different signals", _product),
)


def _no_long_price_sums(e: Node) -> bool:
    return not any((_window_of(c) or 0) > 63 and _data(c.args[0]) == {"price"}
                   for c in _calls(e, ("ts_sum", "ts_mean", "ts_decay_linear", "ts_ema")))


def _no_raw_price_rank(e: Node) -> bool:
    return not any(type(c.args[0]) is Field and c.args[0].name in _LEVEL_PRICES
                   for c in _calls(e, ("rank", "ts_rank", "scale")))


def _no_plain_momentum(e: Node) -> bool:
    return not any(type(c.args[0]) is Field and c.args[0].name in _PRICE
                   for c in _calls(e, ("ts_delta",)))


FORBIDDEN: tuple[Option, ...] = (
    Option("long_price_sums", "do NOT lean on long-horizon price sums — they proxy market beta",
           _no_long_price_sums),
    Option("raw_price_rank", "do NOT rank raw price levels — they sort stocks by share price",
           _no_raw_price_rank),
    Option("no_cap", "do NOT use the cap field — it is a size proxy",
           lambda e: "cap" not in _fields(e)),
    Option("shallow", "do NOT nest more than three time-series operators",
           lambda e: _ts_depth(e) <= 3),
    Option("plain_momentum", "do NOT submit plain price momentum (a bare ts_delta of a price "
           "field)", _no_plain_momentum),
)

#: Risk preferences: judged by the reward channels (R3, R4, R5/R6); one is also an AST check.
RISKS: tuple[Option, ...] = (
    Option("vol_regime", "make it robust to a volatility-regime change"),
    Option("turnover_band", "keep turnover inside the 6-50% daily band"),
    Option("market_neutral", "keep its correlation to the market low"),
    Option("compact", "keep the formula compact (at most 24 expression nodes)",
           lambda e: node_count(e) <= 24),
    Option("no_crowding", "avoid crowded momentum exposure"),
)

#: Facet name -> its option table (horizons are generated from :data:`HORIZONS`).
FACETS: dict[str, tuple[Option, ...]] = {
    "mechanism": MECHANISMS,
    "horizon": tuple(Option(str(d), f"roughly {d}-day windows", _horizon_check(d)) for d in HORIZONS),
    "input_rule": INPUT_RULES,
    "hint": HINTS,
    "forbidden": FORBIDDEN,
    "risk": RISKS,
}
_BY_KEY = {f: {o.key: o for o in opts} for f, opts in FACETS.items()}

#: Facet options that contradict each other: ((facet, key), (facet, key), why).  The generator
#: never emits a brief holding both (the later facet is replaced by a compatible option).
INCOMPATIBLE: tuple[tuple[tuple[str, str], tuple[str, str], str], ...] = (
    *((("mechanism", "reversal"), ("horizon", str(d)),
       "short-term reversal fades the last few sessions, not multi-week windows")
      for d in HORIZONS if d > 10),
    (("mechanism", "trend_slope"), ("risk", "no_crowding"),
     "persistent trends are momentum exposure"),
)
_CLASH: dict[tuple[str, str], set[tuple[str, str]]] = {}
for _a, _b, _ in INCOMPATIBLE:
    _CLASH.setdefault(_a, set()).add(_b)
    _CLASH.setdefault(_b, set()).add(_a)


def contradictions(facets: dict[str, str]) -> list[str]:
    """The reasons of every pair of ``facets`` (name -> option key) in :data:`INCOMPATIBLE`."""
    return [why for a, b, why in INCOMPATIBLE
            if facets.get(a[0]) == a[1] and facets.get(b[0]) == b[1]]


def _compatible(facets: dict[str, str]) -> dict[str, str]:
    """``facets`` with each facet that clashes with an earlier one replaced by one of its
    compatible options (the drawn option's index modulo their number, in table order):
    deterministic, draws no random numbers."""
    out: dict[str, str] = {}
    for name in FACETS:
        keys = [o.key for o in FACETS[name]]
        ok = [k for k in keys if not any((f, v) in _CLASH.get((name, k), ()) for f, v in out.items())]
        if not ok:  # pragma: no cover - the table leaves every facet an option
            raise ValueError(f"no option of facet {name} is compatible with {out}")
        drawn = facets[name]
        out[name] = drawn if drawn in ok else ok[keys.index(drawn) % len(ok)]
    return out
_BY_TEXT = {f: {o.text: o for o in opts} for f, opts in FACETS.items()}


# ------------------------------------------------------------------ briefs
@dataclass(frozen=True)
class Brief:
    """One design brief: ``facets`` maps facet name -> option key; ``text`` is the prompt part."""

    brief_id: str
    family: str
    split: str
    facets: dict[str, str]
    text: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (what a trainer's dataset row carries: no private data)."""
        return {"brief_id": self.brief_id, "family": self.family, "split": self.split,
                "facets": dict(self.facets), "text": self.text}


#: The sentence every generated brief ends with (its risk preference).
RISK_SENTENCE = "Risk preference: {}."


def brief_text(facets: dict[str, str]) -> str:
    """The brief's text for facet option keys (the seed's sentence pattern, module doc)."""
    t = {f: _BY_KEY[f][facets[f]].text for f in FACETS}
    return (f"{MARKET_LINE} Design an alpha whose PRIMARY mechanism is: {t['mechanism']}. "
            f"Target horizon: {t['horizon']}. Inputs: {t['input_rule']}. "
            f"Structure: {t['hint']}. Constraint: {t['forbidden']}. "
            + RISK_SENTENCE.format(t["risk"]))


def brief_id_of(text: str) -> str:
    """A brief's id: the first 16 hex digits of the sha256 of its text (UTF-8)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: The form of :func:`brief_id_of`'s ids (no brief's text has it).
BRIEF_ID = re.compile(r"[0-9a-f]{16}")


def _make(facets: dict[str, str]) -> Brief:
    text = brief_text(facets)
    family = facets["mechanism"]
    return Brief(brief_id=brief_id_of(text), family=family,
                 split="holdout" if family in HOLDOUT_FAMILIES else "train",
                 facets=dict(facets), text=text)


def generate_briefs(n: int = DEFAULT_N, seed: int = DEFAULT_SEED) -> list[Brief]:
    """Return ``n`` distinct briefs drawn from the facet tables with ``numpy`` PCG64(``seed``).

    The mechanism cycles through the 12 families (balanced); the other facets are drawn
    uniformly, then a facet that contradicts an earlier one (:data:`INCOMPATIBLE`) moves to
    its next compatible option.  A duplicate draw is redrawn.  Same ``n`` and ``seed`` → the same list.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    space = math.prod(len(v) for k, v in FACETS.items() if k != "mechanism")
    if n > space * len(MECHANISMS):
        raise ValueError(f"n={n} exceeds the {space * len(MECHANISMS)} distinct briefs")
    rng = np.random.default_rng(seed)
    out: list[Brief] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        mech = MECHANISMS[i % len(MECHANISMS)].key
        facets = {"mechanism": mech}
        for name, opts in FACETS.items():
            if name != "mechanism":
                facets[name] = opts[int(rng.integers(len(opts)))].key
        b = _make(_compatible(facets))
        if b.brief_id not in seen:
            seen.add(b.brief_id)
            out.append(b)
            i += 1
    return out


def split_briefs(briefs: Sequence[Brief], split: str) -> list[Brief]:
    """The briefs of ``split``: 'train', 'holdout' (whole held-out families) or 'probe'."""
    if split == "probe":
        return probe_briefs(briefs)
    if split not in ("train", "holdout", "all"):
        raise ValueError(f"split must be one of train, holdout, probe, all; got {split!r}")
    return [b for b in briefs if split == "all" or b.split == split]


def probe_briefs(briefs: Sequence[Brief], size: int = PROBE_SIZE) -> list[Brief]:
    """The frozen probe set: ``size`` holdout briefs, round-robin over holdout families by id."""
    per = {f: sorted((b for b in briefs if b.family == f), key=lambda b: b.brief_id)
           for f in HOLDOUT_FAMILIES}
    out: list[Brief] = []
    k = 0
    while len(out) < size and any(k < len(v) for v in per.values()):
        out.extend(per[f][k] for f in HOLDOUT_FAMILIES if k < len(per[f]) and len(out) < size)
        k += 1
    if len(out) < size:
        raise ValueError(f"only {len(out)} holdout briefs available for a probe of {size}")
    return out


_TEXT_RE = re.compile(
    re.escape(MARKET_LINE) + r" Design an alpha whose PRIMARY mechanism is: (?P<mechanism>.+?)\. "
    r"Target horizon: (?P<horizon>.+?)\. Inputs: (?P<input_rule>.+?)\. Structure: (?P<hint>.+?)\. "
    r"Constraint: (?P<forbidden>.+?)\. Risk preference: (?P<risk>.+?)\.$")


def brief_from_text(text: str | None) -> Brief | None:
    """Recover the :class:`Brief` of a generated brief text; None for any other text."""
    if not isinstance(text, str):
        return None
    m = _TEXT_RE.match(text.strip())
    if m is None:
        return None
    facets = {}
    for name in FACETS:
        opt = _BY_TEXT[name].get(m.group(name))
        if opt is None:
            return None
        facets[name] = opt.key
    b = _make(facets)
    return b if b.text == text.strip() else None


# ------------------------------------------------------------------ compliance
@dataclass(frozen=True)
class Compliance:
    """Per-constraint results of one formula against one brief, and the channel score."""

    checks: dict[str, bool]
    score: float  # −failed/checked in [−1, 0]

    @property
    def failed(self) -> list[str]:
        """Names of the facets whose constraint the formula breaks."""
        return [k for k, ok in self.checks.items() if not ok]


def live_expr(expr: Node) -> Node:
    """``expr`` without the parts that cannot reach its values: the untaken branch of a ternary
    whose condition is a literal (``1 ? a : b`` is ``a``), and the other operand of a product
    with the literal 0 (``0 * x`` is ``0``: at most its NaN pattern is left), and ``+ 0``.  The facets of a
    brief are read off this, so dead code cannot meet them (the red team's ``rank(1 ? V :
    JUNK)`` met 65% of the briefs with the book of ``V``)."""
    if not isinstance(expr, Call):
        return expr
    if expr.op == "where" and isinstance(expr.args[0], Num):
        c = expr.args[0].value
        if math.isfinite(c):
            return live_expr(expr.args[1] if c != 0.0 else expr.args[2])
    if expr.op == "mul" and any(isinstance(a, Num) and a.value == 0.0 for a in expr.args):
        return Num(0.0)
    args = tuple(live_expr(a) for a in expr.args)
    if expr.op in ("add", "sub") and isinstance(args[-1], Num) and args[-1].value == 0.0:
        return args[0]  # x + 0, x - 0 (a dead product folded to 0 above)
    if expr.op == "add" and isinstance(args[0], Num) and args[0].value == 0.0:
        return args[1]
    return expr if args == expr.args else Call(expr.op, args)


def check_compliance(expr: Node, brief: Brief) -> Compliance:
    """Check a parsed formula against every checkable facet of ``brief`` (module doc): on its
    live part (:func:`live_expr`), except the size facet (``compact``), read off the formula as
    written."""
    checks: dict[str, bool] = {}
    live = live_expr(expr)
    for name in FACETS:
        opt = _BY_KEY[name][brief.facets[name]]
        if opt.check is not None:
            checks[name] = bool(opt.check(expr if opt.key == "compact" else live))
    failed = sum(not v for v in checks.values())
    return Compliance(checks, -failed / len(checks) + 0.0 if checks else 0.0)


def compliance_of_text(expr: Node | None, brief: str | None) -> float:
    """Channel input: compliance score of ``expr`` for a brief *text*; NaN if either is unknown."""
    b = brief_from_text(brief)
    if expr is None or b is None:
        return math.nan
    return check_compliance(expr, b).score


# ------------------------------------------------------------------ difficulty filter
@dataclass(frozen=True)
class DifficultyReport:
    """Per brief: tries and solved counts; ``kept`` = briefs solved in some but not all tries."""

    tries: dict[str, int]
    solved: dict[str, int]
    kept: list[str] = field(default_factory=list)
    threshold: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {"threshold": self.threshold, "n_briefs": len(self.tries), "n_kept": len(self.kept),
                "kept": list(self.kept),
                "per_brief": {k: {"tries": self.tries[k], "solved": self.solved[k]}
                              for k in self.tries}}


def read_samples(path: str) -> list[dict[str, str]]:
    """Read a JSONL file of ``{"brief_id", "completion"}`` rows (other keys kept, ignored)."""
    return read_jsonl(path, ("brief_id", "completion"),
                      "need string fields brief_id and completion")


def difficulty_filter(samples: Iterable[dict[str, str]], briefs: Sequence[Brief], env: Any,
                      threshold: float = 0.0) -> DifficultyReport:
    """Keep the briefs solved in some but not all of their sampled tries.

    ``samples``: rows ``{brief_id, completion}`` (N tries per brief, any sampler); ``env``: an
    :class:`~gymkit.env.Environment`; each brief's tries are scored as one group with its
    text.  Solved = ``card.valid and card.reward > threshold``.  Unknown ``brief_id`` raises.
    """
    by_id = {b.brief_id: b for b in briefs}
    groups: dict[str, list[str]] = {}
    for i, row in enumerate(samples):
        bid = row["brief_id"]
        if bid not in by_id:
            raise ValueError(f"sample {i}: unknown brief_id {bid!r} (not in the generated briefs)")
        groups.setdefault(bid, []).append(row["completion"])
    tries, solved = {}, {}
    for bid in sorted(groups):
        cards = env.score_group(groups[bid], brief=by_id[bid].text)
        tries[bid] = len(cards)
        solved[bid] = sum(bool(c.valid and c.reward > threshold) for c in cards)
    kept = [b for b in tries if 0 < solved[b] < tries[b]]
    return DifficultyReport(tries, solved, kept, float(threshold))
