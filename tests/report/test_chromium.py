"""The rendered tear sheets in headless Chromium, checked on what a person would see: every
section present with its heading, no console error, nothing fetched but the page itself, every
plot drawn (no empty axes), nothing wider than its box and no horizontal scroll at 1280 px.

The full-page screenshots are kept as test artifacts: ``screenshot.png`` next to each page in
the report folder (``GYMKIT_REPORT_DIR`` to choose it; the path is recorded as a test property).
Without Chromium the tests skip, saying so (``.ci/run`` installs Debian's package).
"""

from __future__ import annotations

import struct

import pytest

from gymkit.report import ANSWERS_SECTIONS, FORMULA_SECTIONS
from gymkit.report.api import answers_report, formula_report

WIDTH = 1280


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_harness_catches_console_errors_fetches_overflow_and_empty_plots(browser, tmp_path):
    """Negative control: each check below can fail."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><main><section id="x"><h2>X</h2>'
                   '<table style="width:3000px"><tr><td>wide</td></tr></table>'
                   '<svg aria-label="empty" width="400" height="200"><g></g></svg></section></main>'
                   '<script>console.error("boom"); nope();</script><img src="missing.png"></body></html>')
    r = browser.load(bad.as_uri(), screenshot=False)
    text = "\n".join(r.console_errors)
    assert "boom" in text and "nope" in text and "missing.png" in text
    assert any(u.endswith("missing.png") for u in r.requests)
    assert r.sections == ["x"] and r.section_titles == ["X"]
    assert r.blank_svgs == ["empty"]
    assert "x section" in r.overflow and r.page_width > WIDTH


def _check(r, path, expected: list[tuple[str, str]], min_svgs: int) -> None:
    assert r.sections == [sid for sid, _ in expected]
    assert r.section_titles == [title for _, title in expected]
    assert r.console_errors == []
    assert r.requests == [path.resolve().as_uri()], "the page fetched something besides itself"
    assert r.svg_count >= min_svgs and r.empty_svgs == 0
    assert r.blank_svgs == [], f"plots with nothing drawn: {r.blank_svgs}"
    assert r.overflow == [], f"content wider than its box: {r.overflow}"
    assert r.page_width <= WIDTH, f"the page scrolls sideways ({r.page_width} px)"
    assert r.title.startswith("gymkit")


@pytest.mark.parametrize("holdout", [False, True], ids=["train", "train+holdout"])
def test_formula_report_renders_in_chromium(holdout, browser, env, report_dir, record_property):
    out = report_dir / ("formula-holdout" if holdout else "formula")
    path = formula_report(env, "rank(ts_std(volume, 20) / ts_mean(volume, 20))", out, holdout=holdout)
    r = browser.load(path.resolve().as_uri())
    _check(r, path, list(FORMULA_SECTIONS), 16)
    w, h = _png_size(r.screenshot)
    assert w == WIDTH and h == r.height and h > 6000
    (out / "screenshot.png").write_bytes(r.screenshot)
    record_property("screenshot", str(out / "screenshot.png"))


def test_invalid_answer_page_renders_every_section(browser, env, report_dir):
    out = report_dir / "formula-invalid"
    path = formula_report(env, "rank(ts_mean(close, 250))", out)  # below the turnover floor
    r = browser.load(path.resolve().as_uri(), screenshot=False)
    assert r.sections == [sid for sid, _ in FORMULA_SECTIONS]
    assert r.console_errors == [] and r.overflow == [] and r.page_width <= WIDTH


def test_answers_report_renders_in_chromium(browser, env, report_dir, record_property):
    out = report_dir / "answers"
    answers = ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>rank(ts_std(volume, 20))</alpha>",
               "<alpha>rank(-ts_sum(returns, 4))</alpha>", "no tag here", "<alpha>rank(</alpha>"]
    path = answers_report(env, answers, out)
    r = browser.load(path.resolve().as_uri())
    _check(r, path, list(ANSWERS_SECTIONS), 4)
    w, h = _png_size(r.screenshot)
    assert w == WIDTH and h == r.height and h > 2000
    (out / "screenshot.png").write_bytes(r.screenshot)
    record_property("screenshot", str(out / "screenshot.png"))
