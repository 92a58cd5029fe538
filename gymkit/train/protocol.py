"""The seed's protocol: a frozen 50-brief probe, the checkpoint rule, the holdout once.

* :func:`probe_answers` — greedy answers of a checkpoint to the frozen probe briefs
  (:func:`gymkit.briefs.probe_briefs`, holdout families: briefs training never saw).
* :func:`train_row` — those answers scored on the **train window** (the selector): mean R1
  of all the answers, an invalid one at the R1 floor (``train_cpcv``, as in
  :mod:`gymkit.probe`; the valid answers' mean is ``train_cpcv_valid``), valid count,
  distinct formula families, and per
  answer the figures the red-team read-out needs (reward, IC, turnover, archive correlation,
  the train P&L kept in memory for pairwise correlations).
* :func:`best_checkpoint` — the highest probe ``train_cpcv`` (earliest on ties).
* :func:`holdout_table` — at the end, once: one claim in the holdout ledger
  (:func:`gymkit.holdout.claim_holdout`) over the valid formulas of every checkpoint, then
  each checkpoint's holdout score (:func:`gymkit.probe.holdout_score`), the equal-weight book's
  return, Sharpe and beta (:func:`gymkit.book.book_stats`).  A refused look leaves the
  holdout columns empty and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["best_checkpoint", "holdout_table", "pnl_correlations", "probe_answers",
           "probe_set", "train_row"]


def probe_set() -> list[Any]:
    """The frozen probe: 50 holdout-family briefs of the default brief set."""
    from gymkit.briefs import generate_briefs, probe_briefs

    return probe_briefs(generate_briefs())


def probe_answers(model: Any, tok: Any, briefs: Sequence[Any], checkpoint: str, max_new: int
                  ) -> list[dict[str, str]]:
    """Greedy answer rows ``{checkpoint, brief_id, completion}``, one per brief."""
    from .policy import sample

    rows = []
    for b in briefs:
        ids = sample(model, tok, tok.encode_brief(b.text), 1, max_new=max_new, temperature=1.0,
                     generator=None, greedy=True)[0]
        rows.append({"checkpoint": checkpoint, "brief_id": b.brief_id, "completion": tok.decode(ids)})
    return rows


def train_row(env: Any, rows: Sequence[dict[str, str]], briefs: Sequence[Any],
              seed_archive: Any = None, pool: Any = None
              ) -> tuple[dict[str, Any], list[np.ndarray | None]]:
    """(row, pnls): the train-window probe figures of one checkpoint (module doc).

    ``archive_corr`` is the card's novelty neighbour in the run's archive (the seed entries plus
    the run's own commits); with ``seed_archive`` (the archive as the run started, a
    :class:`~gymkit.verifiers.archive.NoveltyArchive`) each valid answer also gets
    ``seed_archive_corr`` / ``seed_archive_nearest``: its max |P&L corr| with the seed entries
    alone, which the read-out's ``archive_clone`` flag uses (a run's answers resemble its own
    earlier commits by construction).  ``pool``: an :class:`~gymkit.answer_pool.AnswerStatePool`
    computing the answers' archive-free layers (the same figures)."""
    from gymkit.probe import family_of, selector_value

    text = {b.brief_id: b.text for b in briefs}
    answers, pnls, cards = [], [], []
    pre = (None if pool is None else pool.states([[r["completion"]] for r in rows])) or [None] * len(rows)
    for r, states in zip(rows, pre, strict=True):
        c = env.score_group([r["completion"]], brief=text.get(r["brief_id"]), states=states)[0]
        cards.append(c)
        nov = c.metrics.get("novelty") or {}
        answers.append({
            "brief_id": r["brief_id"], "completion": r["completion"], "valid": c.valid,
            "error": None if c.error is None else c.error.code, "formula": c.formula,
            "canonical": c.canonical, "family": family_of(c.canonical) if c.canonical else None,
            "reward": c.reward, "train_cpcv": c.channels.get("cpcv"),
            "ic": c.metrics.get("ic"), "turnover": c.metrics.get("turnover"),
            "archive_corr": nov.get("max_abs_corr"), "archive_nearest": nov.get("nearest"),
            "factor_r2": (c.metrics.get("factors") or {}).get("r2") if c.valid else None})
        pnl = None if not c.valid or c.pnl is None else np.asarray(c.pnl, dtype=np.float64)
        if seed_archive is not None:
            near = seed_archive.nearest(pnl) if pnl is not None and np.std(pnl) > 0 else None
            answers[-1]["seed_archive_corr"] = None if near is None else abs(near.corr)
            answers[-1]["seed_archive_nearest"] = None if near is None else near.form
        pnls.append(pnl)
    valid = [a for a in answers if a["valid"]]
    selector = [selector_value(c, env.setup.params.cpcv_clip) for c in cards]
    row = {"checkpoint": rows[0]["checkpoint"] if rows else "", "n": len(answers),
           "n_valid": len(valid), "families": len({a["family"] for a in valid}),
           # the selector: every answer's R1, an invalid one at the R1 floor (probe.selector_value)
           "train_cpcv": float(np.mean(selector)) if answers else -1.0,
           "train_cpcv_valid": float(np.mean([a["train_cpcv"] for a in valid])) if valid else None,
           "mean_reward": float(np.mean([a["reward"] for a in answers])) if answers else 0.0,
           "answers": answers}
    return row, pnls


