"""Holdout isolation and the frozen holdout.

- Train-mode cards are byte-identical (fingerprints aside) when every holdout row is garbage.
- The evaluator and the oracle receive panels that physically lack holdout rows: a spy on
  ``evaluate``'s and ``backtest``'s panel argument, while building an environment and scoring.
- The holdout rows are hashed and unchanged by an audit.

Broken variant: ``Split.train`` patched to hand train-mode code the whole panel (a test-only
leaky configuration) — both checks fail, and the spy sees the holdout sessions.
"""

from __future__ import annotations

import numpy as np

import gymkit.scoring as scoring
from gymkit.audit.holdout import check_frozen_holdout, check_holdout_isolation
from gymkit.audit.target import AuditTarget
from gymkit.data.splits import Split


def test_holdout_garbage_leaves_cards_identical(audit) -> None:
    res = audit["holdout_isolation"]
    assert res.passed, res.detail
    assert res.figure.startswith("14/14 cards byte-identical with 252 holdout rows")


def test_holdout_is_frozen_and_never_handed_to_a_train_path(audit) -> None:
    res = audit["frozen_holdout"]
    assert res.passed, res.detail
    assert " 0 of " in res.figure


def test_evaluator_and_oracle_receive_panels_without_holdout_rows(monkeypatch, target) -> None:
    env = target.env
    seen = []
    real_eval, real_bt = scoring.evaluate, scoring.backtest

    def spy_eval(expr, panel, **kw):
        seen.append(("evaluate", panel))
        return real_eval(expr, panel, **kw)

    def spy_bt(values, panel, *a, **kw):
        seen.append(("backtest", panel))
        return real_bt(values, panel, *a, **kw)

    monkeypatch.setattr(scoring, "evaluate", spy_eval)
    monkeypatch.setattr(scoring, "backtest", spy_bt)
    env.score_group(["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>rank(volume)</alpha>"])
    end = np.datetime64(target.config.split["train_end"])
    assert {n for n, _ in seen} == {"evaluate", "backtest"}
    for _, panel in seen:
        assert panel.dates[-1] <= end
        assert not target.config.split_obj.holdout_mask(panel.dates).any()
        assert panel.T == env.setup.train.T


def test_a_leaky_split_fails_both_checks(monkeypatch, cheap_target: AuditTarget) -> None:
    monkeypatch.setattr(Split, "train", lambda self, panel: panel)
    leaky = AuditTarget(cheap_target.config, cheap_target.market, cheap_target.spec)
    frozen = check_frozen_holdout(leaky)
    assert not frozen.passed
    assert any("received a panel of 3556 sessions ending 2026-08-21" in d for d in frozen.detail)
    isolation = check_holdout_isolation(leaky)
    assert not isolation.passed and "byte-identical" in isolation.figure
    assert not isolation.figure.startswith("14/14")


def test_a_changed_holdout_is_caught(cheap_target: AuditTarget) -> None:
    """Broken variant: the holdout digest recorded at the start no longer matches."""
    cheap_target.holdout_digest = "0" * 64
    res = check_frozen_holdout(cheap_target)
    assert not res.passed and any("CHANGED" in d for d in res.detail)


def test_every_spied_entry_point_exists_and_a_missing_one_is_an_error(monkeypatch) -> None:
    """The train-path spy wraps every row of SPIED (none silently skipped), and each row is hit
    when an environment is built and scores one answer; a renamed row is a loud error."""
    import gymkit
    from gymkit.audit import holdout as audit_holdout

    with audit_holdout.TrainPathSpy() as spy:
        assert len(spy._saved) == len(audit_holdout.SPIED)
        gymkit.make("us46-default").score("<alpha>rank(-ts_sum(returns, 5))</alpha>")
    hit = {name for name, _, _ in spy.log}
    assert "gymkit.env.window_panel" in hit and "gymkit.scoring.evaluate" in hit, hit
    monkeypatch.setattr(audit_holdout, "SPIED", (*audit_holdout.SPIED, ("gymkit.env", "gone", 0)))
    try:
        with audit_holdout.TrainPathSpy():
            raise AssertionError("a missing entry point was skipped")
    except AttributeError as e:
        assert "gymkit.env.gone no longer exists" in str(e)
    import gymkit.env as env_mod
    assert not hasattr(env_mod.window_panel, "__wrapped__")   # originals restored after the error
