"""Non-triviality (playbook §7.2): no naive answer earns a positive reward.

Scored alone: empty answers, whitespace, an empty tag, a refusal, reasoning without a tag,
two tags, constants, ``x - x``, a delayed constant, a data-availability mask, a warm-up
indicator, group membership, pure noise and the same-close look-ahead.

"A formula that reads only ticker order or the calendar" cannot be written: the DSL's leaves
are market fields and numeric literals; a literal is the same for every stock and every day,
and no operator exposes a stock's index or a date.  A formula without a field is therefore
constant across stocks — its book is empty (``degenerate_book``).  The closest expressible
things are tested instead: ``delay(1, 5)`` and ``rank(ts_max(close, 252) > 0)`` (they vary
only with the calendar position of the data's warm-up), ``rank(close == close)`` (only with
which stocks have data), ``rank(group_neutralize(1, sector))`` (only with group membership).
Pure noise: ``power(-1, volume)`` is the parity of the share volume, unrelated to returns;
smoothed over 20 and 120 days it becomes a slow random book whose CPCV can come out positive
by luck — the reward must still not be positive (the motif guard caps it).

Broken variant: without the layer-1 empty-book gate (and with R6 switched off by
configuration), a two-motif ``x - x`` (a flat P&L, "uncorrelated" with the archive) collects
novelty reward — the inaction exploit — and the check fails.
"""

from __future__ import annotations

from gymkit.audit.checklist import check_non_triviality
from gymkit.audit.formulas import NAIVE_BASELINES


def test_no_naive_baseline_earns_a_positive_reward(audit, target) -> None:
    res = audit["non_triviality"]
    assert res.passed, res.detail
    env = target.env
    for label, answer in NAIVE_BASELINES:
        card = env.score(answer)
        assert card.reward <= 0.0, (label, card.reward)
        if "noise" not in label and "look-ahead" not in label:
            assert not card.valid, label


def test_without_the_empty_book_gate_inaction_pays(monkeypatch, cheap_target) -> None:
    """Defence in depth, then a broken variant.  With no empty-book gate and no R6
    (min_turnover), a flat book still earns nothing: the novelty look-up counts a flat P&L
    as a perfect duplicate.  Broken variant: also treat a flat P&L as uncorrelated with the
    archive (the old rule), and R8/R9 pay a two-motif ``x - x`` (which the motif guard does
    not cap) a positive reward, which the non-triviality check must catch."""
    import gymkit.scoring as scoring_module
    from gymkit.audit.target import AuditTarget
    from gymkit.scoring import Novelty

    monkeypatch.setattr(scoring_module, "gate_book", lambda st, setup: None)
    cfg = cheap_target.config
    no_gate = AuditTarget(cfg.replace(channels=tuple(c for c in cfg.channels if c != "min_turnover")),
                          cheap_target.market, cheap_target.spec)
    answer = dict(NAIVE_BASELINES)["x - x, two motifs"]
    card = no_gate.env.score(answer)
    assert card.valid and card.reward <= 0.0

    monkeypatch.setattr(scoring_module, "novelty_of",  # what env's novelties_of calls per answer
                        lambda st, archive, dup, hit=None: Novelty(group_duplicates=dup))
    broken = AuditTarget(no_gate.config, cheap_target.market, cheap_target.spec)
    card = broken.env.score(answer)
    assert card.valid and card.reward > 0
    res = check_non_triviality(broken)
    assert not res.passed
    assert any(d.startswith("x - x, two motifs: reward") for d in res.detail), res.detail