def pnl_correlations(pnls: Sequence[np.ndarray | None], members: Sequence[int]) -> list[float | None]:
    """For each index in ``members``: max |corr| of its train P&L with another member's."""
    out: list[float | None] = []
    for i in members:
        best = None
        for j in members:
            a, b = pnls[i], pnls[j]
            if i == j or a is None or b is None or np.std(a) == 0 or np.std(b) == 0:
                continue
            c = abs(float(np.corrcoef(a, b)[0, 1]))
            best = c if best is None else max(best, c)
        out.append(best)
    return out


def best_checkpoint(rows: Sequence[dict[str, Any]]) -> str:
    """The checkpoint with the highest probe train CPCV (earliest on ties).

    A checkpoint with no valid probe answer is never shipped while another has one (every
    answer of it at the R1 floor ties a checkpoint whose valid answers all sit there too).
    """
    best = max(range(len(rows)), key=lambda i: (rows[i]["n_valid"] > 0, rows[i]["train_cpcv"], -i))
    return rows[best]["checkpoint"]


def holdout_table(env: Any, rows: list[dict[str, Any]], *, ledger: Any = None, force: bool = False,
                  command: str = "gymkit train rl") -> dict[str, Any]:
    """Score every checkpoint's valid probe answers on the holdout, after one ledger claim.

    Fills ``holdout_score``, ``holdout_positive``, ``book_return``, ``book_sharpe``,
    ``book_beta`` in each row (and ``holdout_score`` per answer); returns the look.
    """
    from gymkit.book import book_stats
    from gymkit.holdout import HoldoutRefused, claim_holdout
    from gymkit.probe import holdout_backtest, holdout_score
    from gymkit.verifiers.portfolio import equal_weight_book

    forms = [a["canonical"] for r in rows for a in r["answers"] if a["valid"]]
    if not forms:
        return {"status": "no valid answer: no holdout"}
    try:
        look = claim_holdout(env, forms, command=command, force=force, ledger=ledger)
    except HoldoutRefused as e:
        return {"status": f"refused: {e}"}
    cache: dict[str, Any] = {}
    for r in rows:
        scores, nets, market = [], [], None
        for a in r["answers"]:
            if not a["valid"]:
                continue
            if a["canonical"] not in cache:
                cache[a["canonical"]] = holdout_backtest(env, a["formula"])
            bt = cache[a["canonical"]]
            a["holdout_score"] = holdout_score(bt)
            scores.append(a["holdout_score"])
            nets.append(bt.net)
            market = bt.market
        if scores:
            pnl = np.stack(nets, axis=1)
            st = book_stats(equal_weight_book(pnl), np.asarray(market), pnl)
            r.update(holdout_score=float(np.mean(scores)), holdout_positive=int(sum(s > 0 for s in scores)),
                     book_return=st["return"], book_sharpe=st["sharpe"], book_beta=st["beta"])
    return {"status": "scored", "look": look.number, "forced": look.forced}
