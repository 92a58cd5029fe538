"""Write docs/dsl.md, the DSL reference, from the operator table (``gymkit.dsl.operators``).

    .venv/bin/python docs/make_dsl_reference.py          # rewrite docs/dsl.md
    .venv/bin/python docs/make_dsl_reference.py --check  # exit 1 if docs/dsl.md is stale

Signatures, spellings, infix symbols, motif families, lookback rules, value ranges, fields and
limits come from the table itself; only the one-line meanings below are written by hand, and
:func:`render` refuses an operator that has none (so a new operator cannot ship undocumented).
"""

from __future__ import annotations

import sys
from pathlib import Path

from gymkit.dsl import operators as ops

OUT = Path(__file__).resolve().parent / "dsl.md"

#: canonical operator name -> what its value is at session t (column by column unless noted).
MEANING: dict[str, str] = {
    "or": "1 if either is non-zero, else 0; NaN if either is NaN",
    "and": "1 if both are non-zero, else 0; NaN if either is NaN",
    "lt": "1 if x < y else 0; NaN if either is NaN",
    "le": "1 if x ≤ y else 0; NaN if either is NaN",
    "gt": "1 if x > y else 0; NaN if either is NaN",
    "ge": "1 if x ≥ y else 0; NaN if either is NaN",
    "eq": "1 if x = y else 0; NaN if either is NaN",
    "ne": "1 if x ≠ y else 0; NaN if either is NaN",
    "add": "x + y",
    "sub": "x − y",
    "mul": "x · y",
    "div": "x / y; division by 0 is NaN",
    "power": "x to the power y when real and finite, else NaN",
    "neg": "−x",
    "where": "c ? a : b — a where c ≠ 0, else b; NaN where c is NaN",
    "abs": "|x|",
    "log": "natural log for x > 0, else NaN",
    "sign": "−1, 0 or +1",
    "sqrt": "square root for x ≥ 0, else NaN",
    "signed_power": "sign(x)·|x|^a",
    "min": "element-wise minimum (min(x, d) with an integer d is ts_min)",
    "max": "element-wise maximum (max(x, d) with an integer d is ts_max)",
    "rank": "cross-sectional rank of the day, (r − 1)/(n − 1) in [0, 1], ties averaged",
    "scale": "cross-sectional x / Σ|x| of the day",
    "group_neutralize": "x minus the mean of its sector or industry that day",
    "delay": "x, d sessions ago",
    "ts_delta": "x today minus x d sessions ago",
    "ts_mean": "mean of the last d sessions",
    "ts_std": "standard deviation (ddof 1) of the last d sessions",
    "ts_sum": "sum of the last d sessions",
    "ts_max": "maximum of the last d sessions",
    "ts_min": "minimum of the last d sessions",
    "ts_product": "product of the last d sessions",
    "ts_decay_linear": "weighted mean of the last d sessions, weights d (today) … 1",
    "ts_ema": "exponential moving average, α = 2/(d + 1), started at the first full window's mean",
    "ts_skew": "skewness (bias-corrected) of the last d sessions",
    "ts_kurt": "excess kurtosis (bias-corrected) of the last d sessions",
    "ts_slope": "OLS slope of the last d sessions on 0 … d − 1",
    "ts_rank": "today's rank within the last d sessions, in [0, 1]",
    "ts_argmax": "sessions since the maximum of the last d (0 = today)",
    "ts_argmin": "sessions since the minimum of the last d (0 = today)",
    "ts_corr": "correlation of x and y over the last d sessions",
    "ts_cov": "covariance (ddof 1) of x and y over the last d sessions",
    "adv": "average daily dollar volume, mean of close · volume over d sessions (also written adv20)",
}

_ARG = {ops.EXPR: "x", ops.WINDOW: "d", ops.LEVEL: "level"}
_LOOKBACK = {
    ops.LB_MAX: "max of its inputs",
    ops.LB_ADD_D: "inputs + d",
    ops.LB_ADD_D_MINUS_1: "inputs + d − 1",
    ops.LB_D: "d",
}
_SECTIONS = (
    ("Arithmetic, comparison and logic", ("arithmetic", "comparison", "logic", "conditional")),
    ("Element-wise functions", ("transform",)),
    ("Cross-sectional (one day across stocks)", ("rank", "scale", "group")),
    ("Time series (one stock across sessions)", ("lag", "ts_stat", "ts_rank", "correlation", "volume")),
)


