"""HTML building blocks of a tear sheet: one self-contained page, no script, no network.

Everything a page needs is inline (CSS in a ``<style>`` block, plots as ``<svg>``), so the
file opens from disk anywhere.  Text is escaped here and nowhere else; plot SVG is inserted
as is (it comes from :mod:`.figures`).  The only line that varies between runs is the
optional "generated at" line, which callers switch off for reproducible output.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Section", "badge", "esc", "fmt", "kpis", "kv_table", "page", "table"]

_CSS = """
:root { --ink:#1b1b1b; --mute:#5c5c5c; --line:#dcdcdc; --bg:#fbfbfa; --accent:#1f4e79; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
header { background:#14283c; color:#fff; padding:18px 28px 14px; }
header h1 { margin:0 0 4px; font-size:20px; font-weight:600; }
header .sub { color:#c9d6e3; font-size:13px; }
header code { color:#fff; background:rgba(255,255,255,.12); padding:1px 5px; border-radius:3px; }
nav { position:sticky; top:0; z-index:2; background:#fff; border-bottom:1px solid var(--line);
  padding:6px 28px; font-size:12.5px; display:flex; flex-wrap:wrap; gap:2px 12px; }
nav a { color:var(--accent); text-decoration:none; white-space:nowrap; }
main { max-width:1180px; margin:0 auto; padding:8px 28px 40px; }
section { background:#fff; border:1px solid var(--line); border-radius:6px; margin:16px 0;
  padding:12px 18px 14px; }
section h2 { font-size:16px; margin:0 0 6px; color:var(--accent); }
p.intro { color:var(--mute); margin:0 0 8px; font-size:13px; }
table { border-collapse:collapse; font-size:12.5px; margin:6px 0 8px; }
th, td { padding:3px 9px; border-bottom:1px solid #eee; text-align:left; vertical-align:top; }
th { color:var(--mute); font-weight:600; border-bottom:1px solid var(--line); }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums;
  font-family:"DejaVu Sans Mono", Menlo, Consolas, monospace; }
td.pos { color:#1f6e2f; } td.neg { color:#b22222; }
code, .mono { font-family:"DejaVu Sans Mono", Menlo, Consolas, monospace; font-size:12.5px; }
.kpis { display:flex; flex-wrap:wrap; gap:10px; margin:4px 0 10px; }
.kpi { border:1px solid var(--line); border-radius:5px; padding:6px 12px; min-width:118px; }
.kpi .v { font-size:18px; font-weight:600; font-variant-numeric:tabular-nums; }
.kpi .k { color:var(--mute); font-size:11.5px; }
.badge { display:inline-block; padding:1px 7px; border-radius:9px; font-size:11.5px;
  font-weight:600; }
.ok { background:#e3f1e6; color:#1f6e2f; } .bad { background:#fbe3e3; color:#9b1c1c; }
.note { color:var(--mute); font-size:12.5px; }
svg.plot { width:100%; height:auto; display:block; margin:4px 0; }
footer { color:var(--mute); font-size:11.5px; max-width:1180px; margin:0 auto;
  padding:0 28px 30px; }
"""


def esc(x: object) -> str:
    """HTML-escape ``str(x)`` (quotes too)."""
    return html.escape(str(x), quote=True)


def fmt(x: object, spec: str = ".3f") -> str:
    """Format a number with ``spec``; None/NaN/inf → '–'; non-numbers → str."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | float):
        return format(x, spec) if math.isfinite(float(x)) else "–"
    return str(x)


@dataclass(frozen=True)
class Section:
    """One ``<section>`` of a page: anchor id, heading, an intro line and an HTML body."""

    id: str
    title: str
    body: str
    intro: str = ""

    def render(self) -> str:
        """The section's HTML."""
        intro = f'<p class="intro">{esc(self.intro)}</p>' if self.intro else ""
        return (f'<section id="{esc(self.id)}" data-section="{esc(self.id)}">'
                f"<h2>{esc(self.title)}</h2>{intro}{self.body}</section>")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]],
          numeric: Sequence[bool] | None = None, raw: bool = False) -> str:
    """An HTML table; ``numeric[j]`` right-aligns column j; ``raw`` cells are trusted HTML."""
    num = list(numeric) if numeric is not None else [False] * len(headers)
    head = "".join(f'<th class="num">{esc(h)}</th>' if n else f"<th>{esc(h)}</th>"
                   for h, n in zip(headers, num, strict=True))
    body = []
    for row in rows:
        cells = []
        for v, n in zip(row, num, strict=True):
            text = str(v) if raw else esc(v)
            cls = ""
            if n:
                s = str(v).strip()
                cls = ' class="num neg"' if s.startswith(("-", "−")) and s not in ("-", "–") else ' class="num"'
            cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def kv_table(pairs: Sequence[tuple[str, object]]) -> str:
    """A two-column key/value table (values escaped)."""
    return "<table><tbody>" + "".join(
        f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs) + "</tbody></table>"


def kpis(pairs: Sequence[tuple[str, str]]) -> str:
    """A row of headline numbers (label, value)."""
    return '<div class="kpis">' + "".join(
        f'<div class="kpi"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
        for k, v in pairs) + "</div>"


def badge(ok: bool, text: str) -> str:
    """A green (ok) or red badge."""
    return f'<span class="badge {"ok" if ok else "bad"}">{esc(text)}</span>'


def page(title: str, subtitle_html: str, sections: Sequence[Section], footer: str,
         generated_at: str | None = None) -> str:
    """The whole HTML document.  ``generated_at`` (e.g. an ISO time) adds the only varying line."""
    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    gen = f'<div class="generated">Generated {esc(generated_at)}</div>' if generated_at else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1><div class="sub">{subtitle_html}</div></header>'
        f"<nav>{nav}</nav><main>{''.join(s.render() for s in sections)}</main>"
        f"<footer>{footer}{gen}</footer></body></html>\n")
