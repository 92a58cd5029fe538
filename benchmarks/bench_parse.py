"""Benchmark: parse + limits + canonical form of a typical ~30-token formula (issue 3).

Reports the median time per formula of gymkit's parser (``parse`` with its limit checks,
then ``canonical``), of ``parse`` alone, and of lark's LALR parse of the same text with the
reference grammar in tests/dsl (tree only, no name resolution, no limits).

    .venv/bin/python benchmarks/bench_parse.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import lark
from gymkit.dsl import canonical, parse
from gymkit.dsl.lexer import tokenize

FORMULAS = [
    "rank(ts_argmax(signed_power(returns < 0 ? ts_std(returns, 20) : close, 2), 5)) - 0.5",
    "-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)",
    "(rank(open - ts_sum(vwap, 10) / 10) * (-1 * abs(rank(close - vwap))))",
]
GRAMMAR = Path(__file__).resolve().parent.parent / "tests" / "dsl" / "reference_grammar.lark"


def median_us(fn, text: str, repeat: int = 41, number: int = 200) -> float:
    """Median over ``repeat`` batches of the mean µs per call within a batch of ``number``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(number):
            fn(text)
        samples.append((time.perf_counter_ns() - start) / number / 1000)
    return statistics.median(samples)


def main() -> None:
    reference = lark.Lark(GRAMMAR.read_text(), parser="lalr", lexer="basic")
    print("| formula tokens | parse+limits+canonical µs | parse+limits µs | lark LALR µs | ratio |")
    print("|---|---|---|---|---|")
    for text in FORMULAS:
        ours = median_us(lambda t: canonical(parse(t)), text)
        parse_only = median_us(parse, text)
        ref = median_us(reference.parse, text)
        n = len(tokenize(text)) - 1
        print(f"| {n} | {ours:.1f} | {parse_only:.1f} | {ref:.1f} | {ref / ours:.1f}x faster |")


if __name__ == "__main__":
    main()
