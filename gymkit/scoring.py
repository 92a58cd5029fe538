"""The three layers of the verifier (playbook §3): gate → oracle → risk scorer, fail-closed.

1. **Gate** (:func:`gate_text`, then :func:`gate_book`).  Text: exactly one non-empty
   ``<alpha>`` tag, a formula that parses within every DSL limit and reads only fields and
   group levels the (train) panel has.  Book (checked on the oracle's output, still layer 1):
   the book must hold a position on some judged day (``degenerate_book``: empty or constant
   formulas such as ``x - x``) and trade at least the turnover floor (``turnover_floor``).
   Any exception while evaluating or backtesting is a failure too (``evaluation_failed``):
   the verifier fails closed, it never passes an answer it could not check.
2. **Oracle** (:func:`run_oracle`).  Evaluate the formula on the *train panel* — a panel
   physically without holdout rows — and backtest it in ``mode='train'`` with the
   environment's costs and CPCV.
   **Stress** (:func:`run_stress`, only with stress worlds): the same formula re-scored in
   each JEPA stress world with the same costs and CPCV on the CPCV-only path
   (:func:`world_score`: no metrics or factor regression per world); R3 reads the mean
   drop.  World scores are memoised per setup (:class:`StressMemo`), so a re-scored
   formula costs no stress work.
3. **Risk scorer** (:func:`risk_channels`, :func:`scalar_reward` from the channel table:
   banded so that every invalid answer scores below every valid one).  The channel table of
   :mod:`gymkit.verifiers.channels`.  Validity is decided before layer 3 runs and nothing in
   layer 3 can change it; invalid answers get R1/R6 penalties and 0 elsewhere.

Novelty (:func:`novelty_of`) only *reads* the archive.  :class:`AnswerState` carries one
answer through the layers with its per-phase timings.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from gymkit.data.panel import Panel
from gymkit.data.splits import Split
from gymkit.dsl import (
    DSLError,
    canonical,
    canonical_key,
    extract,
    lookback,
    motifs,
    node_count,
    parse,
    to_text,
)
from gymkit.dsl.analysis import Motifs
from gymkit.dsl.ast import Call, Node
from gymkit.dsl.cache import EvalCache
from gymkit.dsl.evaluator import evaluate
from gymkit.dsl.operators import FIELDS, LEVELS
from gymkit.jepa.worlds import StressWorld
from gymkit.verifiers.archive import Neighbour, NoveltyArchive
from gymkit.verifiers.channels import (
    AnswerFacts,
    ChannelParams,
    compute_channels,
    scalar_reward,
)
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.oracle import BacktestResult, backtest, backtest_cpcv

from .card import CardError

__all__ = [
    "AnswerState",
    "ScoringSetup",
    "StressMemo",
    "book_input",
    "facts_of",
    "gate_book",
    "gate_text",
    "group_duplicate_counts",
    "novelties_of",
    "novelty_of",
    "risk_channels",
    "run_oracle",
    "run_stress",
    "scalar_reward",
    "score_answers",
    "share_group_duplicates",
    "stress_key",
    "world_cache",
    "world_score",
]


class StressMemo:
    """Bounded LRU map (formula key, world fingerprint, scoring params) -> a world's CPCV score.

    Keys (:func:`stress_key`) hold :func:`~gymkit.dsl.canonical_key` of the book input
    (bit-identical values by that key's contract), the world panel's fingerprint and the
    split, cost model, CPCV and burn-in, so a hit equals a recomputation even when setups
    that differ in those share one memo.  ``max_entries`` >= 0 bounds it (0 stores
    nothing).  Thread-safe.
    """

    def __init__(self, max_entries: int = 65536) -> None:
        if not isinstance(max_entries, int) or max_entries < 0:
            raise ValueError(f"StressMemo: max_entries must be an int >= 0, got {max_entries!r}")
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, float] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> float | None:
        """The stored score for ``key`` (marked most recently used), or None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: tuple, score: float) -> None:
        """Store ``score`` under ``key``, evicting the least recently used beyond the bound."""
        with self._lock:
            if self.max_entries == 0:
                return
            self._entries[key] = score
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


