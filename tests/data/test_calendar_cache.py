"""The NYSE session list is cached in the user cache folder: the same sessions as the calendar
library, a later process reads them without importing it, and a bad or unwritable cache
never changes the answer."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from gymkit.data import calendar


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path))
    calendar._all_sessions.cache_clear()
    yield tmp_path
    calendar._all_sessions.cache_clear()


def _probe(cache_dir) -> str:
    code = ("import sys; from gymkit.data.calendar import _all_sessions; a = _all_sessions(); "
            "print(a.size, str(a[0]), str(a[-1]), 'exchange_calendars' in sys.modules)")
    env = {**os.environ, "GYMKIT_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_sessions_are_the_library_calendar_and_a_later_process_reads_the_cache(cache) -> None:
    built = calendar._build_sessions()
    first = _probe(cache)
    (saved,) = (cache / "calendar").glob("xnys-*.npy")
    assert np.array_equal(np.load(saved), built)
    assert first == f"{built.size} {built[0]} {built[-1]} True"  # built: the library imported
    assert _probe(cache) == f"{built.size} {built[0]} {built[-1]} False"  # read from the cache
    assert list((cache / "calendar").iterdir()) == [saved]  # no temporary file left


@pytest.mark.parametrize("bad", [b"not a numpy file", "wrong dtype", "unsorted"])
def test_a_bad_cache_file_is_rebuilt(cache, bad) -> None:
    built = calendar._build_sessions()
    path = calendar._cache_file()
    path.parent.mkdir(parents=True)
    if bad == "wrong dtype":
        np.save(path, np.arange(5))
    elif bad == "unsorted":
        np.save(path, built[::-1])
    else:
        path.write_bytes(bad)
    assert np.array_equal(calendar._all_sessions(), built)
    assert np.array_equal(np.load(path), built)


def test_an_unwritable_cache_still_answers(cache) -> None:
    (cache / "calendar").write_text("a file where the folder should be")
    assert np.array_equal(calendar._all_sessions(), calendar._build_sessions())
    assert calendar.nyse_sessions("2020-01-02", "2020-01-10").size == 7
