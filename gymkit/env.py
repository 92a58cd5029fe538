"""The environment: score answers into cards, group advantages, the archive, Gymnasium-style API.

An :class:`Environment` is built once from an :class:`~gymkit.config.EnvConfig` and a market
panel; everything per environment (the train panel, the window context, the factor model,
the seeded novelty archive, fingerprints) is prepared then, and each answer costs only its
own parse, evaluation, backtest and channels.

Train-mode isolation: the environment keeps ``split.train(market)`` — a panel physically
without holdout rows — and scoring evaluates and backtests on it alone.  ``self.market``
(the whole panel) is kept for the holdout protocol, which scoring never runs.

State: the only mutable state is the novelty archive.  Scoring reads it; :meth:`commit`
adds accepted (valid) answers and bumps its version; :meth:`archive_snapshot` /
:meth:`archive_restore` save and restore it.  A card records the archive version and digest
it was scored against: the same completion, environment and archive state give a
byte-identical ``card.to_dict(timings=False)`` in every process.

Gymnasium-style single-turn API: ``reset(seed, options) -> (obs, info)``, where ``obs`` is
the task prompt (``options={'brief': text}`` or ``{'briefs': [...]}`` picks the brief, the
latter with the seeded ``np_random``), and ``step(action) -> (obs, reward, terminated,
truncated, info)`` scores the answer: ``reward = card.reward``, ``terminated = True``,
``truncated = False``, ``info = {'card': card, 'valid': ..., 'channels': ...}``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from gymkit.advantages import AdvantageInfo, gdpo_advantages, grpo_advantages
from gymkit.data.panel import Panel
from gymkit.dsl.cache import DEFAULT_CACHE, EvalCache
from gymkit.dsl.operators import OPERATORS
from gymkit.verifiers.archive import NoveltyArchive
from gymkit.verifiers.channels import (
    CHANNELS,
    AnswerFacts,
    ChannelParams,
    is_low_ic_motif,
    is_slow_factor_tilt,
    priority_sum,
)
from gymkit.verifiers.costs import cost_model_from_dict
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.windows import judged_window, window_panel

from .briefs import brief_from_text, compliance_of_text
from .card import TIMING_PHASES, ScoreCard
from .config import EnvConfig
from .prompt import render_prompt
from .scoring import (
    AnswerState,
    ScoringSetup,
    card_metrics,
    facts_of,
    novelties_of,
    risk_channels,
    scalar_reward,
    score_answers,
)
from .seed_archive import seeded_archive

__all__ = ["Environment", "resolve_market"]

CHANNEL_INDEX = {c.name: i for i, c in enumerate(CHANNELS)}


def _stress_worlds(config: EnvConfig, train: Panel) -> tuple[tuple, str, str]:
    """(worlds, digest, problem) for R3: the configured stress worlds of ``train`` (numpy only).

    Worlds that cannot be used here (another market or split, a missing or altered file)
    leave R3 inactive; ``problem`` says why (the environment's notes carry it).
    """
    if not config.stress_worlds or "jepa_stress" not in config.channels:
        return (), "", "not configured"
    from gymkit.jepa.worlds import load_stress_worlds, read_manifest, world_draws

    spec = config.stress_worlds
    if spec == "default" and config.market != "default":  # `gymkit jepa worlds --market` output
        from gymkit.worlds_cache import find_user_worlds

        spec = find_user_worlds(train, config.split_obj) or spec
    try:
        worlds = tuple(load_stress_worlds(spec, train))
        man, _ = read_manifest(spec)
    except (OSError, ValueError, KeyError) as exc:
        hint = "" if spec != "default" or config.market == "default" else (
            "; run: gymkit jepa train --market FILE && gymkit jepa worlds --market FILE")
        return (), "", f"{exc}{hint}"
    digest = "|".join(f"{name}:{d['sha256']}" for w in man["worlds"] if w.get("kept")
                      for name, d in world_draws(w))  # one draw per world: name:sha256 as ever
    return worlds, digest, ""


def resolve_market(config: EnvConfig, market: object | None) -> Panel:
    """The panel an environment runs on: ``market`` if given, else what ``config.market`` names.

    ``market`` may be a :class:`Panel` or a pandas/polars frame (read by ``load_panel``,
    strict); anything else is a ``TypeError`` pointing at ``gymkit.data.load_panel``.
    """
    if market is not None:
        if isinstance(market, Panel):
            return market
        from gymkit.data.loaders import is_frame, load_panel

        if is_frame(market):
            return load_panel(market)
        raise TypeError(f"market must be a gymkit.data.Panel or a pandas/polars DataFrame, got "
                        f"{type(market).__name__}: read files with gymkit.data.load_panel(path)")
    if config.market == "default":
        from gymkit.data import default_market

        return default_market()
    if config.market == "user":
        raise ValueError(f"environment {config.env_id!r} runs on a user market: give it one "
                         "(--market FILE on the command line, market=load_panel(FILE) in Python)")
    from gymkit.data import load_panel

    return load_panel(config.market)


def _guard_note(f: AnswerFacts, p: ChannelParams, reward: float) -> str:
    """The card's note when R10 fired: which of its tests, and whether the cap bound."""
    outcome = ("reward capped at 0" if reward == 0.0 else
               "its reward is negative already, so the cap does not bind")
    if is_low_ic_motif(f, p):
        return f"motif_guard: single-motif or price-only with IC below the threshold; {outcome}"
    if is_slow_factor_tilt(f, p):
        return ("motif_guard: slow factor tilt (turnover below the slow-book line, at least half "
                f"its Sharpe explained by the factors); {outcome}")
    return (f"motif_guard: factor clone (at least {p.factor_clone_share:.0%} of its Sharpe "
            f"explained by the factors, at any turnover); {outcome}")


class Environment:
    """A scoring environment (module doc).  Create it with :func:`gymkit.make`."""

    def __init__(self, config: EnvConfig, market: Panel | None = None, *,
                 cache: EvalCache | None = DEFAULT_CACHE, split_note: str | None = None) -> None:
        from gymkit import __version__
        from gymkit.data.splits import check_split

        self.config = config
        self.market = resolve_market(config, market)
        self.data_fingerprint = self.market.fingerprint
        self.gymkit_version = __version__
        if config.split_partial:  # an EnvConfig built by hand: the one split rule completes it
            from gymkit.config import split_for_market

            config, split_note = split_for_market(config, self.market.dates)
            self.config = config
        split = config.split_obj
        check_split(split, self.market.dates, min_train=config.min_train_sessions,
                    min_holdout=config.min_holdout_sessions)
        train = split.train(self.market)
        worlds, self.stress_digest, self._stress_problem = _stress_worlds(config, train)
        self.fingerprint = config.fingerprint(self.data_fingerprint, self.stress_digest)
        self.setup = ScoringSetup.build(
            train, split, cost_model_from_dict(config.train_costs), CPCV(**config.cpcv),
            config.burn_in, config.channel_params, cache, worlds)
        # The judged days only: the window context (forward returns, market) is built by the
        # first answer scored, so make() runs no compiled kernel.
        self.n_days = judged_window(window_panel(train, split, "train"), split, "train",
                                    config.burn_in).n_days
        self.channels: tuple[str, ...] = tuple(
            n for n in config.channels if worlds or CHANNELS[CHANNEL_INDEX[n]].needs != "stress_worlds")
        self.priorities = np.array([config.priorities[n] for n in self.channels], dtype=np.float64)
        # Briefed use (a brief given to score/score_group): brief compliance (R13) counts too.
        self.briefed_channels: tuple[str, ...] = tuple(
            c.name for c in CHANNELS if c.name in self.channels or c.name == "brief_compliance")
        self._priority_of = {n: config.priorities[n] for n in self.briefed_channels}
        self.split_note = split_note  # how the split was derived, when make() derived it
        from gymkit.holdout import holdout_problem

        no_holdout = holdout_problem(self.market, split)
        self.notes: tuple[str, ...] = (*((split_note,) if split_note else ()),
                                       *((f"holdout: {no_holdout}",) if no_holdout else ()),
                                       *self._inactive_notes())
        self.archive: NoveltyArchive = seeded_archive(
            self.setup, config.archive["seed"], config.archive["capacity"], self.n_days,
            self.data_fingerprint, self.fingerprint)
        self.np_random = np.random.default_rng()
        self._observation: str | None = None
        self._brief: str | None = None
        self._done = True

    def __repr__(self) -> str:
        return (f"Environment({self.config.env_id!r}, {len(self.channels)} channels, archive "
                f"v{self.archive.version} with {len(self.archive)} entries)")

    def _inactive_notes(self) -> Iterable[str]:
        for ch in CHANNELS:
            if ch.name in self.channels:
                continue
            if ch.needs == "stress_worlds" and not self.config.stress_worlds:
                yield f"{ch.name}: no stress worlds configured"
            elif ch.needs == "stress_worlds" and ch.name in self.config.channels:
                yield f"{ch.name}: stress worlds not loaded ({self._stress_problem})"
            elif ch.name == "brief_compliance":
                yield (f"{ch.name}: counts only when a brief is given (Python: score(..., brief=...); CLI: "
                       "`gymkit score --brief ID`; score-file: a record's brief_id or brief; HTTP: the "
                       "request's brief)")
            else:
                yield f"{ch.name}: disabled by configuration"

    # ----------------------------------------------------------------- scoring
    def score(self, completion: str, brief: str | None = None) -> ScoreCard:
        """Score one answer (a group of one: R2 is 0, R9 sees only the archive); ``brief`` as in
        :meth:`score_group`."""
        return self.score_group([completion], brief=brief)[0]

    def score_group(self, completions: Sequence[str], brief: str | None = None, *,
                    states: Sequence[AnswerState] | None = None) -> list[ScoreCard]:
        """Score the answers to one prompt; group channels (R2, R9's in-group duplicates) filled.

        ``brief``: the brief the answers were written for (its text, as generated by
        :mod:`gymkit.briefs`).  When given, brief compliance (R13) is checked on each valid
        answer's AST and counts: the cards carry the ``brief_compliance`` channel (priority
        ``config.priorities['brief_compliance']``, 1.0 by default) and its sha256 digest.  A
        brief text the generator did not make cannot be checked: R13 is 0 and a note says so.
        ``states``: these completions' archive-free states, computed elsewhere
        (:class:`gymkit.answer_pool.AnswerStatePool`), in order; the cards are the same.
        Never raises on bad answers: each becomes an invalid card.
        """
        if isinstance(completions, str):
            raise TypeError("score_group takes a sequence of completions, not one string")
        if brief is not None and not isinstance(brief, str):
            raise TypeError(f"brief must be the brief's text (str) or None, got {type(brief).__name__}")
        active = self.channels if brief is None else self.briefed_channels
        setup = self.setup
        if states is None:
            states = score_answers(completions, setup)
        elif [st.completion for st in states] != list(completions):
            raise ValueError("score_group: states= must be the states of these completions, in order")
        t0 = time.perf_counter()
        novelties = novelties_of(states, self.archive)
        t_novelty = (time.perf_counter() - t0) / max(1, len(states))  # one pass for the group
        for st in states:
            st.timings["novelty"] = t_novelty
        facts = [facts_of(st, nov) for st, nov in zip(states, novelties, strict=True)]
        brief_notes: list[str] = []
        if brief is not None:
            if brief_from_text(brief) is None:
                brief_notes.append("brief_compliance: the brief is not one the generator made; "
                                   "not checked (0)")
            facts = [replace(f, brief_compliance=compliance_of_text(st.expr, brief)) if f.valid else f
                     for st, f in zip(states, facts, strict=True)]
        t0 = time.perf_counter()
        channel_rows = risk_channels(facts, active, setup.params)
        t_channels = (time.perf_counter() - t0) / max(1, len(states))
        digest = None if brief is None else hashlib.sha256(brief.encode()).hexdigest()
        version, archive_digest = self.archive.version, self.archive.digest
        cards = []
        for st, nov, f, ch in zip(states, novelties, facts, channel_rows, strict=True):
            t0 = time.perf_counter()
            reward, capped = scalar_reward(ch, self._priority_of, f, setup.params)
            notes = [n for n in self.notes if not (brief is not None and n.startswith("brief_compliance:"))]
            notes += brief_notes
            if capped:
                notes.append(_guard_note(f, setup.params, reward))
            metrics = card_metrics(st, nov, f, capped)
            tm = {k: st.timings.get(k, 0.0) for k in TIMING_PHASES}
            tm["channels"] = t_channels + time.perf_counter() - t0
            tm["total"] = st.timings["wall"] + tm["novelty"] + tm["channels"]
            cards.append(ScoreCard(
                valid=st.valid, error=st.error, channels=ch, reward=reward,
                metrics=metrics, timings=tm, notes=tuple(notes),
                formula=st.formula, canonical=st.canonical, env_id=self.config.env_id,
                env_fingerprint=self.fingerprint, data_fingerprint=self.data_fingerprint,
                archive_version=version, archive_digest=archive_digest,
                gymkit_version=self.gymkit_version, brief_digest=digest,
                pnl=st.bt.net if (st.valid and st.bt is not None) else None))
        return cards

    def _group_channels(self, cards: Sequence[ScoreCard]) -> tuple[str, ...]:
        """The channels of one group's cards: the active ones, plus R13 when briefed."""
        names = tuple(cards[0].channels) if cards else self.channels
        for i, c in enumerate(cards):
            if tuple(c.channels) != names:
                raise ValueError(f"card {i} has channels {list(c.channels)}, card 0 "
                                 f"{list(names)}: score one group with one brief (or none)")
        return names

    def channel_matrix(self, cards: Sequence[ScoreCard]) -> tuple[np.ndarray, np.ndarray]:
        """Return ((G, K) raw channel values of the cards' channels, (G,) valid mask).

        The columns are the active channels, plus ``brief_compliance`` for briefed cards."""
        self._check_cards(cards)
        names = self._group_channels(cards)
        x = np.array([c.channel_vector(names) for c in cards], dtype=np.float64)
        return x.reshape(len(cards), len(names)), np.array([c.valid for c in cards], dtype=bool)

    def group_advantages(self, cards: Sequence[ScoreCard]) -> tuple[np.ndarray, AdvantageInfo]:
        """GDPO advantages of one group's cards (their channels, priorities, validity, floor).

        Guarded (no positive advantage, ranked below every eligible answer): the answers whose
        reward the motif guard (R10) actually capped, i.e. it fired and Σ priority·channel was
        positive; the seed's rule is that such an answer "loses its positive reward".  An answer
        the guard fired on whose reward was not positive keeps its place among the eligible
        ones (R10's −1 still counts in its channel): were every fired answer guarded, a market
        where most formulas have IC < the threshold (a real one) would leave one eligible
        answer per group, which the zero-sum projection hands the whole positive advantage
        however bad it is."""
        x, valid = self.channel_matrix(cards)
        names = self._group_channels(cards)
        prio = np.array([self._priority_of[n] for n in names], dtype=np.float64)
        core = names.index("cpcv") if "cpcv" in names else 0
        guarded = np.array([c.valid and c.motif_capped
                            and priority_sum(c.channels, self._priority_of) > 0.0 for c in cards],
                           dtype=bool)
        adv, info = gdpo_advantages(x, prio, valid, floor=self.config.advantage_floor, core=core,
                                    guarded=guarded)
        # The diagnostics' scalar reward is the cards' reward, which the motif guard (R10) may
        # have capped at 0; the pure GDPO function only sees the channel matrix.
        rewards = np.array([c.reward for c in cards], dtype=np.float64)
        return adv, replace(info, scalar_reward=rewards, grpo_advantage=grpo_advantages(rewards))

    def _check_cards(self, cards: Sequence[ScoreCard]) -> None:
        for i, c in enumerate(cards):
            if not isinstance(c, ScoreCard):
                raise TypeError(f"item {i} is a {type(c).__name__}, not a ScoreCard")
            if c.env_fingerprint != self.fingerprint:
                raise ValueError(f"card {i} was scored by another environment "
                                 f"({c.env_fingerprint[:12]} != {self.fingerprint[:12]})")

    # ------------------------------------------------------------------ archive
    def commit(self, items: Sequence[ScoreCard | str]) -> int:
        """Add the accepted (valid) answers among ``items`` (cards or completions) to the archive.

        Returns how many entries were added (known forms and invalid answers are skipped).
        Completions are scored first.  This is the only call that changes the archive.
        """
        added = 0
        for i, item in enumerate(items):
            card = self.score(item) if isinstance(item, str) else item
            self._check_cards([card])
            if not card.valid or card.canonical is None:
                continue
            if card.pnl is None:
                raise ValueError(f"card {i} carries no P&L (was it rebuilt from JSON?)")
            added += bool(self.archive.add(card.canonical, card.pnl))
        return added

    def archive_snapshot(self) -> bytes:
        """The archive's bytes (:meth:`NoveltyArchive.snapshot`)."""
        return self.archive.snapshot()

    def archive_restore(self, blob: bytes) -> None:
        """Replace the archive with one restored from :meth:`archive_snapshot` bytes."""
        arc = NoveltyArchive.restore(blob)
        if arc.n_days != self.n_days:
            raise ValueError(f"archive snapshot covers {arc.n_days} days; this environment judges "
                             f"{self.n_days}")
        self.archive = arc

    # --------------------------------------------------------- Gymnasium style
    def observation(self, brief: str | None = None) -> str:
        """The task prompt (gymkit/prompt.py, version ``PROMPT_VERSION``): contract, vocabulary, brief."""
        return render_prompt(brief, self.setup.fields, self.setup.levels, OPERATORS)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        """Start an episode: return (prompt, info).  ``seed`` reseeds ``np_random``."""
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        opts = dict(options or {})
        brief = opts.get("brief")
        if brief is None and opts.get("briefs"):
            briefs = list(opts["briefs"])
            brief = briefs[int(self.np_random.integers(len(briefs)))]
        self._brief = brief
        self._observation = self.observation(brief)
        self._done = False
        info = {"env_id": self.config.env_id, "env_fingerprint": self.fingerprint,
                "data_fingerprint": self.data_fingerprint, "archive_version": self.archive.version,
                "channels": list(self.channels), "notes": list(self.notes), "brief": brief}
        return self._observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        """Score the answer ``action``; the episode ends (single turn)."""
        if self._observation is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over (single turn): call reset() first")
        card = self.score_group([action], brief=self._brief)[0]
        self._done = True
        info = {"card": card, "valid": card.valid, "channels": dict(card.channels),
                "error": None if card.error is None else card.error.code}
        return self._observation, card.reward, True, False, info
