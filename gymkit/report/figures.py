"""Tear-sheet plots as inline SVG text (matplotlib, no pyplot, no global backend state).

Every figure is a :class:`matplotlib.figure.Figure` rendered by the SVG backend inside an
``rc_context`` that fixes what would otherwise vary between runs: ``svg.hashsalt`` (the ids
of clip paths and markers; a different salt per figure so ids never collide inside one
page), no ``Date`` metadata, text kept as text (``svg.fonttype='none'``).  The same data
therefore give byte-identical SVG.  The XML prologue is dropped and the fixed width/height
are replaced so the plot scales with the page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib
import matplotlib.ticker
import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

__all__ = ["PALETTE", "bar_svg", "heatmap_svg", "hist_svg", "new_figure", "render_svg", "series_svg"]

#: Colours by role (colour-blind-safe pairs: blues for train, oranges for holdout).
PALETTE = {
    "train": "#1f4e79", "train_gross": "#8fb3d9", "holdout": "#c55a11", "holdout_gross": "#f4b183",
    "market": "#7f7f7f", "capped": "#2e7d32", "neg": "#b22222", "pos": "#1f4e79", "grid": "#e6e6e6",
}

_RC = {
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": PALETTE["grid"],
    "grid.linewidth": 0.6,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "legend.frameon": False,
    "legend.fontsize": 8.0,
    "path.simplify": True,
    "path.simplify_threshold": 0.5,
}

_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)
_IDS = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')
_SIZE = re.compile(r'<svg([^>]*?) width="[^"]*" height="[^"]*"')


def new_figure(width: float = 9.0, height: float = 3.0, *, constrained: bool = False) -> Figure:
    """Return a fresh figure (inches) to draw on; pass it to :func:`render_svg`.

    Fixed margins by default (constrained layout costs more than the drawing itself for
    these small figures); ``constrained=True`` for figures with long tick labels.
    """
    if constrained:
        return Figure(figsize=(width, height), layout="constrained")
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=0.075, right=0.985, bottom=0.13, top=0.88, wspace=0.22)
    return fig


def _date_axis(ax: object) -> None:
    """Concise date ticks (year, then months) that stay readable on narrow panels."""
    import matplotlib.dates as mdates

    loc = mdates.AutoDateLocator(minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(loc)  # type: ignore[attr-defined]
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))  # type: ignore[attr-defined]


def render_svg(fig: Figure, name: str) -> str:
    """Render ``fig`` to deterministic inline SVG text; ``name`` salts its element ids."""
    buf = io.StringIO()
    with matplotlib.rc_context({**_RC, "svg.hashsalt": f"gymkit-report-{name}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "gymkit report"})
    text = _PROLOGUE.sub("", buf.getvalue(), count=1)
    # matplotlib numbers its groups per figure (figure_1, axes_1, ...): prefix every id and
    # every reference to it so that many figures inline in one page keep unique ids
    text = _IDS.sub(lambda m: f'{m.group(1)}{name}-{m.group(2)}', text)
    text = _SIZE.sub(rf'<svg\1 class="plot" role="img" aria-label="{name}"', text, count=1)
    return text.strip()


def styled(fig: Figure) -> None:
    """Apply the report's axes style to every axes of ``fig`` (rc params only act at draw)."""
    for ax in fig.axes:
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(True, color=PALETTE["grid"], linewidth=0.6)
        ax.set_axisbelow(True)


def series_svg(name: str, panels: Sequence[dict], height: float = 2.8,
               widths: Sequence[float] | None = None) -> str:
    """Line plots side by side: each panel ``{'title', 'x', 'lines': [(y, label, colour, style)],
    'fill': bool, 'ylabel', 'pct': bool, 'hline': float | None, 'vlines': [x], 'note': str,
    'right': [lines on a secondary y axis], 'legend': location}``."""
    with matplotlib.rc_context(_RC):
        fig = new_figure(9.0, height)
        axes = fig.subplots(1, len(panels), width_ratios=list(widths) if widths else None,
                            squeeze=False)[0]
        if any(p.get("right") for p in panels):
            fig.subplots_adjust(right=0.93, wspace=0.32)
        for ax, p in zip(axes, panels, strict=True):
            for n_line, (y, label, colour, style) in enumerate(p["lines"]):
                ax.plot(p["x"], y, label=label, color=colour, linestyle=style, linewidth=1.0)
                if p.get("fill") and n_line == len(p["lines"]) - 1:
                    ax.fill_between(p["x"], y, 0.0, color=colour, alpha=0.2, linewidth=0)
            if p.get("right"):  # secondary axis for a series on another scale (e.g. the market)
                ax2 = ax.twinx()
                for y, label, colour, style in p["right"]:
                    ax2.plot(p["x"], y, label=label, color=colour, linestyle=style, linewidth=0.9)
                ax2.spines[["top"]].set_visible(False)
                ax2.grid(False)
                if p.get("pct"):
                    ax2.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=None))
                ax2.legend(loc="lower right")
            if np.issubdtype(np.asarray(p["x"]).dtype, np.datetime64):
                _date_axis(ax)
            for xv in p.get("vlines", ()):
                ax.axvline(xv, color="#999999", linewidth=0.6, linestyle=":")
            if p.get("hline") is not None:
                ax.axhline(p["hline"], color="#555555", linewidth=0.7)
            if p.get("pct"):
                ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=None))
            ax.set_title(p.get("title", ""), loc="left")
            if p.get("ylabel"):
                ax.set_ylabel(p["ylabel"])
            if p.get("note"):
                ax.text(0.01, 0.02, p["note"], transform=ax.transAxes, fontsize=7.5, color="#444444")
            if any(lbl for _, lbl, _, _ in p["lines"]):
                ax.legend(loc=p.get("legend", "upper left"))
        styled(fig)
        return render_svg(fig, name)


