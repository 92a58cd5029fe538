"""Market-rule validation of long-format panel data (polars, vectorised).

Input is a long frame, one row per (date, ticker).  :func:`validate_long` coerces the
schema and checks every rule in :data:`RULES`, in that order.  Every failure is one line

    [rule] TICKER YYYY-MM-DD: detail

(the "where" part is ``TICKER DATE`` when both are known, else whichever is, else
``column 'name'`` or ``panel``), raised as :class:`ValidationError` with ``.rule``,
``.ticker`` and ``.date``.  Within a rule the offending row reported is the first one
in (date, ticker) order (input order for ``unsorted``), so messages are deterministic.

``strict=False`` repairs nothing silently: cell rules mask the offending cells to
missing, row rules drop the offending rows (their cells become NaN in the panel),
``unsorted`` input is sorted, identical copies of a row keep one (``duplicate-row``); every
action is counted per rule in the returned :class:`ValidationReport`.  Structural rules
(marked below) always raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from gymkit.data.calendar import _CAL_END, _CAL_START, non_sessions
from gymkit.data.panel import GROUP_LEVELS, PRICE_FIELDS

REQUIRED_COLUMNS: tuple[str, ...] = ("date", "ticker", "open", "high", "low", "close", "volume")
#: Optional numeric columns: market cap, corporate actions, and a vendor adjusted close (ignored).
OPTIONAL_NUMERIC: tuple[str, ...] = ("cap", "split", "dividend", "adj_close")
NUMERIC_COLUMNS: tuple[str, ...] = (*REQUIRED_COLUMNS[2:], *OPTIONAL_NUMERIC)
KNOWN_COLUMNS: tuple[str, ...] = (*REQUIRED_COLUMNS, *OPTIONAL_NUMERIC, *GROUP_LEVELS)

#: rule code -> (structural?, what it checks).  Checked in this order.
RULES: dict[str, tuple[bool, str]] = {
    "empty-panel": (True, "the input has no rows"),
    "missing-column": (True, "a required column is absent"),
    "unknown-column": (True, "a column is not in the schema"),
    "bad-date": (True, "a date is missing or not a calendar date"),
    "bad-ticker": (True, "a ticker is missing or empty"),
    "non-numeric": (False, "a value that must be a number is not one"),
    "unsorted": (False, "long input is not sorted by date, then ticker"),
    "duplicate-row": (False, "a (date, ticker) pair appears more than once"),
    "non-session": (False, "a date is not an NYSE session"),
    "too-few-tickers": (True, "fewer than 2 tickers"),
    "inconsistent-group": (True, "a ticker's sector/industry label changes over time"),
    "bad-split": (True, "a split coefficient is not finite and > 0 (0 means no split)"),
    "bad-dividend": (True, "a dividend is not finite and >= 0"),
    "non-finite": (False, "a number is +inf or -inf"),
    "non-positive-price": (False, "open/high/low/close <= 0"),
    "high-below-open-close": (False, "high < max(open, close)"),
    "low-above-open-close": (False, "low > min(open, close)"),
    "negative-volume": (False, "volume < 0"),
    "non-positive-cap": (False, "cap <= 0"),
    "empty-column": (True, "a required price or volume column holds no value at all"),
}


#: Longest value (ticker, text cell, column name) quoted whole in a message.
MAX_VALUE_CHARS = 40
#: Offending rows a strict error lists per rule (then the count).
MAX_LISTED_ROWS = 20


def clip(text: object, limit: int = MAX_VALUE_CHARS) -> str:
    """``str(text)`` cut to ``limit`` characters, marked with the count of those left out."""
    s = str(text)
    return s if len(s) <= limit else f"{s[:limit]}...(+{len(s) - limit} chars)"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.10g}"
    if isinstance(v, str):
        return repr(clip(v))
    return clip(v)


def list_columns(columns: list[str], limit: int = 12) -> str:
    """A column list for a message: the first ``limit`` names (each clipped), then the count."""
    shown = [clip(c) for c in columns[:limit]]
    more = f" ... ({len(columns)} columns)" if len(columns) > limit else ""
    return f"{shown}{more}"


class ValidationError(ValueError):
    """Bad panel input: one line ``[rule] where: detail``; ``.rule .ticker .date .column .detail``."""

    def __init__(
        self,
        rule: str,
        detail: str,
        *,
        ticker: str | None = None,
        date: str | None = None,
        column: str | None = None,
    ) -> None:
        self.rule, self.detail = rule, detail
        self.ticker, self.date, self.column = ticker, date, column
        self.source: str | None = None
        self.rows: list[str] = []  # a strict row error: every listed row, "TICKER DATE: detail"
        where = " ".join(clip(x) for x in (ticker, date) if x)
        if not where:
            where = f"column {clip(column)!r}" if column else "panel"
        super().__init__(f"[{rule}] {where}: {detail}")

    def with_source(self, source: str) -> ValidationError:
        """The same error, its message prefixed with ``source`` (the file it came from)."""
        err = ValidationError(self.rule, self.detail, ticker=self.ticker, date=self.date,
                              column=self.column)
        err.source, err.rows = source, self.rows
        err.args = (f"{clip(source, 200)}: {self.args[0]}",)
        return err


@dataclass(frozen=True)
class ValidationReport:
    """What a ``strict=False`` load did: offending rows per rule and each rule's first message.

    ``counts[rule]`` is the number of (date, ticker) rows the rule flagged (dropped rows,
    rows with masked cells; ``non-numeric`` counts cells; ``unsorted``, rows out of
    order; ``duplicate-row``, every copy: identical copies keep one row, copies that differ
    are all dropped).  Empty when the input is clean.
    """

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    #: Data-quality warnings (never errors): rule -> count, and rule -> one line listing rows.
    warned: dict[str, int] = field(default_factory=dict)
    warned_first: dict[str, str] = field(default_factory=dict)
    #: What the loader did to the columns (aliases, dropped index or extra columns).
    notes: tuple[str, ...] = ()
    #: ``warned_first`` with fewer rows listed (what a command prints).
    warned_brief: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: per rule its count and message, warnings, notes."""
        return {"ok": self.ok, "summary": self.summary(),
                "rules": {r: {"count": n, "first": self.first.get(r, "")}
                          for r, n in self.counts.items()},
                "warnings": {r: {"count": n, "rows": self.warned_first.get(r, "")}
                             for r, n in self.warned.items()},
                "notes": list(self.notes)}

    @property
    def ok(self) -> bool:
        """True when no rule fired."""
        return not self.counts

    @property
    def total(self) -> int:
        """Total flagged rows over all rules."""
        return sum(self.counts.values())

    def summary(self) -> str:
        """One line, e.g. ``2 rules fired: non-positive-price=3, negative-volume=1``."""
        if self.ok:
            return "clean: no validation rule fired"
        parts = ", ".join(f"{r}={n}" for r, n in self.counts.items())
        return f"{len(self.counts)} rule(s) fired: {parts}"


