"""Look-ahead checks: static lookback declarations, the future-perturbation canary, fill timing.

``static_lookback``
    Every operator of :data:`gymkit.dsl.operators.OPERATORS` declares one of the lookback
    rules and has a kernel (and every kernel an operator).  Each operator is then applied to
    panel fields on a seeded synthetic panel, one row ``s`` is perturbed, and the rows that
    change are measured: no row before ``s`` may change at all (bit for bit: look-ahead), and
    no row later than ``s + declared lookback`` may change by more than 1e-9 relative
    (observed memory <= declared).  The tolerance is needed because the running-sum kernels
    re-anchor their sums (DESIGN §3 "numerically stable"): their low bits depend on history
    beyond the window, their values do not.  Operators whose table row is recursive
    (:data:`gymkit.dsl.operators.RECURSIVE_OPERATORS`, read off ``OpSpec.recursive``) have
    unbounded memory by definition; for them the check asserts no look-ahead and that the
    warm-up (the first finite row) equals the declared lookback.
``future_perturbation``
    Random formulas over the whole operator set plus one call of every operator, on the
    environment's train panel: scrambling every row after a cut day leaves every formula
    value and book weight at or before the cut, and every P&L, turnover and IC entry realised
    at or before the cut (signal day t with t + 2 <= cut), bit-identical.
``fill_timing``
    The seed's Aug 9 hack: ``rank(returns)`` is a perfect predictor if the book is credited
    with the same-close return it already saw.  The oracle's gross P&L must equal the
    next-open protocol recomputed here from raw opens (w_t · (open[t+2]/open[t+1] − 1)), the
    answer must earn no positive reward, and the broken protocol applied to the same weights
    must be shown to win (annualised Sharpe > 3), so the check can tell the two apart.
"""

from __future__ import annotations

import numpy as np

from gymkit.data.panel import BASE_FIELDS, Panel
from gymkit.dsl.analysis import lookback
from gymkit.dsl.ast import Node
from gymkit.dsl.evaluator import evaluate
from gymkit.dsl.kernels import KERNELS
from gymkit.dsl.operators import (
    LB_ADD_D,
    LB_ADD_D_MINUS_1,
    LB_D,
    LB_MAX,
    OPERATORS,
    RECURSIVE_OPERATORS,  # read off the operator table (OpSpec.recursive): name -> why
)
from gymkit.dsl.printer import to_text
from gymkit.oracle import backtest_formula
from gymkit.verifiers.cpcv import CPCV

from .formulas import random_formula, tag, unit_formulas
from .result import CheckResult
from .target import AuditTarget

__all__ = ["LOOKBACK_RULES", "RECURSIVE_OPERATORS", "check_fill_timing",
           "check_future_perturbation", "check_static_lookback", "future_perturbation_diff",
           "observed_lookback", "scramble_after", "synthetic_panel"]

#: The lookback rules an operator may declare (gymkit.dsl.operators.LB_*).
LOOKBACK_RULES = frozenset({LB_MAX, LB_ADD_D, LB_ADD_D_MINUS_1, LB_D})


#: Relative change that counts as a real dependency (not re-anchoring rounding).
DEPENDENCY_RTOL = 1e-9


def synthetic_panel(seed: int = 0, t: int = 160, n: int = 7) -> Panel:
    """A small seeded OHLCV panel with cap, sectors and industries (for operator probes)."""
    rng = np.random.default_rng(seed)
    close = 50.0 * np.exp(np.cumsum(rng.normal(0, 0.02, (t, n)), axis=0))
    open_ = close * np.exp(rng.normal(0, 0.01, (t, n)))
    high = np.maximum(open_, close) * (1 + rng.uniform(0, 0.02, (t, n)))
    low = np.minimum(open_, close) * (1 - rng.uniform(0, 0.02, (t, n)))
    volume = rng.integers(1_000, 100_000, (t, n)).astype(float)
    dates = np.datetime64("2020-01-01") + np.arange(t)
    groups = [f"g{i % 3}" for i in range(n)]
    return Panel(dates, [f"S{i}" for i in range(n)], open_, high, low, close, volume,
                 cap=close * 1e6, sector=groups, industry=[f"i{i % 4}" for i in range(n)])


def _edit_fields(panel: Panel, edit) -> Panel:
    """``panel`` with ``edit(copy)`` applied, in place, to a copy of every base field and cap."""
    fields = {}
    for name in (*BASE_FIELDS, "cap"):
        a = getattr(panel, name)
        if a is None:
            continue
        a = np.array(a)
        edit(a)
        fields[name] = a
    return panel.replace(**fields)


def _perturb_row(panel: Panel, s: int, seed: int) -> Panel:
    rng = np.random.default_rng(seed)

    def edit(a: np.ndarray) -> None:
        a[s] = a[s] * rng.uniform(0.5, 1.5, a.shape[1])

    return _edit_fields(panel, edit)