def _signature(spec: ops.OpSpec) -> str:
    names = [_ARG[a] for a in spec.args]
    if names.count("x") > 1:  # x, y (, z)
        it = iter("xyz")
        names = [next(it) if n == "x" else n for n in names]
    if spec.name == "where":
        names = ["c", "a", "b"]
    if spec.name == "signed_power":
        names = ["x", "a"]
    return f"{spec.name}({', '.join(names)})"


def _infix(spec: ops.OpSpec) -> str:
    if spec.infix is None:
        return ""
    if spec.name == "where":
        return "`c ? a : b`"
    if len(spec.args) == 1:
        return f"`{spec.infix}x`"
    return f"`x {spec.infix} y`".replace("|", "\\|")  # a literal | inside a Markdown table


def _range(spec: ops.OpSpec) -> str:
    if spec.value_range is None:
        return ""
    lo, hi = spec.value_range
    return f"[{lo:g}, {hi:g}]"


def render() -> str:
    """The whole of docs/dsl.md as text (ValueError naming an operator without a meaning)."""
    missing = sorted(set(ops.OPERATORS) - set(MEANING))
    if missing:
        raise ValueError(f"operators without a line in MEANING: {', '.join(missing)}")
    lines = [
        "# The formula language (DSL reference)",
        "",
        "<!-- generated by docs/make_dsl_reference.py from gymkit/dsl/operators.py: do not edit -->",
        "",
        "An answer is one expression over the panel's fields. It is evaluated for every session and",
        "every stock at once; the book is the cross-sectional rank of its value, demeaned and scaled",
        "to gross exposure 1. Names are case-insensitive (`Ts_Rank` = `ts_rank`); the aliases come",
        "from the 101 Formulaic Alphas paper's spellings. Every operator looks only backward.",
        "",
        "```python",
        "from gymkit.data import default_market",
        "from gymkit.dsl import DSLError, canonical_key, evaluate, lookback, parse, to_text",
        "",
        "expr = parse(\"Rank(-Sum(returns, 5))\")       # paper spellings are fine",
        "assert to_text(expr) == \"rank(-ts_sum(returns, 5))\" and lookback(expr) == 5",
        "print(canonical_key(expr))                     # the form novelty compares (windows bucketed)",
        "values = evaluate(expr, default_market())      # (sessions, stocks) float64, read-only",
        "try:",
        "    parse(\"ts_mean(close, 300)\")",
        "except DSLError as err:",
        "    print(err)                                 # ts_mean expects a window 1–252 at 15, got 300",
        "```",
        "",
        "## Limits",
        "",
        f"* window `d`: an integer literal, 1 … {ops.MAX_WINDOW}",
        f"* lookback (sessions of history a formula needs): at most {ops.MAX_LOOKBACK}",
        f"* at most {ops.MAX_TOKENS} tokens and {ops.MAX_DEPTH} levels of nesting",
        "* a time-series window is NaN unless all its d values are finite; ±inf and invalid",
        "  log/sqrt/division give NaN",
        "",
        "## Fields",
        "",
        "| field | lookback | family | note |",
        "|---|---|---|---|",
    ]
    for f in ops.FIELDS.values():
        note = "optional: not every panel has it" if f.optional else ""
        if f.name == "returns":
            note = "close-to-close return, close / delay(close, 1) − 1"
        lines.append(f"| `{f.name}` | {f.lookback} | {f.family} | {note} |")
    lines += ["", f"Group levels for `group_neutralize`: {', '.join(f'`{lv}`' for lv in ops.LEVELS)} "
              f"(also written {', '.join(f'`{k}`' for k, v in ops.LEVEL_NAMES.items() if k != v)}).", ""]
    for title, families in _SECTIONS:
        lines += [f"## {title}", "", "| call | infix | aliases | meaning | lookback | range |",
                  "|---|---|---|---|---|---|"]
        for spec in ops.OPERATORS.values():
            if spec.family not in families:
                continue
            aliases = ", ".join(f"`{a}`" for a in spec.aliases)
            lines.append(f"| `{_signature(spec)}` | {_infix(spec)} | {aliases} | {MEANING[spec.name]} | "
                         f"{_LOOKBACK[spec.lookback]} | {_range(spec)} |")
        lines.append("")
    covered = {fam for _, fams in _SECTIONS for fam in fams}
    stray = sorted(s.name for s in ops.OPERATORS.values() if s.family not in covered)
    if stray:
        raise ValueError(f"operators in no section of the reference: {', '.join(stray)}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Rewrite docs/dsl.md, or with ``--check`` exit 1 when it differs from :func:`render`."""
    text = render()
    if "--check" in argv:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run .venv/bin/python docs/make_dsl_reference.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
