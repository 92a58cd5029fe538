"""Quality gates of DESIGN §7 on the SHIPPED checkpoint and worlds (thresholds: gymkit.jepa.gates)."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.jepa import gates
from gymkit.jepa.decoder import bootstrap_days
from gymkit.jepa.generate import ALL_WORLDS, make_world
from gymkit.jepa.training import prediction_losses
from gymkit.jepa.worlds import SHIPPED_DIR, file_sha256
from gymkit.stress_ranking import auc_with_bootstrap


def test_checkpoint_is_small_and_matches_the_manifest(shipped, manifest, train_panel) -> None:
    from gymkit.jepa.train import SHIPPED_CHECKPOINT

    assert shipped.model.n_trainable() <= 250_000
    assert shipped.meta["data_fingerprint"] == train_panel.fingerprint == manifest["train_fingerprint"]
    assert manifest["checkpoint"]["sha256"] == file_sha256(SHIPPED_DIR / SHIPPED_CHECKPOINT)


def test_no_collapse_latent_std_floor(latents) -> None:
    fig = gates.collapse_figures(latents)
    assert fig["min_dim_std"] >= gates.LATENT_STD_FLOOR


def test_no_collapse_effective_rank_floor(latents, manifest, portable_figures) -> None:
    """The floor holds in this process's own arithmetic; in portable mode the figures are the
    manifest's to the last bit (any x86-64-v3 machine)."""
    fig = gates.collapse_figures(latents)
    assert fig["effective_rank"] >= gates.EFFECTIVE_RANK_FLOOR
    assert portable_figures["collapse"] == manifest["global_gates"]["collapse"]


def test_predictor_beats_persistence_on_late_train(shipped, data, manifest,
                                                    portable_figures) -> None:
    """Late-train pairs: their next windows lie in the last ``val_days`` train days, which are
    never a training target nor used to select anything (the selection slice is earlier)."""
    pred, persist = prediction_losses(shipped.model, data, data.val_starts)
    assert pred <= gates.PREDICTION_MARGIN * persist
    assert portable_figures["prediction"] == manifest["global_gates"]["prediction"]


def test_unshifted_decode_reproduces_stylised_facts(shipped, data, pool, latents, train_panel,
                                                    manifest, portable_figures) -> None:
    src = bootstrap_days(pool.n_days, np.random.default_rng(manifest["seed"] - 1))
    world = make_world(shipped.model, shipped.decoder, shipped.shifts, data, pool, latents,
                       None, 0.0, src).to_panel()
    result = gates.decode_gate(world, train_panel)
    bad = {k: v for k, v in result.items() if not v["ok"]}
    assert not bad, bad
    assert portable_figures["decode"] == manifest["global_gates"]["decode"]


@pytest.mark.parametrize("spec", ALL_WORLDS, ids=lambda s: s.name)
def test_shift_gate_decides_kept_and_dropped(spec, manifest, portable_figures) -> None:
    """The shift gate on the response recomputed in portable mode (equal to the manifest's to
    the last bit) decides exactly what the manifest kept and dropped; every candidate world,
    the crash regime included, is in the manifest."""
    entry = next(w for w in manifest["worlds"] if w["name"] == spec.name)
    response = portable_figures["shift_response"][spec.name]
    assert response == entry["shift_gate"]["response"]
    result = gates.world_shift_gate(response, spec.channel)
    assert {**result, "response": response} == entry["shift_gate"]
    if entry["kept"]:
        assert result["ok"]
    else:
        assert entry["dropped_because"], "a dropped world must say why"


def test_regime_directions_regenerate(manifest, portable_figures) -> None:
    """The crash regime's direction (signature, spread, cosines) is the manifest's to the bit."""
    assert manifest["regimes"]["crash"]["signature"] == {
        "volatility": 1, "correlation": 1, "trend": -1, "dispersion": -1}
    assert portable_figures["regimes"] == manifest["regimes"]


def test_ranking_gate_on_kept_worlds(manifest, train_panel) -> None:
    from gymkit.data import DEFAULT_SPLIT
    from gymkit.dsl import parse
    from gymkit.jepa.worlds import load_stress_worlds
    from gymkit.stress_ranking import rescore as world_score
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV

    lab = manifest["labelled"]
    fragile = np.array([x["label"] == "fragile" for x in lab])
    static = np.array([x["family"] == "static" for x in lab])
    assert fragile.sum() >= gates.MIN_PER_CLASS and (~fragile).sum() >= gates.MIN_PER_CLASS
    worlds = load_stress_worlds("default", train_panel)
    base = np.array([x["cpcv"] for x in lab])
    drops = []
    for w in worlds:
        ws = np.array([world_score(parse(x["formula"]), w.panel, DEFAULT_SPLIT, TrainCosts(), CPCV(),
                                   252, None) for x in lab])
        d = np.maximum(0.0, base - ws)
        auc, lo, _ = auc_with_bootstrap(d[fragile], d[~fragile])
        assert lo > gates.AUC_LOWER_FLOOR, (w.name, auc, lo)
        assert d[static].mean() >= gates.STATIC_TO_ROBUST_MIN * d[~fragile].mean()
        drops.append(d)
    assert len(drops) == sum(w["kept"] for w in manifest["worlds"]) >= 1


def test_labels_are_reproducible_on_a_sample(manifest, train_panel) -> None:
    """Spot-check 12 labels: base CPCV and the late-train validation Sharpe (never the holdout)."""
    from gymkit.data import DEFAULT_SPLIT
    from gymkit.stress_ranking import VALIDATION_DAYS, _score
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.metrics import _sharpe

    lab = manifest["labelled"]
    for x in [lab[i] for i in np.linspace(0, len(lab) - 1, 12).astype(int)]:
        bt = _score(x["formula"], train_panel, DEFAULT_SPLIT, TrainCosts(), CPCV(), 252, None)
        assert bt.cpcv.score == pytest.approx(x["cpcv"], abs=1e-12)
        assert str(bt.dates[-1]) <= DEFAULT_SPLIT.train_end
        val = _sharpe(np.ascontiguousarray(bt.net[-VALIDATION_DAYS:]))
        assert val == pytest.approx(x["val_sharpe"], abs=1e-12)
