"""The reward-channel registry (DESIGN §5): one table, R1–R13, and a pure function per channel.

Each row of :data:`CHANNELS` names a channel (id, name), its default GDPO priority, its raw
value range, whether it needs the whole group, the facts it reads, a pure function of
those facts and the thresholds (:class:`ChannelParams`), and its explanation ``why``: a
function of (card, thresholds) giving the one-line reason the report and ``gymkit score``
show (built from the card's own numbers, so the sentence and the value cannot drift apart).  Environments choose which channels
are active, their priorities and their thresholds by configuration; nothing here holds state.

Inputs.  Every per-answer function reads one :class:`AnswerFacts` (what layers 1 and 2
established about one answer, plus its novelty look-up); the one group channel (R2) reads the
facts of the whole group.  Constants (defaults of :class:`ChannelParams`, DESIGN §5 where it
gives them, decided here where it is silent — each has a worked example in
``tests/gym/test_channels.py``):

====  =================  =====  ==========================================================
id    name               prio   raw value (valid answer unless stated)
====  =================  =====  ==========================================================
R1    cpcv               3.0    CPCV score mean(SR) − 0.5·std(SR) of the 15 test Sharpes of
                                net train returns, clipped to [−5, 5].  Invalid answers:
                                −1.0 for a tag failure (missing_tag, empty_tag,
                                multiple_tags, unclosed_tag); −0.8 for any other DSL error
                                (syntax, names, limits, unavailable field/group) and for a
                                book failure (turnover floor, empty/constant book, an
                                evaluation that failed).
R2    pbo                1.0    group, per CPCV split: over the VALID answers, rank the 15
                                in-sample Sharpes and the 15 test Sharpes of split s;
                                penalty_s = −0.48·max(0, rank_oos − rank_is)/(G−1); R2 is the
                                mean over the 15 splits, in [−0.48, 0].  Invalid answers and
                                single answers get 0.  (Ranking whole-window means instead
                                almost never fires: a formula has nothing to fit, so its mean
                                IS and mean OOS Sharpes both equal its full-window Sharpe.)
R3    jepa_stress        0.4    −min(1, 0.4·log(1 + mean CPCV drop over the stress worlds))
                                (drop floored at 0), in [−1, 0].  Needs stress worlds: not
                                active in an environment without them.
R4    factor_neutrality  0.4    −0.4·clip(raw Sharpe − residual Sharpe, 0, 3) after the six
                                factors (market, size, 12-1 momentum, 5-day reversal, low
                                vol, price level: verifiers/factors.py); in [−1.2, 0] (1.5 →
                                0.3 pays −0.48).  The gross P&L is regressed on the gross
                                factor books, then costs are charged (the factors bear the
                                share R² of them); raw − residual = the factor part's Sharpe
                                in the net P&L's own volatility (FactorExposure
                                .factor_sharpe).  A pure factor book: residual 0, pays for
                                its whole net Sharpe; an orthogonal effect pays ≈ 0.
R5    turnover           1.0    −2·max(0, turnover − 0.5); turnover ≤ 2 so in [−3, 0].
R6    min_turnover       0.5    0 at turnover ≥ 0.06; linear from 0 at 0.06 to −1.0 at 0.02;
                                below 0.02 the answer is invalid and R6 = −1.0 (also on an
                                invalid card whose gate failure was the floor or an empty
                                book, which trades 0).  In [−1, 0].
R7    ic                 0.2    0.2·clip(20·IC, −1, 1), then min(·, 0.05) while cpcv ≤ 0;
                                in [−0.2, 0.2].
R8    novelty_pnl        0.4    0.4·(1 − max |corr| of the daily net train P&L with the
                                archive); a near-duplicate (max |corr| ≥ 0.95) gets −0.2
                                instead.  Empty archive: max |corr| = 0.  In [−0.2, 0.4].
R9    novelty_syntax     0.2    bucketed canonical form unseen (not in the archive) and not a
                                copy of an earlier valid answer of the same group (neither its
                                form nor its book: the same daily net P&L bit for bit):
                                +0.2·(1 − max|corr|) (the R8 correlation); otherwise −0.3 ×
                                duplicates, where the archive counts 1 and each earlier valid
                                group answer of the same form or the same book counts 1.
                                In (−∞, 0.2]; ≥ −0.3·G in practice.
R10   motif_guard        0.3    −1.0 when (single-motif or price-only) and IC < 0.005, or
                                when the book is a slow factor tilt: turnover < 6%/day and
                                the six factors (R4) explain at least half of a positive
                                raw Sharpe (raw − residual ≥ 0.5·raw), or when it is a
                                factor clone at any turnover: the factors explain at least
                                80% of a positive raw Sharpe (raw − residual ≥ 0.8·raw);
                                the card's scalar
                                reward is then capped at 0 and GDPO gives it no positive
                                advantage (gymkit.advantages, ``guarded``); else 0.
R11   complexity         0.2    −0.02·max(0, node_count − 24); in (−∞, 0].
R12   format             1.0    +0.05 when a reasoning block precedes the tag, else 0.
R13   brief_compliance   1.0    −(failed / checked) of the brief's machine-checkable facets
                                (gymkit.briefs: mechanism, horizon, input rule, structural
                                hint, forbidden pattern, compactness) on the AST, in [−1, 0].
                                Active in briefed use only: ``env.score(…, brief=text)``,
                                ``score_group(…, brief=…)``, ``gymkit score --brief``, the
                                adapters' brief ids; scoring without a brief leaves it out
                                (the seed's 12 channels exactly).  A brief text the generator
                                did not make is not checked (0, with a note).
====  =================  =====  ==========================================================

Invalid answers (layer 1 failed): R1 and R6 as above, every other channel exactly 0; no
channel function can make an answer valid (validity is decided before this table runs).

Scalar reward (``card.reward``, what every trainer that takes one number receives:
:func:`scalar_reward`).  Two bands that never meet, so that no malformed output can
outscore a valid answer, whatever the channels, priorities or thresholds:

* valid answers: s = Σ priority·channel over the active channels (the motif guard R10 caps
  s at 0), then ``soft_floor(s)`` = s for s ≥ 0 and B·s/(B − s) for s < 0, with
  B = :data:`VALID_FLOOR_WIDTH` = 2.  soft_floor is strictly increasing, continuous with
  slope 1 at 0, leaves every reward ≥ 0 unchanged and maps (−∞, 0) into (−2, 0); in floating
  point a valid reward is ≥ −2.0 (clamped, and −∞/NaN sums count as −∞).  B·s/(B − s) is
  computed in exact rationals and rounded once (the nearest float), so the floating-point map
  is non-decreasing too and has the same bits on every machine.
* invalid answers: one fixed value per gate layer, whatever the channels hold —
  −3.5 tag failure (missing_tag, empty_tag, multiple_tags, unclosed_tag) <
  −3.0 text failure (syntax, names, limits, availability, answer_too_long) <
  −2.5 book-gate failure (turnover floor, empty/constant book, failed evaluation)
  (:data:`INVALID_REWARDS`).  Every invalid reward ≤ −2.5 < −2.0 ≤ every valid reward.

Plain GRPO on this scalar, (r − mean)/std within a group, is strictly increasing in r, so it
never ranks an invalid answer above a valid one either.  The raw channels in the card are
unchanged; GDPO (gymkit.advantages) reads them, not the scalar.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, asdict, dataclass, fields
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from gymkit.dsl.errors import TAG_CODES

from .pbo import rank_drop_penalty

if TYPE_CHECKING:
    from gymkit.card import ScoreCard

__all__ = [
    "BOOK_GATE_CODES",
    "CHANNELS",
    "CHANNEL_NAMES",
    "CHANNEL_TABLE_VERSION",
    "INVALID_REWARDS",
    "VALID_FLOOR_WIDTH",
    "AnswerFacts",
    "Channel",
    "ChannelParams",
    "channel",
    "compute_channels",
    "invalid_reward",
    "is_low_ic_motif",
    "is_slow_factor_tilt",
    "motif_guard_triggered",
    "priority_sum",
    "scalar_reward",
    "soft_floor",
]

#: Bump whenever a channel's definition or a default constant changes (part of env fingerprints).
CHANNEL_TABLE_VERSION = "channels-v8"  # v8: R9 counts an earlier group answer with the same book (daily net P&L bit for bit) as a duplicate, not only the same canonical form; v7: R13 reads a brief's facets off the formula's live part (a dead ternary branch, a product with 0, + 0 meet no facet); v6: R10 also fires on factor clones (>= 80% of a positive raw Sharpe explained by the R4 factors, any turnover); v5: the soft floor rounded once (monotone in floating point); v4: R10 also fires on slow factor tilts; v3: banded scalar reward, R4 gross-on-gross with six
# factors (price level added), R13 counts (priority 1.0) in briefed use; v2: R13 (off)

#: Gate codes of failures found on the book (after the oracle ran), not in the text.
BOOK_GATE_CODES = frozenset({"turnover_floor", "degenerate_book", "evaluation_failed"})
#: Gate codes for which R6 is −1.0 on the invalid card (the book trades below the floor).
FLOOR_CODES = frozenset({"turnover_floor", "degenerate_book"})

#: Width B of the valid band below 0: valid rewards lie in [−B, ∞) (module doc).
VALID_FLOOR_WIDTH = 2.0
#: The scalar reward of an invalid answer, by gate layer (module doc); all below −B.
INVALID_REWARDS: dict[str, float] = {"tag": -3.5, "text": -3.0, "book": -2.5}


@dataclass(frozen=True)
class ChannelParams:
    """Every threshold and constant of the channel table (defaults: module table)."""

    cpcv_clip: float = 5.0
    missing_tag_penalty: float = -1.0
    parse_penalty: float = -0.8
    book_penalty: float = -0.8
    pbo_scale: float = 0.48
    factor_scale: float = 0.4
    factor_clip: float = 3.0
    stress_scale: float = 0.4
    turnover_cap: float = 0.5
    turnover_slope: float = 2.0
    min_turnover_free: float = 0.06
    min_turnover_floor: float = 0.02
    min_turnover_penalty: float = -1.0
    ic_scale: float = 0.2
    ic_multiplier: float = 20.0
    ic_cap_without_cpcv: float = 0.05
    novelty_pnl_scale: float = 0.4
    near_duplicate_corr: float = 0.95
    near_duplicate_penalty: float = -0.2
    novelty_syntax_bonus: float = 0.2
    duplicate_penalty: float = -0.3
    motif_ic_threshold: float = 0.005
    motif_penalty: float = -1.0
    slow_tilt_turnover: float = 0.06
    slow_tilt_factor_share: float = 0.5
    factor_clone_share: float = 0.8
    complexity_free_nodes: int = 24
    complexity_per_node: float = -0.02
    format_bonus: float = 0.05

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"channel parameter {f.name} must be a finite number, got {v!r}")
        if not 0.0 <= self.min_turnover_floor < self.min_turnover_free:
            raise ValueError(
                f"channel parameters need 0 <= min_turnover_floor < min_turnover_free, got "
                f"{self.min_turnover_floor} and {self.min_turnover_free}")

    def to_dict(self) -> dict[str, float | int]:
        """Return the parameters as a flat dict (round-trips through ``ChannelParams(**d)``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> ChannelParams:
        """Build from a (partial) dict; unknown keys raise ``ValueError`` naming them."""
        known = {f.name for f in fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise ValueError(f"unknown channel parameter(s) {bad}; expected some of {sorted(known)}")
        return cls(**d)  # type: ignore[arg-type]


@dataclass(frozen=True)
class AnswerFacts:
    """What layers 1–2 and the novelty look-up established about one answer.

    ``valid``/``error_code`` come from the gate.  Oracle numbers (NaN when the oracle did
    not run): ``cpcv`` (raw score), ``turnover``, ``ic``, ``raw_sharpe``, ``residual_sharpe``,
    ``mean_is``/``mean_oos`` (CPCV mean in-sample / test Sharpe), ``is_sharpes``/
    ``test_sharpes`` (the per-split in-sample and test Sharpes, split order).  Novelty: ``max_abs_corr``
    (with the archive, 0.0 for an empty archive), ``in_archive``, ``group_duplicates``
    (earlier valid answers of the group with the same bucketed canonical form or the same
    daily net P&L bits, :func:`gymkit.scoring.group_duplicate_counts`).  Structure:
    ``is_single_motif``, ``is_price_only``, ``node_count``, ``has_reasoning``.  ``stress_drop``:
    mean CPCV drop over stress worlds (NaN without worlds).
    """

    valid: bool
    error_code: str | None = None
    cpcv: float = math.nan
    turnover: float = math.nan
    ic: float = math.nan
    raw_sharpe: float = math.nan
    residual_sharpe: float = math.nan
    mean_is: float = math.nan
    mean_oos: float = math.nan
    is_sharpes: tuple[float, ...] = ()
    test_sharpes: tuple[float, ...] = ()
    max_abs_corr: float = 0.0
    in_archive: bool = False
    group_duplicates: int = 0
    is_single_motif: bool = False
    is_price_only: bool = False
    node_count: int = 0
    has_reasoning: bool = False
    stress_drop: float = math.nan
    brief_compliance: float = math.nan

    @property
    def duplicates(self) -> int:
        """R9's duplicate count: 1 for the archive plus the earlier group copies (form or book)."""
        return int(self.in_archive) + int(self.group_duplicates)


def _clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


# ----------------------------------------------------------------- channel functions
def cpcv_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R1: clipped CPCV score; gate penalties on invalid answers (module table)."""
    if not f.valid:
        if f.error_code in TAG_CODES:
            return p.missing_tag_penalty
        if f.error_code in BOOK_GATE_CODES:
            return p.book_penalty
        return p.parse_penalty
    return _clip(f.cpcv, -p.cpcv_clip, p.cpcv_clip)


def pbo_channel(group: Sequence[AnswerFacts], p: ChannelParams) -> np.ndarray:
    """R2 (group): per-split rank-drop penalty of IS vs test Sharpe, averaged over splits."""
    out = np.zeros(len(group))
    ok = [i for i, f in enumerate(group) if f.valid and f.test_sharpes]
    if len(ok) < 2:
        return out
    is_ = np.array([group[i].is_sharpes for i in ok], dtype=np.float64)  # (G_valid, S)
    oos = np.array([group[i].test_sharpes for i in ok], dtype=np.float64)
    if is_.shape != oos.shape:
        raise ValueError(f"R2 needs matching in-sample and test Sharpes, got {is_.shape} and {oos.shape}")
    per_split = np.stack([rank_drop_penalty(is_[:, s], oos[:, s], scale=p.pbo_scale)
                          for s in range(is_.shape[1])], axis=1)
    out[ok] = per_split.mean(axis=1)
    return out + 0.0


def jepa_stress_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R3: −min(1, scale·log(1 + max(0, mean drop))); needs ``stress_drop`` (ValueError if NaN)."""
    if not math.isfinite(f.stress_drop):
        raise ValueError("jepa_stress needs the mean CPCV drop over stress worlds; none configured")
    return -min(1.0, p.stress_scale * math.log1p(max(0.0, f.stress_drop)))


def factor_neutrality_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R4: −scale·clip(raw Sharpe − residual Sharpe, 0, clip)."""
    return -p.factor_scale * _clip(f.raw_sharpe - f.residual_sharpe, 0.0, p.factor_clip) + 0.0


def turnover_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R5: −slope·max(0, turnover − cap)."""
    return -p.turnover_slope * max(0.0, f.turnover - p.turnover_cap) + 0.0


def min_turnover_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R6: 0 above ``min_turnover_free``, linear ramp to ``min_turnover_penalty`` at the floor."""
    if not f.valid:
        return p.min_turnover_penalty if f.error_code in FLOOR_CODES else 0.0
    if f.turnover >= p.min_turnover_free:
        return 0.0
    if f.turnover <= p.min_turnover_floor:
        return p.min_turnover_penalty
    share = (p.min_turnover_free - f.turnover) / (p.min_turnover_free - p.min_turnover_floor)
    return p.min_turnover_penalty * share


def ic_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R7: scale·clip(multiplier·IC, −1, 1), at most ``ic_cap_without_cpcv`` while cpcv ≤ 0."""
    v = p.ic_scale * _clip(p.ic_multiplier * f.ic, -1.0, 1.0)
    if f.cpcv <= 0.0:
        v = min(v, p.ic_cap_without_cpcv)
    return v + 0.0


def novelty_pnl_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R8: scale·(1 − max|corr|) with the archive; ``near_duplicate_penalty`` at ≥ the threshold."""
    if f.max_abs_corr >= p.near_duplicate_corr:
        return p.near_duplicate_penalty
    return p.novelty_pnl_scale * (1.0 - f.max_abs_corr)


def novelty_syntax_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R9: bonus·(1 − max|corr|) for an unseen form, else ``duplicate_penalty`` × duplicates."""
    dups = f.duplicates
    if dups == 0:
        return p.novelty_syntax_bonus * (1.0 - f.max_abs_corr)
    return p.duplicate_penalty * dups


def is_slow_factor_tilt(f: AnswerFacts, p: ChannelParams) -> bool:
    """True for a valid book trading below ``slow_tilt_turnover`` a day whose positive raw
    Sharpe is at least ``slow_tilt_factor_share`` explained by the R4 factors.

    Such a book holds its exposures for weeks: its P&L is the drift of what it holds (the
    seed's "slow tilts that ride a trend"), not a prediction.  ``slow_tilt_turnover=0``
    switches the test off (the channels-v3 guard)."""
    raw, res = f.raw_sharpe, f.residual_sharpe
    return bool(f.valid and f.turnover < p.slow_tilt_turnover and raw > 0.0
                and raw - res >= p.slow_tilt_factor_share * raw)


def is_factor_clone(f: AnswerFacts, p: ChannelParams) -> bool:
    """True for a valid book, at any turnover, whose positive raw Sharpe is at least
    ``factor_clone_share`` explained by the R4 factors (its residual Sharpe at most a fifth of
    it by default).

    Such a book is known factors in disguise: the daily reversal factor itself, or a size and
    price-level bet (residual Sharpe 0.04 of 0.42) that `gymkit train` converged on under
    channels-v5, where R4's soft charge left it +0.88.  ``factor_clone_share=0`` switches the
    test off (channels-v5)."""
    raw, res = f.raw_sharpe, f.residual_sharpe
    return bool(f.valid and p.factor_clone_share > 0.0 and raw > 0.0
                and raw - res >= p.factor_clone_share * raw)


def motif_guard_triggered(f: AnswerFacts, p: ChannelParams) -> bool:
    """True when R10 fires: a valid single-motif or price-only answer with IC < the
    threshold, a slow factor tilt (:func:`is_slow_factor_tilt`) or a factor clone
    (:func:`is_factor_clone`)."""
    return bool(f.valid and (is_low_ic_motif(f, p) or is_slow_factor_tilt(f, p)
                             or is_factor_clone(f, p)))


def is_low_ic_motif(f: AnswerFacts, p: ChannelParams) -> bool:
    """True for a single-motif or price-only answer whose IC is below ``motif_ic_threshold``."""
    return bool((f.is_single_motif or f.is_price_only) and f.ic < p.motif_ic_threshold)


def motif_guard_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R10: ``motif_penalty`` when :func:`motif_guard_triggered`, else 0 (reward cap: the env)."""
    return p.motif_penalty if motif_guard_triggered(f, p) else 0.0


def complexity_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R11: per_node·max(0, node_count − free_nodes)."""
    return p.complexity_per_node * max(0, f.node_count - p.complexity_free_nodes) + 0.0


def format_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R12: ``format_bonus`` when a reasoning block precedes the tag."""
    return p.format_bonus if f.has_reasoning else 0.0


# ----------------------------------------------------------------- the why lines
# One sentence per channel saying why a card has its value, built from the card's own
# metrics and the thresholds (the report's and `gymkit score`'s "why" column); each row of
# the table names its own (``Channel.why``).
def _metric(card: ScoreCard, *path: str) -> Any:
    """``card.metrics[path[0]][path[1]]…``, or None where the path is missing."""
    cur: Any = card.metrics
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def cpcv_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        code = card.error.code if card.error else "?"
        kind = "tag failure" if code in TAG_CODES else "gate failure"
        return f"invalid answer ({code}): fixed {kind} penalty (the scalar reward's invalid band)"
    sr = np.asarray(_metric(card, "cpcv", "test_sharpes") or [], dtype=np.float64)
    if sr.size == 0:
        return "no CPCV split Sharpes on the card"
    raw = sr.mean() - 0.5 * sr.std()
    clip = f", clipped to ±{p.cpcv_clip:g}" if abs(raw) > p.cpcv_clip else ""
    return (f"mean {sr.mean():+.2f} − 0.5 × std {sr.std():.2f} of the {sr.size} test-slice net "
            f"Sharpes = {raw:+.2f}{clip}")


def pbo_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    v = card.channels.get("pbo", 0.0)
    if v == 0.0:
        return ("no rank drop: scored alone, or it ranks no worse out of sample than in sample "
                "within its group")
    return (f"ranks worse on test slices than in sample within its group: mean penalty over the "
            f"splits {v:+.3f} (floor −{p.pbo_scale:g})")


def jepa_stress_why(card: ScoreCard, p: ChannelParams) -> str:
    v = card.channels.get("jepa_stress")
    if v is None:
        return "not active: no stress worlds"
    if not card.valid:
        return "0 on invalid answers"
    st = _metric(card, "stress") or {}
    drop, worlds = st.get("mean_drop"), st.get("world_cpcv") or {}
    if drop is None:
        return f"no stress scores on the card: {v:+.3f}"
    return (f"mean CPCV drop {drop:.2f} over {len(worlds)} worlds → "
            f"−min(1, {p.stress_scale:g}·log(1 + {drop:.2f})) = {v:+.3f}")


def factor_neutrality_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    raw, res = _metric(card, "factors", "raw_sharpe"), _metric(card, "factors", "residual_sharpe")
    part = _metric(card, "factors", "factor_sharpe")
    if raw is None or (res is None and part is None):
        return "no factor regression on the card"
    if part is not None:  # R4's input: the factor part's Sharpe in the P&L's own volatility
        rest = f", residual {res:+.2f}" if res is not None else ""
        if part <= 0:
            return (f"the six factors explain no Sharpe (factor part {part:+.2f} of raw "
                    f"{raw:+.2f}{rest}): no penalty")
        return (f"the six factors explain Sharpe {part:.2f} of the raw {raw:+.2f}{rest} → "
                f"−{p.factor_scale:g} × {min(part, p.factor_clip):.2f}")
    diff = raw - res
    if diff <= 0:
        return (f"raw Sharpe {raw:+.2f} ≤ residual {res:+.2f} after the six factors: nothing "
                "explained, no penalty")
    return (f"raw Sharpe {raw:+.2f} − residual {res:+.2f} = {diff:.2f} explained by the six "
            f"factors → −{p.factor_scale:g} × {min(diff, p.factor_clip):.2f}")


def turnover_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    t = _metric(card, "turnover")
    if t is None:
        return "no turnover on the card"
    if t <= p.turnover_cap:
        return f"turnover {t:.1%}/day ≤ the {p.turnover_cap:.0%} cap: free"
    return (f"turnover {t:.1%}/day above the {p.turnover_cap:.0%} cap: "
            f"−{p.turnover_slope:g} × {t - p.turnover_cap:.3f}")


def min_turnover_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        code = card.error.code if card.error else "?"
        if code in FLOOR_CODES:
            return f"invalid ({code}): trades below the {p.min_turnover_floor:.0%}/day floor"
        return "0 on answers that fail before the book"
    t = _metric(card, "turnover")
    if t is None:
        return "no turnover on the card"
    if t >= p.min_turnover_free:
        return f"turnover {t:.1%}/day ≥ {p.min_turnover_free:.0%}: free"
    return (f"turnover {t:.1%}/day in the {p.min_turnover_floor:.0%}–{p.min_turnover_free:.0%} "
            "ramp: a slow book pays")


def ic_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    ic, cpcv = _metric(card, "ic"), _metric(card, "cpcv", "score")
    if ic is None:
        return "no IC on the card"
    s = f"IC {ic:+.4f} → {p.ic_scale:g}·clip({p.ic_multiplier:g}·IC, ±1)"
    if cpcv is not None and cpcv <= 0:
        s += f", capped at {p.ic_cap_without_cpcv:g} because CPCV ≤ 0"
    return s


def novelty_pnl_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    c = _metric(card, "novelty", "max_abs_corr") or 0.0
    near = _metric(card, "novelty", "nearest")
    tail = f" (nearest: {near})" if near else ""
    if c >= p.near_duplicate_corr:
        return f"near-duplicate of an archived book: max |corr| {c:.2f} ≥ {p.near_duplicate_corr:g}{tail}"
    return f"{p.novelty_pnl_scale:g} × (1 − max |corr| {c:.2f} with the archive){tail}"


def novelty_syntax_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    in_arc = bool(_metric(card, "novelty", "in_archive"))
    dups = int(_metric(card, "novelty", "group_duplicates") or 0)
    c = _metric(card, "novelty", "max_abs_corr") or 0.0
    if not in_arc and dups == 0:
        return f"unseen canonical form: {p.novelty_syntax_bonus:g} × (1 − {c:.2f})"
    where = ", ".join(x for x in ("form in the archive" if in_arc else "",
                                  f"{dups} earlier in the group with this form or this book"
                                  if dups else "") if x)
    return f"a copy ({where}): {p.duplicate_penalty:g} × {int(in_arc) + dups}"


def cap_binds(card: ScoreCard) -> bool:
    """True when R10 fired on ``card`` and the cap set its reward to 0 (a reward that would
    otherwise have been positive); False when it fired on a reward that is negative anyway."""
    return bool(card.motif_capped and card.reward == 0.0)


def _guard_outcome(card: ScoreCard) -> str:
    """What R10 firing did to the card: the cap binds only on a reward that would be positive."""
    if cap_binds(card):
        return "reward capped at 0, no positive advantage (ranked below every eligible answer)"
    return "its reward is negative already, so the cap does not bind"


def motif_guard_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    single = _metric(card, "structure", "is_single_motif")
    price = _metric(card, "structure", "is_price_only")
    ic = _metric(card, "ic")
    raw = _metric(card, "factors", "raw_sharpe")
    fs = _metric(card, "factors", "factor_sharpe")
    raw = math.nan if raw is None else raw
    fs = math.nan if fs is None else fs
    if card.motif_capped:
        if (single or price) and ic is not None and ic < p.motif_ic_threshold:
            return (f"fires: single-motif or price-only with IC < {p.motif_ic_threshold:g}; "
                    + _guard_outcome(card))
        turnover = _metric(card, "turnover") or math.nan
        if not turnover < p.slow_tilt_turnover:
            return (f"fires: factor clone (the factors explain Sharpe {fs:.2f} of its net "
                    f"{raw:.2f}, at least {p.factor_clone_share:.0%}); " + _guard_outcome(card))
        return (f"fires: slow factor tilt (turnover {turnover:.1%}/day < "
                f"{p.slow_tilt_turnover:.0%}, the factors explain Sharpe {fs:.2f} of its net "
                f"{raw:.2f}); " + _guard_outcome(card))
    clone = (f"; the factors explain {fs / raw:.0%} of its net Sharpe (a clone from "
             f"{p.factor_clone_share:.0%})" if raw > 0 and math.isfinite(fs) else "")
    if single or price:
        return (f"{'single-motif' if single else 'price-only'} but IC ≥ {p.motif_ic_threshold:g}"
                f"{clone}: passes")
    return f"more than one motif and not price-only{clone}: passes"


def complexity_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    n = _metric(card, "structure", "node_count")
    if n is None:
        return "no node count on the card"
    if n <= p.complexity_free_nodes:
        return f"{n} expression nodes ≤ {p.complexity_free_nodes} free"
    return f"{n} nodes: {p.complexity_per_node:g} × {n - p.complexity_free_nodes} beyond {p.complexity_free_nodes}"


def format_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    if card.channels.get("format", 0.0) > 0:
        return f"a reasoning block precedes the tag: +{p.format_bonus:g}"
    return "no reasoning block"


def brief_compliance_why(card: ScoreCard, p: ChannelParams) -> str:
    if not card.valid:
        return "0 on invalid answers"
    if any(n.startswith("brief_compliance:") for n in card.notes):
        return "the brief is not one the generator made: not checked (0)"
    v = card.channels.get("brief_compliance", 0.0)
    if v == 0.0:
        return "every checked facet of the brief holds on the formula"
    return f"{-v:.0%} of the brief's checked facets fail on the formula: {v:+.3f}"


# ----------------------------------------------------------------- the registry table
@dataclass(frozen=True)
class Channel:
    """One row of the registry (see module doc).

    ``fn`` is ``(AnswerFacts, ChannelParams) -> float`` for a per-answer channel and
    ``(Sequence[AnswerFacts], ChannelParams) -> ndarray`` for a group channel.
    ``scores_invalid``: the function also defines the value on invalid answers (R1, R6);
    otherwise an invalid answer gets 0.0 without calling it.  ``needs``: the environment
    capability the channel requires ('' = none, 'stress_worlds' for R3).  ``why``
    (keyword-only, required): ``(ScoreCard, ChannelParams) -> str``, one line on why a card
    has the value it has (:func:`gymkit.report.why.channel_reasons`).
    """

    id: str
    name: str
    priority: float
    value_range: tuple[float, float]
    group: bool
    reads: tuple[str, ...]
    fn: Callable
    scores_invalid: bool = False
    needs: str = ""
    default_on: bool = True  # in an environment's active channels unless configured otherwise
    # (R13 is off by default and joins the active channels whenever a brief is given)
    _: KW_ONLY
    why: Callable[[ScoreCard, ChannelParams], str]


_INF = math.inf


def brief_compliance_channel(f: AnswerFacts, p: ChannelParams) -> float:
    """R13: the brief-compliance score computed by the environment; 0 without a brief."""
    return f.brief_compliance + 0.0 if math.isfinite(f.brief_compliance) else 0.0

CHANNELS: tuple[Channel, ...] = (
    Channel("R1", "cpcv", 3.0, (-5.0, 5.0), False, ("cpcv", "error_code"), cpcv_channel, True,
            why=cpcv_why),
    Channel("R2", "pbo", 1.0, (-0.48, 0.0), True, ("is_sharpes", "test_sharpes"), pbo_channel,
            why=pbo_why),
    Channel("R3", "jepa_stress", 0.4, (-1.0, 0.0), False, ("stress_drop",), jepa_stress_channel,
            needs="stress_worlds",
            why=jepa_stress_why),
    Channel("R4", "factor_neutrality", 0.4, (-1.2, 0.0), False, ("raw_sharpe", "residual_sharpe"),
            factor_neutrality_channel,
            why=factor_neutrality_why),
    Channel("R5", "turnover", 1.0, (-3.0, 0.0), False, ("turnover",), turnover_channel,
            why=turnover_why),
    Channel("R6", "min_turnover", 0.5, (-1.0, 0.0), False, ("turnover", "error_code"),
            min_turnover_channel, True,
            why=min_turnover_why),
    Channel("R7", "ic", 0.2, (-0.2, 0.2), False, ("ic", "cpcv"), ic_channel,
            why=ic_why),
    Channel("R8", "novelty_pnl", 0.4, (-0.2, 0.4), False, ("max_abs_corr",), novelty_pnl_channel,
            why=novelty_pnl_why),
    Channel("R9", "novelty_syntax", 0.2, (-_INF, 0.2), False,
            ("in_archive", "group_duplicates", "max_abs_corr"), novelty_syntax_channel,
            why=novelty_syntax_why),
    Channel("R10", "motif_guard", 0.3, (-1.0, 0.0), False,
            ("is_single_motif", "is_price_only", "ic", "turnover", "raw_sharpe",
             "residual_sharpe"), motif_guard_channel,
            why=motif_guard_why),
    Channel("R11", "complexity", 0.2, (-_INF, 0.0), False, ("node_count",), complexity_channel,
            why=complexity_why),
    Channel("R12", "format", 1.0, (0.0, 0.05), False, ("has_reasoning",), format_channel,
            why=format_why),
    Channel("R13", "brief_compliance", 1.0, (-1.0, 0.0), False, ("brief_compliance",),
            brief_compliance_channel, default_on=False,
            why=brief_compliance_why),
)

#: Channel names in registry order.
CHANNEL_NAMES: tuple[str, ...] = tuple(c.name for c in CHANNELS)
_BY_NAME = {c.name: c for c in CHANNELS} | {c.id: c for c in CHANNELS}


def channel(name_or_id: str) -> Channel:
    """Return the registry row for a channel name (``'cpcv'``) or id (``'R1'``)."""
    try:
        return _BY_NAME[name_or_id]
    except KeyError:
        raise ValueError(f"unknown reward channel {name_or_id!r}; expected one of "
                         f"{list(CHANNEL_NAMES)}") from None


def compute_channels(
    group: Sequence[AnswerFacts], active: Sequence[str], params: ChannelParams
) -> list[dict[str, float]]:
    """Return, per answer, ``{name: raw value}`` of the ``active`` channels in registry order.

    Group channels see the whole ``group`` (a single answer is a group of one); invalid
    answers get 0.0 on every channel whose row does not score invalid answers.  Pure.
    """
    rows = [channel(n) for n in active]
    order = sorted(rows, key=lambda c: CHANNELS.index(c))
    out: list[dict[str, float]] = [{} for _ in group]
    for ch in order:
        if ch.group:
            values = ch.fn(group, params)
            for i, f in enumerate(group):
                out[i][ch.name] = float(values[i]) if f.valid else 0.0
            continue
        for i, f in enumerate(group):
            out[i][ch.name] = float(ch.fn(f, params)) if (f.valid or ch.scores_invalid) else 0.0
    return out


# ----------------------------------------------------------------- the scalar reward
def soft_floor(s: float) -> float:
    """Map a valid answer's Σ priority·channel into [−B, ∞): identity on s ≥ 0,
    B·s/(B − s) below (strictly increasing; module doc "Scalar reward")."""
    b = VALID_FLOOR_WIDTH
    if s >= 0.0:
        return s + 0.0
    if not s > -math.inf:   # −inf or NaN: the bottom of the valid band
        return -b
    # B·s/(B − s) in exact rationals, rounded once: a rounding of an increasing function is
    # non-decreasing; the float expression rounds B − s first and was not (s = −1.8e16 gave
    # −1.9999999999999996, s = −1.2e16 −1.9999999999999998).
    return max(-b, float(Fraction(b) * Fraction(s) / (Fraction(b) - Fraction(s))))


def invalid_reward(error_code: str | None) -> float:
    """The fixed scalar reward of an invalid answer with gate code ``error_code``:
    tag failure < text (parse/limit) failure < book-gate failure (module doc)."""
    if error_code in TAG_CODES:
        return INVALID_REWARDS["tag"]
    if error_code in BOOK_GATE_CODES:
        return INVALID_REWARDS["book"]
    return INVALID_REWARDS["text"]


def scalar_reward(channels: dict[str, float], priorities: dict[str, float], f: AnswerFacts,
                  params: ChannelParams) -> tuple[float, bool]:
    """Return (scalar reward, capped) of one answer (module doc "Scalar reward").

    Invalid: :func:`invalid_reward` of its gate code.  Valid: ``soft_floor`` of
    Σ priority·channel, capped at 0 first when R10 is active and fires (``capped``).
    """
    if not f.valid:
        return invalid_reward(f.error_code), False
    r = priority_sum(channels, priorities)
    capped = "motif_guard" in channels and motif_guard_triggered(f, params)
    if capped:
        r = min(r, 0.0)
    return soft_floor(r), capped


def priority_sum(channels: dict[str, float], priorities: dict[str, float]) -> float:
    """Σ priority·channel over ``channels`` in their order: a valid answer's reward before
    the motif guard's cap and the soft floor (:func:`scalar_reward`)."""
    r = 0.0
    for name, v in channels.items():
        r += priorities[name] * v
    return r
