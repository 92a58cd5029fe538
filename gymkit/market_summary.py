"""``market_summary``: the few-line summary of a market panel that ``gymkit market`` and
``gymkit demo`` print (a module of its own so that neither command imports the other's)."""

from __future__ import annotations

__all__ = ["market_summary"]


def _missing_opens(panel: object) -> str:
    """How many priced cells (a close) lack an open: the book cannot fill there."""
    import numpy as np

    n = int((np.isnan(panel.open) & ~np.isnan(panel.close)).sum())
    return f"{n:,} priced cell(s) with no open: the book earns 0 on a position across them" if n else "every priced cell has an open"


def market_summary(panel: object, title: str) -> str:
    """Return a human-readable multi-line summary of a Panel (shape, span, fields, stats)."""
    import numpy as np

    from gymkit.data import DEFAULT_SPLIT, Panel

    assert isinstance(panel, Panel)
    r = panel.field("returns")[1:]  # row 0 has no previous close
    vol = np.nanstd(r, axis=0, ddof=1) * np.sqrt(252)
    mkt = np.nanmean(r, axis=1)
    train = DEFAULT_SPLIT.train(panel)
    hold = int(DEFAULT_SPLIT.holdout_mask(panel.dates).sum())
    opt = [n for n in ("cap", "sector", "industry") if getattr(panel, n) is not None]
    lines = [
        f"{title}",
        f"  sessions     {panel.T} ({panel.dates[0]} .. {panel.dates[-1]}, NYSE)",
        f"  stocks       {panel.N}: {' '.join(panel.tickers[:8])}{' ...' if panel.N > 8 else ''}",
        f"  split        train {train.T} sessions to {DEFAULT_SPLIT.train_end}, holdout {hold} sessions",
        f"  fields       open high low close volume | derived returns vwap | optional {' '.join(opt) or '-'}",
        f"  missing      {np.isnan(panel.close).mean():.2%} of close cells, "
        f"{np.isnan(panel.open).mean():.2%} of open cells ({_missing_opens(panel)})",
        f"  volatility   median {np.nanmedian(vol):.1%}/yr across stocks "
        f"(10%-90%: {np.nanpercentile(vol, 10):.1%}-{np.nanpercentile(vol, 90):.1%})",
        f"  market       equal-weight {np.nanmean(mkt) * 252:+.1%}/yr, vol {np.nanstd(mkt) * np.sqrt(252):.1%}/yr",
        f"  fingerprint  {panel.fingerprint}",
    ]
    if panel.sector is not None:
        lines.insert(4, f"  sectors      {len(set(panel.sector))} sectors"
                        + (f", {len(set(panel.industry))} industries" if panel.industry else ""))
    return "\n".join(lines)
