"""Map a vendor's column names onto the panel schema (before validation).

Three steps, in order, each recorded as a note:

1. **Explicit mapping** ``columns={"date": "Date", "ticker": "Name"}`` (schema name -> the
   file's column; CLI ``--columns date=Date,ticker=Name``).  The file's column is matched
   exactly, else case-insensitively; an unknown schema name or a column the file lacks is a
   one-line error.
2. **Pandas index columns** (``__index_level_0__`` of a Parquet written by pandas,
   ``Unnamed: 0`` of ``to_csv``, ``index``/``level_0`` of ``reset_index``) are dropped; when
   the frame has no date column, a lone index column becomes the date.  Two-level pandas
   column names as a Parquet file stores them (``"('Open', 'AAPL')"``: yfinance's
   ``download`` frame, ``to_parquet``) are read as wide ``Open:AAPL``, field first, as a
   two-level pandas frame is.
3. **Case-insensitive names and aliases**: a name is compared lower-cased with runs of
   non-alphanumerics as ``_`` (``Adj Close`` -> ``adj_close``) and looked up in
   :data:`ALIASES` (``Name``/``symbol``/``permno`` -> ticker, ``timestamp`` -> date, ...).
   When several columns claim one schema name, the schema name itself wins, then the
   earlier alias in the table; the others are ignored with a note.  Wide columns
   ``Field:TICKER`` get the same treatment on their field part.

Unknown extra columns of a long frame are dropped with a note (never an error).

CRSP's convention is kept: a close that comes from a ``PRC`` column is ``|PRC|``, because CRSP
prints the bid/ask midpoint with a minus sign on a day without a closing trade (a note counts
those days).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

import polars as pl

from gymkit.data.validate import KNOWN_COLUMNS, ValidationError, clip, list_columns

#: schema name -> accepted aliases (normalised spelling), in order of preference.
ALIASES: dict[str, tuple[str, ...]] = {
    "date": ("date", "timestamp", "datetime", "time", "day", "trade_date", "tradedate"),
    "ticker": ("ticker", "symbol", "permno", "tic", "sym", "name", "asset", "code"),
    "open": ("open", "open_price"),
    "high": ("high", "high_price"),
    "low": ("low", "low_price"),
    "close": ("close", "close_price", "prc", "last"),
    "volume": ("volume", "vol", "shares_traded"),
    "adj_close": ("adj_close", "adjclose", "adjusted_close", "adj_close_price"),
    "cap": ("cap", "market_cap", "marketcap", "mktcap", "mkt_cap"),
    "split": ("split", "split_coefficient", "split_factor", "splits", "stock_splits"),
    "dividend": ("dividend", "dividends", "dividend_amount", "div"),
    "sector": ("sector", "gics_sector"),
    "industry": ("industry", "gics_industry", "sub_industry"),
}
_LOOKUP: dict[str, tuple[str, int]] = {
    a: (name, rank) for name, aliases in ALIASES.items() for rank, a in enumerate(aliases)}
_INDEX = re.compile(r"^(__index_level_\d+__|unnamed_\d+|index|level_\d+)$")
_SEP = ":"


def norm(name: str) -> str:
    """The comparison key of a column name: lower case, non-alphanumeric runs as ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lstrip("\ufeff").lower()).strip("_")


