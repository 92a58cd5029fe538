"""GDPO advantages: the properties DESIGN §6 promises, as properties and worked examples."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.advantages import gdpo_advantages, grpo_advantages, standardise_channels

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FINITE = st.floats(-5, 5, allow_nan=False, allow_infinity=False)


@st.composite
def groups(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = draw(st.integers(2, 16))
    k = draw(st.integers(1, 12))
    x = draw(arrays(np.float64, (g, k), elements=FINITE))
    p = draw(arrays(np.float64, (k,), elements=st.floats(0, 3, allow_nan=False)))
    v = draw(arrays(np.bool_, (g,)))
    return x, p, v


def _quiet(*args: object, **kw: object) -> tuple[np.ndarray, object]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return gdpo_advantages(*args, **kw)  # type: ignore[arg-type]


@SETTINGS
@given(groups(), st.one_of(st.none(), FINITE))
def test_zero_sum_and_invalid_never_positive(group, floor) -> None:
    x, p, v = group
    adv, info = _quiet(x, p, v, floor=floor)
    assert abs(adv.sum()) <= 1e-9 * max(1.0, np.abs(adv).sum())
    assert np.all(adv[~v] <= 0.0)
    if floor is not None:
        assert np.all(adv[x[:, 0] <= floor] <= 0.0)
    assert info.n_valid == int(v.sum())


@SETTINGS
@given(groups(), st.one_of(st.none(), FINITE))
def test_an_invalid_answer_never_outranks_a_valid_one(group, floor) -> None:
    """Order, not only sign: every invalid advantage <= every valid one, and <= every answer the
    floor keeps (up to the float noise of the re-centring, ZERO_TOL)."""
    from gymkit.advantages import ZERO_TOL

    x, p, v = group
    adv, _ = _quiet(x, p, v, floor=floor)
    if v.any() and (~v).any():
        assert adv[~v].max() <= adv[v].min() + ZERO_TOL
    if floor is not None:
        kept = v & (x[:, 0] > floor)
        if kept.any() and (~kept).any():
            assert adv[~kept].max() <= adv[kept].min() + ZERO_TOL


@SETTINGS
@given(groups(), st.one_of(st.none(), FINITE), st.data())
def test_a_group_with_an_eligible_and_a_non_eligible_answer_carries_signal(group, floor, data) -> None:
    """Strict order: every non-eligible answer (invalid, floored, guarded) ends strictly below
    every eligible one, also where the eligible answers have no spread (one of them, or equal):
    there the old bound of 0 tied a lone valid answer with the invalid ones and zeroed the group."""
    x, p, v = group
    guarded = data.draw(arrays(np.bool_, v.shape)) & v
    adv, _ = _quiet(x, p, v, floor=floor, guarded=guarded)
    eligible = v & ~guarded & ((x[:, 0] > floor) if floor is not None else True)
    if eligible.any() and (~eligible).any():
        assert adv[~eligible].max() < adv[eligible].min()


def test_one_valid_answer_among_invalid_ones_gets_the_signal() -> None:
    """The helper's group: a valid answer whose R1 (−1.24) is below a missing tag's −1.0, so its
    GDPO sum is below theirs; it still gets a positive advantage and each invalid one a negative."""
    x = np.array([[-1.24, -0.3]] + [[-1.0, 0.0]] * 7)
    p = np.array([3.0, 1.0])
    v = np.array([True] + [False] * 7)
    adv, info = gdpo_advantages(x, p, v)
    np.testing.assert_array_equal(adv, [21.0] + [-3.0] * 7)  # u = −|p_core| = −3, then zero-sum
    assert info.share_nonzero == 1.0 and not info.warnings
    two, _ = gdpo_advantages(np.vstack([x, x[:1]]), p, np.append(v, True))  # two equal valid ones
    np.testing.assert_allclose(two, [10.5] + [-3.0] * 7 + [10.5], rtol=1e-15)


def test_order_holds_where_the_sign_clamp_alone_failed() -> None:
    """The harsh-market case: valid answers' core channel clipped far below the invalid
    answers' value, so plain GDPO ranks the invalid answer above a valid one; the projection
    keeps every invalid answer at or below every valid one (the old sign-only clamp gave the
    invalid answer -0.47 against a valid -1.9)."""
    x = np.array([[-5.0, 0.0], [-5.0, 1.0], [-1.0, 0.5], [-0.8, 0.0], [-0.8, 0.0]])
    v = np.array([True, True, True, False, False])
    adv, _ = _quiet(x, np.array([3.0, 1.0]), v)
    assert adv[~v].max() <= adv[v].min()
    assert np.all(adv[~v] <= 0.0) and abs(adv.sum()) < 1e-12


@SETTINGS
@given(groups(), st.integers(0, 11), FINITE, st.floats(0.01, 100))
def test_invariant_to_affine_change_of_a_channel(group, col, shift, scale) -> None:
    x, p, v = group
    col %= x.shape[1]
    y = x.copy()
    y[:, col] = y[:, col] * scale + shift
    a, _ = _quiet(x, p, v)
    b, _ = _quiet(y, p, v)
    # Standardisation removes the affine change, up to float rounding when the column's
    # spread is tiny relative to its level.
    if x[:, col].std() > 1e-6:
        np.testing.assert_allclose(a, b, atol=1e-8, rtol=1e-8)


@SETTINGS
@given(groups(), arrays(np.float64, (12,), elements=st.floats(0, 3, allow_nan=False)))
def test_priority_linearity_when_all_valid(group, p2) -> None:
    x, p1, _ = group
    p2 = p2[: x.shape[1]]
    ok = np.ones(x.shape[0], bool)
    a1, _ = _quiet(x, p1, ok)
    a2, _ = _quiet(x, p2, ok)
    a12, _ = _quiet(x, p1 + p2, ok)
    np.testing.assert_allclose(a12, a1 + a2, atol=1e-9)


def test_constant_channel_contributes_nothing() -> None:
    x = np.array([[1.0, 7.0], [2.0, 7.0], [3.0, 7.0]])
    a, info = gdpo_advantages(x, np.array([1.0, 5.0]), np.ones(3, bool))
    b, _ = gdpo_advantages(x[:, :1], np.array([1.0]), np.ones(3, bool))
    np.testing.assert_allclose(a, b)
    assert info.channel_std[1] == 0.0


def test_worked_example_invalid_answer_is_clamped_and_group_recentred() -> None:
    # One channel 0, 1, 2, 3 -> z = (-3, -1, 1, 3)/sqrt(5); the best answer is invalid.  Its
    # advantage is clamped to the lowest centred valid advantage (u = z[0] - mean(z[:3]) < 0,
    # not merely to 0, which would rank it above the worst valid answer), and the valid
    # answers are shifted up by -u/3 so the group stays zero-sum.
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    adv, info = gdpo_advantages(x, np.array([2.0]), np.array([True, True, True, False]))
    z = np.array([-3, -1, 1, 3]) / np.sqrt(5) * 2
    centred = z[:3] - z[:3].mean()
    u = centred.min()
    np.testing.assert_allclose(adv, [*(centred - u / 3), u])
    assert adv[3] < adv[:3].min() and info.n_eligible == 3


def test_floor_trap_zeroes_the_group_and_warns() -> None:
    x = np.array([[-1.0, 0.1], [-0.5, 0.3], [-0.2, 0.0]])  # every core score below 0
    with pytest.warns(RuntimeWarning, match="non-zero"):
        adv, info = gdpo_advantages(x, np.array([3.0, 1.0]), np.ones(3, bool), floor=0.0)
    assert np.all(adv == 0.0) and info.share_nonzero == 0.0 and info.warnings
    adv2, info2 = gdpo_advantages(x, np.array([3.0, 1.0]), np.ones(3, bool))
    assert info2.share_nonzero == 1.0 and not info2.warnings
    assert adv2[2] > adv2[1] > adv2[0]


def test_scalar_reward_and_grpo_comparison() -> None:
    x = np.array([[1.0, 0.0], [0.0, 10.0]])
    _, info = gdpo_advantages(x, np.array([3.0, 1.0]), np.ones(2, bool))
    np.testing.assert_allclose(info.scalar_reward, [3.0, 10.0])
    np.testing.assert_allclose(info.grpo_advantage, [-1.0, 1.0])
    np.testing.assert_allclose(grpo_advantages(np.array([2.0, 2.0])), [0.0, 0.0])


@pytest.mark.parametrize(
    ("x", "p", "v", "msg"),
    [
        (np.zeros(3), np.ones(1), np.ones(3, bool), "2-D"),
        (np.zeros((3, 2)), np.ones(3), np.ones(3, bool), "priorities must have shape"),
        (np.zeros((3, 2)), np.ones(2), np.ones(2, bool), "valid must have shape"),
        (np.array([[0.0, np.nan], [1.0, 1.0]]), np.ones(2), np.ones(2, bool), "answer 0, channel 1"),
    ],
)
def test_bad_input_names_what_is_wrong(x, p, v, msg) -> None:
    with pytest.raises(ValueError, match=msg):
        gdpo_advantages(x, p, v)


@pytest.mark.parametrize("value", [0.1, -0.7, 1.0 / 3.0, 0.58, 2.0**-30 + 0.2])
@pytest.mark.parametrize("g", [3, 7, 12, 13])
def test_an_exactly_constant_channel_gives_exactly_zero(value, g):
    """The mean of G equal floats can miss them by an ulp; that must not become a ±1 signal."""
    x = np.full((g, 2), value)
    z, std = standardise_channels(x)
    assert np.all(z == 0.0) and np.all(std == 0.0)
    with pytest.warns(RuntimeWarning):
        adv, _ = gdpo_advantages(x, np.array([1.0, 0.5]), np.ones(g, dtype=bool))
    assert np.all(adv == 0.0)
    assert np.all(grpo_advantages(x[:, 0]) == 0.0)


@SETTINGS
@given(groups())
def test_channels_near_float_max_give_the_same_advantages(group) -> None:
    """Channels times 2^1000 (values up to ~5e301, as an HTTP client may send) give the very
    advantages of the channels as they are: standardising is scale-free and power-of-two
    scaling is exact; the sums used to overflow to NaN (null on the wire)."""
    x, p, v = group
    adv, _ = _quiet(x, p, v)
    big, info_big = _quiet(np.ldexp(x, 1000), p, v)
    np.testing.assert_array_equal(big, adv)
    assert np.all(np.isfinite(info_big.channel_std)) and np.all(np.isfinite(info_big.grpo_advantage))
