"""Datasets handed to trainers: one row per brief, carrying ``brief_id`` and never private data.

Row (JSONL, :func:`brief_rows`): ``brief_id``, ``family``, ``split``, ``facets``, ``brief``
(text), ``prompt`` (chat messages: the template's system text + the brief, gymkit/prompt.py)
and ``prompt_version``.  verl rows (:func:`verl_rows`, Parquet): ``data_source``
("gymkit/<env_id>"), ``prompt`` (chat messages), ``ability`` ("alpha-design"),
``reward_model`` ({"style": "rule", "ground_truth": brief_id}) and ``extra_info``
({"brief_id", "split", "index"}).  The prompt vocabulary (fields, group levels, operators) is
the environment's, read from a built environment only when ``env`` is given; otherwise from
the embedded default market's panel without building an environment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gymkit.briefs import Brief
from gymkit.dsl.operators import FIELDS, OPERATORS
from gymkit.prompt import PROMPT_VERSION, chat_messages

__all__ = ["brief_rows", "verl_rows", "write_jsonl", "write_parquet"]

def _vocab(env: Any | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if env is not None:
        return tuple(env.setup.fields), tuple(env.setup.levels)
    from gymkit.data import default_market
    from gymkit.dsl.operators import LEVELS

    m = default_market()  # the embedded panel's vocabulary, as ScoringSetup.build reads it
    return (tuple(n for n in FIELDS if m.has_field(n)),
            tuple(lv for lv in LEVELS if m.has_groups(lv)))


def brief_rows(briefs: Sequence[Brief], env: Any | None = None,
               reasoning: bool | None = None) -> list[dict[str, Any]]:
    """One chat-format row per brief (module doc)."""
    fields, levels = _vocab(env)
    return [{**b.to_dict(), "brief": b.text,
             "prompt": chat_messages(b.text, fields, levels, OPERATORS, reasoning),
             "prompt_version": PROMPT_VERSION} for b in briefs]


def verl_rows(briefs: Sequence[Brief], env_id: str = "us46-default", env: Any | None = None,
              reasoning: bool | None = None) -> list[dict[str, Any]]:
    """verl's RL dataset rows (module doc)."""
    fields, levels = _vocab(env)
    return [{"data_source": f"gymkit/{env_id}",
             "prompt": chat_messages(b.text, fields, levels, OPERATORS, reasoning),
             "ability": "alpha-design",
             "reward_model": {"style": "rule", "ground_truth": b.brief_id},
             "extra_info": {"brief_id": b.brief_id, "split": b.split, "index": i}}
            for i, b in enumerate(briefs)]


def write_jsonl(rows: Sequence[dict[str, Any]], path: str | Path | None) -> None:
    """Write rows as JSON lines to ``path`` (None: standard output)."""
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    if path is None:
        print(text, end="")
    else:
        Path(path).write_text(text, encoding="utf-8")


def write_parquet(rows: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Write rows to a Parquet file (pyarrow; nested dicts/lists become structs/lists)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(list(rows)), str(path))


def configure_briefs_cli(p: Any) -> None:
    """Arguments of ``gymkit briefs``."""
    p.add_argument("--n", type=int, default=500, help="number of briefs to generate (default 500)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--split", choices=["train", "holdout", "probe", "all"], default="all")
    p.add_argument("--format", choices=["jsonl", "verl-parquet"], default="jsonl")
    p.add_argument("--out", default=None, help="output file (JSONL default: standard output)")
    p.add_argument("--env", default="us46-default", help="environment id (verl data_source)")
    p.add_argument("--filter-answers", default=None,
                   help="JSONL of {brief_id, completion} samples: keep briefs solved in some but "
                        "not all tries")
    p.add_argument("--threshold", type=float, default=0.0, help="solved = valid and reward > this")


def run_briefs_cli(args: Any) -> int:
    """Handler of ``gymkit briefs``."""
    from gymkit.briefs import difficulty_filter, generate_briefs, read_samples, split_briefs

    briefs = split_briefs(generate_briefs(args.n, args.seed), args.split)
    if args.filter_answers:
        import sys

        import gymkit

        rep = difficulty_filter(read_samples(args.filter_answers), briefs, gymkit.make(args.env),
                                args.threshold)
        keep = set(rep.kept)
        print(f"difficulty filter: kept {len(keep)} of {len(rep.tries)} sampled briefs",
              file=sys.stderr)
        briefs = [b for b in briefs if b.brief_id in keep]
    if args.format == "verl-parquet":
        if not args.out:
            raise ValueError("--format verl-parquet needs --out FILE")
        write_parquet(verl_rows(briefs, args.env), args.out)
    else:
        write_jsonl(brief_rows(briefs), args.out)
    return 0
