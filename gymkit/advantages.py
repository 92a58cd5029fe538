"""Group advantages for multi-channel rewards: GDPO with a validity projection (DESIGN §6).

GDPO (group reward-decoupled normalisation): each reward channel is standardised inside the
group of G answers to one prompt, multiplied by its priority, and the results summed.  A channel
with a wide numeric range therefore cannot drown the others, and a channel that is constant
within the group contributes nothing.

Validity projection: an invalid answer must never receive a positive advantage, and the group
must stay zero-sum.  After the GDPO sum ``A``:

1. every answer that is not *eligible* (invalid; *guarded* — the motif guard R10 fired, which
   caps its scalar reward at 0, so GDPO gives it no positive advantage either; or — when
   ``floor`` is set — whose core score is ``<= floor``) is clamped to ``min(A_i, 0, u)``, where ``u <= 0`` is the lowest eligible
   advantage after centring the eligible answers on their mean; an invalid answer is further
   clamped below every floored or guarded valid one.  When the eligible answers have no
   spread (one eligible answer, or all equal up to :data:`ZERO_TOL`) ``u`` would be (about)
   0, and a group of one valid answer among invalid ones whose GDPO sums are >= 0 (a missing
   tag's R1 of −1.0 beats a valid answer's −1.2) would end all zero: no signal that valid
   beats invalid.  There ``u`` is ``−|priority of the core channel|`` instead (one standard
   deviation of the core channel, 1 if that priority is 0), so every non-eligible answer ends
   strictly below the eligible ones;
2. the eligible answers are shifted by one common constant ``s >= 0`` so that ``sum(A) == 0``.
   Since ``s >= 0``, every invalid answer ends at or below every valid answer (order), at or
   below 0 (sign), and where no clamp binds the result is the plain clamp-and-recentre;
3. when no answer is eligible the group carries no signal and every advantage is 0 (the only
   zero-sum vector with all entries ``<= 0``).

The floor is off by default: Part 3 of the seed documents how a floor at 0 left 96% of
advantages at zero in a harder environment (the "advantage floor trap").  The diagnostics
report the share of non-zero advantages and warn when it falls below one half.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

#: A share of non-zero advantages below this triggers the floor-trap warning.
LOW_SIGNAL_SHARE = 0.5
#: Channel columns whose largest |value| is beyond this, or below its inverse, are standardised
#: on a power-of-two scale.
_BIG = 2.0 ** 500
#: |advantage| at or below this counts as zero (float noise of the re-centring).
ZERO_TOL = 1e-12


@dataclass(frozen=True)
class AdvantageInfo:
    """Diagnostics of one group's advantages."""

    scalar_reward: np.ndarray  # (G,) the banded scalar reward (verifiers.channels "Scalar reward")
    grpo_advantage: np.ndarray  # (G,) plain GRPO on the scalar reward, for comparison
    channel_std: np.ndarray  # (K,) population std of each raw channel in the group
    n_valid: int
    n_eligible: int
    share_nonzero: float
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        """JSON-safe dictionary of the diagnostics."""
        return {
            "scalar_reward": [float(x) for x in self.scalar_reward],
            "grpo_advantage": [float(x) for x in self.grpo_advantage],
            "channel_std": [float(x) for x in self.channel_std],
            "n_valid": self.n_valid,
            "n_eligible": self.n_eligible,
            "share_nonzero": self.share_nonzero,
            "warnings": list(self.warnings),
        }


