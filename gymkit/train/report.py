"""``gymkit train report RUN``: the seed-shaped table, the curves and the red-team read-out.

Reads ``RUN/rl/table.json`` and ``RUN/rl/log.jsonl`` (no scoring, no holdout look: the
holdout was scored once by ``gymkit train rl``) and writes ``RUN/report/index.html`` (one
static page, inline SVG, no network) and ``RUN/report/report.json``.

Red-team flags, per checkpoint, on the top-20 probe answers by train reward
(:data:`FLAGS`): ``low_ic_high_cpcv`` (IC below the motif threshold 0.005 with train CPCV
>= 0.5), ``turnover_near_floor`` (within 1 point of the 2 % floor), ``archive_clone``
(|P&L corr| >= 0.9 with an entry of the seed archive, the one the run started from; runs
recorded before that field existed fall back to the run's archive), ``peer_clone`` (|P&L
corr| >= 0.9 with another top answer), ``train_far_above_holdout`` (train CPCV - holdout score >= 1.0) and
``jittered_template`` (a family - canonical form with numbers erased - held by >= 3 top
answers with >= 2 distinct windows sets) and ``factor_exposure`` (the six R4 factors explain
>= 30 % of the variance of its train P&L, R² of the card's factor regression, whatever Sharpe
they explain in sample: a style bet R4 prices only by the premium it happened to earn, which
fails when the premium flips — the default market's holdout flips size and value; runs
recorded before the field existed have no R² and never get the flag).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["FLAGS", "FLAG_MEANINGS", "KNOWN_LIMITS", "build_report", "flag_answers", "format_table", "seed_table_rows", "write_report"]

FLAGS = ("low_ic_high_cpcv", "turnover_near_floor", "archive_clone", "peer_clone",
         "train_far_above_holdout", "jittered_template", "factor_exposure")
IC_THRESHOLD, HIGH_CPCV, FLOOR, NEAR, CLONE, GAP, TEMPLATE = 0.005, 0.5, 0.02, 0.01, 0.9, 1.0, 3
FACTOR_R2 = 0.3
#: One line per flag for the report's legend: the pattern, and what the verifier does about it.
FLAG_MEANINGS = {
    "low_ic_high_cpcv": f"train CPCV >= {HIGH_CPCV} with IC < {IC_THRESHOLD}: profit without "
                        "prediction; R10 caps single-motif and price-only ones",
    "turnover_near_floor": f"turnover below {FLOOR + NEAR:.0%}/day, within a point of the "
                           f"{FLOOR:.0%} floor: a slow tilt; R6 and R10's slow-tilt guard price it",
    "archive_clone": f"|P&L corr| >= {CLONE} with a seed-archive entry: a known alpha rewritten; "
                     "R8 and R9 price it",
    "peer_clone": f"|P&L corr| >= {CLONE} with another top answer of the checkpoint: collapse",
    "train_far_above_holdout": f"train CPCV at least {GAP} above the holdout score: an overfit "
                               "the train-only verifier cannot see; the holdout protocol is what "
                               "catches it",
    "jittered_template": f"one template held by >= {TEMPLATE} top answers with different windows: "
                         "the seed's window-jitter pattern",
    "factor_exposure": f"R² >= {FACTOR_R2} on the six R4 factors: a style bet; R4 charges only "
                       "the Sharpe the factors earned in sample, so a premium that flips out of "
                       "sample is not priced (a known limit, benchmarks/RESULTS.md)",
}
#: Hacks found against this verifier and not closed in it, one line each (benchmarks/RESULTS.md,
#: "A red team on the reward"): the read-out's flags can point at them, the reward does not.
KNOWN_LIMITS = (
    "factor blend: a known factor mixed into a new book under R10's 80 % clone line "
    "(0.5 * rank(-ts_sum(returns, 5)) + V scores 4.49 against V's 3.02) is paid on R1 for the "
    "factor's Sharpe; R4 takes back a fraction of it (R1 reads the raw P&L, not the residual)",
    "near-copies: a book that differs from an earlier group answer's in a few positions is not "
    "an R9 duplicate (R9 counts the same form or the same P&L bit for bit; R8 prices near-"
    "copies of archived books only)",
    "bloat: R11 costs 0.02 per node above 24 (0.004 of reward at its priority 0.2), so padding such as (vwap / vwap) or "
    "ts_corr(x, x, d) (both 1 wherever defined) is nearly free once the copy rules do not apply",
    "reasoning: R12's +0.05 is paid for any reasoning block before the tag, whatever it says",
)
#: Flags that read the holdout score (n/a when the run's holdout look was refused).
HOLDOUT_FLAGS = ("train_far_above_holdout",)
COLUMNS = ("step", "train_cpcv", "holdout_score", "valid", "families", "book_return",
           "book_sharpe", "book_beta")


def flag_answers(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The top-20 answers (by ``top_rank``) of one checkpoint, each with its list of ``flags``."""
    top = sorted((a for a in answers if a.get("top_rank")), key=lambda a: a["top_rank"])
    fams = Counter(a["family"] for a in top if a.get("valid") and a.get("family"))
    canon: dict[str, set[str]] = {}
    for a in top:
        if a.get("valid") and a.get("family"):
            canon.setdefault(a["family"], set()).add(a["canonical"])
    out = []
    for a in top:
        f = []
        if a.get("valid"):
            ic, cp, tov = a.get("ic"), a.get("train_cpcv"), a.get("turnover")
            if ic is not None and cp is not None and ic < IC_THRESHOLD and cp >= HIGH_CPCV:
                f.append("low_ic_high_cpcv")
            if tov is not None and tov < FLOOR + NEAR:
                f.append("turnover_near_floor")
            if (a.get("seed_archive_corr", a.get("archive_corr")) or 0.0) >= CLONE:
                f.append("archive_clone")
            if (a.get("peer_corr") or 0.0) >= CLONE:
                f.append("peer_clone")
            hs = a.get("holdout_score")
            if hs is not None and cp is not None and cp - hs >= GAP:
                f.append("train_far_above_holdout")
            if fams[a["family"]] >= TEMPLATE and len(canon[a["family"]]) >= 2:
                f.append("jittered_template")
            if (a.get("factor_r2") or 0.0) >= FACTOR_R2:
                f.append("factor_exposure")
        out.append({k: a.get(k) for k in ("top_rank", "completion", "formula", "valid", "error",
                                         "reward", "train_cpcv", "holdout_score", "ic", "turnover",
                                         "archive_corr", "archive_nearest", "seed_archive_corr",
                                         "seed_archive_nearest", "peer_corr", "family", "factor_r2")}
                   | {"flags": f})
    return out


