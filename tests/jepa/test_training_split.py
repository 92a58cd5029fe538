"""Training pairs, the selection slice and the late-train validation slice never overlap as
targets; the anchored predictor is a gated residual on persistence."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_targets_of_fit_selection_and_validation_pairs_are_disjoint(data, shipped) -> None:
    c = shipped.model.config
    w, d = c.window, data.n_days
    fit_end = d - c.val_days
    train_end = fit_end - c.select_days
    assert c.select_days > 0 and data.sel_starts.size > 0
    # training targets (next windows) end before the selection slice ...
    assert data.fit_starts.max() + 2 * w <= train_end
    # ... selection targets lie inside it, validation targets inside the last val_days
    assert data.sel_starts.min() + w >= train_end and data.sel_starts.max() + 2 * w <= fit_end
    assert data.val_starts.min() + w >= fit_end and data.val_starts.max() + 2 * w <= d
    # the gate's evaluation set is never a training or selection target
    assert not set(data.val_starts.tolist()) & set(data.fit_starts.tolist())


def test_anchored_predictor_is_persistence_when_pull_and_gate_are_off() -> None:
    from torch.nn import functional as F

    from gymkit.jepa.model import AnchoredPredictor, JEPAConfig

    torch.manual_seed(0)
    c = dataclasses.replace(JEPAConfig(), n_stocks=5)
    p = AnchoredPredictor(c)
    z = torch.randn(3, 5, c.latent)
    with torch.no_grad():
        p.rate.fill_(-1e4)  # ρ = 0
        p.gate.zero_()
        p.anchor.copy_(torch.randn(5, c.latent))
    assert torch.equal(p(z), F.layer_norm(z, (c.latent,)))
    with torch.no_grad():
        p.rate.fill_(1e4)  # ρ = 1: every stock predicted at its anchor
    assert torch.allclose(p(z), p.anchor.expand(3, -1, -1), atol=1e-6)


def test_anchor_is_a_running_mean_of_targets() -> None:
    from gymkit.jepa.model import AnchoredPredictor, JEPAConfig

    c = dataclasses.replace(JEPAConfig(), n_stocks=4, anchor_momentum=0.5)
    p = AnchoredPredictor(c)
    t = torch.ones(2, 4, c.latent)
    p.update_anchor(t)
    p.update_anchor(t)
    assert np.allclose(p.anchor.numpy(), 0.75)
