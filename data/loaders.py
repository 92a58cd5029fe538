"""Load a :class:`Panel` from files or frames, long or wide (polars throughout).

Layouts
-------
*long*: one row per (date, ticker); columns ``date, ticker, open, high, low, close,
volume`` and optionally ``sector, industry, cap, split, dividend, adj_close``
(``adj_close`` is accepted and ignored).  Rows must be sorted by date, then ticker.

*wide*: one row per date; a ``date`` column (or, for pandas, a DatetimeIndex) and one
column per (field, ticker) named ``field:TICKER``, e.g. ``close:AAPL`` (fields as in
the long layout).  Every field must list the same tickers.  A pandas frame with
two-level columns ``(field, ticker)`` is accepted and flattened to that convention.
Dates must be increasing; column order is free.

Sources: a path to ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` (read by
:mod:`gymkit.data.reading`: malformed files are one line naming the file, sizes capped); a
polars DataFrame or LazyFrame; a pandas DataFrame.  Column names are first mapped onto the
schema (:mod:`gymkit.data.columns`: ``columns=`` mapping, pandas index columns dropped,
case-insensitive names and aliases such as ``Name``/``Date``/``Adj Close``, unknown long
columns ignored with a note).  ``layout=None`` then detects the layout: a ``ticker``
column means long, ``field:TICKER`` columns mean wide.  Data-quality warnings (likely
unadjusted splits, zero volume, missing opens: :mod:`gymkit.data.quality`) are reported in
every mode, never raised.

Result: rows = sorted union of dates, columns = sorted tickers, absent (date, ticker)
cells NaN.  With ``adjust=True`` the ``split``/``dividend`` columns produce split- and
dividend-adjusted OHLC and split-adjusted volume (:mod:`gymkit.data.corporate_actions`);
otherwise prices are raw and those columns are validated and dropped.

Validation (:mod:`gymkit.data.validate`): ``strict=True`` raises
:class:`~gymkit.data.validate.ValidationError` (one line naming rule, ticker, date, listing
the rule's first 20 offending rows and their count);
``strict=False`` masks bad cells / drops bad rows, warns with a one-line summary
(:class:`ValidationWarning`) and, through :func:`load_panel_with_report`, returns the
:class:`~gymkit.data.validate.ValidationReport` with counts per rule.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from gymkit.data.columns import normalise_columns
from gymkit.data.corporate_actions import ACTION_COLUMNS, adjust_corporate_actions
from gymkit.data.panel import BASE_FIELDS, GROUP_LEVELS, Panel
from gymkit.data.quality import quality_warnings
from gymkit.data.reading import read_csv_file, read_parquet_file
from gymkit.data.validate import (
    KNOWN_COLUMNS,
    REQUIRED_COLUMNS,
    ValidationError,
    ValidationReport,
    clip,
    coerce_date,
    complete_width,
    list_columns,
    validate_long,
)

Layout = Literal["long", "wide"]
#: File suffixes of a panel file: Parquet, then CSV (``.csv.gz`` too).
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".csv.gz")
PANEL_SUFFIXES = PARQUET_SUFFIXES + CSV_SUFFIXES

#: Separator between field and ticker in wide column names (``close:AAPL``).
WIDE_SEPARATOR = ":"
_WIDE_FIELDS = tuple(c for c in KNOWN_COLUMNS if c not in ("date", "ticker"))


class ValidationWarning(UserWarning):
    """Emitted by a ``strict=False`` load that masked or dropped data."""


class DataWarning(UserWarning):
    """Emitted by any load whose data looks wrong but is legal (:mod:`gymkit.data.quality`)."""


class ColumnNote(UserWarning):
    """Emitted by a load that renamed, dropped or ignored columns (aliases, index, extras)."""


def is_frame(source: Any) -> bool:
    """True for a polars DataFrame/LazyFrame or a pandas DataFrame (what ``load_panel`` reads)."""
    if isinstance(source, pl.DataFrame | pl.LazyFrame):
        return True
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(source, pd.DataFrame)


def read_source(source: Any, *, max_bytes: int | None = None) -> pl.DataFrame:
    """Return ``source`` (path, polars or pandas frame) as a polars DataFrame, unvalidated.

    CSV cells are read as text (so bad values reach validation as text and are reported,
    not silently dropped by type inference); malformed or oversized files are one-line
    ``ValueError`` naming the file (:mod:`gymkit.data.reading`).
    """
    if isinstance(source, pl.DataFrame):
        return source
    if isinstance(source, pl.LazyFrame):
        return source.collect()
    if isinstance(source, str | Path):
        p = Path(source)
        if p.is_dir():
            raise ValueError(f"{clip(p, 200)} is a folder, not a panel file (.csv, .csv.gz, "
                             ".parquet or .pq)")
        if not p.is_file():
            raise FileNotFoundError(f"panel file not found: {clip(p, 200)}")
        name = p.name.lower()
        if name.endswith(PARQUET_SUFFIXES):
            return read_parquet_file(p, max_bytes)
        if name.endswith(CSV_SUFFIXES):
            return read_csv_file(p, max_bytes)
        raise ValueError(
            f"unsupported panel file type {clip(p.name)!r}: expected .csv, .csv.gz, .parquet "
            "or .pq"
        )
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(source, pd.DataFrame):
        return _from_pandas(source, pd)
    raise TypeError(
        f"cannot load a panel from {type(source).__name__}: expected a path, a polars or a pandas DataFrame"
    )


def _from_pandas(frame: Any, pd: Any) -> pl.DataFrame:
    df = frame
    if isinstance(df.columns, pd.MultiIndex):
        if df.columns.nlevels != 2:
            raise ValueError(
                f"wide pandas frame needs 2 column levels (field, ticker), got {df.columns.nlevels}"
            )
        df = df.copy()
        df.columns = [f"{f}{WIDE_SEPARATOR}{t}" for f, t in df.columns]
    if not isinstance(df.index, pd.RangeIndex):
        if isinstance(df.index, pd.DatetimeIndex) and df.index.name is None:
            df = df.rename_axis("date")
        df = df.reset_index()
    return pl.from_pandas(df)


def detect_layout(frame: pl.DataFrame) -> Layout:
    """Return 'long' when ``frame`` has a ``ticker`` column, 'wide' when it has ``field:TICKER`` columns."""
    if "ticker" in frame.columns:
        return "long"
    if any(WIDE_SEPARATOR in c for c in frame.columns):
        return "wide"
    if frame.width == 0 or frame.height == 0:
        raise ValidationError("empty-panel", "no rows")
    raise ValidationError(
        "missing-column",
        "required for long input (no 'field:TICKER' columns for wide input either); got "
        f"columns {list_columns(frame.columns)}: name it with columns={{'ticker': COLUMN}} "
        "(CLI --columns ticker=COLUMN)",
        column="ticker",
    )


def wide_to_long(frame: pl.DataFrame) -> pl.DataFrame:
    """Reshape a wide frame (``date`` + ``field:TICKER`` columns) to the long layout, unsorted.

    Dates must be increasing and unique (``unsorted`` / ``duplicate-row`` rules,
    reported with the date); every field must have the same tickers.
    """
    if "date" not in frame.columns:
        raise ValidationError("missing-column", "required for wide input", column="date")
    by_field: dict[str, dict[str, str]] = {}
    for c in frame.columns:
        if c == "date":
            continue
        fld, sep, tk = c.partition(WIDE_SEPARATOR)
        if not sep or fld not in _WIDE_FIELDS or not tk.strip():
            raise ValidationError(
                "unknown-column",
                f"wide columns must be 'field{WIDE_SEPARATOR}TICKER' with field in ({', '.join(_WIDE_FIELDS)})",
                column=c,
            )
        by_field.setdefault(fld, {})[tk] = c
    ref_field = "close" if "close" in by_field else next(iter(by_field), "close")
    ref = set(by_field.get(ref_field, {}))
    for fld, cols in by_field.items():
        if set(cols) != ref:
            tk = sorted(set(cols) ^ ref)[0]
            has, lacks = (fld, ref_field) if tk in cols else (ref_field, fld)
            raise ValidationError(
                "missing-column",
                f"wide input has {has}{WIDE_SEPARATOR}{tk} but no {lacks}{WIDE_SEPARATOR}{tk}",
                column=f"{lacks}{WIDE_SEPARATOR}{tk}",
            )
    tickers = sorted(ref)
    parts = []
    for fld, cols in by_field.items():
        part = frame.select("date", *[pl.col(cols[t]).alias(t) for t in tickers]).unpivot(
            index="date", variable_name="ticker", value_name=fld
        )
        parts.append(part if not parts else part.drop("date", "ticker"))
    return pl.concat(parts, how="horizontal")


def _wide_date_order(frame: pl.DataFrame, strict: bool) -> dict[str, str]:
    """Check that wide rows (dates) increase; strict raises ``unsorted``, else returns the first message.

    Repeated dates are left to the long ``duplicate-row`` rule (reported with ticker and date).
    """
    d = coerce_date(frame.select("date")).get_column("date")
    back = (d.diff().dt.total_days() < 0).fill_null(False)
    if not back.any():
        return {}
    i = int(back.arg_true()[0])
    err = ValidationError(
        "unsorted",
        f"row {i} comes after {d[i - 1]}; wide rows must be sorted by date",
        date=str(d[i]),
    )
    if strict:
        raise err
    return {"count": str(int(back.sum())), "first": str(err)}


def load_panel_with_report(
    source: Any,
    *,
    layout: Layout | None = None,
    strict: bool = True,
    adjust: bool = False,
    calendar_check: bool = True,
    columns: Mapping[str, str] | None = None,
    max_bytes: int | None = None,
) -> tuple[Panel, ValidationReport]:
    """Load, validate and pivot ``source`` into a :class:`Panel`; also return the report.

    See the module docstring for layouts, sources and the meaning of each flag;
    ``columns`` maps schema names to the input's columns (:mod:`gymkit.data.columns`),
    ``max_bytes`` caps the (decompressed) file size (:mod:`gymkit.data.reading`).
    Raises :class:`ValidationError` (a ``ValueError``) on bad input in strict mode and
    for structural problems in any mode, prefixed with the file name for a path;
    ``adjust=True`` without a ``split`` or ``dividend`` column is a ``missing-column`` error.
    """
    try:
        return _load(source, layout, strict, adjust, calendar_check, columns, max_bytes)
    except ValidationError as exc:
        if isinstance(source, str | Path):
            raise exc.with_source(str(source)) from None
        raise


def _drop_empty_rows(frame: pl.DataFrame) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """``frame`` without the rows that hold no data: blank lines (every cell empty) and copies
    of the header line (per-ticker CSV files joined with ``cat``), with a note naming each kind
    and its first row; nothing with a value is dropped.  Linear in the cells."""
    if frame.height == 0 or frame.width == 0:
        return frame, ()
    name0 = frame.columns[0]  # both kinds are empty, or the header, in their first cell
    if frame.schema[name0] == pl.String:
        first = pl.col(name0).str.strip_chars()
        maybe = pl.col(name0).is_null() | (first == "") | (first == name0)
    else:  # a typed column (Parquet, a parsed date) holds no header text: only nulls can be blank
        maybe = pl.col(name0).is_null()
    if not frame.select(maybe.any()).item():  # one column's pass on the usual clean file
        return frame, ()
    text = [c for c, t in frame.schema.items() if t == pl.String]
    blank = pl.all_horizontal(
        (pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "")) if c in text
        else pl.col(c).is_null() for c in frame.columns)
    header = (pl.all_horizontal(pl.col(c).str.strip_chars() == c for c in frame.columns)
              if len(text) == frame.width else pl.lit(False))
    marks = frame.select(blank.alias("blank"), header.alias("header"))
    notes = []
    for kind, what in (("blank", "blank row(s) (no value in any column)"),
                       ("header", "row(s) repeating the header line (files joined?)")):
        hit = marks.get_column(kind)
        if hit.any():
            notes.append(f"dropped {int(hit.sum())} {what}, the first at data row "
                         f"{int(hit.arg_true()[0])}")
    if not notes:
        return frame, ()
    keep = ~(marks.get_column("blank") | marks.get_column("header"))
    return frame.filter(keep), tuple(notes)


def _load(source: Any, layout: Layout | None, strict: bool, adjust: bool,
          calendar_check: bool, columns: Mapping[str, str] | None,
          max_bytes: int | None) -> tuple[Panel, ValidationReport]:
    raw, dropped = _drop_empty_rows(read_source(source, max_bytes=max_bytes))
    frame, notes = normalise_columns(raw, columns)
    notes = (*dropped, *notes)
    kind = layout or detect_layout(frame)
    if kind == "wide":
        if frame.width == 0 or frame.height == 0:
            raise ValidationError("empty-panel", "no rows")
        if "date" not in frame.columns:
            raise ValidationError("missing-column", "required for wide input", column="date")
        extra = [c for c in frame.columns if c != "date" and WIDE_SEPARATOR not in c]
        if extra:
            frame = frame.drop(extra)
            notes = (*notes, f"ignored column(s) not in the schema: {extra[:12]}")
        order = _wide_date_order(frame, strict)
        clean, report = validate_long(
            wide_to_long(frame), strict=strict, calendar_check=calendar_check, require_sorted=False
        )
        if order:
            report = ValidationReport(
                {"unsorted": int(order["count"]), **report.counts},
                {"unsorted": order["first"], **report.first},
            )
    elif kind == "long":
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing and frame.height and frame.width:  # name the file's own columns, not ours
            # every unmapped field at once: a vendor file fixed one run at a time is not needed
            more = f", and so are {', '.join(map(repr, missing[1:]))}" if missing[1:] else ""
            it, one = ("them", "them") if more else ("it", "one")
            cli = ",".join(f"{m}=NAME" for m in missing)
            py = ", ".join(f"{m!r}: NAME" for m in missing)
            raise ValidationError(
                "missing-column", f"required{more}; no column of the input is a known name for "
                f"{it} (the input's columns: {list_columns(raw.columns)}): map {one} with "
                f"--columns {cli} (load_panel(columns={{{py}}}))", column=missing[0])
        clean, report = validate_long(frame, strict=strict, calendar_check=calendar_check)
    else:
        raise ValueError(f"layout must be 'long', 'wide' or None, got {layout!r}")
    if adjust:
        if not any(c in clean.columns for c in ACTION_COLUMNS):
            raise ValidationError(
                "missing-column", "adjust=True needs a 'split' or 'dividend' column", column="split"
            )
        clean = adjust_corporate_actions(clean)
    actions = [c for c in ACTION_COLUMNS if c in clean.columns]
    clean = clean.drop([c for c in (*ACTION_COLUMNS, "adj_close") if c in clean.columns])
    panel, present = _pivot(clean)
    warned, warned_first, warned_brief = quality_warnings(panel.dates, panel.tickers, panel.open, panel.close,
                                            panel.volume, present)
    if actions and not adjust:  # the file can fix its own jumps: say how
        jumps = warned.get("unadjusted-split", 0)
        notes = (*notes, f"the input has {' and '.join(actions)} column(s), not applied: prices are "
                 f"as written{f' ({jumps} unadjusted-split warning(s))' if jumps else ''}; "
                 "--adjust (load_panel(adjust=True)) applies them")
    report = ValidationReport(report.counts, report.first, warned, warned_first, notes,
                              warned_brief)
    return panel, report


def load_panel(
    source: Any,
    *,
    layout: Layout | None = None,
    strict: bool = True,
    adjust: bool = False,
    calendar_check: bool = True,
    columns: Mapping[str, str] | None = None,
    max_bytes: int | None = None,
) -> Panel:
    """Load ``source`` (path, polars or pandas frame; long or wide) into a validated :class:`Panel`.

    ``strict=False`` masks/drops offending data and emits one :class:`ValidationWarning`
    summarising counts per rule (use :func:`load_panel_with_report` for the report object).
    Data-quality flags emit one :class:`DataWarning` per rule, column changes one
    :class:`ColumnNote`; the load itself never fails on them.
    """
    panel, report = load_panel_with_report(
        source, layout=layout, strict=strict, adjust=adjust, calendar_check=calendar_check,
        columns=columns, max_bytes=max_bytes,
    )
    if not report.ok:
        warnings.warn(
            f"load_panel(strict=False): {report.summary()}", ValidationWarning, stacklevel=2
        )
    for line in report.warned_first.values():
        warnings.warn(line, DataWarning, stacklevel=2)
    if report.notes:
        warnings.warn("; ".join(report.notes), ColumnNote, stacklevel=2)
    return panel


def panel_from_long(frame: pl.DataFrame) -> Panel:
    """Pivot a validated long frame (one row per (date, ticker), sorted by date then ticker:
    ``validate_long``'s output) into a :class:`Panel`; ValueError if it is not sorted by date.

    Rows = sorted union of dates, columns = sorted tickers; absent (date, ticker)
    cells are NaN.  ``cap`` becomes a field when present; ``sector``/``industry``
    take the label of a ticker's labelled rows ('' when it has none; a validated frame has
    one per ticker).  Linear in the rows besides sorting the ticker names.
    """
    return _pivot(frame)[0]


def _pivot(frame: pl.DataFrame) -> tuple[Panel, np.ndarray]:
    """:func:`panel_from_long`, and the (T, N) mask of the (date, ticker) rows the frame has."""
    date = frame.get_column("date")
    if not date.is_sorted():
        raise ValueError("panel_from_long needs a frame sorted by date (validate_long's output)")
    width = complete_width(frame)
    if width:  # every cell once, in row-major order: the columns are the grids as they are
        tickers = frame.get_column("ticker").head(width).to_list()
        dates = date.gather_every(width).to_numpy().astype("datetime64[D]")
        shape, whole = (dates.size, width), True
        col = None
    else:  # each column is scattered into NaN grids by its rows' cells
        tickers = sorted(frame.get_column("ticker").unique().to_list())
        dates = date.unique(maintain_order=True).to_numpy().astype("datetime64[D]")
        row = date.rle_id().to_numpy()  # sorted by date: the k-th run of equal dates is row k
        col = frame.get_column("ticker").cast(pl.Enum(tickers)).to_physical().to_numpy()
        shape = (dates.size, len(tickers))
        flat = row.astype(np.int64) * shape[1] + col  # each row's cell in the (T, N) grid
        whole = flat.size == shape[0] * shape[1] and bool(np.all(flat[1:] > flat[:-1]))

    def grid(name: str) -> np.ndarray:
        values = frame.get_column(name).cast(pl.Float64).fill_null(np.nan).to_numpy()
        if whole:
            return values.reshape(shape)
        out = np.full(shape[0] * shape[1], np.nan)
        out[flat] = values
        return out.reshape(shape)

    if whole:
        present = np.ones(shape, dtype=bool)
    else:
        present = np.zeros(shape[0] * shape[1], dtype=bool)
        present[flat] = True
        present = present.reshape(shape)
    fields = {name: grid(name) for name in BASE_FIELDS}
    cap = grid("cap") if "cap" in frame.columns else None
    labels: dict[str, list[str] | None] = {}
    for level in GROUP_LEVELS:
        if level not in frame.columns:
            labels[level] = None
            continue
        # one label per ticker (validate_long checks it), so any labelled row of a ticker names it
        label = frame.get_column(level).cast(pl.String)
        at = np.full(len(tickers), -1, np.int64)
        labelled = np.flatnonzero(label.is_not_null().to_numpy())
        at[labelled % shape[1] if col is None else col[labelled]] = labelled
        names = [""] * len(tickers)
        named = np.flatnonzero(at >= 0)
        for j, name in zip(named.tolist(), label.gather(at[named]).to_list(), strict=True):
            names[j] = name
        labels[level] = names
    return Panel(dates, tickers, **fields, cap=cap, sector=labels["sector"],
                 industry=labels["industry"], _adopt=True), present