def observed_lookback(expr: Node, panel: Panel, rows: tuple[int, ...] = (60, 90)) -> tuple[int, int]:
    """Return ``(memory, look_ahead)`` of ``expr`` measured by perturbing each row in ``rows``.

    ``memory``: the largest t - s over perturbed rows s and rows t >= s whose value changes
    by more than :data:`DEPENDENCY_RTOL` (relative) or changes NaN-ness.  ``look_ahead``: the
    largest s - t over rows t < s whose bytes change at all (0 = none).
    """
    a = evaluate(expr, panel, cache=None)
    memory = ahead = 0
    for i, s in enumerate(rows):
        b = evaluate(expr, _perturb_row(panel, s, seed=i + 1), cache=None)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        before = np.nonzero(~same[:s].all(axis=1))[0]
        if before.size:
            ahead = max(ahead, s - int(before.min()))
        with np.errstate(invalid="ignore"):
            rel = np.abs(a[s:] - b[s:]) / (1.0 + np.abs(a[s:]))
        dep = (rel > DEPENDENCY_RTOL) | (np.isnan(a[s:]) != np.isnan(b[s:]))
        changed = np.nonzero(dep.any(axis=1))[0]
        if changed.size:
            memory = max(memory, int(changed.max()))
    return memory, ahead


def check_static_lookback(target: AuditTarget | None = None) -> CheckResult:
    """Every operator declares a lookback rule and has a kernel; observed memory <= declared."""
    problems: list[str] = []
    undeclared = sorted(op for op, spec in OPERATORS.items() if spec.lookback not in LOOKBACK_RULES)
    problems += [f"{op}: lookback rule {OPERATORS[op].lookback!r} is not one of the declared rules"
                 for op in undeclared]
    problems += [f"{op}: no kernel in KERNELS" for op in sorted(set(OPERATORS) - set(KERNELS))]
    problems += [f"{op}: a kernel without an operator row" for op in sorted(set(KERNELS) - set(OPERATORS))]
    panel = synthetic_panel()
    worst = 0
    n_probes = 0
    for window in (1, 3, 7):
        for op, expr in unit_formulas(panel, window):
            if op in undeclared or op not in KERNELS:
                continue
            declared = lookback(expr)
            memory, ahead = observed_lookback(expr, panel)
            n_probes += 1
            text = to_text(expr)
            if ahead:
                problems.append(f"{op}: LOOK-AHEAD — {text} at row t changes when row t+{ahead} "
                                "changes")
            if op in RECURSIVE_OPERATORS:
                a = evaluate(expr, panel, cache=None)
                first = int(np.argmax(np.isfinite(a).any(axis=1))) if np.isfinite(a).any() else -1
                if first not in (-1, declared):
                    problems.append(f"{op}: warm-up {first} rows, declared lookback {declared}")
                continue
            worst = max(worst, memory - declared)
            if memory > declared:
                problems.append(f"{op}: {text} depends on data {memory} sessions back, declares "
                                f"{declared}")
    n_ops = len(OPERATORS)
    figure = (f"{n_ops - len(undeclared)}/{n_ops} operators declare a rule; {n_probes} probes, "
              f"max(observed - declared) = {worst}; look-ahead in "
              f"{sum('LOOK-AHEAD' in p for p in problems)}")
    detail = [f"recursive (warm-up checked, memory unbounded by definition): {op} — {why}"
              for op, why in RECURSIVE_OPERATORS.items()]
    return CheckResult("static_lookback", not problems, figure, (*problems[:12], *detail))


# ------------------------------------------------------------------ future perturbation
def scramble_after(panel: Panel, cut: int, seed: int) -> Panel:
    """``panel`` with every field after row ``cut`` replaced by random positive values."""
    rng = np.random.default_rng(seed)

    def edit(a: np.ndarray) -> None:
        a[cut + 1:] = rng.uniform(0.5, 2.0, a[cut + 1:].shape) * np.nanmean(a)

    return _edit_fields(panel, edit)


