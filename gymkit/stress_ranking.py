"""The R3 stress ranking gate: labelled fragile/robust formulas, their drops in a world, the gate.

A stress world (:mod:`gymkit.jepa`) is kept only if formulas labelled fragile on the train
panel lose more CPCV score in it than formulas labelled robust.  This module labels the
formulas (:func:`label_formulas`), re-scores them in a world through the one oracle path
(:func:`rescore`: :func:`gymkit.oracle.backtest_formula`, the full backtest; scoring's
:func:`gymkit.scoring.world_score` is its bit-equal CPCV-only path), and judges the drops
(:func:`ranking_gate`, :func:`gate_figures`, thresholds in :mod:`gymkit.jepa.gates`).

Labelling

Candidates (deterministic: fixed grids and one seeded generator):

* **honest** — the repeatable effects of the train market and close relatives: short-term
  reversal (plain, sector/industry-neutral, decayed, z-scored), volume variability relative
  to price volatility, and blends of the two, over grids of windows.
* **static** — slow level tilts (long-window means of returns, price relative to a long
  average, long-window ranks, low-volatility and volume-level tilts): books that trade little
  and earn from the path the stocks happened to take.
* **overfit** — random one-feature formulas (random field, operator, window); *not used by
  the shipped gate*: a first labelling put 161 sign-tuned random formulas in the fragile
  class, most with a negative CPCV even after tuning, whose drop is floored at 0 — the AUC
  came out 0.24 (it measured "unprofitable", not "fragile").  Kept as an option
  (``candidates(n_random=600)``) and reported in jepa/README.md.

Static candidates are *tuned to the scored history*: each takes the sign (f or −f) with the
higher CPCV score on the whole train window, the score R1 rewards.

Labels use the judged train days only, split into an early part and a late-train validation
slice (the last :data:`VALIDATION_DAYS` judged days; the holdout is never read):

* robust  = honest candidate with CPCV > 0, early Sharpe > 0 and validation Sharpe > 0 (it
  holds up on late train);
* fragile = tuned static (or overfit) candidate whose validation Sharpe is below its early
  Sharpe by more than :data:`FRAGILE_DECAY` (its tuned edge did not hold up).  In this
  market costs leave few such books with a positive CPCV, so fragile books are not
  required to score above 0.

Candidates that are invalid (turnover floor, degenerate), cannot be evaluated on the panel
(a user market without sector or industry: ``group_unavailable``) or meet neither rule are
left out.

**The market-agnostic pool.**  The honest family encodes the default market's planted effects;
a real market barely pays them after costs (the real S&P 500 file: 5 robust, 56 fragile).
When the families above label fewer than :data:`~gymkit.jepa.gates.MIN_PER_CLASS` formulas in
either class, :func:`label_formulas` adds a deterministic pool built from price and volume
only (:data:`AGNOSTIC_FEATURES`, no group level), labelled by the same rules:

* **grid** (robust role, like honest: never sign-tuned) — both signs of every feature over
  :data:`FAST_WINDOWS`, each smoothed over time (:data:`SMOOTHINGS`: a real market's edges
  are small next to 4 bps a unit of turnover, and smoothing cuts turnover);
* **slow** (fragile role, joins ``static``: sign-tuned) — every feature over
  :data:`SLOW_WINDOWS`.

The two roles share no formula (grid books are smoothed, slow ones are not), so no book is
in both classes.  The
default market fills both classes from the first families alone and never reads the pool.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from gymkit.data.panel import Panel
from gymkit.data.splits import Split
from gymkit.dsl.ast import Node
from gymkit.dsl.cache import EvalCache
from gymkit.dsl.errors import DSLError
from gymkit.jepa.gates import AUC_LOWER_FLOOR, MIN_PER_CLASS, STATIC_TO_ROBUST_MIN
from gymkit.oracle import backtest_formula
from gymkit.verifiers.costs import TrainCosts
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.metrics import sharpe
from gymkit.verifiers.oracle import BacktestResult
from gymkit.verifiers.windows import BURN_IN

__all__ = ["AGNOSTIC_FEATURES", "FAST_WINDOWS", "FRAGILE_DECAY", "SLOW_WINDOWS", "SMOOTHINGS",
           "VALIDATION_DAYS", "Labelled", "RankingSet", "agnostic_candidates", "auc_with_bootstrap",
           "candidates", "gate_figures", "label_formulas", "ranking_gate", "rescore"]

#: Late-train validation slice: the last two years of judged train days.
VALIDATION_DAYS = 504
#: A fragile formula's validation Sharpe is below its early Sharpe by more than this.
FRAGILE_DECAY = 0.0
_MIN_TURNOVER = 0.02

#: Price/volume features of the market-agnostic pool (``{d}``: the window): return sums and
#: decays, price z-score and rank in its window, price-volume correlation, volatility, volume
#: surprise and variability, intraday return, range, skew, distance from the window's high and
#: low, close relative to VWAP, volume rank, overnight return, volatility ratio, mean absolute
#: return, days since the window's high, kurtosis.
AGNOSTIC_FEATURES: tuple[str, ...] = (
    "ts_sum(returns, {d})", "ts_decay_linear(returns, {d})",
    "(close - ts_mean(close, {d})) / ts_std(close, {d})", "ts_rank(close, {d})",
    "ts_corr(close, volume, {d})", "ts_std(returns, {d})", "volume / ts_mean(volume, {d})",
    "ts_mean((close - open) / open, {d})", "ts_mean((high - low) / close, {d})",
    "ts_skew(returns, {d})", "ts_std(volume, {d}) / ts_mean(volume, {d})",
    "close / ts_max(high, {d})", "close / ts_min(low, {d})", "ts_mean(close / vwap, {d})",
    "ts_rank(volume, {d})", "ts_mean(open / delay(close, 1) - 1, {d})",
    "ts_std(returns, {d}) / ts_std(returns, 200)", "ts_mean(abs(returns), {d})",
    "ts_argmax(close, {d})", "ts_kurt(returns, {d})",
)
#: Windows of the grid family (robust role) and the time smoothings applied to each feature.
FAST_WINDOWS: tuple[int, ...] = (3, 5, 8, 10, 15, 20, 30, 40, 60, 90, 120)
SMOOTHINGS: tuple[str, ...] = ("ts_mean({x}, 20)", "ts_mean({x}, 40)", "ts_decay_linear({x}, 20)",
                               "ts_decay_linear({x}, 40)")
#: Windows of the slow family (fragile role, sign-tuned like the static books).
SLOW_WINDOWS: tuple[int, ...] = (70, 90, 110, 130, 150, 175, 200, 225, 250)
_SKEW_MIN = 10


def _honest() -> list[str]:
    out = []
    for d in range(2, 13):
        out += [f"rank(-ts_sum(returns, {d}))",
                f"rank(group_neutralize(-ts_sum(returns, {d}), sector))",
                f"rank(group_neutralize(-ts_sum(returns, {d}), industry))",
                f"rank(-ts_decay_linear(returns, {d}))",
                f"rank(-(close - ts_mean(close, {d + 2})) / ts_std(close, {d + 2}))"]
    for a in (10, 12, 15, 18, 20, 25, 30, 40):
        for b in (120, 180, 250):
            out.append(f"rank(ts_std(volume, {a}) / ts_mean(volume, {a}) * ts_std(returns, {b}) "
                       f"/ ts_std(returns, {a}))")
        out.append(f"rank(ts_std(volume, {a}) / ts_mean(volume, {a}) / ts_std(returns, {a}))")
    for d in (2, 3, 4, 5, 6, 7, 8):
        for a in (15, 20, 30):
            for w in ("0.5", "1", "2"):
                out.append(f"rank(-ts_sum(returns, {d})) + {w} * rank(ts_std(volume, {a}) / "
                           f"ts_mean(volume, {a}) * ts_std(returns, 250) / ts_std(returns, {a}))")
    return out


def _static() -> list[str]:
    out = []
    for d in range(100, 251, 10):
        out += [f"rank(ts_mean(returns, {d}))", f"rank(-ts_mean(returns, {d}))",
                f"rank(close / ts_mean(close, {d}))", f"rank(ts_mean(close, 20) / ts_mean(close, {d}))",
                f"rank(-ts_std(returns, {d}))", f"rank(ts_std(returns, {d}))",
                f"rank(ts_rank(close, {d}))", f"rank(-ts_rank(close, {d}))",
                f"rank(ts_mean(volume, {d}) / ts_mean(volume, 250))",
                f"rank(ts_slope(log(close), {d}))", f"rank(-ts_slope(log(close), {d}))",
                f"rank(group_neutralize(ts_mean(returns, {d}), sector))",
                f"rank(group_neutralize(-ts_mean(returns, {d}), sector))"]
    return out


def _overfit(rng: np.random.Generator, n: int) -> list[str]:
    fields = ("close", "open", "high", "low", "volume", "vwap", "returns")
    ops = ("ts_mean", "ts_std", "ts_rank", "ts_delta", "ts_max", "ts_min", "ts_skew", "ts_argmax")
    out = []
    for _ in range(n):
        f, op = fields[rng.integers(len(fields))], ops[rng.integers(len(ops))]
        d = int(rng.integers(3, 60))
        sign = "-" if rng.random() < 0.5 else ""
        inner = f"{op}({f}, {d})" if op != "ts_skew" else f"ts_skew(returns, {max(d, 10)})"
        out.append(f"rank({sign}{inner})")
    return sorted(set(out))


def candidates(seed: int = 7, n_random: int = 0) -> dict[str, list[str]]:
    """Candidate formulas by family (``honest``, ``static``; ``overfit`` only when ``n_random``
    > 0 — see the module doc for why the shipped gate does not use it)."""
    out = {"honest": _honest(), "static": _static()}
    if n_random:
        out["overfit"] = _overfit(np.random.default_rng(seed), n_random)
    return out


def _feature(f: str, d: int) -> str:
    return f.format(d=max(d, _SKEW_MIN) if f.startswith(("ts_skew", "ts_kurt")) else d)


def agnostic_candidates(exclude: Iterable[str] = ()) -> dict[str, list[str]]:
    """The market-agnostic pool (module doc): ``grid`` (both signs, smoothed, fast windows) and
    ``slow`` (slow windows), deduplicated, without the formulas in ``exclude`` (the first
    families' own: a static book is not labelled twice), in a fixed order."""
    grid: list[str] = []
    for f in AGNOSTIC_FEATURES:
        for d in FAST_WINDOWS:
            x = _feature(f, d)
            for sm in SMOOTHINGS:
                y = sm.format(x=x)
                grid += [f"rank({y})", f"rank(-{y})"]
    slow = [f"rank({_feature(f, d)})" for f in AGNOSTIC_FEATURES for d in SLOW_WINDOWS]
    seen = set(exclude)
    return {k: [f for f in dict.fromkeys(v) if f not in seen] for k, v in (("grid", grid), ("slow", slow))}


@dataclass(frozen=True)
class Labelled:
    """One labelled formula: family, label (``fragile``/``robust``), base CPCV and Sharpes."""

    formula: str
    family: str
    label: str
    cpcv: float
    early_sharpe: float
    val_sharpe: float
    turnover: float


def _score(formula: str | Node, panel: Panel, split: Split, costs: object, cv: CPCV, burn_in: int,
           cache: EvalCache | None) -> BacktestResult:
    """Train-mode backtest of ``formula`` on ``panel`` (the oracle path, fields not checked)."""
    return backtest_formula(formula, panel, "train", split=split, costs=costs,  # type: ignore[arg-type]
                            cpcv=cv, burn_in=burn_in, cache=cache).result


def rescore(formula: str | Node, world: Panel, split: Split, costs: object, cpcv: CPCV,
            burn_in: int, cache: EvalCache | None = None) -> float:
    """CPCV score of ``formula`` (text or AST) re-scored in ``world``: the train-mode full
    backtest with the given costs, CPCV and burn-in (``DSLError`` for a bad formula)."""
    return float(_score(formula, world, split, costs, cpcv, burn_in, cache).cpcv.score)


def label_formulas(panel: Panel, split: Split, costs: object, cv: CPCV, burn_in: int,
                   cache: EvalCache | None = None, seed: int = 7,
                   agnostic: bool | None = None) -> list[Labelled]:
    """Backtest every candidate on the train ``panel`` and label it (module doc).

    ``agnostic``: add the market-agnostic pool (:func:`agnostic_candidates`) — ``None``
    (default) when the first families label fewer than ``MIN_PER_CLASS`` in either class."""
    first = candidates(seed)
    out = _label(first, panel, split, costs, cv, burn_in, cache)
    if agnostic is None:
        n_robust = sum(x.label == "robust" for x in out)
        agnostic = min(n_robust, len(out) - n_robust) < MIN_PER_CLASS
    if agnostic:
        pool = agnostic_candidates(f for forms in first.values() for f in forms)
        out += _label(pool, panel, split, costs, cv, burn_in, cache)
    return out


_ROBUST_ROLE = ("honest", "grid")
_TUNED_ROLE = ("static", "slow", "overfit")


def _label(families: dict[str, list[str]], panel: Panel, split: Split, costs: object, cv: CPCV,
           burn_in: int, cache: EvalCache | None) -> list[Labelled]:
    out = []
    for family, forms in families.items():
        for f in forms:
            try:
                bt = _score(f, panel, split, costs, cv, burn_in, cache)
            except DSLError:  # e.g. a group level the user's market does not have
                continue
            if family in _TUNED_ROLE and bt.cpcv.score < 0:  # tune the sign on the scored history
                f = f"-{f}"
                bt = _score(f, panel, split, costs, cv, burn_in, cache)
            m = bt.metrics
            if not (np.isfinite(bt.cpcv.score) and bt.weights.any() and m.turnover >= _MIN_TURNOVER):
                continue
            net = np.ascontiguousarray(bt.net)
            early = sharpe(net[:-VALIDATION_DAYS])
            val = sharpe(net[-VALIDATION_DAYS:])
            score = float(bt.cpcv.score)
            if family in _ROBUST_ROLE:
                label = "robust" if score > 0 and early > 0 and val > 0 else ""
            else:
                label = "fragile" if early - val > FRAGILE_DECAY else ""
            if label:
                out.append(Labelled(f, family, label, score, early, val, float(m.turnover)))
    return out


def auc_with_bootstrap(fragile: np.ndarray, robust: np.ndarray, *, n_boot: int = 2000,
                       seed: int = 0) -> tuple[float, float, float]:
    """AUC that a fragile formula's drop exceeds a robust one's (ties count ½), with the 95%
    percentile-bootstrap interval (each class resampled with replacement): (auc, lo, hi)."""
    f = np.asarray(fragile, dtype=np.float64)
    r = np.asarray(robust, dtype=np.float64)

    def auc(a: np.ndarray, b: np.ndarray) -> float:
        allv = np.concatenate([a, b])
        order = allv.argsort(kind="stable")
        ranks = np.empty(allv.size)
        sv = allv[order]
        # average ranks for ties
        _, first, counts = np.unique(sv, return_index=True, return_counts=True)
        avg = first + (counts - 1) / 2.0 + 1.0
        ranks[order] = np.repeat(avg, counts)
        return float((ranks[: a.size].sum() - a.size * (a.size + 1) / 2) / (a.size * b.size))

    rng = np.random.default_rng(seed)
    boots = np.array([auc(f[rng.integers(0, f.size, f.size)], r[rng.integers(0, r.size, r.size)])
                      for _ in range(n_boot)])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return auc(f, r), float(lo), float(hi)


def ranking_gate(auc: float, lo: float, hi: float, drops: np.ndarray, fragile: np.ndarray,
                 static: np.ndarray) -> dict:
    """The ranking gate's figures for one set of ``drops``: AUC and interval as given, mean
    drops by class, static/robust ratio; ``ok`` when the AUC's lower bound exceeds
    ``AUC_LOWER_FLOOR``, both classes have ``MIN_PER_CLASS`` and the ratio is at least
    ``STATIC_TO_ROBUST_MIN``."""
    robust_mean = float(drops[~fragile].mean())
    static_mean = float(drops[static].mean()) if static.any() else float("nan")
    ratio = static_mean / robust_mean if robust_mean > 0 else float("inf")
    ok = (lo > AUC_LOWER_FLOOR and int(fragile.sum()) >= MIN_PER_CLASS
          and int((~fragile).sum()) >= MIN_PER_CLASS and ratio >= STATIC_TO_ROBUST_MIN)
    return {"auc": auc, "auc_lo": lo, "auc_hi": hi, "fragile_mean_drop": float(drops[fragile].mean()),
            "robust_mean_drop": robust_mean, "static_mean_drop": static_mean,
            "static_to_robust": ratio, "ok": bool(ok)}


def gate_figures(labelled: list[Labelled], drops: list[list[float]]) -> tuple[list[dict], dict]:
    """The ranking gate of each world (``drops``: one list per world, aligned with
    ``labelled``) and the summary figures: ``(per-world gates, {n_fragile, n_robust, n_static,
    mean_over_worlds})``.  The static class is the sign-tuned ``static`` and ``slow`` books."""
    fr = np.array([x.label == "fragile" for x in labelled])
    static = np.array([x.family in ("static", "slow") for x in labelled])
    mean_drop = np.mean(drops, axis=0)
    per_world = []
    for dw in drops:
        d = np.array(dw)
        auc, lo, hi = auc_with_bootstrap(d[fr], d[~fr])
        per_world.append(ranking_gate(auc, lo, hi, d, fr, static))
    auc, lo, hi = auc_with_bootstrap(mean_drop[fr], mean_drop[~fr])
    return per_world, {"n_fragile": int(fr.sum()), "n_robust": int((~fr).sum()),
                       "n_static": int(static.sum()),
                       "mean_over_worlds": ranking_gate(auc, lo, hi, mean_drop, fr, static)}


@dataclass(frozen=True)
class RankingSet:
    """The labelled formulas of a train panel with the split, costs, CPCV and burn-in they were
    labelled under (the worlds are re-scored under the same)."""

    labelled: list[Labelled]
    split: Split
    costs: object
    cv: CPCV
    burn_in: int

    @classmethod
    def label(cls, panel: Panel, split: Split) -> RankingSet:
        """:func:`label_formulas` on the train ``panel`` under ``split`` with the training
        costs, the default CPCV and the default burn-in (what scoring uses)."""
        costs, cv = TrainCosts(), CPCV()
        return cls(label_formulas(panel, split, costs, cv, BURN_IN), split, costs, cv, BURN_IN)

    def drops(self, world: Panel) -> np.ndarray:
        """Each labelled formula's CPCV drop in ``world``: max(0, base CPCV − world CPCV)."""
        base = np.array([x.cpcv for x in self.labelled])
        ws = np.array([rescore(x.formula, world, self.split, self.costs, self.cv, self.burn_in)
                       for x in self.labelled])
        return np.maximum(0.0, base - ws)
