"""Benchmark: parse + limits + canonical form of a typical ~30-token formula (issue 3).

Reports, per formula, the median time per formula of

- ``canonical(parse(text))`` on a parse-cache miss (the headline: RL answers are mostly
  unique, so every timed call parses text the cache has not seen), and its best batch
  (closest to the uncontended cost on this shared box),
- ``parse(text)`` alone on a cache miss,
- ``parse(text)`` on a cache hit (the same text again),
- lark's LALR parse of the same text with the grammar file dsl/grammar.lark (tree only:
  no name resolution, no limits, no canonical form), and the ratio lark / ours (cold).

Cache misses are made by timing ``number`` distinct texts per batch after clearing the
cache: variant k of a formula has one extra space before token j for every bit j set in k
(a few spaces, same tokens, same tree).
The box is shared: each statistic is the median over ``repeat`` rounds, one batch of
``number`` calls of every statistic per round (interleaved), and the load average is
printed before and after.

    .venv/bin/python benchmarks/bench_parse.py [--repeat 201] [--number 50]
    .venv/bin/python benchmarks/bench_parse.py --against OLD_TREE [--repeat 201]

``--against`` loads an earlier tree's ``dsl/`` (an unpacked ``git archive``) beside this one
in the same process and times the uncached parse of the 101 alphas (dsl/alpha101.tsv) with
each parser in alternating rounds, after checking that both build the same trees.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import lark

from gymkit.dsl import canonical, parse
from gymkit.dsl.lexer import tokenize
from gymkit.dsl.parser import GRAMMAR_FILE, _parse_cached

FORMULAS = [
    "rank(ts_argmax(signed_power(returns < 0 ? ts_std(returns, 20) : close, 2), 5)) - 0.5",
    "-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)",
    "(rank(open - ts_sum(vwap, 10) / 10) * (-1 * abs(rank(close - vwap))))",
]
GRAMMAR = GRAMMAR_FILE


def batch_us(fn, texts: list[str], clear: bool) -> float:
    """Mean µs per call of ``fn`` over ``texts``; ``clear`` empties the parse cache first."""
    if clear:
        _parse_cached.cache_clear()
    start = time.perf_counter_ns()
    for text in texts:
        fn(text)
    return (time.perf_counter_ns() - start) / len(texts) / 1000


def samples_us(cases: dict[str, tuple], repeat: int) -> dict[str, list[float]]:
    """``repeat`` batch times of each case; one batch of every case per round
    (interleaved, so that load bursts from other users hit all cases alike)."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, (fn, texts, clear) in cases.items():
            samples[name].append(batch_us(fn, texts, clear))
    return samples


def variants(text: str, number: int) -> list[str]:
    """``number`` distinct spellings of ``text`` with the same tokens (see module doc)."""
    starts = [pos for _, _, pos in tokenize(text)[:-1]]
    out = []
    for k in range(number):
        spelled = text
        for j in reversed(range(len(starts))):
            if k >> j & 1:
                spelled = spelled[:starts[j]] + " " + spelled[starts[j]:]
        out.append(spelled)
    return out


def load() -> str:
    """The 1/5/15-minute load averages of this machine."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def against(tree: Path, rounds: int) -> str:
    """Old (``tree``'s dsl/) vs this parser: µs per formula over the 101 alphas, uncached."""
    import sys
    import types

    from gymkit.dsl import parser as new

    pkg = types.ModuleType("_old_dsl")
    pkg.__path__ = [str(tree / "dsl")]  # its modules import each other relatively
    sys.modules["_old_dsl"] = pkg
    old = __import__("_old_dsl.parser", fromlist=["_parse"])
    tsv = Path(__file__).resolve().parent.parent / "dsl" / "alpha101.tsv"
    texts = [line.split("\t")[1] for line in tsv.read_text().splitlines()[1:] if line]
    if any(repr(old._parse(t, None, None, True)) != repr(new._parse(t, None, None, True))
           for t in texts):
        raise SystemExit("the two parsers build different trees")
    times: dict[str, list[float]] = {"old": [], "new": []}
    for k in range(rounds):
        order = (("old", old), ("new", new)) if k % 2 else (("new", new), ("old", old))
        for label, mod in order:
            start = time.process_time()
            for t in texts:
                mod._parse(t, None, None, True)
            times[label].append((time.process_time() - start) / len(texts) * 1e6)
    o, n = (statistics.median(times[k]) for k in ("old", "new"))
    return (f"uncached parse of the {len(texts)} alphas, CPU µs per formula, median of {rounds} "
            f"alternating rounds: old ({tree}) {o:.1f}, new {n:.1f}, ratio {n / o:.3f}; best "
            f"old {min(times['old']):.1f}, best new {min(times['new']):.1f}; load {load()}")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--repeat", type=int, default=201, help="rounds (batches per statistic)")
    args.add_argument("--number", type=int, default=50, help="calls per batch")
    args.add_argument("--against", type=Path, default=None,
                      help="an earlier tree (git archive): same-process parse A/B, then exit")
    opts = args.parse_args()
    if opts.against is not None:
        print(against(opts.against.resolve(), opts.repeat))
        return
    reference = lark.Lark(GRAMMAR.read_text(), parser="lalr", lexer="basic")
    print(f"Python {platform.python_version()}, lark {lark.__version__}, "
          f"{os.cpu_count()} cores, load before: {load()}")
    print("| formula tokens | parse+limits+canonical µs (cold) | best batch µs "
          "| parse+limits µs (cold) | parse µs (cache hit) | lark LALR µs | lark / ours (cold) |")
    print("|---|---|---|---|---|---|---|")
    for text in FORMULAS:
        unique = variants(text, opts.number)
        same = [text] * opts.number
        samples = samples_us({
            "cold": (lambda t: canonical(parse(t)), unique, True),
            "parse": (parse, unique, True),
            "hit": (parse, same, False),
            "lark": (reference.parse, same, False),
        }, opts.repeat)
        m = {name: statistics.median(values) for name, values in samples.items()}
        ours, parse_only, hit, ref = m["cold"], m["parse"], m["hit"], m["lark"]
        best = min(samples["cold"])
        n = len(tokenize(text)) - 1
        print(f"| {n} | {ours:.1f} | {best:.1f} | {parse_only:.1f} | {hit:.2f} | {ref:.1f} "
              f"| {ref / ours:.1f}x |")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