#: Evaluator-cache room :meth:`ScoringSetup.build` reserves: a group of this many answers
#: with about this many sub-expressions each, on the train panel and on every stress world,
#: so that a re-scored group hits the cache (never above :data:`GROUP_CACHE_CAP` bytes).
GROUP_ANSWERS, GROUP_SUBTREES = 12, 6
GROUP_CACHE_CAP = 2**30


def group_cache_bytes(train: Panel, n_worlds: int) -> int:
    """Bytes of one group's evaluations (module constants above), capped at GROUP_CACHE_CAP."""
    return int(min(GROUP_CACHE_CAP, _group_bytes(train, n_worlds)))


def _group_bytes(train: Panel, n_worlds: int) -> int:
    return GROUP_ANSWERS * GROUP_SUBTREES * (1 + n_worlds) * train.T * train.N * 8


def world_cache(setup: ScoringSetup) -> EvalCache | None:
    """The evaluator cache for one world's re-score of one answer.

    ``setup.cache`` when one group's evaluations on the train panel and every world fit in
    it (:func:`group_cache_bytes` below its cap: then a re-scored group's sub-expressions
    shared between answers are found there).  Otherwise a fresh cache for this re-score only,
    dropped after it: the formula's repeated sub-expressions are still evaluated once, but
    the world's arrays neither evict the train panel's entries nor stay in memory, so every
    world evaluates into memory just freed instead of fresh pages (what the shared cache made
    the stress phase cost at N = 3,000: benchmarks/RESULTS.md, issue 22).  Values are the
    same bits either way (the cache's contract).  ``None`` when the setup has no cache.
    """
    if setup.cache is None:
        return None
    if _group_bytes(setup.train, len(setup.worlds)) <= GROUP_CACHE_CAP:
        return setup.cache
    return EvalCache(GROUP_CACHE_CAP)


@dataclass(frozen=True)
class ScoringSetup:
    """What every answer of one environment is scored against (built once per environment)."""

    train: Panel
    split: Split
    costs: object
    cpcv: CPCV
    burn_in: int
    params: ChannelParams
    cache: EvalCache | None
    fields: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    worlds: tuple[StressWorld, ...] = ()
    stress_memo: StressMemo = field(default_factory=StressMemo, compare=False, repr=False)

    @classmethod
    def build(cls, train: Panel, split: Split, costs: object, cpcv: CPCV, burn_in: int,
              params: ChannelParams, cache: EvalCache | None,
              worlds: Sequence[StressWorld] = ()) -> ScoringSetup:
        """Create a setup; the available fields and group levels are read off ``train``.

        ``cache`` (when given) is grown to :func:`group_cache_bytes` if it is smaller, so a
        re-scored group of answers finds its evaluations there.
        """
        if cache is not None:
            cache.reserve(group_cache_bytes(train, len(worlds)))
        fields_ = tuple(n for n in FIELDS if train.has_field(n))
        levels = tuple(lv for lv in LEVELS if train.has_groups(lv))
        return cls(train, split, costs, cpcv, burn_in, params, cache, fields_, levels, tuple(worlds))


@dataclass
class AnswerState:
    """One answer on its way through the layers."""

    completion: object
    formula: str | None = None
    has_reasoning: bool = False
    expr: Node | None = None
    canonical: str | None = None
    error: CardError | None = None
    bt: BacktestResult | None = None
    stress: dict[str, float] | None = None  # world name -> CPCV score in that world
    timings: dict[str, float] = field(default_factory=dict)
    _motifs: Motifs | None = field(default=None, repr=False)

    def motifs(self) -> Motifs:
        """The formula's motif analysis (:func:`gymkit.dsl.motifs`), computed once."""
        if self._motifs is None:
            self._motifs = motifs(self.expr)  # type: ignore[arg-type]
        return self._motifs

    @property
    def valid(self) -> bool:
        """True while no layer-1 check has failed (final once :func:`gate_book` ran)."""
        return self.error is None