class _Checker:
    """Holds the frame being validated and the strict/report state."""

    def __init__(self, frame: pl.DataFrame, strict: bool) -> None:
        self.df = frame
        self.strict = strict
        self.counts: dict[str, int] = {}
        self.first: dict[str, str] = {}

    def _row_error(self, rule: str, i: int, detail: str) -> ValidationError:
        row = self.df.row(i, named=True)
        date = row.get("date")
        return ValidationError(
            rule,
            detail,
            ticker=None if row.get("ticker") is None else str(row["ticker"]),
            date=None if date is None else str(date),
        )

    def flag(self, rule: str, mask: pl.Series, describe: Any, hint: str = "") -> pl.Series | None:
        """Raise (strict) or record the rule for the rows of ``mask``; return the mask if any.

        ``hint`` (what to do about it) is said once, after the rows, not once per row.
        """
        mask = mask.fill_null(False)
        n = int(mask.sum())
        if n == 0:
            return None
        i = int(mask.arg_true()[0])
        err = self._row_error(rule, i, describe(self.df.row(i, named=True), i))
        if self.strict or RULES[rule][0]:
            if n > 1:
                raise self._listing(rule, err, mask, describe, n, hint)
            raise self._row_error(rule, i, err.detail + (f"; {hint}" if hint else ""))
        self.counts[rule] = self.counts.get(rule, 0) + n
        self.first.setdefault(rule, str(err) + (f"; {hint}" if hint else ""))
        return mask

    def _listing(self, rule: str, err: ValidationError, mask: pl.Series, describe: Any,
                 n: int, hint: str = "") -> ValidationError:
        """``err`` extended to list the first :data:`MAX_LISTED_ROWS` rows of ``mask``."""
        rows = [str(err).split("] ", 1)[1]]
        for i in mask.arg_true()[1:MAX_LISTED_ROWS].to_list():
            e = self._row_error(rule, i, describe(self.df.row(i, named=True), i))
            rows.append(str(e).split("] ", 1)[1])
        shown = f"{len(rows)} of {n} rows shown" if n > len(rows) else f"{n} rows"
        out = ValidationError(rule, f"{err.detail}; " + "; ".join(rows[1:]) + f" ({shown})"
                              + (f"; {hint}" if hint else ""),
                              ticker=err.ticker, date=err.date, column=err.column)
        out.rows = rows
        return out

    def mask_cells(
        self, rule: str, mask: pl.Series, columns: tuple[str, ...], describe: Any
    ) -> None:
        m = self.flag(rule, mask, describe)
        if m is not None:
            self.df = self.df.with_columns(
                pl.when(m).then(None).otherwise(pl.col(c)).alias(c) for c in columns
            )

    def drop_rows(self, rule: str, mask: pl.Series, describe: Any) -> None:
        m = self.flag(rule, mask, describe)
        if m is not None:
            self.df = self.df.filter(~m)