def future_perturbation_diff(expr: Node, panel: Panel, later: Panel, cut: int, split, *,
                             burn_in: int, cpcv: CPCV | None = None,
                             costs: object | None = None) -> str | None:
    """Where ``expr`` on ``later`` (``panel`` scrambled after row ``cut``) first differs from
    ``panel`` at or before the cut, or None.  Both panels are train panels of ``split``."""
    run_a, run_b = (backtest_formula(expr, p, "train", split=split, costs=costs, cpcv=cpcv,
                                     burn_in=burn_in) for p in (panel, later))
    a, b = run_a.values, run_b.values
    if a[:cut + 1].tobytes() != b[:cut + 1].tobytes():
        row = int(np.nonzero(~((a[:cut + 1] == b[:cut + 1])
                              | (np.isnan(a[:cut + 1]) & np.isnan(b[:cut + 1]))).all(axis=1))[0][0])
        return f"value at row {row} (cut {cut})"
    ra, rb = run_a.result, run_b.result
    first = int(np.searchsorted(panel.dates, ra.dates[0]))
    signal = np.arange(ra.dates.size) + first  # panel row of each judged signal date
    known = signal <= cut
    realised = signal + 2 <= cut
    for name, mask in (("weights", known), ("turnover", known), ("gross", realised),
                       ("net", realised), ("cost", realised), ("ic", realised)):
        x, y = getattr(ra, name)[mask], getattr(rb, name)[mask]
        if x.tobytes() != y.tobytes():
            return f"{name} (cut {cut})"
    return None


def check_future_perturbation(target: AuditTarget, n_random: int = 30,
                              n_cuts: int = 3, seed: int = 0) -> CheckResult:
    """Scrambling rows after a cut changes nothing at or before it (module doc)."""
    env = target.env
    train, setup = env.setup.train, env.setup
    rng = np.random.default_rng(seed)
    exprs = [(op, e) for op, e in unit_formulas(train, 5)]
    exprs += [("random", random_formula(rng, train, max_window=21)) for _ in range(n_random)]
    lo = setup.burn_in + 5
    cuts = sorted({int(c) for c in rng.integers(lo, train.T - 3, n_cuts)}) if train.T - 3 > lo else []
    if not cuts:
        return CheckResult("future_perturbation", False, "train window too short to cut")
    failures = []
    for k, cut in enumerate(cuts):
        later = scramble_after(train, cut, seed=k)
        for label, expr in exprs:
            where = future_perturbation_diff(expr, train, later, cut, setup.split,
                                             burn_in=setup.burn_in, cpcv=setup.cpcv,
                                             costs=setup.costs)
            if where is not None:
                failures.append(f"{label}: {to_text(expr)[:90]} differs in {where}")
    n = len(exprs) * len(cuts)
    return CheckResult(
        "future_perturbation", not failures,
        f"{len(exprs)} formulas ({len(exprs) - n_random} operators + {n_random} random) x "
        f"{len(cuts)} cuts: {len(failures)} of {n} differ at or before the cut",
        tuple(failures[:10]))


# ------------------------------------------------------------------------- fill timing
def _sharpe(x: np.ndarray) -> float:
    sd = float(np.std(x, ddof=1))
    return 0.0 if sd == 0 else float(np.mean(x) / sd * np.sqrt(252))


def check_fill_timing(target: AuditTarget) -> CheckResult:
    """The oracle fills at the next open; the same-close protocol would pay the Aug 9 hack."""
    from gymkit.scoring import gate_text, run_oracle

    env = target.env
    setup = env.setup
    answer = tag("rank(returns)")
    card = env.score(answer)
    st = gate_text(answer, setup)
    run_oracle(st, setup)
    if st.bt is None:
        return CheckResult("fill_timing", False, "the oracle did not run on rank(returns)",
                           (f"error: {st.error}",))
    bt = st.bt
    train = setup.train
    first = int(np.searchsorted(train.dates, bt.dates[0]))
    rows = np.arange(bt.dates.size) + first
    o = np.asarray(train.open)
    with np.errstate(divide="ignore", invalid="ignore"):
        nxt = o[rows + 2] / o[rows + 1] - 1.0
    nxt = np.where(np.isfinite(nxt), nxt, 0.0)
    same = np.nan_to_num(np.asarray(train.field("returns"))[rows], nan=0.0)
    w = bt.weights
    want_next = (w * nxt).sum(axis=1)
    broken = (w * same).sum(axis=1)
    err_next = float(np.max(np.abs(bt.gross - want_next)))
    err_same = float(np.max(np.abs(bt.gross - broken)))
    sr_oracle, sr_broken = _sharpe(bt.gross), _sharpe(broken)
    fills_next_open = err_next <= 1e-12 and err_same > 1e-6
    ok = fills_next_open and card.reward <= 0.0 and sr_broken > 3.0
    detail = (f"oracle gross vs next-open recomputation: max |diff| {err_next:.1e}; "
              f"vs same-close: {err_same:.1e}",
              f"card: valid {card.valid}, reward {card.reward:.3f}, IC {card.metrics.get('ic')}",
              f"gross Sharpe: next-open (the oracle) {sr_oracle:.2f}, same-close (broken) "
              f"{sr_broken:.2f}")
    return CheckResult(
        "fill_timing", ok,
        f"rank(returns): reward {card.reward:.2f}, Sharpe {sr_oracle:.2f} at next open vs "
        f"{sr_broken:.1f} under same-close fill; oracle = next-open to {err_next:.0e}", detail)