def book_input(expr: Node) -> Node:
    """The sub-formula whose values the book needs: ``expr`` without its root ``rank`` calls.

    The book ranks each day's values itself (average ties, non-finite values excluded), and
    the cross-sectional ``rank`` is strictly increasing within a day, keeps ties and maps
    exactly the non-finite entries to NaN — so the book of ``rank(x)`` equals the book of
    ``x`` bit for bit (tested over the corpus), and a rank-rooted answer (most answers) skips
    one rank kernel on the train panel and on every stress world.
    """
    while isinstance(expr, Call) and expr.op == "rank":
        expr = expr.args[0]
    return expr


def gate_text(completion: object, setup: ScoringSetup) -> AnswerState:
    """Layer 1 on the text: tag, parse, limits, availability.  Never raises."""
    t0 = time.perf_counter()
    st = AnswerState(completion)
    try:
        ex = extract(completion)  # type: ignore[arg-type]
        st.formula = ex.formula
        st.has_reasoning = ex.has_reasoning
        st.expr = parse(ex.formula, fields=setup.fields, levels=setup.levels)
        st.canonical = to_text(canonical(st.expr))
    except DSLError as err:
        st.error = CardError(err.code, err.message, err.position if err.position >= 0 else None)
        st.expr = None
    st.timings["parse"] = time.perf_counter() - t0
    return st


def run_oracle(st: AnswerState, setup: ScoringSetup) -> None:
    """Layer 2: evaluate on the train panel and backtest in train mode (fail-closed)."""
    st.timings.update(evaluate=0.0, book=0.0, cpcv=0.0, factors=0.0)
    if st.error is not None or st.expr is None:
        return
    t0 = time.perf_counter()
    try:
        values = evaluate(book_input(st.expr), setup.train, cache=setup.cache)
        t1 = time.perf_counter()
        st.timings["evaluate"] = t1 - t0
        st.bt = backtest(values, setup.train, setup.split, "train", setup.costs,  # type: ignore[arg-type]
                         cpcv=setup.cpcv, burn_in=setup.burn_in)
    except DSLError as err:
        st.error = CardError(err.code, err.message, err.position if err.position >= 0 else None)
        return
    except Exception:  # fail closed: an answer we could not check is not valid
        st.error = CardError("evaluation_failed",
                             "the formula could not be evaluated on this market",
                             None, "book")
        return
    tm = st.bt.timings
    st.timings["book"] = tm["setup"] + tm["book"] + tm["costs"] + tm["metrics"]
    st.timings["cpcv"] = tm["cpcv"]
    st.timings["factors"] = tm["factors"]


def gate_book(st: AnswerState, setup: ScoringSetup) -> None:
    """Layer 1 on the book: non-finite results, empty/constant book, turnover floor."""
    bt = st.bt
    if st.error is not None or bt is None:
        return
    m = bt.metrics
    if not (np.isfinite(bt.cpcv.score) and np.isfinite(m.turnover) and np.isfinite(m.ic)
            and np.isfinite(bt.factors.residual_sharpe)):
        st.error = CardError("evaluation_failed", "the backtest produced a non-finite statistic",
                             None, "book")
    elif not bt.turnover.any():  # = weights.any() (the book starts from 0), O(D) not O(D·N)
        st.error = CardError(
            "degenerate_book",
            "the book holds no position on any judged day (an empty or constant formula such "
            "as x - x)", None, "book")
    elif m.turnover < setup.params.min_turnover_floor:
        st.error = CardError(
            "turnover_floor",
            f"turnover {m.turnover:.4f} a day is below the {setup.params.min_turnover_floor:g} "
            "floor: the book is (nearly) static", None, "book")


