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

__all__ = ["alpha101_canonicals", "brief_formula", "corpus_sharpe", "sample_formula", "warm_start_pairs"]

FIELDS = ("open", "high", "low", "close", "vwap", "returns", "volume")
UNARY = ("rank", "abs", "sign", "log", "-")
TS1 = ("delay", "ts_delta", "ts_mean", "ts_std", "ts_sum", "ts_max", "ts_min", "ts_rank",
       "ts_decay_linear", "ts_argmax", "ts_argmin", "ts_skew", "ts_slope", "ts_ema")
TS2 = ("ts_corr", "ts_cov")
BINARY = ("+", "-", "*", "/")
#: Directed draws per brief before :func:`warm_start_pairs` falls back to the plain grammar.
DIRECTED_TRIES = 40
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
                     accept: Callable[[str], bool] | None = None,
                     directed: bool = False) -> list[tuple[str, str]]:
    """``n`` (brief, formula) pairs: briefs drawn uniformly, each with ``per_brief`` random formulas.

    Brief ``i``'s formulas come from ``default_rng([seed, i])``: with ``directed``, from
    :func:`brief_formula` (random formulas that meet the brief's checkable facets, so a policy
    can learn to follow an unseen brief; :func:`sample_formula` where none is found), else from
    :func:`sample_formula` (a random mapping: greedy answers to unseen briefs collapse onto the
    policy's mode).  The mapping carries no alpha either way.  A formula whose canonical form is
    a paper alpha is redrawn, and so is one ``accept`` rejects (the warm start passes the gate).
    """
    from gymkit.briefs import brief_from_text
    from gymkit.dsl import canonical, parse

    rng = np.random.default_rng(seed)
    banned = alpha101_canonicals()
    pools: dict[int, list[str]] = {}

    def pool(i: int) -> list[str]:
        if i not in pools:
            r = np.random.default_rng([seed, i])
            brief = brief_from_text(briefs[i]) if directed else None
            got: list[str] = []
            tries = 0
            while len(got) < per_brief:
                # A brief whose directed formulas ``accept`` keeps refusing (all too long, or
                # all failing the gate) falls back to the plain grammar after DIRECTED_TRIES.
                tries += 1
                directed_f = (brief_formula(r, brief)
                              if brief is not None and tries <= DIRECTED_TRIES else None)
                f = directed_f or sample_formula(r)
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


# ------------------------------------------------------------- brief-directed formulas
_PRICES = ("open", "high", "low", "close", "vwap")


def _pick(rng: np.random.Generator, xs: Sequence[Any]) -> Any:
    return xs[int(rng.integers(len(xs)))]


def _window_in(rng: np.random.Generator, lo: int, hi: int) -> int:
    inside = [w for w in WINDOWS if lo <= w <= hi]
    return _pick(rng, inside) if inside and rng.random() < 0.7 else int(rng.integers(lo, hi + 1))


def _price_series(rng: np.random.Generator, k: int) -> str:
    p = _pick(rng, _PRICES)
    return _pick(rng, (p, f"rank({p})", "returns", f"{p} / delay({p}, {k}) - 1", f"log({p})"))


def _volume_series(rng: np.random.Generator, k: int) -> str:
    return _pick(rng, ("volume", "rank(volume)", f"volume / ts_mean(volume, {k})", "log(volume)",
                       f"ts_delta(volume, {k})"))


