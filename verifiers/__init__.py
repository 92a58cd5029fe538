"""gymkit.verifiers: the native oracle — formula values → book → net P&L → statistics.

Public API (DESIGN §4): :func:`backtest` ties book construction (:mod:`.book`), the
judged-days rule (:mod:`.windows`), cost models (:mod:`.costs`), metrics
(:mod:`.metrics`), CPCV (:mod:`.cpcv`) and the factor model (:mod:`.factors`)
together; :mod:`.pbo` and :mod:`.portfolio` hold group- and book-level tools.
"""

from .book import BookPnL, book_pnl, book_weights, forward_open_returns, split_forward_returns
from .context import WindowContext, clear_context_cache, window_context
from .costs import (
    COST_MODELS,
    CostInputs,
    CostModel,
    RealisticCosts,
    TrainCosts,
    cost_model_from_dict,
)
from .cpcv import CPCV, CPCVResult, cpcv_score
from .factors import FACTOR_NAMES, FactorExposure, FactorModel, build_factor_model, factor_signals
from .metrics import Metrics, compute_metrics, max_drawdown, sharpe
from .oracle import BacktestResult, backtest, backtest_cpcv, default_costs
from .pbo import (
    PBOResult,
    cscv_pbo,
    deflated_sharpe_from_stats,
    deflated_sharpe_ratio,
    expected_max_sharpe,
    rank_drop_penalty,
)
from .portfolio import (
    correlation_capped_selection,
    effective_number_of_bets,
    equal_weight_book,
    pnl_correlation,
)
from .windows import BURN_IN, MODES, JudgedWindow, judged_window, window_panel

__all__ = [
    "BURN_IN",
    "COST_MODELS",
    "CPCV",
    "FACTOR_NAMES",
    "MODES",
    "BacktestResult",
    "BookPnL",
    "CPCVResult",
    "CostInputs",
    "CostModel",
    "FactorExposure",
    "FactorModel",
    "JudgedWindow",
    "Metrics",
    "PBOResult",
    "RealisticCosts",
    "TrainCosts",
    "WindowContext",
    "backtest",
    "backtest_cpcv",
    "book_pnl",
    "book_weights",
    "build_factor_model",
    "clear_context_cache",
    "compute_metrics",
    "correlation_capped_selection",
    "cost_model_from_dict",
    "cpcv_score",
    "cscv_pbo",
    "default_costs",
    "deflated_sharpe_from_stats",
    "deflated_sharpe_ratio",
    "effective_number_of_bets",
    "equal_weight_book",
    "expected_max_sharpe",
    "factor_signals",
    "forward_open_returns",
    "judged_window",
    "max_drawdown",
    "pnl_correlation",
    "rank_drop_penalty",
    "sharpe",
    "split_forward_returns",
    "window_context",
    "window_panel",
]
