"""Bulk scoring on torch (issue 26): many formulas on one panel held on a device.

A second implementation of the CPU (Numba) contract, gated against it (tests/bulk):
:func:`gymkit.bulk.evaluator.evaluate_many` (values) and :func:`gymkit.bulk.book.book_many`
(weights, gross/net P&L, turnover).  Importing this package imports torch; scoring
(``gymkit.make`` / ``env.score``) never imports it.
"""

from gymkit.bulk.book import BookBatch, book_many
from gymkit.bulk.evaluator import DevicePanel, evaluate_many, plan

__all__ = ["BookBatch", "DevicePanel", "book_many", "evaluate_many", "plan"]