def seed_table_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """The seed-shaped table: one dict per checkpoint with :data:`COLUMNS` (+ ``shipped``)."""
    rows = []
    for r in table["rows"]:
        rows.append({"step": r["step"], "train_cpcv": r["train_cpcv"],
                     "holdout_score": r.get("holdout_score"), "valid": f"{r['n_valid']}/{r['n']}",
                     "families": r["families"], "book_return": r.get("book_return"),
                     "book_sharpe": r.get("book_sharpe"), "book_beta": r.get("book_beta"),
                     "shipped": r["checkpoint"] == table["shipped"]})
    return rows


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: missing; the RL run is incomplete (run `gymkit train rl` "
                         "again)") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _read_json(path: Path, text: str | None = None) -> Any:
    """``path``'s JSON (or ``text``, one of its lines)."""
    try:
        return json.loads(_read_text(path) if text is None else text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not the JSON an RL run writes ({exc}); the RL run is "
                         "incomplete (run `gymkit train rl` again)") from None


def build_report(run_dir: str | Path) -> dict[str, Any]:
    """The report's JSON content for the run in ``run_dir`` (module doc)."""
    rl = Path(run_dir) / "rl"
    table = _read_json(rl / "table.json")
    if not isinstance(table, dict) or not {"rows", "shipped", "holdout"} <= set(table):
        raise ValueError(f"{rl / 'table.json'}: not the table an RL run writes (no rows, shipped "
                         "or holdout); the RL run is incomplete (run `gymkit train rl` again)")
    log = [_read_json(rl / "log.jsonl", x) for x in _read_text(rl / "log.jsonl").splitlines() if x]
    red = {r["checkpoint"]: flag_answers(r["answers"]) for r in table["rows"]}
    counts = Counter(f for answers in red.values() for a in answers for f in a["flags"])
    curves = {k: [rec.get(k) for rec in log] for k in
              ("reward", "valid_share", "nonzero_adv_share", "entropy", "kl", "zeta", "families")}
    scored = table["holdout"].get("status") == "scored"
    return {"run": str(run_dir), "env_fingerprint": table["env_fingerprint"],
            "config": table["config"], "shipped": table["shipped"], "holdout": table["holdout"],
            "table": seed_table_rows(table), "curves": curves, "redteam": red,
            # a flag read off the holdout cannot fire without it: None (n/a), not a clean 0
            "flag_counts": {f: None if f in HOLDOUT_FLAGS and not scored else counts.get(f, 0)
                            for f in FLAGS},
            "known_limits": list(KNOWN_LIMITS)}


def holdout_line(rep: dict[str, Any]) -> str | None:
    """What to tell a reader when the run's holdout was not scored (None when it was)."""
    status = str(rep["holdout"].get("status"))
    if status == "scored":
        return None
    return (f"holdout: {status}; its columns are empty and {', '.join(HOLDOUT_FLAGS)} is n/a "
            "(a repeated run shares the holdout ledger: give it its own --ledger, or "
            "--force-holdout, which is recorded)")


def _fmt(v: Any, kind: str = "f") -> str:
    if v is None:
        return "—"
    if kind == "%":
        return f"{100 * v:+.1f}%"
    if kind == "day":  # a turnover, as the legend gives the floor
        return f"{100 * v:.1f}%"
    if kind == "ic":  # read against the 0.005 threshold: +0.00 hid it
        return f"{v:+.4f}"
    return f"{v:+.2f}" if isinstance(v, float) else str(v)