def _mechanism_core(rng: np.random.Generator, mech: str, w: int, k: int) -> str:
    """A random expression that satisfies mechanism ``mech`` (gymkit.briefs' AST check) with window ``w``."""
    p, q = _pick(rng, _PRICES), _pick(rng, _PRICES)
    if mech == "extremes":
        op = _pick(rng, ("ts_max", "ts_min", "ts_argmax", "ts_argmin"))
        return f"{op}({p} {_pick(rng, ('*', '/'))} {_pick(rng, ('volume', 'rank(volume)'))}, {w})"
    if mech == "price_volume_corr":
        return f"{_pick(rng, ('ts_corr', 'ts_cov'))}({_price_series(rng, k)}, {_volume_series(rng, k)}, {w})"
    if mech == "volume_variability":
        return f"{_pick(rng, ('ts_std', 'ts_skew', 'ts_kurt'))}({_volume_series(rng, k)}, {w})"
    if mech == "reversal":
        return _pick(rng, (f"-ts_sum(returns, {w})", f"-({p} / delay({p}, {w}) - 1)",
                           f"-ts_mean(returns, {w})", f"ts_mean({p}, {w}) - {p}"))
    if mech == "intraday_range":
        c = _pick(rng, ("close", "open"))
        return _pick(rng, (f"({c} - low) / (high - low + 0.001)", f"(high - {c}) / (high - low + 0.001)",
                           f"ts_mean(({c} - low) / (high - low + 0.001), {w})"))
    if mech == "vwap_deviation":
        return _pick(rng, (f"vwap - {p}", f"{p} / vwap - 1", f"ts_mean(vwap - {p}, {w})",
                           f"ts_sum({p} / vwap - 1, {w})"))
    if mech == "trend_slope":
        x = _pick(rng, (p, "returns", f"log({p})", "volume"))
        return f"{_pick(rng, ('ts_slope', 'ts_decay_linear'))}({x}, {w})"
    if mech == "liquidity_shock":
        return _pick(rng, (f"volume / ts_mean(volume, {w})", f"ts_rank(volume, {w})",
                           f"volume / adv({w})", f"ts_sum(volume, {k}) / ts_sum(volume, {w})"))
    if mech == "distribution_shape":
        return f"{_pick(rng, ('ts_skew', 'ts_kurt'))}({_pick(rng, ('returns', f'{p} / {q}'))}, {w})"
    if mech == "overnight_gap":
        return _pick(rng, ("open / delay(close, 1) - 1", f"ts_mean(open / delay(close, 1) - 1, {w})",
                           f"open - delay(close, {k})"))
    if mech == "volatility_scaled":
        return f"({_pick(rng, ('returns', f'ts_delta({p}, {k})', f'{p} - ts_mean({p}, {k})'))}) / ts_std(returns, {w})"
    if mech == "rank_persistence":
        return f"ts_rank(rank({_pick(rng, ('returns', 'volume', f'{p} / vwap', f'ts_delta({p}, {k})'))}), {w})"
    raise ValueError(f"unknown mechanism {mech!r}")


def _with_input_rule(rng: np.random.Generator, core: str, rule: str, w: int) -> str:
    if rule == "one_ts_corr" and "ts_corr(" not in core:
        return f"({core}) * ts_corr({_pick(rng, _PRICES)}, volume, {w})"
    if rule in ("volume_input", "price_and_volume") and "volume" not in core and "adv(" not in core:
        return f"({core}) * {_pick(rng, ('rank(volume)', f'volume / ts_mean(volume, {w})'))}"
    if rule == "vwap_input" and "vwap" not in core:
        return f"({core}) * (close / vwap)"
    if rule == "uses_returns" and "returns" not in core:
        return f"({core}) * ts_mean(returns, {w})"
    return core


def _with_hint(rng: np.random.Generator, core: str, hint: str, w: int) -> str:
    if hint == "sign_relation":
        return f"sign(ts_slope({_pick(rng, _PRICES)}, {w})) * ({core})"
    if hint == "rank_final":
        return f"rank({core})"
    if hint == "vol_normalise":
        return f"({core}) / ts_std(returns, {w})"
    if hint == "decay":
        return f"ts_decay_linear({core}, {_pick(rng, (3, 5, 8, 10))})"
    if hint == "conditional":
        p = _pick(rng, _PRICES)
        return f"({p} > ts_mean({p}, {w})) ? ({core}) : (-({core}))"
    if hint == "product":
        return f"({core}) * rank({_pick(rng, ('volume', 'returns', 'vwap - close'))})"
    return core


def brief_formula(rng: np.random.Generator, brief: Any, tries: int = 200,
                  max_nodes: int = 16) -> str | None:
    """A random formula meeting every machine-checkable facet of ``brief`` (a gymkit Brief), or None.

    Fields, operator variants, windows inside the brief's horizon band and the overall sign
    are drawn from ``rng``, so the formulas follow the brief's words but carry no edge: the
    sign is a coin flip, so their mean Sharpe is 0 in expectation (measured in ``sft``).  At
    most ``max_nodes`` expression nodes (the policy's answer budget).
    """
    from gymkit.briefs import check_compliance, horizon_band
    from gymkit.dsl import DSLError, parse
    from gymkit.dsl.analysis import node_count
    from gymkit.dsl.printer import to_text

    f = brief.facets
    lo, hi = horizon_band(int(f["horizon"]))
    for _ in range(tries):
        w = _window_in(rng, lo, hi)
        k = _pick(rng, (1, 2, 3, 5))
        text = _mechanism_core(rng, f["mechanism"], w, k)
        text = _with_input_rule(rng, text, f["input_rule"], w)
        text = _with_hint(rng, text, f["hint"], w)
        if rng.random() < 0.5:
            text = f"-({text})"
        try:
            expr = parse(text)
        except DSLError:
            continue
        if node_count(expr) <= max_nodes and not check_compliance(expr, brief).failed:
            return to_text(expr)
    return None