def standardise_channels(channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (z, std): each column of (G, K) ``channels`` standardised with population std.

    A column that is constant within the group (every entry equal, tested exactly: the mean
    of G equal floats can differ from them by an ulp, which would turn rounding noise into a
    full ±1 signal) has std 0 and becomes all zeros.
    """
    x = np.asarray(channels, dtype=np.float64)
    k = scale_exponents(x, axis=0)
    if k is not None:  # e.g. ±1e308 from an HTTP client: (x − mean) / std is scale-free, so such
        x = np.ldexp(x, -k[None, :])  # columns are taken times 2^-k (exact), not overflowed to NaN
    mean = x.mean(axis=0)
    std = np.where(x.max(axis=0) == x.min(axis=0), 0.0, x.std(axis=0)) if x.size else x.std(axis=0)
    safe = np.where(std > 0, std, 1.0)
    z = np.where(std > 0, (x - mean) / safe, 0.0)
    if k is not None:
        with np.errstate(over="ignore"):
            std = np.minimum(np.ldexp(std, k), np.finfo(np.float64).max)
    return z, std


def scale_exponents(x: np.ndarray, axis: int | None) -> np.ndarray | None:
    """None when every slice (along ``axis``) has its largest |x| in [2^-500, 2^500] or 0: the
    values are used as given, bits unchanged.  Else the power-of-two exponents that bring the
    largest |x| of each slice outside that range into [0.5, 1) (0 for the other slices), so
    squares neither overflow (±1e308) nor underflow (differences of 1e-175) to a wrong 0."""
    if not x.size:
        return None
    top = np.abs(x).max(axis=axis)
    odd = (top > _BIG) | ((top > 0) & (top < 1.0 / _BIG))
    if not np.any(odd):
        return None
    return np.where(odd, np.frexp(top)[1], 0)


def banded_rewards(sums: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The scalar reward of each answer from its Σ priority·channel and validity: the valid
    band (``soft_floor``) above the invalid one (error codes unknown here: the text-failure
    value).  ``Environment.group_advantages`` uses the cards' own rewards instead."""
    from gymkit.verifiers.channels import invalid_reward, soft_floor

    bad = invalid_reward(None)
    return np.array([soft_floor(float(s)) if ok else bad for s, ok in zip(sums, valid, strict=True)],
                    dtype=np.float64)


def grpo_advantages(rewards: np.ndarray) -> np.ndarray:
    """Plain GRPO advantages of a scalar reward: (r − mean) / std (population; 0 if constant)."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.size == 0 or r.max() == r.min():  # exactly constant (see standardise_channels)
        return np.zeros_like(r)
    k = scale_exponents(r, axis=None)
    if k is not None:  # scale-free, as in standardise_channels
        r = np.ldexp(r, -k)
    return (r - r.mean()) / r.std()


def _check_inputs(channels: np.ndarray, priorities: np.ndarray, valid: np.ndarray) -> None:
    if channels.ndim != 2:
        raise ValueError(f"channel matrix must be 2-D (G answers, K channels), got shape {channels.shape}")
    g, k = channels.shape
    if g < 1 or k < 1:
        raise ValueError(f"channel matrix must have at least one answer and one channel, got {channels.shape}")
    if priorities.shape != (k,):
        raise ValueError(f"priorities must have shape ({k},) to match the channels, got {priorities.shape}")
    if valid.shape != (g,):
        raise ValueError(f"valid must have shape ({g},) to match the answers, got {valid.shape}")
    if not np.all(np.isfinite(channels)):
        i, j = np.argwhere(~np.isfinite(channels))[0]
        raise ValueError(f"channel matrix holds a non-finite value at answer {i}, channel {j}")
    if not np.all(np.isfinite(priorities)):
        raise ValueError("priorities must be finite")


def _project(adv: np.ndarray, eligible: np.ndarray, valid: np.ndarray, gap: float) -> np.ndarray:
    """Steps 1-2 of the validity projection (module doc) for a group with an eligible answer;
    ``gap`` > 0: the bound below the eligible answers when they have no spread of their own."""
    lowest = min(float((adv[eligible] - adv[eligible].mean()).min()), 0.0)
    if lowest >= -ZERO_TOL:  # one eligible answer, or all equal up to float noise: a bound of
        lowest = min(lowest, -gap)  # (about) 0 would tie them with the rest
    out = adv.copy()
    floored = ~eligible & valid
    out[floored] = np.minimum(adv[floored], lowest)
    below = min(lowest, float(out[floored].min())) if floored.any() else lowest
    out[~valid] = np.minimum(adv[~valid], below)
    # One common shift of the eligible answers (>= 0 since every clamped value is <= 0).
    return out - np.where(eligible, out.sum() / int(eligible.sum()), 0.0)


def gdpo_advantages(
    channel_matrix: np.ndarray,
    priorities: np.ndarray,
    valid: np.ndarray,
    floor: float | None = None,
    core: int = 0,
    guarded: np.ndarray | None = None,
) -> tuple[np.ndarray, AdvantageInfo]:
    """Return (advantages (G,), diagnostics) for one group; see the module docstring.

    ``channel_matrix`` is (G answers, K channels) of raw channel values, ``priorities`` (K,),
    ``valid`` (G,) booleans.  ``floor``: when not None, answers whose core score (column
    ``core``, R1 cpcv by default) is ``<= floor`` get no positive advantage; ``guarded``
    (G,) booleans: answers the motif guard capped (``ScoreCard.motif_capped``) get none
    either.  Guarantees: ``sum(adv) == 0`` up to float rounding, ``adv[i] <= 0`` for every
    invalid, floored or guarded answer, every invalid answer's advantage ``<=`` every valid
    answer's, and, where an answer is eligible, every non-eligible answer's ``<`` every eligible
    answer's (a group with an eligible and a non-eligible answer always carries signal).  Raises ``ValueError`` naming the offending shape or cell on bad input.
    """
    x = np.asarray(channel_matrix, dtype=np.float64)
    p = np.asarray(priorities, dtype=np.float64)
    v = np.asarray(valid, dtype=bool)
    _check_inputs(x, p, v)
    if not 0 <= core < x.shape[1]:
        raise ValueError(f"core column {core} is outside the {x.shape[1]} channels")

    z, std = standardise_channels(x)
    adv = z @ p
    eligible = v.copy()
    if guarded is not None:
        g = np.asarray(guarded, dtype=bool)
        if g.shape != v.shape:
            raise ValueError(f"guarded must have shape {v.shape} to match the answers, got {g.shape}")
        eligible &= ~g
    if floor is not None:
        eligible &= x[:, core] > floor
    n_eligible = int(eligible.sum())
    if n_eligible == 0:
        adv = np.zeros_like(adv)
    else:
        gap = float(abs(p[core])) or 1.0
        adv = _project(adv, eligible, v, gap)

    share = float(np.mean(np.abs(adv) > ZERO_TOL))
    notes: list[str] = []
    if share < LOW_SIGNAL_SHARE:
        notes.append(
            f"only {share:.0%} of advantages are non-zero (valid {int(v.sum())}/{len(v)}, "
            f"eligible {n_eligible}); check the advantage floor and validity rules"
        )
        warnings.warn(notes[-1], RuntimeWarning, stacklevel=2)
    scalar = banded_rewards(x @ p, v)
    info = AdvantageInfo(
        scalar_reward=scalar,
        grpo_advantage=grpo_advantages(scalar),
        channel_std=std,
        n_valid=int(v.sum()),
        n_eligible=n_eligible,
        share_nonzero=share,
        warnings=tuple(notes),
    )
    return adv, info