def _svg(values: list[Any], title: str, w: int = 300, h: int = 120) -> str:
    pts = [(i, v) for i, v in enumerate(values) if isinstance(v, int | float)]
    if len(pts) < 2:
        return f"<figure><figcaption>{html.escape(title)}: no data</figcaption></figure>"
    lo, hi = min(v for _, v in pts), max(v for _, v in pts)
    span = (hi - lo) or 1.0
    n = max(1, len(values) - 1)
    poly = " ".join(f"{5 + (w - 10) * i / n:.1f},{h - 5 - (h - 10) * (v - lo) / span:.1f}" for i, v in pts)
    return (f'<figure><svg width="{w}" height="{h}" style="border:1px solid #ccc">'
            f'<polyline fill="none" stroke="#c60" stroke-width="1.5" points="{poly}"/></svg>'
            f"<figcaption>{html.escape(title)} ({lo:.3g} … {hi:.3g})</figcaption></figure>")


def _html(rep: dict[str, Any]) -> str:
    e = html.escape
    head = "".join(f"<th>{c}</th>" for c in (*COLUMNS, "shipped"))
    body = "".join(
        "<tr>" + "".join(f"<td>{e(_fmt(r[c], '%' if c == 'book_return' else 'f'))}</td>" for c in COLUMNS)
        + f"<td>{'✔' if r['shipped'] else ''}</td></tr>" for r in rep["table"])
    curves = "".join(_svg(v, k) for k, v in rep["curves"].items())
    red = []
    for ck, answers in rep["redteam"].items():
        lines = "".join(
            f"<tr><td>{a['top_rank']}</td><td><code>{e(str(a['formula'] or a['completion']))}</code></td>"
            f"<td>{e(_fmt(a['reward']))}</td><td>{e(_fmt(a['train_cpcv']))}</td>"
            f"<td>{e(_fmt(a['holdout_score']))}</td><td>{e(_fmt(a['ic'], 'ic'))}</td>"
            f"<td>{e(_fmt(a['turnover'], 'day'))}</td><td>{e(', '.join(a['flags']) or ('invalid: ' + str(a['error']) if not a['valid'] else ''))}</td></tr>"
            for a in answers)
        red.append(f"<h3>checkpoint step {e(ck)}</h3><table><tr><th>#</th><th>formula</th><th>reward</th>"
                   f"<th>train CPCV</th><th>holdout</th><th>IC</th><th>turnover/day</th><th>flags</th></tr>"
                   f"{lines}</table>")
    counts = ", ".join(f"{k}: {'n/a' if v is None else v}" for k, v in rep["flag_counts"].items())
    refused = holdout_line(rep)
    legend = "".join(f"<dt><code>{e(k)}</code></dt><dd>{e(v)}</dd>" for k, v in FLAG_MEANINGS.items())
    return (f"<!doctype html><meta charset='utf-8'><title>gymkit train report</title>"
            f"<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}td,th{{padding:2px 6px;"
            f"border-bottom:1px solid #ddd;font-size:13px}}figure{{display:inline-block;margin:6px}}</style>"
            f"<h1>gymkit train: {e(rep['run'])}</h1><p>environment {e(rep['config']['env_id'])} "
            f"(fingerprint {e(rep['env_fingerprint'][:16])}); shipped checkpoint: step {e(rep['shipped'])} "
            f"(best probe train CPCV); holdout: {e(str(rep['holdout'].get('status')))}</p>"
            + (f"<p><strong>{e(refused)}</strong></p>" if refused else "") +
            f"<h2>Train vs. holdout ({e(str(rep['config'].get('probe_size', '?')))} frozen probe "
            f"briefs, greedy)</h2><table><tr>{head}</tr>{body}</table>"
            "<p>train CPCV: the mean R1 of every probe answer, an invalid one at -5 (the "
            "checkpoint rule); holdout score and the book: the valid answers only.</p>"
            f"<h2>Training curves (per step)</h2>{curves}"
            f"<h2>Red-team read-out: top-20 answers by train reward per checkpoint</h2>"
            f"<p>flag counts: {e(counts)}</p><dl>{legend}</dl>"
            f"<h3>Known limits of the reward (hacks not closed in the verifier)</h3><ul>"
            + "".join(f"<li>{e(x)}</li>" for x in rep.get("known_limits", KNOWN_LIMITS))
            + f"</ul>{''.join(red)}")


def format_table(rep: dict[str, Any]) -> str:
    """The seed-shaped table as tab-separated text."""
    lines = ["\t".join((*COLUMNS, "shipped"))]
    for r in rep["table"]:
        lines.append("\t".join([*(_fmt(r[c], "%" if c == "book_return" else "f") for c in COLUMNS),
                                "*" if r["shipped"] else ""]))
    return "\n".join(lines)


def write_report(run_dir: str | Path) -> dict[str, Any]:
    """Write ``RUN/report/index.html`` and ``report.json``; returns the report dict."""
    from gymkit.card import json_safe

    rep = build_report(run_dir)
    out = Path(run_dir) / "report"
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(json_safe(rep), indent=1, sort_keys=True) + "\n",
                                     encoding="utf-8")
    (out / "index.html").write_text(_html(rep), encoding="utf-8")
    return rep
