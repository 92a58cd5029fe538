"""Panel invariants: read-only arrays, physical slicing, fingerprint, derived fields."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.data.calendar import nyse_sessions
from gymkit.data.panel import BASE_FIELDS, Panel


def _panel(seed: int = 0, t: int = 8, n: int = 3, **extra) -> Panel:
    rng = np.random.default_rng(seed)
    close = 10.0 + rng.random((t, n))
    open_ = close * (1 + 0.01 * rng.standard_normal((t, n)))
    high = np.maximum(open_, close) + 0.1
    low = np.minimum(open_, close) - 0.1
    vol = rng.integers(1, 1000, (t, n)).astype(float)
    dates = nyse_sessions("2020-01-02", "2020-03-01")[:t]
    tickers = [f"T{i}" for i in range(n)]
    return Panel(dates, tickers, open_, high, low, close, vol, **extra)


def test_arrays_are_read_only_copies():
    src = np.ones((2, 2))
    p = Panel(["2020-01-02", "2020-01-03"], ["A", "B"], src, src, src, src, src)
    for name in (*BASE_FIELDS, "returns", "vwap"):
        with pytest.raises(ValueError, match="read-only"):
            p.field(name)[0, 0] = 5.0
    src[0, 0] = 99.0  # the caller's array is not shared
    assert p.close[0, 0] == 1.0


def test_between_physically_drops_rows():
    p = _panel(t=8)
    sub = p.between(p.dates[2], p.dates[4])
    assert sub.T == 3
    assert np.array_equal(sub.dates, p.dates[2:5])
    for name in BASE_FIELDS:
        arr = sub.field(name)
        assert not np.shares_memory(arr, p.field(name))
        assert arr.base is None or arr.base.size == arr.size  # no hidden view of the full panel
    assert np.array_equal(sub.close, p.close[2:5])
    assert sub.field("returns").shape == (3, p.N)
    assert np.isnan(sub.field("returns")[0]).all()  # the slice cannot see the row before it


def test_a_window_holding_every_row_is_the_panel_itself_and_one_row_less_is_a_copy():
    p = _panel(t=8)
    assert p.between(p.dates[0], p.dates[-1]) is p  # nothing outside it to hide: no copy
    assert p.between("1900-01-01", "2100-01-01") is p
    assert p.take_rows(slice(None)) is p
    sub = p.between(p.dates[0], p.dates[-2])
    assert sub is not p and sub.T == 7 and not np.shares_memory(sub.close, p.close)
    assert DEFAULT_SPLIT.with_history(default_market()) is default_market()  # holdout ends on the last day

def test_returns_and_vwap_follow_design():
    p = _panel()
    r = p.field("returns")
    assert np.isnan(r[0]).all()
    np.testing.assert_allclose(r[1:], p.close[1:] / p.close[:-1] - 1.0)
    np.testing.assert_allclose(p.field("vwap"), (p.high + p.low + p.close) / 3.0)


def test_group_codes_sorted_labels_and_missing():
    p = _panel(n=3, sector=["Tech", "", "Energy"])
    assert p.group_codes("sector").tolist() == [1, -1, 0]
    assert not p.has_groups("industry")
    with pytest.raises(KeyError, match="industry"):
        p.group_codes("industry")


def _fixed_panel():
    import numpy as np

    from gymkit.data.panel import Panel

    rng = np.random.default_rng(7)
    x = rng.random((5, 4)) + 1.0
    x[1, 2] = np.nan
    dates = np.datetime64("2021-01-04", "D") + np.arange(5)
    return Panel(dates, list("WXYZ"), x, x + 1, x - 0.5, x, x * 100, sector=["a", "b", "a", "c"])


def test_fingerprint_stable_across_processes():
    script = (
        textwrap.dedent(inspect.getsource(_fixed_panel)) + "\nprint(_fixed_panel().fingerprint)\n"
    )
    seen = set()
    for seed in ("1", "987"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env
        )
        assert res.returncode == 0, res.stderr[-2000:]
        seen.add(res.stdout.strip())
    assert seen == {_fixed_panel().fingerprint}


def test_fingerprint_nan_is_canonical():
    x = np.ones((2, 2))
    y = x.copy()
    x[0, 0] = np.nan
    y[0, 0] = np.frombuffer(np.uint64(0x7FF8DEADBEEF0001).tobytes(), dtype=np.float64)[
        0
    ]  # other NaN payload
    assert np.isnan(y[0, 0])
    a = Panel(["2020-01-02", "2020-01-03"], ["A", "B"], x, x, x, x, x)
    b = Panel(["2020-01-02", "2020-01-03"], ["A", "B"], y, y, y, y, y)
    assert a.fingerprint == b.fingerprint


def test_fingerprint_sees_dates_tickers_labels_cap():
    p = _panel()
    fp = p.fingerprint
    later = Panel(p.dates + 1, p.tickers, p.open, p.high, p.low, p.close, p.volume)
    renamed = Panel(p.dates, ("T0", "T1", "T9"), p.open, p.high, p.low, p.close, p.volume)
    labelled = _panel(sector=["a", "b", "c"])
    capped = _panel(cap=np.ones((8, 3)))
    fps = {fp, later.fingerprint, renamed.fingerprint, labelled.fingerprint, capped.fingerprint}
    assert len(fps) == 5


@settings(max_examples=40, derandomize=True, deadline=None)
@given(
    field=st.sampled_from(BASE_FIELDS),
    row=st.integers(0, 7),
    col=st.integers(0, 2),
    new=st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.just(np.nan)),
)
def test_fingerprint_changes_with_any_value(field, row, col, new):
    p = _panel()
    arr = p.field(field).copy()
    if arr[row, col] == new or (np.isnan(new) and np.isnan(arr[row, col])):
        return
    arr[row, col] = new
    assert p.replace(**{field: arr}).fingerprint != p.fingerprint


def test_the_constructor_copies_the_caller_s_arrays():
    """A user's arrays stay the user's: writeable, and later writes do not reach the panel
    (only the loader hands its fresh arrays over, ``_adopt``)."""
    x = np.ones((2, 2))
    p = Panel(["2020-01-02", "2020-01-03"], ["A", "B"], x, x, x, x, x)
    assert x.flags.writeable and not p.close.flags.writeable
    x[0, 0] = 5.0
    assert p.close[0, 0] == 1.0
    x[1, 1] = np.inf
    q = Panel(["2020-01-02", "2020-01-03"], ["A", "B"], x, x, x, x, x)
    assert np.isnan(q.close[1, 1]) and x[1, 1] == np.inf  # ±inf is never data, in the copy


def test_an_adopted_read_only_field_with_infinities_is_cleaned_not_refused() -> None:
    """The loader hands a complete panel's columns over as read-only views; ±inf in one is
    still read as NaN (in a copy), and the caller's array is left as it was."""
    import numpy as np

    from gymkit.data.panel import Panel

    a = np.ones((3, 2))
    a[1, 1] = np.inf
    a.setflags(write=False)
    dates = np.array(["2020-01-02", "2020-01-03", "2020-01-06"], dtype="datetime64[D]")
    p = Panel(dates, ["A", "B"], a, a, a, a, a, _adopt=True)
    assert np.isnan(p.close[1, 1]) and not p.close.flags.writeable
    assert np.isinf(a[1, 1])