def world_score(expr: Node, world: Panel, split: Split, costs: object, cpcv: CPCV,
                burn_in: int, cache: EvalCache | None) -> float:
    """CPCV score of formula ``expr`` re-scored in ``world`` (train mode, the given costs):
    bit for bit ``backtest(...).cpcv.score``, on the CPCV-only path (:func:`backtest_cpcv`)."""
    values = evaluate(expr, world, cache=cache)
    return float(backtest_cpcv(values, world, split, "train", costs,  # type: ignore[arg-type]
                               cpcv=cpcv, burn_in=burn_in).score)


def stress_key(formula_key: str, world: Panel, setup: ScoringSetup) -> tuple:
    """The :class:`StressMemo` key of a book input's ``canonical_key`` re-scored in ``world``."""
    return (formula_key, world.fingerprint, setup.split, setup.costs,
            tuple(sorted(setup.cpcv.to_dict().items())), setup.burn_in)


def run_stress(st: AnswerState, setup: ScoringSetup) -> None:
    """Re-score a valid answer in every stress world (same costs, CPCV and burn-in).

    Fills ``st.stress`` with each world's CPCV score; a world where the formula cannot be
    re-scored or scores non-finite counts at the R1 clip floor (fail closed: a large drop).
    Scores come from ``setup.stress_memo`` when this book input was re-scored before.
    """
    t0 = time.perf_counter()
    if setup.worlds and st.valid and st.bt is not None and st.expr is not None:
        out = {}
        expr = book_input(st.expr)
        key = canonical_key(expr)
        for w in setup.worlds:
            memo_key = stress_key(key, w.panel, setup)
            s = setup.stress_memo.get(memo_key)
            if s is None:
                try:
                    s = world_score(expr, w.panel, setup.split, setup.costs, setup.cpcv,
                                    setup.burn_in, world_cache(setup))
                    setup.stress_memo.put(memo_key, s)  # failures are retried, not stored
                except Exception:  # fail closed
                    s = math.nan
            out[w.name] = s if math.isfinite(s) else -setup.params.cpcv_clip
        st.stress = out
    st.timings["stress"] = time.perf_counter() - t0


def score_answers(completions: Sequence[object], setup: ScoringSetup) -> list[AnswerState]:
    """Layers 1 and 2 (plus the stress re-scores) for a group's answers, in order.

    Answers with equal :func:`~gymkit.dsl.canonical_key` (bit-identical values by that key's
    contract, so bit-identical backtests) are checked once per group: later copies take the
    first copy's backtest, book-gate verdict and stress scores, and report zero time for
    those phases (:func:`share_group_duplicates`).  A collapsed GRPO group (many samples of
    one formula) then costs one backtest, not G.  Never raises on bad answers.
    """
    first_of: dict[str, AnswerState] = {}
    states: list[AnswerState] = []
    for c in completions:
        t0 = time.perf_counter()
        st = gate_text(c, setup)
        key = canonical_key(st.expr) if st.error is None and st.expr is not None else None
        done = first_of.get(key) if key is not None else None
        if done is not None:
            _take_results(st, done)
        else:
            run_oracle(st, setup)
            gate_book(st, setup)
            run_stress(st, setup)
            if key is not None:
                first_of[key] = st
        st.timings["wall"] = time.perf_counter() - t0
        states.append(st)
    return states


def _take_results(st: AnswerState, done: AnswerState) -> None:
    st.error, st.bt, st.stress = done.error, done.bt, done.stress
    st.timings.update(evaluate=0.0, book=0.0, cpcv=0.0, factors=0.0, stress=0.0)


