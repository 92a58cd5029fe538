"""``gymkit market``: summarise a market, or clean a vendor file once into a validated Parquet.

``gymkit market``                 the embedded default market;
``gymkit market FILE``            a panel file (strict unless ``--lenient``), with the split the
                                  environment would use on it (the one rule);
``gymkit market clean IN OUT``    read IN leniently (aliases, ``--columns``, ``--adjust``), mask
                                  or drop what breaks a rule, write OUT (long Parquet, schema
                                  columns only, sorted) and ``OUT.report.json`` (per rule: the
                                  count and the rows; warnings; column notes), so every later
                                  command reads OUT strictly and gets the same panel.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from .errors import UsageError
from .options import add_market_args, note, parse_split, read_market

__all__ = ["configure", "panel_to_long", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit market``."""
    p.add_argument("path", nargs="*", metavar="FILE",
                   help="a panel file, or: clean IN OUT (default: the embedded market)")
    add_market_args(p, market=False)
    p.add_argument("--report", default=None, metavar="FILE",
                   help="clean: where to write the JSON report (default OUT.report.json)")


def panel_to_long(panel: object) -> object:
    """The long polars frame of a panel: one row per (date, ticker) with any value, sorted."""
    import numpy as np
    import polars as pl

    from gymkit.data.panel import Panel

    assert isinstance(panel, Panel)
    t, n = panel.T, panel.N
    cols: dict[str, object] = {
        "date": np.repeat(panel.dates, n),
        "ticker": np.tile(np.array(panel.tickers, dtype=object), t),
    }
    names = ["open", "high", "low", "close", "volume"] + (["cap"] if panel.cap is not None else [])
    for name in names:
        cols[name] = getattr(panel, name).reshape(-1)
    for level in ("sector", "industry"):
        labels = getattr(panel, level)
        if labels is not None:
            cols[level] = np.tile(np.array(labels, dtype=object), t)
    frame = pl.DataFrame(cols).with_columns(pl.col(c).fill_nan(None) for c in names)
    return frame.filter(pl.any_horizontal(pl.col(c).is_not_null() for c in names))


def _clean(args: argparse.Namespace, src: str, out: str) -> int:
    from gymkit.data.columns import parse_mapping
    from gymkit.data.loaders import PARQUET_SUFFIXES, load_panel_with_report

    dest = Path(out)
    if not dest.name.lower().endswith(PARQUET_SUFFIXES):  # before the (long) load, not after it
        raise UsageError(f"market clean writes Parquet: OUT must end in .parquet, got {out!r}")
    if Path(src).exists() and dest.exists() and dest.resolve() == Path(src).resolve():
        raise UsageError(f"market clean would overwrite its input {src}: name another OUT")
    if args.split is not None:
        raise UsageError("market clean writes the whole panel; a split belongs to the commands "
                         "that score it (pass --split there, or see it with 'gymkit market OUT "
                         "--split ...')")
    columns = parse_mapping(args.columns) if args.columns else None
    input_sha256 = hashlib.sha256(Path(src).read_bytes()).hexdigest() if Path(src).is_file() else None
    panel, report = load_panel_with_report(src, strict=False, adjust=args.adjust,
                                           columns=columns)
    dest.parent.mkdir(parents=True, exist_ok=True)
    panel_to_long(panel).write_parquet(dest)
    rep_path = Path(args.report) if args.report else dest.with_name(dest.name + ".report.json")
    body = {"input": src, "input_sha256": input_sha256,
            "output": str(dest), "panel_fingerprint": panel.fingerprint,
            "sessions": panel.T, "tickers": panel.N, "adjusted": bool(args.adjust),
            **report.to_dict()}
    rep_path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"cleaned {src} -> {dest}: {panel.T} sessions x {panel.N} tickers, "
          f"{report.summary()}")
    for rule, line in report.first.items():
        print(f"  {rule:24s} {report.counts[rule]:>7d}  {line}")
    for rule, line in report.warned_first.items():
        print(f"  warning {rule:16s} {report.warned[rule]:>7d}  {line}")
    for line in report.notes:
        print(f"  note {line}")
    print(f"report written to {rep_path}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit market`` (module doc)."""
    from gymkit.market_summary import market_summary

    paths = list(args.path)
    if paths and paths[0] == "clean":
        if len(paths) != 3:
            raise UsageError("market clean needs IN and OUT: gymkit market clean IN OUT.parquet")
        return _clean(args, paths[1], paths[2])
    if len(paths) > 1:
        raise UsageError(f"market takes one FILE (or clean IN OUT), got {len(paths)} arguments")
    if not paths:
        from gymkit.data import default_market

        print(market_summary(default_market(), "gymkit default market (synthetic, embedded)"))
        return 0
    panel = read_market(args, paths[0], listed="full")
    from gymkit.config import EnvConfig, split_for_market

    cfg, how = split_for_market(EnvConfig(market="user"), panel.dates, parse_split(args.split))
    s = cfg.split_obj
    lines = market_summary(panel, f"panel {paths[0]}").splitlines()
    n_hold = int(s.holdout_mask(panel.dates).sum())
    lines = [ln if not ln.startswith("  split ") else
             f"  split        train {s.train(panel).T} sessions {s.train_start}..{s.train_end}, "
             f"holdout {n_hold} sessions {s.holdout_start}..{s.holdout_end}" for ln in lines]
    print("\n".join(lines))
    if how:
        note(how)
    return 0