def parse_mapping(text: str) -> dict[str, str]:
    """Parse the CLI form ``date=Date,ticker=Name`` into ``{"date": "Date", ...}``."""
    out: dict[str, str] = {}
    for part in (p for p in text.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ValueError(f"--columns entry {clip(part)!r} is not SCHEMA=COLUMN "
                             "(e.g. date=Date,ticker=Name)")
        if key.strip() in out:
            raise ValueError(f"--columns names {key.strip()!r} twice ({out[key.strip()]!r} and "
                             f"{value.strip()!r}): give each schema field one column")
        out[key.strip()] = value.strip()
    return out


def _apply_mapping(frame: pl.DataFrame, columns: Mapping[str, str],
                   notes: list[str], origin: dict[str, str]) -> pl.DataFrame:
    rename: dict[str, str] = {}
    by_lower = {c.lower(): c for c in frame.columns}
    for key, src in columns.items():
        if key not in KNOWN_COLUMNS:
            raise ValidationError("unknown-column", f"columns= maps {clip(src)!r} to "
                                  f"{clip(key)!r}, which is not a schema column "
                                  f"({', '.join(KNOWN_COLUMNS)})", column=key)
        col = src if src in frame.columns else by_lower.get(src.lower())
        if col is None:
            raise ValidationError("missing-column", f"columns= names {clip(src)!r} for {key}; "
                                  f"the input has {list_columns(frame.columns)}", column=src)
        rename[col] = key
    clash = [c for c in frame.columns if c in rename.values() and c not in rename]
    if clash:
        frame = frame.drop(clash)
        notes.append(f"ignored column(s) {list_columns(clash)}: replaced by the columns= mapping")
    if rename:
        notes.append("mapped " + ", ".join(f"{clip(k)!r} -> {v}" for k, v in rename.items()))
    origin.update({v: k for k, v in rename.items()})
    return frame.rename(rename)


def _pair_of(name: str) -> tuple[str, str] | None:
    """``("Open", "AAPL")`` for the stored name ``"('Open', 'AAPL')"`` of a 2-level column."""
    if not (name.startswith("(") and name.endswith(")")):
        return None
    try:
        value = ast.literal_eval(name)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value
    return None


def _two_level_names(frame: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    pairs = {c: _pair_of(c) for c in frame.columns}
    rename = {c: f"{p[0]}{_SEP}{p[1]}" for c, p in pairs.items() if p is not None}
    if not rename:
        return frame
    first = next(iter(rename))
    notes.append(f"read {len(rename)} two-level pandas column name(s) as field{_SEP}ticker "
                 f"({clip(first)!r} -> {clip(rename[first])!r}, field first)")
    return frame.rename(rename)


def _drop_index(frame: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    index = [c for c in frame.columns if _INDEX.match(norm(c)) or _INDEX.match(c)]
    if not index:
        return frame
    has_date = any(_LOOKUP.get(norm(c), ("",))[0] == "date" for c in frame.columns
                   if c not in index)
    if not has_date and len(index) == 1:
        notes.append(f"used the pandas index column {clip(index[0])!r} as the date")
        return frame.rename({index[0]: "date"})
    notes.append(f"dropped pandas index column(s) {list_columns(index)}")
    return frame.drop(index)


def _crsp_close(frame: pl.DataFrame, origin: Mapping[str, str], notes: list[str]) -> pl.DataFrame:
    """``close`` from a CRSP ``PRC`` column as ``|PRC|`` (negative = bid/ask midpoint, no trade)."""
    src = origin.get("close")
    if src is None or norm(src) != "prc" or "close" not in frame.columns:
        return frame
    col = frame.get_column("close")
    if col.dtype.is_numeric():
        negative = col < 0
        fixed = col.abs()
    elif col.dtype == pl.String:  # text is parsed by the validator; only the sign is read here
        text = col.str.strip_chars()
        negative = text.str.starts_with("-")
        fixed = text.str.strip_prefix("-")
    else:
        return frame
    count = int(negative.fill_null(False).sum())
    if not count:
        return frame
    notes.append(f"close from CRSP {clip(src)!r}: {count:,} negative value(s) are CRSP's bid/ask "
                 "midpoint on a day without a closing trade; their absolute value is used")
    return frame.with_columns(fixed.alias("close"))


def normalise_columns(frame: pl.DataFrame, columns: Mapping[str, str] | None = None
                      ) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Return ``frame`` with schema column names (module doc) and the notes of what changed."""
    notes: list[str] = []
    origin: dict[str, str] = {}  # schema column -> the input's name for it
    if columns:
        frame = _apply_mapping(frame, columns, notes, origin)
    frame = _drop_index(_two_level_names(frame, notes), notes)
    claims: dict[str, list[tuple[int, str]]] = {}
    for c in frame.columns:
        field, sep, ticker = c.partition(_SEP)
        hit = _LOOKUP.get(norm(field))
        if hit is None:
            continue
        exact = 0 if field == hit[0] else 1
        claims.setdefault(hit[0] + sep + ticker, []).append((exact * 100 + hit[1], c))
    rename: dict[str, str] = {}
    ignored: list[str] = []
    for target, cands in claims.items():
        cands.sort()
        rename[cands[0][1]] = target
        ignored += [c for _, c in cands[1:]]
    if ignored:
        frame = frame.drop(ignored)
        notes.append(f"ignored column(s) {list_columns(ignored)}: another column supplies the "
                     "same schema field")
    changed = {k: v for k, v in rename.items() if k != v}
    if changed:
        shown = list(changed.items())[:12]
        more = f" ... ({len(changed)} in all)" if len(changed) > 12 else ""
        notes.append("recognised " + ", ".join(f"{clip(k)!r} as {v}" for k, v in shown) + more)
        frame = frame.rename(changed)
    origin.update({v: k for k, v in changed.items()})
    frame = _crsp_close(frame, origin, notes)
    if "ticker" in frame.columns:  # long layout: extra columns are ignored, with a note
        extra = [c for c in frame.columns if c not in KNOWN_COLUMNS]
        if extra:
            frame = frame.drop(extra)
            notes.append(f"ignored column(s) not in the schema: {list_columns(extra)}")
    return frame, tuple(notes)