def share_group_duplicates(states: Sequence[AnswerState]) -> list[AnswerState]:
    """The states of one group as :func:`score_answers` leaves them, from states scored one by
    one (each a one-answer :func:`score_answers`, e.g. in worker processes): a later answer
    whose text passed the text gate with the canonical key of an earlier one takes the
    earlier one's results, as :func:`score_answers` gives it.  The inputs are not modified."""
    first_of: dict[str, AnswerState] = {}
    out: list[AnswerState] = []
    for s in states:
        st = replace(s, timings=dict(s.timings))
        key = canonical_key(st.expr) if st.expr is not None else None  # None: failed the text gate
        done = first_of.get(key) if key is not None else None
        if done is not None:
            _take_results(st, done)
        elif key is not None:
            first_of[key] = st
        out.append(st)
    return out


def stress_drop(st: AnswerState) -> float:
    """Mean over worlds of max(0, base CPCV − world CPCV); NaN without stress scores."""
    if st.stress is None or st.bt is None:
        return math.nan
    base = st.bt.cpcv.score
    return float(np.mean([max(0.0, base - s) for s in st.stress.values()]))


@dataclass(frozen=True)
class Novelty:
    """Novelty look-up of one answer: max |corr| with the archive, the nearest form, seen-ness."""

    max_abs_corr: float = 0.0
    nearest: str | None = None
    nearest_corr: float = 0.0
    in_archive: bool = False
    group_duplicates: int = 0


def _looks_up(st: AnswerState) -> bool:
    return st.valid and st.bt is not None and st.canonical is not None


def novelty_of(st: AnswerState, archive: NoveltyArchive, group_duplicates: int,
               hit: Neighbour | str | None = "look up") -> Novelty:
    """Read-only archive look-up of a valid answer's net P&L and canonical form; ``hit``: its
    nearest entry when the caller looked it up already (:func:`novelties_of`)."""
    if not _looks_up(st):
        return Novelty()
    if isinstance(hit, str):
        hit = archive.nearest(st.bt.net) if len(archive) else None
    # A flat P&L is uncorrelated with everything, which would pay it full novelty: inaction
    # is not a new idea, so it counts as a perfect duplicate (the gate rejects empty books
    # first; this closes the same hack if an environment switches that gate off).
    flat = not np.ptp(st.bt.net) > 0.0
    return Novelty(
        max_abs_corr=1.0 if flat else 0.0 if hit is None else min(1.0, abs(hit.corr)),
        nearest=None if hit is None else hit.form,
        nearest_corr=0.0 if hit is None else hit.corr,
        in_archive=archive.contains(st.canonical),
        group_duplicates=group_duplicates,
    )


def _book_digest(st: AnswerState) -> bytes | None:
    """Digest of a looked-up answer's daily net train P&L bits (equal books, equal digests)."""
    if not _looks_up(st):
        return None
    net = np.ascontiguousarray(st.bt.net, dtype=np.float64)
    return hashlib.blake2b(net.tobytes(), digest_size=16).digest()


def group_duplicate_counts(states: Sequence[AnswerState]) -> list[int]:
    """R9's in-group duplicate count of each answer: the earlier valid answers of the group
    with the same bucketed canonical form **or** the same daily net train P&L, bit for bit
    (the same book written another way: ``V + V``, ``2 * V``, ``rank(V)``, ``-rank(-V)``,
    ``ts_sum`` for ``ts_mean``).  0 for invalid answers.  Group order decides which copy is
    the first."""
    forms: Counter[str] = Counter()
    books: Counter[bytes] = Counter()
    both: Counter[tuple[str, bytes]] = Counter()
    out = []
    for st in states:  # earlier with the form + with the book − with both: linear in G
        dup = 0
        if st.valid and st.canonical is not None:
            form, book = st.canonical, _book_digest(st)
            dup = forms[form]
            forms[form] += 1
            if book is not None:
                dup += books[book] - both[(form, book)]
                books[book] += 1
                both[(form, book)] += 1
        out.append(dup)
    return out


