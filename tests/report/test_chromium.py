"""The rendered tear sheets in headless Chromium: they load, show every section, log no error,
fetch nothing but themselves, and draw every plot.  Screenshots are kept in the report folder."""

from __future__ import annotations

import struct

import pytest

from gymkit.report import ANSWERS_SECTIONS, FORMULA_SECTIONS
from gymkit.report.api import answers_report, formula_report


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_harness_catches_console_errors_and_fetches(browser, tmp_path):
    """Negative control: the checks below can fail."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><section id="x"></section><script>'
                   'console.error("boom"); nope();</script><img src="missing.png"></body></html>')
    r = browser.load(bad.as_uri(), screenshot=False)
    text = "\n".join(r.console_errors)
    assert "boom" in text and "nope" in text and "missing.png" in text
    assert any(u.endswith("missing.png") for u in r.requests)
    assert r.sections == ["x"]


@pytest.mark.parametrize("kind", ["formula", "answers"])
def test_report_renders_in_chromium(kind, browser, env, report_dir):
    out = report_dir / kind
    if kind == "formula":
        path = formula_report(env, "rank(ts_std(volume, 20) / ts_mean(volume, 20))", out)
        expected, min_svgs = [sid for sid, _ in FORMULA_SECTIONS], 10
    else:
        answers = ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>rank(ts_std(volume, 20))</alpha>",
                   "<alpha>rank(-ts_sum(returns, 4))</alpha>", "no tag here", "<alpha>rank(</alpha>"]
        path = answers_report(env, answers, out)
        expected, min_svgs = [sid for sid, _ in ANSWERS_SECTIONS], 4
    r = browser.load(path.resolve().as_uri())
    assert r.sections == expected
    assert r.console_errors == []
    assert r.requests == [path.resolve().as_uri()], "the page fetched something besides itself"
    assert r.svg_count >= min_svgs and r.empty_svgs == 0
    assert r.title.startswith("gymkit")
    w, h = _png_size(r.screenshot)
    assert w == 1280 and h == r.height and h > 2000
    (out / "screenshot.png").write_bytes(r.screenshot)
