"""The loss pieces of the recipe: CISPO's cap, REPO-R's rescaling, the entropy thermostat."""

from __future__ import annotations

import math

import torch

from gymkit.train.rl import Thermostat, cispo_kl_loss, repo_r


def test_cispo_weight_is_capped_and_keeps_the_token_in_the_gradient() -> None:
    old = torch.log(torch.tensor([[0.1, 0.1]]))
    for ratio, weight in ((2.0, 1.2), (0.5, 0.5)):
        logp = (old + math.log(ratio)).clone().requires_grad_(True)
        loss, _ = cispo_kl_loss(logp, old, logp.detach(), torch.ones(1, 2), torch.ones(1, 2),
                                cap=1.2, beta=0.0)
        loss.backward()
        # d loss / d logp = -sg(min(r, cap)) * A: never zero, never above the cap
        assert torch.allclose(logp.grad, torch.full((1, 2), -weight))


def test_kl_is_zero_at_the_reference_and_masked_tokens_do_not_count() -> None:
    logp = torch.log(torch.tensor([[0.2, 0.3]]))
    _, kl = cispo_kl_loss(logp, logp, logp, torch.zeros(1, 2), torch.ones(1, 2), 1.2, 1.0)
    assert float(kl) == 0.0
    loss, kl = cispo_kl_loss(logp, logp, logp - 1.0, torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]),
                             1.2, 1.0)
    assert float(kl) > 0 and float(loss) == float(kl)


def test_repo_r_rescales_by_rarity_and_never_flips_a_sign() -> None:
    logp = torch.log(torch.tensor([[0.001, 0.9]]))
    pos = repo_r(torch.tensor([[1.0]]), logp, 0.05)
    neg = repo_r(torch.tensor([[-1.0]]), logp, 0.05)
    assert math.isclose(float(pos[0, 0]), 1 - 0.05 * math.log(0.001), rel_tol=1e-5)  # x1.35
    assert math.isclose(float(neg[0, 0]), -(1 + 0.05 * math.log(0.001)), rel_tol=1e-5)  # x0.65
    huge = repo_r(torch.tensor([[-1.0]]), torch.tensor([[-100.0]]), 0.05)
    assert float(huge[0, 0]) == 0.0  # multiplier floored at 0: an invalid answer stays <= 0


def test_thermostat_targets_the_first_window_then_doubles_and_halves() -> None:
    t = Thermostat(1e-3, 0.05, window=2)
    assert t.update(2.0) == 1e-3 and t.update(2.0) == 1e-3 and t.target == 2.0
    assert t.update(1.0) == 2e-3 and t.update(1.0) == 4e-3
    for _ in range(10):
        t.update(1.0)
    assert t.zeta == 0.05
    assert t.update(3.0) == 0.025


def test_checkpoint_rule_is_best_probe_train_cpcv_and_never_an_all_invalid_one() -> None:
    from gymkit.train.protocol import best_checkpoint

    rows = [{"checkpoint": "0", "n_valid": 40, "train_cpcv": -1.5},
            {"checkpoint": "20", "n_valid": 0, "train_cpcv": -1.0},   # nothing valid: placeholder
            {"checkpoint": "40", "n_valid": 38, "train_cpcv": -1.2},
            {"checkpoint": "60", "n_valid": 45, "train_cpcv": -1.2}]  # tie: the earlier ships
    assert best_checkpoint(rows) == "40"
    rows.append({"checkpoint": "80", "n_valid": 1, "train_cpcv": 0.3})
    assert best_checkpoint(rows) == "80"
