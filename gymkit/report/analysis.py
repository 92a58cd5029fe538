"""The numbers a tear sheet shows, computed from an environment (no plotting, no HTML).

:func:`study_formula` scores one answer and re-runs the oracle to keep the daily series
the card does not carry: the train backtest (the environment's train costs, exactly what
scoring saw) and, for the report only, the holdout backtest with the environment's
realistic holdout costs.  Scoring never runs the holdout; a report is a look afterwards.

:func:`study_group` scores a file of answers as one group: channel matrix, GDPO
advantages, validity reasons, and two books built from the valid answers, the
equal-weight book and the correlation-capped book (members chosen on train-window CPCV
only, then the same members followed into the holdout).

Conventions: daily series are labelled by signal date (fill at the next open, earn
open-to-open).  Equity is compounded, ``cumprod(1 + r) − 1``; drawdown is equity over its
running peak minus 1; Sharpe is annualised with √252.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gymkit.card import ScoreCard
from gymkit.env import Environment
from gymkit.holdout import holdout_run
from gymkit.oracle import env_backtest
from gymkit.verifiers.context import window_context
from gymkit.verifiers.factors import FACTOR_NAMES
from gymkit.verifiers.oracle import BacktestResult
from gymkit.verifiers.portfolio import (
    correlation_capped_selection,
    effective_number_of_bets,
    equal_weight_book,
)

from .sheet_data import SheetExtras, sheet_extras
from .why import channel_reasons

__all__ = [
    "HORIZONS",
    "BookStats",
    "FormulaStudy",
    "GroupStudy",
    "as_completion",
    "drawdown",
    "equity",
    "ic_by_horizon",
    "rolling_sharpe",
    "study_formula",
    "study_group",
    "top_neighbours",
]

#: IC decay horizons in sessions: horizon h pairs the weights of day t with the
#: open-to-open return earned from open(t+h) to open(t+h+1).
HORIZONS: tuple[int, ...] = (1, 2, 5, 10, 21)
MIN_IC_NAMES = 5


def as_completion(text: str) -> str:
    """Return ``text`` as an answer: a bare formula is wrapped in ``<alpha>…</alpha>``."""
    if not isinstance(text, str):
        raise TypeError(f"an answer must be a string, got {type(text).__name__}")
    return text if "<alpha" in text or "</alpha>" in text else f"<alpha>{text.strip()}</alpha>"


def equity(r: np.ndarray) -> np.ndarray:
    """Compounded cumulative return ``cumprod(1 + r) − 1`` of daily returns ``r``."""
    return np.cumprod(1.0 + np.asarray(r, dtype=np.float64)) - 1.0


def drawdown(r: np.ndarray) -> np.ndarray:
    """Daily drawdown (≤ 0) of the compounded equity of ``r`` from its running peak."""
    eq = np.cumprod(1.0 + np.asarray(r, dtype=np.float64))
    peak = np.maximum.accumulate(np.maximum(eq, 1.0))
    return eq / peak - 1.0


def rolling_sharpe(r: np.ndarray, window: int) -> np.ndarray:
    """Annualised Sharpe over the trailing ``window`` days (NaN before a full window or at zero variance)."""
    x = np.asarray(r, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    if window < 2 or x.size < window:
        return out
    c1 = np.concatenate([[0.0], np.cumsum(x)])
    c2 = np.concatenate([[0.0], np.cumsum(x * x)])
    s1 = c1[window:] - c1[:-window]
    s2 = c2[window:] - c2[:-window]
    mean = s1 / window
    var = np.maximum(s2 - window * mean * mean, 0.0) / (window - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sr = np.where(var > 1e-24, mean / np.sqrt(var) * np.sqrt(252.0), np.nan)
    out[window - 1:] = sr
    return out


def ic_by_horizon(values: np.ndarray, weights: np.ndarray, fwd: np.ndarray, first: int,
                  horizons: Sequence[int] = HORIZONS, min_names: int = MIN_IC_NAMES) -> np.ndarray:
    """Mean daily IC of the book's weights with open-to-open returns ``h`` sessions ahead.

    ``values`` (T, N) formula values on the window panel, ``weights`` (D, N) the book on the
    judged rows ``first … first+D−1``, ``fwd`` (T, N) forward open-to-open returns
    (``fwd[t]`` = open[t+2]/open[t+1] − 1).  For horizon h the return paired with day t is
    ``fwd[t+h−1]``; per day, the Pearson correlation over names in the book (finite value)
    with a finite return, at least ``min_names`` of them; days without one are skipped.
    Horizon 1 is exactly the book's own IC (the card's ``metrics.ic``).
    """
    w = np.asarray(weights, dtype=np.float64)
    d_n, n = w.shape
    out = np.full(len(horizons), np.nan)
    in_book = np.isfinite(np.asarray(values, dtype=np.float64)[first:first + d_n])
    for k, h in enumerate(horizons):
        lo = first + h - 1
        r = np.full((d_n, n), np.nan)
        avail = max(0, min(d_n, fwd.shape[0] - lo))
        r[:avail] = fwd[lo:lo + avail]
        m = in_book & np.isfinite(r)
        cnt = m.sum(axis=1)
        mf = m.astype(np.float64)
        r0 = np.where(m, r, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            mw = (w * mf).sum(axis=1) / cnt
            mr = r0.sum(axis=1) / cnt
            a = (w - mw[:, None]) * mf
            b = (r0 - mr[:, None]) * mf
            cov = (a * b).sum(axis=1)
            vw = (a * a).sum(axis=1)
            vr = (b * b).sum(axis=1)
            ic = cov / np.sqrt(vw * vr)
        ok = (cnt >= min_names) & (vw > 0) & (vr > 0)
        out[k] = float(ic[ok].mean()) if ok.any() else np.nan
    return out


def top_neighbours(env: Environment, pnl: np.ndarray, k: int = 5) -> tuple[tuple[str, float], ...]:
    """The ``k`` archive entries whose daily train P&L is most correlated (by |corr|) with ``pnl``."""
    if len(env.archive) == 0:
        return ()
    corr = env.archive.correlations(pnl)
    order = sorted(range(corr.size), key=lambda i: (-abs(float(corr[i])), i))[:k]
    forms = env.archive.forms
    return tuple((forms[i], float(corr[i])) for i in order)


@dataclass(frozen=True)
class Backtests:
    """The train backtest (scoring's costs) and the report-only holdout backtest of one formula."""

    values_train: np.ndarray
    train: BacktestResult
    values_full: np.ndarray | None
    holdout: BacktestResult | None


def _backtests(env: Environment, formula: str, holdout: bool) -> Backtests:
    """The train backtest and, with ``holdout``, the holdout one (:mod:`gymkit.holdout`)."""
    train = env_backtest(env, formula, "train")
    if not holdout:
        return Backtests(train.values, train.result, None, None)
    hold = holdout_run(env, train.expr)
    return Backtests(train.values, train.result, hold.values, hold.result)


def _ic_decay(panel_values: np.ndarray, panel: object, bt: BacktestResult, env: Environment) -> np.ndarray:
    s = env.setup
    ctx = window_context(panel, s.split, bt.mode, s.burn_in)  # type: ignore[arg-type]
    i0 = int(np.searchsorted(panel.dates, ctx.panel.dates[0], "left"))  # type: ignore[attr-defined]
    v = panel_values[i0:i0 + ctx.panel.T]
    return ic_by_horizon(v, bt.weights, ctx.fwd, ctx.judged.first)


@dataclass(frozen=True)
class FormulaStudy:
    """Everything the single-formula tear sheet shows (module doc)."""

    label: str
    completion: str
    card: ScoreCard
    train: BacktestResult | None
    holdout: BacktestResult | None
    ic_decay_train: np.ndarray
    ic_decay_holdout: np.ndarray
    factor_returns: np.ndarray | None
    factor_names: tuple[str, ...]
    neighbours: tuple[tuple[str, float], ...]
    reasons: dict[str, str]
    priorities: dict[str, float]
    stress_note: str
    env_id: str
    env_description: str
    extras: SheetExtras | None = None  # quantiles and the archive rank drop (valid answers)


def _stress_note(env: Environment, card: ScoreCard) -> str:
    """One line on the stress worlds: the environment's note when R3 is off, else what ran."""
    if not env.config.stress_worlds:
        return "no stress worlds configured"
    off = [n.split(":", 1)[1].strip() for n in env.notes if n.startswith("jepa_stress:")]
    if off:
        return off[0]
    return f"stress worlds {env.config.stress_worlds!r}"


def study_formula(env: Environment, text: str, *, holdout: bool = False,
                  label: str | None = None, card: ScoreCard | None = None) -> FormulaStudy:
    """Score ``text`` (a formula or a whole answer) on ``env`` and gather the tear-sheet data.

    Train figures only by default; ``holdout=True`` adds the holdout backtest (report only:
    ``gymkit report --holdout`` first claims the look in the holdout ledger, see
    :mod:`gymkit.holdout`; call :func:`gymkit.holdout.claim_holdout` yourself from Python).  ``card``: the answer's card as already scored in its group (the demo's), so
    the sheet shows that reward (group channels included); by default it is scored alone.
    An invalid answer gives a study with its card and no backtests.
    """
    completion = as_completion(text)
    if card is not None and card.env_fingerprint != env.fingerprint:
        raise ValueError("card was scored by another environment than the report's")
    card = env.score(completion) if card is None else card
    nan = np.full(len(HORIZONS), np.nan)
    train = hold = None
    ic_tr, ic_ho = nan, nan
    factor_returns = None
    neighbours: tuple[tuple[str, float], ...] = ()
    extras = None
    if card.valid and card.formula is not None:
        bts = _backtests(env, card.formula, holdout)
        train, hold = bts.train, bts.holdout
        ic_tr = _ic_decay(bts.values_train, env.setup.train, train, env)
        if hold is not None and bts.values_full is not None:
            ic_ho = _ic_decay(bts.values_full, env.market, hold, env)
        ctx = window_context(env.setup.train, env.setup.split, "train", env.setup.burn_in)
        factor_returns = np.asarray(ctx.factors.returns)
        neighbours = top_neighbours(env, train.net)
        extras = sheet_extras(env, card, bts.values_train, train, bts.values_full, hold)
    return FormulaStudy(
        label=label or (card.formula or text.strip()[:60]),
        completion=completion, card=card, train=train, holdout=hold,
        ic_decay_train=ic_tr, ic_decay_holdout=ic_ho, factor_returns=factor_returns,
        factor_names=FACTOR_NAMES, neighbours=neighbours,
        reasons=channel_reasons(card, env.setup.params),
        priorities={n: float(env.config.priorities[n]) for n in env.channels},
        stress_note=_stress_note(env, card), env_id=env.config.env_id,
        env_description=env.config.description, extras=extras)


# ----------------------------------------------------------------------- groups and books
@dataclass(frozen=True)
class BookStats:
    """Statistics of one daily book series against the equal-weight market of the same days."""

    name: str
    members: int
    effective_bets: float
    sharpe: float
    annual_return: float
    total_return: float
    max_drawdown: float
    beta: float
    corr: float
    down_day_mean: float
    up_day_mean: float
    down_day_hit_rate: float
    worst_market_days_mean: float


def book_stats(name: str, book: np.ndarray, market: np.ndarray, members: int,
               effective_bets: float) -> BookStats:
    """Return :class:`BookStats` of ``book`` (D,) vs ``market`` (D,).

    The shared figures come from :func:`gymkit.book.market_relative` (the book command's
    statistics too); here down days are market < 0 (the book command's are below −1.5 %);
    ``worst_market_days_mean`` is the book's mean on the market's worst 5% of days.
    """
    from gymkit.book import market_relative

    b = np.asarray(book, dtype=np.float64)
    m = np.asarray(market, dtype=np.float64)
    rel = market_relative(b, m)
    down = m < 0
    worst = m <= np.quantile(m, 0.05) if m.size else down
    return BookStats(
        name=name, members=members, effective_bets=effective_bets, sharpe=rel["sharpe"],
        annual_return=float(b.mean() * 252) if b.size else 0.0,
        total_return=rel["return"], max_drawdown=rel["max_drawdown"],
        beta=rel["beta"], corr=rel["corr"],
        down_day_mean=float(b[down].mean()) if down.any() else np.nan,
        up_day_mean=float(b[~down].mean()) if (~down).any() else np.nan,
        down_day_hit_rate=float((b[down] > 0).mean()) if down.any() else np.nan,
        worst_market_days_mean=float(b[worst].mean()) if worst.any() else np.nan)


@dataclass(frozen=True)
class BookView:
    """Books on one window: daily series, the market, and their statistics."""

    window: str
    dates: np.ndarray
    market: np.ndarray
    equal_weight: np.ndarray
    capped: np.ndarray
    stats: tuple[BookStats, ...]


@dataclass(frozen=True)
class GroupStudy:
    """Everything the answers tear sheet shows (module doc)."""

    labels: tuple[str, ...]
    completions: tuple[str, ...]
    cards: tuple[ScoreCard, ...]
    advantages: np.ndarray
    share_nonzero: float
    channel_names: tuple[str, ...]
    channel_matrix: np.ndarray
    priorities: np.ndarray
    valid_idx: tuple[int, ...]
    capped_idx: tuple[int, ...]
    books: tuple[BookView, ...]
    stress_note: str
    env_id: str
    env_description: str


def _book_view(window: str, dates: np.ndarray, market: np.ndarray, pnls: np.ndarray,
               capped_cols: list[int]) -> BookView:
    ew = equal_weight_book(pnls)
    cp = equal_weight_book(pnls[:, capped_cols]) if capped_cols else np.zeros_like(ew)
    stats = (
        book_stats("equal-weight", ew, market, pnls.shape[1], effective_number_of_bets(pnls)),
        book_stats("correlation-capped", cp, market, len(capped_cols),
                   effective_number_of_bets(pnls[:, capped_cols]) if capped_cols else 0.0),
        book_stats("market (equal-weight, long only)", market, market, 0, 1.0),
    )
    return BookView(window, dates, market, ew, cp, stats)


def study_group(env: Environment, texts: Sequence[str], labels: Sequence[str] | None = None, *,
                holdout: bool = False) -> GroupStudy:
    """Score the answers ``texts`` as one group on ``env``; build the group and book views.

    ``texts`` are whole answers, taken verbatim (a bare formula without ``<alpha>`` fails
    the gate as ``missing_tag``; :func:`as_completion` wraps one, as the CLI does for plain
    lines).  See the module doc for the books.
    """
    if not texts:
        raise ValueError("the answers file holds no answers")
    completions = tuple(texts)
    names = tuple(labels) if labels is not None else tuple(f"#{i}" for i in range(len(texts)))
    if len(names) != len(completions):
        raise ValueError(f"{len(names)} labels for {len(completions)} answers")
    cards = tuple(env.score_group(list(completions)))
    adv, info = env.group_advantages(cards)
    x, _valid = env.channel_matrix(cards)
    valid_idx = tuple(i for i, c in enumerate(cards) if c.valid and c.pnl is not None)
    books: list[BookView] = []
    capped: list[int] = []
    if valid_idx:
        scores = np.array([cards[i].metrics["cpcv"]["score"] for i in valid_idx])
        turns = np.array([cards[i].metrics["turnover"] for i in valid_idx])
        pnl_tr = np.stack([np.asarray(cards[i].pnl) for i in valid_idx], axis=1)
        capped = correlation_capped_selection(scores, turns, pnl_tr)
        ctx = window_context(env.setup.train, env.setup.split, "train", env.setup.burn_in)
        books.append(_book_view("train", ctx.judged.dates, np.asarray(ctx.market), pnl_tr, capped))
        if holdout:
            runs = [_backtests(env, cards[i].formula or "", True).holdout for i in valid_idx]
            hold = [r for r in runs if r is not None]
            pnl_ho = np.stack([np.asarray(r.net) for r in hold], axis=1)
            books.append(_book_view("holdout", hold[0].dates, np.asarray(hold[0].market), pnl_ho,
                                    capped))
    return GroupStudy(
        labels=names, completions=completions, cards=cards, advantages=np.asarray(adv),
        share_nonzero=float(info.share_nonzero), channel_names=env.channels, channel_matrix=x,
        priorities=env.priorities, valid_idx=valid_idx,
        capped_idx=tuple(valid_idx[j] for j in capped), books=tuple(books),
        stress_note=_stress_note(env, cards[0]), env_id=env.config.env_id,
        env_description=env.config.description)


def rolling_nanmean(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` days ignoring NaN (NaN until a full window or with no data)."""
    v = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(v)
    c = np.concatenate([[0.0], np.cumsum(np.where(ok, v, 0.0))])
    n = np.concatenate([[0], np.cumsum(ok)])
    out = np.full(v.shape, np.nan)
    if v.size >= window:
        s = c[window:] - c[:-window]
        k = n[window:] - n[:-window]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[window - 1:] = np.where(k > 0, s / np.maximum(k, 1), np.nan)
    return out
