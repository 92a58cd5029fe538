"""Read a panel file into a polars frame of text columns, or fail in one line naming the file.

Every malformed file gives one ``ValueError`` line ``FILE: [line N: ]what`` (never a raw
polars error, a panic or a multi-line message): an empty file, a ragged row with too many or
too few fields (line and field counts; polars itself would pad a short row with nulls),
bytes that are not UTF-8 (line and offset), a corrupt gzip stream, an unreadable Parquet
file.  Size is capped before parsing: a file (or a gzip stream, decompressed
incrementally) larger than ``max_bytes`` is refused, so a gzip bomb costs at most the cap.
The cap is :data:`DEFAULT_MAX_BYTES` unless ``max_bytes`` or ``$GYMKIT_MAX_PANEL_BYTES`` says
otherwise.  CSV cells are read as text (the validator casts and names bad numbers).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import zlib
from pathlib import Path

import polars as pl

from gymkit.data.validate import clip

#: Largest (decompressed) panel file read by default: 1 GiB.
DEFAULT_MAX_BYTES = 1 << 30
_ENV_CAP = "GYMKIT_MAX_PANEL_BYTES"
_CHUNK = 1 << 22


def max_bytes_limit(max_bytes: int | None = None) -> int:
    """The size cap: ``max_bytes``, else ``$GYMKIT_MAX_PANEL_BYTES``, else the default."""
    if max_bytes is not None:
        return int(max_bytes)
    raw = os.environ.get(_ENV_CAP, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"${_ENV_CAP} = {clip(raw)!r} is not a number of bytes") from None


def _too_big(p: Path, cap: int, what: str) -> ValueError:
    return ValueError(f"{p}: {what} more than {cap:,} bytes, the panel size limit (raise it "
                      f"with max_bytes= or ${_ENV_CAP})")


def _read_bytes(p: Path, cap: int) -> bytes:
    if p.name.lower().endswith(".gz"):
        out = bytearray()
        try:
            with gzip.open(p, "rb") as fh:
                while chunk := fh.read(_CHUNK):
                    out += chunk
                    if len(out) > cap:
                        raise _too_big(p, cap, "decompresses to")
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{p}: not a readable gzip file ({clip(exc, 120)})") from None
        return bytes(out)
    if p.stat().st_size > cap:
        raise _too_big(p, cap, "is")
    return p.read_bytes()


def _first_ragged(p: Path, text: str) -> ValueError | None:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return None
    for row in reader:
        if row and len(row) != len(header):
            return ValueError(f"{p}: line {reader.line_num}: {len(row)} fields, the header has "
                              f"{len(header)}")
    return None


def _may_have_short_rows(frame: pl.DataFrame, data: bytes) -> bool:
    """True when the parsed ``frame`` may hide a row with fewer fields than the header.

    polars raises on a row with too many fields but pads a short one with nulls, so a short
    row leaves the last column null: without a null there, no row is short (no scan at all).
    Else every comma of ``data`` is either a field separator or inside a (quoted) header name
    or cell, so a file whose every row has the header's field count has exactly ``(width - 1)
    * (height + 1)`` separators; fewer means a short row (or a blank line).  Linear in the
    file size; the slow exact scan (:func:`_first_ragged`) runs only on a mismatch.
    """
    if frame.width < 2 or frame.get_column(frame.columns[-1]).null_count() == 0:
        return False
    separators = data.count(b",")
    if b'"' in data:  # commas inside quoted values are not separators: ask the parser's values
        separators -= sum(c.count(",") for c in frame.columns)
        cells = [pl.col(c).str.count_matches(",", literal=True).sum() for c in frame.columns]
        separators -= int(frame.select(pl.sum_horizontal(cells)).item())
    return separators != (frame.width - 1) * (frame.height + 1)


#: The first cells of yfinance's three header lines (``download(...).to_csv()``), either order.
_YF_LEVELS = {"Price", "Ticker"}


def _flatten_yfinance_header(data: bytes) -> bytes:
    """A CSV that yfinance wrote (``Price,...`` / ``Ticker,...`` / ``Date,,,`` — or Ticker
    first, with ``group_by="ticker"``) with one wide header ``date,Close:AAPL,...`` instead;
    any other file unchanged.  Only the three header lines are read and rewritten."""
    if not data.startswith((b"Price,", b"Ticker,")):
        return data
    ends, at = [], 0
    for _ in range(3):
        at = data.find(b"\n", at) + 1
        if at == 0:
            return data
        ends.append(at)
    rows = list(csv.reader(io.StringIO(data[:ends[2]].decode("utf-8", "replace"))))
    if len(rows) != 3 or {rows[0][0], rows[1][0]} != _YF_LEVELS or rows[2][0] != "Date" \
            or any(c.strip() for c in rows[2][1:]) or not len(rows[0]) == len(rows[1]) > 1:
        return data
    fields, tickers = (rows[0], rows[1]) if rows[0][0] == "Price" else (rows[1], rows[0])
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(
        ["date", *(f"{f}:{t}" for f, t in zip(fields[1:], tickers[1:], strict=True))])
    return out.getvalue().encode("utf-8") + data[ends[2]:]


def read_csv_file(p: Path, max_bytes: int | None = None) -> pl.DataFrame:
    """Read a ``.csv`` / ``.csv.gz`` file as a frame of String columns (module doc)."""
    cap = max_bytes_limit(max_bytes)
    data = _read_bytes(p, cap)
    if not data.strip():
        raise ValueError(f"{p}: empty file (no header, no rows)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{p}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                         f"offset {exc.start}); save the file as UTF-8") from None
    data = _flatten_yfinance_header(data)
    try:
        frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # polars errors and pyo3 panics (not Exception subclasses)
        ragged = _first_ragged(p, data.decode("utf-8"))
        if ragged is not None:
            raise ragged from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{p}: not a readable CSV file ({clip(first, 160)})") from None
    if _may_have_short_rows(frame, data):
        ragged = _first_ragged(p, data.decode("utf-8"))
        if ragged is not None:
            raise ragged
    return frame


def read_parquet_file(p: Path, max_bytes: int | None = None) -> pl.DataFrame:
    """Read a Parquet file; its file size and declared uncompressed size are capped."""
    cap = max_bytes_limit(max_bytes)
    if p.stat().st_size > cap:
        raise _too_big(p, cap, "is")
    try:
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(p).metadata
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except ImportError:  # pragma: no cover - pyarrow ships with the test extras
        size = 0
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        raise ValueError(f"{p}: not a readable Parquet file ({clip(exc, 160)})") from None
    if size > cap:
        raise _too_big(p, cap, "decompresses to")
    try:
        return pl.read_parquet(p)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{p}: not a readable Parquet file ({clip(first, 160)})") from None
