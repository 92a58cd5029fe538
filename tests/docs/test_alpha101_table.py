"""docs/trainers.md's alpha101 figures are what the documented commands print today.

The page's table row is ``gymkit probe --corpus alpha101 --holdout`` on the embedded market and
the sentence after it ``gymkit book --corpus alpha101 --window holdout`` (a second look at the
same formula set, so ``--force-holdout``, as the page says).  Both run here on a ledger of this
test's own; a change of the reward, the corpus or the market that moves a printed figure fails
here until the page is updated.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gymkit.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "trainers.md"
pytestmark = pytest.mark.slow


def _num(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}".replace("-", "−")


def _pct(x: float) -> str:
    return _num(100.0 * x, 1) + "%"


def _json_out(capsys) -> dict:
    out = capsys.readouterr().out
    start = out.index("{")  # probe prints its one line about the written result first
    return json.loads(out[start:])


def test_the_alpha101_row_and_books_are_current(tmp_path, capsys) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "(`gymkit probe --corpus alpha101 --holdout`)" in text
    ledger = str(tmp_path / "ledger.sqlite")
    assert main(["probe", "--corpus", "alpha101", "--holdout", "--json", "--ledger", ledger,
                 "--out", str(tmp_path / "probe")]) == 0
    row = _json_out(capsys)
    want = (f"| alpha101 | {_num(row['train_cpcv'])} | {_num(row['holdout_score'])} | "
            f"{row['n_valid']} / {row['n']} | {row['families']} | {_pct(row['book_return'])} | "
            f"{_num(row['book_sharpe'])} |")
    shown = next((ln for ln in text.splitlines() if ln.startswith("| alpha101 |")), None)
    assert shown == want, f"docs/trainers.md shows\n{shown}\nthe command prints\n{want}"

    assert main(["book", "--corpus", "alpha101", "--window", "holdout", "--force-holdout",
                 "--ledger", ledger]) == 0
    books = _json_out(capsys)
    eq, cap = books["equal_weight"], books["correlation_capped"]
    want = (f"equal-weight book of the {eq['members']} {_pct(eq['return'])} (Sharpe "
            f"{_num(eq['sharpe'])}, β {_num(eq['beta'])}, {eq['effective_bets']:.1f} effective "
            f"bets); correlation-capped ({cap['members']} members, capped on train P&L) "
            f"{_pct(cap['return'])} (Sharpe {_num(cap['sharpe'])}, {cap['effective_bets']:.1f} "
            "effective bets)")
    flat = " ".join(text.split())
    shown = re.search(r"equal-weight book of the \d+ .*?effective bets\); correlation-capped "
                      r".*?effective bets\)", flat)
    assert shown and shown.group(0) == want, (
        f"docs/trainers.md shows\n{shown and shown.group(0)}\nthe command prints\n{want}")