#: The exchange's clock (the NYSE calendar): a zoned timestamp at midnight there is its date.
EXCHANGE_TZ = "America/New_York"


def coerce_date(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``df`` with its ``date`` column as pl.Date (from Date, Datetime at midnight or ISO text).

    A zoned timestamp that is midnight on the exchange's clock (:data:`EXCHANGE_TZ`) but not in
    its own zone (New York midnight stored as 04:00 or 05:00 UTC) is that New York date.

    Raises ``bad-date`` naming the first row whose date is missing or unparsable.
    """
    dt = df.schema["date"]
    if dt == pl.Date:
        parsed = pl.col("date")
    elif isinstance(dt, pl.Datetime):
        parsed = pl.col("date").dt.date()
    elif dt in (pl.String, pl.Categorical) or dt.is_integer():
        text = pl.col("date").cast(pl.String).str.strip_chars()
        parsed = pl.coalesce(
            text.str.to_date("%Y-%m-%d", strict=False),
            # CRSP and others: 20120601 (text or integer)
            pl.when(text.str.contains(r"^\d{8}$")).then(text.str.to_date("%Y%m%d", strict=False)),
            # a timestamp written at midnight (pandas/polars CSV, with or without a UTC offset):
            # the date as written
            text.str.extract(r"^(\d{4}-\d{2}-\d{2})[T ]00:00(?::00(?:\.0+)?)?(?:Z|[+-]\d{2}:?\d{2})?$", 1)
            .str.to_date("%Y-%m-%d", strict=False),
        )
    else:
        raise ValidationError(
            "bad-date", f"column has type {dt}; expected a date or 'YYYY-MM-DD' text", column="date"
        )
    out = df.with_columns(parsed.alias("_date"))
    bad = out.get_column("_date").is_null()
    if bad.any():
        i = int(bad.arg_true()[0])
        row = df.row(i, named=True)
        tk = row.get("ticker")
        raise ValidationError(
            "bad-date",
            f"{_fmt(row['date'])} in row {i} is not a date (expected YYYY-MM-DD, YYYYMMDD or a "
            "midnight timestamp)",
            ticker=None if tk is None else str(tk),
        )
    if isinstance(dt, pl.Datetime):
        raw = out.get_column("date")
        midnight = raw == raw.dt.truncate("1d")
        if not midnight.all() and dt.time_zone is not None:
            # midnight on the exchange's clock, stored in another zone (NY midnight as 04:00 UTC)
            ny = raw.dt.convert_time_zone(EXCHANGE_TZ)
            if (ny == ny.dt.truncate("1d")).all():
                return out.with_columns(ny.dt.date().alias("date")).drop("_date")
        if not midnight.all():
            i = int((~midnight).arg_true()[0])
            tk = df.row(i, named=True).get("ticker")
            raise ValidationError(
                "bad-date",
                f"{df['date'][i]} in row {i} has a time of day; expected dates (one row per "
                "session: a bar stamped at its close or open? make the column dates first, e.g. "
                "pandas df['date'].dt.date, polars pl.col('date').dt.date())",
                ticker=None if tk is None else str(tk),
            )
    return out.with_columns(pl.col("_date").alias("date")).drop("_date")


def _coerce_ticker(df: pl.DataFrame) -> pl.DataFrame:
    out = df.with_columns(pl.col("ticker").cast(pl.String).str.strip_chars())
    bad = out.get_column("ticker").is_null() | (out.get_column("ticker") == "")
    if bad.any():
        i = int(bad.fill_null(True).arg_true()[0])
        raise ValidationError(
            "bad-ticker", f"ticker in row {i} is missing or empty", date=str(out["date"][i])
        )
    return out


def _coerce_numbers(chk: _Checker) -> None:
    """Cast numeric columns to Float64 (NaN -> missing); unparsable text is ``non-numeric``."""
    df = chk.df
    for c in [c for c in NUMERIC_COLUMNS if c in df.columns]:
        dt = df.schema[c]
        if dt.is_numeric():
            continue
        if dt not in (pl.String, pl.Categorical, pl.Null):
            raise ValidationError(
                "non-numeric", f"column has type {dt}; expected numbers", column=c
            )
        text = df.get_column(c).cast(pl.String).str.strip_chars()
        num = text.cast(pl.Float64, strict=False)
        mask = text.is_not_null() & (text != "") & num.is_null()
        chk.flag("non-numeric", mask, lambda r, i, c=c: f"{c} = {_fmt(r[c])} is not a number")
        chk.df = df = df.with_columns(num.alias(c))
    chk.df = chk.df.with_columns(
        pl.col(c).cast(pl.Float64).fill_nan(None) for c in NUMERIC_COLUMNS if c in chk.df.columns
    )


def _check_order(chk: _Checker, require_sorted: bool) -> None:
    d, t = pl.col("date"), pl.col("ticker")
    if require_sorted:
        after_next = (d > d.shift(-1)) | ((d == d.shift(-1)) & (t > t.shift(-1)))
        mask = chk.df.select(after_next.shift(1).fill_null(False).alias("m")).get_column("m")

        def describe(r: dict, i: int) -> str:
            prev = chk.df.row(i - 1, named=True)
            return f"row {i} comes after {clip(prev['ticker'])} {prev['date']}"

        if chk.flag("unsorted", mask, describe,
                    hint="long input must be sorted by date, then ticker") is not None:
            chk.df = chk.df.sort("date", "ticker", maintain_order=True)
    else:
        chk.df = chk.df.sort("date", "ticker", maintain_order=True)
    _check_duplicates(chk)


def _duplicate_detail(chk: _Checker, i: int, size: int, identical: bool) -> str:
    """What is wrong with the ``size`` copies of one (date, ticker) pair starting at row ``i``."""
    head = f"(date, ticker) appears {size} times"
    if identical:
        return f"{head}, identical copies" + ("" if chk.strict else ": one kept")
    copies = chk.df.slice(i, size)
    for c in copies.columns:
        values = copies.get_column(c).to_list()
        other = next((v for v in values[1:] if v != values[0]), values[0])
        if other != values[0]:
            head += f" with different values ({c} {_fmt(values[0])} vs {_fmt(other)})"
            break
    return head + ("" if chk.strict else ": all dropped")


def _check_duplicates(chk: _Checker) -> None:
    """``duplicate-row`` on the sorted frame, where copies of a (date, ticker) pair are adjacent.

    Strict: one error naming each duplicated pair once, with its count (the first
    :data:`MAX_LISTED_ROWS` pairs, then how many pairs and rows).  Lenient: identical copies
    keep one row, pairs whose copies differ lose every row; the count is every row involved.
    Linear in the rows; a frame without duplicates costs one adjacency test.
    """
    rule = "duplicate-row"
    d, t = pl.col("date"), pl.col("ticker")
    same_next = ((d == d.shift(-1)) & (t == t.shift(-1))).fill_null(False)
    dup = chk.df.select((same_next | same_next.shift(1).fill_null(False)).alias("m")).get_column(
        "m"
    )
    n_rows = int(dup.sum())
    if n_rows == 0:
        return
    values = [c for c in chk.df.columns if c not in ("date", "ticker")]  # open .. volume at least
    same_prev = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(1)) for c in values)
    pairs = (
        chk.df.with_row_index("_row")
        .filter(dup)
        .select(
            "_row",
            start=((d != d.shift(1)) | (t != t.shift(1))).fill_null(True),
            same=same_prev,
        )
        .with_columns(pair=pl.col("start").cum_sum())
        .with_columns(
            size=pl.len().over("pair"),
            identical=(pl.col("start") | pl.col("same")).all().over("pair"),
        )
    )
    heads = pairs.filter("start")
    listed = [
        chk._row_error(rule, i, _duplicate_detail(chk, i, k, same))
        for i, k, same in heads.select("_row", "size", "identical").head(MAX_LISTED_ROWS).rows()
    ]
    err = listed[0]
    n_pairs, n_same = heads.height, int(heads.get_column("identical").sum())
    if chk.strict:
        if n_pairs == 1:
            raise err
        rows = [str(e).split("] ", 1)[1] for e in listed]
        shown = (f"{len(rows)} of {n_pairs} duplicated pairs shown" if n_pairs > len(rows)
                 else f"{n_pairs} duplicated pairs")
        out = ValidationError(rule, f"{err.detail}; " + "; ".join(rows[1:]) +
                              f" ({shown}, {n_rows} rows)", ticker=err.ticker, date=err.date)
        out.rows = rows
        raise out
    first = str(err)
    if n_pairs > 1:
        first += (f"; {n_pairs} duplicated pairs in all: {n_same} identical (one copy kept), "
                  f"{n_pairs - n_same} with different values (all dropped)")
    chk.counts[rule] = chk.counts.get(rule, 0) + n_rows
    chk.first.setdefault(rule, first)
    drop = np.zeros(chk.df.height, dtype=bool)
    drop[pairs.filter(~pl.col("identical") | ~pl.col("start")).get_column("_row").to_numpy()] = True
    chk.df = chk.df.filter(pl.Series(~drop))


def _check_sessions(chk: _Checker) -> None:
    days = chk.df.get_column("date").unique().sort()
    d = days.to_numpy().astype("datetime64[D]")
    bad_days = days.filter(pl.Series(non_sessions(d)))
    if bad_days.len() == 0:
        return
    lo, hi = np.datetime64(_CAL_START, "D"), np.datetime64(_CAL_END, "D")

    def describe(r: dict, i: int) -> str:
        day = np.datetime64(r["date"], "D")
        if day < lo or day > hi:
            return f"outside the supported NYSE calendar {lo}..{hi}"
        return "not an NYSE session"

    chk.drop_rows("non-session", chk.df.get_column("date").is_in(bad_days.implode()), describe)


def complete_width(frame: pl.DataFrame) -> int | None:
    """N when ``frame`` (sorted by date) is a complete panel in (date, ticker) order: every
    date's rows are the same N tickers, strictly increasing, dates strictly increasing from
    one block of N rows to the next; else None.  Linear and without hashing: on the usual
    vendor file the loader then looks up no ticker or label row by row."""
    h = frame.height
    if h == 0:
        return None
    date = frame.get_column("date")
    n = int(date.search_sorted(date[0], side="right"))
    if n < 1 or h % n:
        return None
    days = date.to_physical().to_numpy().reshape(h // n, n)
    if not ((days == days[:, :1]).all() and (np.diff(days[:, 0]) > 0).all()):
        return None
    t = frame.get_column("ticker")
    first = t.head(n)
    if first.null_count() or (n > 1 and not bool((first.slice(1) > first.slice(0, n - 1)).all())):
        return None
    if h > n and not bool((t.slice(n) == t.slice(0, h - n)).all()):
        return None
    return n


def _check_tickers_and_groups(chk: _Checker) -> None:
    df = chk.df
    width = complete_width(df)  # a complete panel: its tickers are its first date's rows
    tickers = df.get_column("ticker").head(width) if width else df.get_column("ticker").unique().sort()
    if tickers.len() < 2:
        names = ", ".join(repr(t) for t in tickers.to_list())
        raise ValidationError(
            "too-few-tickers",
            f"{tickers.len()} ticker{'' if tickers.len() == 1 else 's'} ({names}); need at least 2",
        )
    for level in GROUP_LEVELS:
        if level not in df.columns:
            continue
        if df.schema[level] != pl.String:
            chk.df = df = df.with_columns(pl.col(level).cast(pl.String))
        labels = df.get_column(level)
        if width and not labels.null_count() and (
                df.height == width or bool((labels.slice(width) == labels.slice(0, df.height - width)).all())):
            continue  # complete, and every row repeats the label of its ticker's row a date before
        pairs = df.lazy().select("ticker", level).filter(pl.col(level).is_not_null()).unique().collect()
        if pairs.height == pairs.get_column("ticker").n_unique():
            continue  # one label per ticker: the usual file, in one hash pass
        first = pl.col(level).drop_nulls().first().over("ticker")
        changed = df.select((pl.col(level).is_not_null() & (pl.col(level) != first)).alias("m"))
        mask = changed.get_column("m").fill_null(False)
        if mask.any():
            i = int(mask.arg_true()[0])
            r = df.row(i, named=True)
            was = df.filter(pl.col("ticker") == r["ticker"]).get_column(level).drop_nulls()[0]
            raise ValidationError(
                "inconsistent-group",
                f"{level} changes from {was!r} to {r[level]!r}; group labels must be constant per ticker",
                ticker=r["ticker"],
                date=str(r["date"]),
            )


def _check_actions(chk: _Checker) -> None:
    if "split" in chk.df.columns:  # 0 is "no split" (yfinance's Stock Splits), as null is
        chk.df = chk.df.with_columns(
            pl.when(pl.col("split") == 0.0).then(None).otherwise(pl.col("split")).alias("split"))
    df = chk.df
    if "split" in df.columns:
        bad = df.get_column("split")
        chk.flag(
            "bad-split",
            bad.is_infinite() | (bad <= 0.0),
            lambda r, i: f"split {_fmt(r['split'])} must be finite and > 0 (0 or empty: no split)",
        )
    if "dividend" in df.columns:
        bad = df.get_column("dividend")
        chk.flag(
            "bad-dividend",
            bad.is_infinite() | (bad < 0.0),
            lambda r, i: f"dividend {_fmt(r['dividend'])} must be finite and >= 0",
        )


def _check_cells(chk: _Checker) -> None:
    num = [c for c in NUMERIC_COLUMNS if c in chk.df.columns and c not in ("split", "dividend")]
    inf = {c: chk.df.get_column(c).is_infinite().fill_null(False) for c in num}
    any_inf = chk.df.select(pl.any_horizontal(pl.col(c).is_infinite() for c in num)).to_series()

    def describe_inf(r: dict, i: int) -> str:
        c = next(c for c in num if inf[c][i])
        return f"{c} = {_fmt(r[c])} is not finite"

    if chk.flag("non-finite", any_inf, describe_inf) is not None:
        chk.df = chk.df.with_columns(
            pl.when(inf[c]).then(None).otherwise(pl.col(c)).alias(c) for c in num
        )
    bad = {c: (chk.df.get_column(c) <= 0.0).fill_null(False) for c in PRICE_FIELDS}
    any_bad = bad["open"] | bad["high"] | bad["low"] | bad["close"]

    def describe(r: dict, i: int) -> str:
        f = next(c for c in PRICE_FIELDS if bad[c][i])
        return f"{f} = {_fmt(r[f])} must be > 0"

    if chk.flag("non-positive-price", any_bad, describe) is not None:
        chk.df = chk.df.with_columns(
            pl.when(bad[c]).then(None).otherwise(pl.col(c)).alias(c) for c in PRICE_FIELDS
        )
    hi = chk.df.select((pl.col("high") < pl.max_horizontal("open", "close")).alias("m")).get_column(
        "m"
    )
    chk.mask_cells(
        "high-below-open-close",
        hi,
        PRICE_FIELDS,
        lambda r, i: (
            f"high {_fmt(r['high'])} < max(open {_fmt(r['open'])}, close {_fmt(r['close'])})"
        ),
    )
    lo = chk.df.select((pl.col("low") > pl.min_horizontal("open", "close")).alias("m")).get_column(
        "m"
    )
    chk.mask_cells(
        "low-above-open-close",
        lo,
        PRICE_FIELDS,
        lambda r, i: (
            f"low {_fmt(r['low'])} > min(open {_fmt(r['open'])}, close {_fmt(r['close'])})"
        ),
    )
    chk.mask_cells(
        "negative-volume",
        chk.df.get_column("volume") < 0.0,
        ("volume",),
        lambda r, i: f"volume {_fmt(r['volume'])} must be >= 0",
    )
    if "cap" in chk.df.columns:
        chk.mask_cells(
            "non-positive-cap",
            chk.df.get_column("cap") <= 0.0,
            ("cap",),
            lambda r, i: f"cap {_fmt(r['cap'])} must be > 0",
        )


#: What a required numeric column is for, in the empty-column message.
_USED_FOR = {"open": "the book fills and earns at the open", "close": "returns come from the close",
             "high": "formulas read it", "low": "formulas read it", "volume": "formulas read it"}


def _check_filled(chk: _Checker) -> None:
    """A required price or volume column with no value on any row (after masking) is as absent
    as a missing column: an empty open would score every book as costs with no fills."""
    for c in REQUIRED_COLUMNS[2:]:
        if chk.df.get_column(c).null_count() == chk.df.height:
            raise ValidationError(
                "empty-column", f"no value in any of its {chk.df.height:,} rows ({_USED_FOR[c]}); "
                f"map the column that holds it (--columns {c}=NAME, load_panel(columns=...))",
                column=c)


def validate_long(
    frame: pl.DataFrame,
    *,
    strict: bool = True,
    calendar_check: bool = True,
    require_sorted: bool = True,
) -> tuple[pl.DataFrame, ValidationReport]:
    """Coerce and check a long frame; return (clean frame sorted by date, ticker; report).

    The clean frame has ``date`` as pl.Date, ``ticker`` as String, numeric columns as
    Float64 with missing values as null, label columns as String.  ``strict=True``
    raises :class:`ValidationError` at the first rule that fires (order of
    :data:`RULES`); ``strict=False`` masks/drops and reports (structural rules still
    raise).  ``calendar_check=False`` skips the NYSE-session rule; ``require_sorted=False``
    accepts any row order (used for wide input, whose columns have no order).
    """
    if frame.height == 0 or frame.width == 0:
        raise ValidationError("empty-panel", "no rows")
    for c in REQUIRED_COLUMNS:
        if c not in frame.columns:
            raise ValidationError(
                "missing-column", f"required; got columns {list_columns(frame.columns)}",
                column=c,
            )
    for c in frame.columns:
        if c not in KNOWN_COLUMNS:
            raise ValidationError(
                "unknown-column", f"not in the schema ({', '.join(KNOWN_COLUMNS)})", column=c
            )
    df = _coerce_ticker(coerce_date(frame))
    chk = _Checker(df, strict)
    _coerce_numbers(chk)
    _check_order(chk, require_sorted)
    if calendar_check:
        _check_sessions(chk)
    _check_tickers_and_groups(chk)
    _check_actions(chk)
    _check_cells(chk)
    _check_filled(chk)
    ordered = {r: chk.counts[r] for r in RULES if r in chk.counts}
    return chk.df, ValidationReport(ordered, {r: chk.first[r] for r in ordered})