def novelties_of(states: Sequence[AnswerState], archive: NoveltyArchive) -> list[Novelty]:
    """:func:`novelty_of` of each answer of a group, in-group duplicates counted in order
    (:func:`group_duplicate_counts`: the k-th copy of a form or a book has k - 1 before it);
    one archive pass for all the look-ups (:meth:`NoveltyArchive.nearest_many`: the same
    entries and bits as one at a time)."""
    dups = group_duplicate_counts(states)
    looked = [i for i, st in enumerate(states) if _looks_up(st)]
    hits = archive.nearest_many([states[i].bt.net for i in looked]) if len(archive) else [None] * len(looked)
    hit_of = dict(zip(looked, hits, strict=True))
    return [novelty_of(st, archive, dup, hit=hit_of.get(i)) for i, (st, dup) in enumerate(zip(states, dups, strict=True))]


def facts_of(st: AnswerState, nov: Novelty) -> AnswerFacts:
    """The :class:`AnswerFacts` the channel table reads."""
    code = None if st.error is None else st.error.code
    if st.expr is None:
        return AnswerFacts(valid=False, error_code=code)
    mot = st.motifs()
    base = dict(valid=st.valid, error_code=code, is_single_motif=mot.is_single_motif,
                is_price_only=mot.is_price_only, node_count=node_count(st.expr),
                has_reasoning=st.has_reasoning)
    bt = st.bt
    if bt is None:
        return AnswerFacts(**base)
    return AnswerFacts(
        **base, cpcv=bt.cpcv.score, turnover=bt.metrics.turnover, ic=bt.metrics.ic,
        # R4 reads the additive split raw = factor part + residual part of verifiers.factors
        # (gross P&L on gross factors, costs shared by R²): the tear sheet's numbers.
        raw_sharpe=bt.factors.raw_sharpe,
        residual_sharpe=bt.factors.raw_sharpe - bt.factors.factor_sharpe,
        mean_is=bt.cpcv.mean_is, mean_oos=bt.cpcv.mean_oos,
        is_sharpes=tuple(bt.cpcv.is_sharpes.tolist()),
        test_sharpes=tuple(bt.cpcv.test_sharpes.tolist()), max_abs_corr=nov.max_abs_corr,
        in_archive=nov.in_archive, group_duplicates=nov.group_duplicates,
        stress_drop=stress_drop(st))


def risk_channels(facts: Sequence[AnswerFacts], active: Sequence[str],
                  params: ChannelParams) -> list[dict[str, float]]:
    """Layer 3: raw channel values per answer (validity is an input, never an output)."""
    return compute_channels(facts, active, params)


def card_metrics(st: AnswerState, nov: Novelty, f: AnswerFacts, capped: bool) -> dict[str, object]:
    """The card's ``metrics``: backtest statistics, CPCV, factors, novelty, structure."""
    if st.expr is None:
        return {}
    mot = st.motifs()
    out: dict[str, object] = {}
    bt = st.bt
    if bt is not None:
        out.update(bt.metrics.to_dict())
        out["first_date"] = str(bt.dates[0])
        out["last_date"] = str(bt.dates[-1])
        out["cpcv"] = {**bt.cpcv.to_dict(), "mean_is": bt.cpcv.mean_is, "mean_oos": bt.cpcv.mean_oos}
        out["factors"] = bt.factors.to_dict()
    out["novelty"] = {"max_abs_corr": nov.max_abs_corr, "nearest": nov.nearest,
                      "nearest_corr": nov.nearest_corr, "in_archive": nov.in_archive,
                      "group_duplicates": nov.group_duplicates}
    out["structure"] = {"node_count": f.node_count, "lookback": lookback(st.expr),
                        "fields": sorted(mot.fields), "families": sorted(mot.families),
                        "data": sorted(mot.data), "is_price_only": mot.is_price_only,
                        "is_single_motif": mot.is_single_motif}
    out["motif_guard"] = capped
    if st.stress is not None:
        out["stress"] = {"world_cpcv": dict(st.stress), "mean_drop": f.stress_drop}
    return out
