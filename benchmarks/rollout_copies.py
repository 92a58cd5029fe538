"""Count same-book copies in the groups of `gymkit train rl` runs (R9's channels-v8 rule).

A pair of valid answers of one group (same step, same brief) with bit-identical train CPCV and
different exact canonical forms (``canonical_key``; each answer compared with the first answer
of its CPCV value) is read as one book written two ways (equal CPCV bits from two
different books would be a coincidence; every pair seen so far is a rewrite).  Prints, per run folder: groups, groups with such a pair,
pairs, and the first few examples.

    python benchmarks/rollout_copies.py RUN [RUN ...]
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from gymkit.dsl import canonical_key, parse

TAG = re.compile(r"<alpha>(.*?)</alpha>", re.S)


def copies(rollouts: Path) -> tuple[int, int, list[tuple[str, str]]]:
    """(groups, groups with a same-book pair, the pairs) of one ``rollouts.jsonl``."""
    groups: dict[tuple[int, str], list[dict]] = defaultdict(list)
    with rollouts.open() as fh:
        for line in fh:
            r = json.loads(line)
            groups[(r["step"], r["brief_id"])].append(r)
    pairs: list[tuple[str, str]] = []
    hit = 0
    for rows in groups.values():
        first: dict[float, tuple[str, str]] = {}
        before = len(pairs)
        for r in rows:
            m = TAG.search(r["completion"]) if r["valid"] else None
            if m is None:
                continue
            key = canonical_key(parse(m.group(1)))
            seen = first.setdefault(r["cpcv"], (key, m.group(1)))
            if seen[0] != key:
                pairs.append((seen[1], m.group(1)))
        hit += len(pairs) > before
    return len(groups), hit, pairs


def main(argv: list[str]) -> int:
    for run in argv:
        n, hit, pairs = copies(Path(run) / "rl" / "rollouts.jsonl")
        print(f"{run}: {n} groups, {hit} with a same-book pair ({100 * hit / max(n, 1):.2f} %), "
              f"{len(pairs)} pairs")
        for a, b in pairs[:3]:
            print(f"    {a}  ==  {b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
