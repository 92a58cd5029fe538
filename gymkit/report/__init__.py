"""Tear sheets: one self-contained static HTML page per formula or per file of answers.

``formula_report(env, text, out_dir)`` scores one answer and writes ``out_dir/index.html``:
why the reward is what it is (the card's channels × priorities, a reason each), equity,
drawdowns and the worst of them, rolling Sharpe, the return distribution, quantile returns
and their spread, IC and its decay, turnover and holding period, the break-even cost, long
and short legs, the 15 CPCV test slices with the distinct path Sharpes, R2's rank drop per
split, factor exposures (and over time), stress worlds and archive neighbours
(:data:`FORMULA_SECTIONS`).  Train figures only unless ``holdout=True``.  ``answers_report(env, texts, out_dir)`` does
the group view (channel heat map, GDPO advantages, validity) and the book view
(equal-weight and correlation-capped books).  Plots are inline SVG; the page has no script
and loads nothing from the network.  Output is byte-identical for the same inputs unless a
``generated_at`` line is asked for.

Names resolve lazily (one table), so ``gymkit.report.command`` — the CLI's argument setup —
imports without the verifier stack or matplotlib.
"""

from __future__ import annotations

from importlib import import_module

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "ANSWERS_SECTIONS": "gymkit.report.build",
    "FORMULA_SECTIONS": "gymkit.report.build",
    "answers_report": "gymkit.report.api",
    "formula_report": "gymkit.report.api",
    "read_answers": "gymkit.report.api",
    "write_page": "gymkit.report.api",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gymkit.report' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