def bar_svg(name: str, panels: Sequence[dict], height: float = 2.8,
            widths: Sequence[float] | None = None) -> str:
    """Bar charts side by side: each panel ``{'title', 'labels', 'bars': [(values, label, colour)],
    'markers': [(values, label, colour)], 'hlines': [(y, label, colour)], 'ylabel', 'pct'}``;
    several bar series are grouped, markers are drawn over the group centres."""
    with matplotlib.rc_context(_RC):
        fig = new_figure(9.0, height)
        axes = fig.subplots(1, len(panels), width_ratios=list(widths) if widths else None,
                            squeeze=False)[0]
        if any("\n" in str(lab) for p in panels for lab in p["labels"]):
            fig.subplots_adjust(bottom=0.2)
        for ax, p in zip(axes, panels, strict=True):
            labels = list(p["labels"])
            x = np.arange(len(labels), dtype=np.float64)
            bars = p.get("bars", [])
            k = max(1, len(bars))
            w = 0.8 / k
            for j, (vals, label, colour) in enumerate(bars):
                v = np.asarray(vals, dtype=np.float64)
                cols = colour if isinstance(colour, str) else list(colour)
                ax.bar(x - 0.4 + w * (j + 0.5), np.nan_to_num(v), width=w, label=label, color=cols)
            for vals, label, colour in p.get("markers", []):
                ax.plot(x, vals, linestyle="none", marker="D", markersize=4, color=colour, label=label)
            for y, label, colour in p.get("hlines", []):
                ax.axhline(y, color=colour, linewidth=1.0, linestyle="--", label=label)
            ax.axhline(0.0, color="#555555", linewidth=0.6)
            ax.set_xticks(x, labels, rotation=p.get("rotation", 0), fontsize=p.get("fontsize", 8))
            if p.get("pct"):
                ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=None))
            ax.set_title(p.get("title", ""), loc="left")
            if p.get("ylabel"):
                ax.set_ylabel(p["ylabel"])
            if any(lbl for *_, lbl, _ in [*bars, *p.get("markers", []), *p.get("hlines", [])]):
                if p.get("legend_above"):  # beside the title, clear of the bars
                    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=4, fontsize=7.5,
                              borderaxespad=0.2)
                else:
                    ax.legend(loc="best")
        styled(fig)
        return render_svg(fig, name)


def heatmap_svg(name: str, z: np.ndarray, text: np.ndarray, rows: Sequence[str],
                cols: Sequence[str], title: str) -> str:
    """A diverging heat map of ``z`` (rows × cols, centred at 0) annotated with ``text``."""
    g, k = z.shape
    with matplotlib.rc_context(_RC):
        fig = new_figure(9.0, max(2.4, 0.28 * g + 1.4), constrained=True)
        ax = fig.subplots()
        lim = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() and np.nanmax(np.abs(z)) > 0 else 1.0
        # vector cells (pcolormesh), not imshow: imshow would embed a PNG inside the SVG
        ax.pcolormesh(np.arange(k + 1) - 0.5, np.arange(g + 1) - 0.5, np.nan_to_num(z), cmap="RdBu",
                      norm=TwoSlopeNorm(0.0, -lim, lim), edgecolors="white", linewidth=0.5)
        ax.set_xlim(-0.5, k - 0.5)
        ax.set_ylim(g - 0.5, -0.5)
        for i in range(g):
            for j in range(k):
                ax.text(j, i, text[i, j], ha="center", va="center", fontsize=6.5,
                        color="white" if abs(z[i, j]) > 0.6 * lim else "black")
        ax.set_xticks(np.arange(k), list(cols), rotation=30, ha="right", fontsize=7.5)
        ax.set_yticks(np.arange(g), list(rows), fontsize=7.5)
        ax.grid(False)
        ax.set_title(title, loc="left")
        return render_svg(fig, name)


def hist_svg(name: str, panels: Sequence[dict], height: float = 2.6,
             widths: Sequence[float] | None = None) -> str:
    """Histograms side by side: each panel ``{'title', 'series': [(values, label, colour)],
    'bins': int, 'vlines': [(x, label, colour)], 'pct': bool (x axis as %), 'xlabel'}``;
    several series share the panel's bins and are drawn as outlined densities."""
    with matplotlib.rc_context(_RC):
        fig = new_figure(9.0, height)
        axes = fig.subplots(1, len(panels), width_ratios=list(widths) if widths else None,
                            squeeze=False)[0]
        for ax, p in zip(axes, panels, strict=True):
            series = [(np.asarray(v, dtype=np.float64), lab, col) for v, lab, col in p["series"]]
            finite = np.concatenate([v[np.isfinite(v)] for v, _, _ in series])
            edges = np.histogram_bin_edges(finite, bins=p.get("bins", 40))
            for v, lab, col in series:
                dens = len(series) > 1
                ax.hist(v[np.isfinite(v)], bins=edges, color=col, alpha=0.55 if dens else 0.85,
                        density=dens, label=lab, edgecolor="white", linewidth=0.3)
            for xv, lab, col in p.get("vlines", ()):
                ax.axvline(xv, color=col, linewidth=1.0, linestyle="--", label=lab)
            if p.get("pct"):
                ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=None))
            ax.set_title(p.get("title", ""), loc="left")
            if p.get("xlabel"):
                ax.set_xlabel(p["xlabel"])
            if any(lab for _, lab, _ in [*series, *p.get("vlines", ())]):
                ax.legend(loc="upper left")
        styled(fig)
        return render_svg(fig, name)
