"""Datasets handed to trainers: one row per brief, carrying ``brief_id`` and never private data.

Row (JSONL, :func:`brief_rows`): ``brief_id``, ``family``, ``split``, ``facets``, ``brief``
(text), ``prompt`` (chat messages: the template's system text + the brief, gymkit/prompt.py)
and ``prompt_version``.  verl rows (:func:`verl_rows`, Parquet): ``data_source``
("gymkit/<env_id>"), ``prompt`` (chat messages), ``ability`` ("alpha-design"),
``reward_model`` ({"style": "rule", "ground_truth": brief_id}) and ``extra_info``
({"brief_id", "split", "index", "brief"}: the brief's text travels with the row, so the reward
side scores briefs of any generator seed with their brief).  The prompt vocabulary (fields, group levels, operators) is
the environment's: read from ``env`` when given (a built environment, or just its market
panel), otherwise from the embedded default market's panel, without building an environment.

``gymkit briefs --env X [--market FILE]`` writes the vocabulary of X's market (or of FILE);
``data_source`` names the environment stably: ``gymkit/<id>`` for a registered id,
``gymkit/<absolute .toml path>`` for a config file, with ``@<absolute market path>`` appended
under ``--market``.  :mod:`gymkit.adapters.verl` scores every form on the environment and market
it names (:func:`gymkit.adapters.common.parse_env_ref`); the market file is loaded strictly there,
so a file that needed ``--lenient``/``--columns``/``--adjust`` is named after ``gymkit market
clean`` has written it once (``briefs`` refuses to write verl rows whose file, loaded strictly, is
not the market it wrote the prompts for).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gymkit.briefs import Brief
from gymkit.dsl.operators import FIELDS, OPERATORS
from gymkit.prompt import PROMPT_VERSION, chat_messages

__all__ = ["brief_rows", "check_strict_market", "env_ref", "verl_rows", "vocabulary", "write_jsonl",
           "write_parquet"]


def vocabulary(env: Any | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(fields, group levels) a prompt names: those of ``env`` (an Environment, or a market
    :class:`~gymkit.data.Panel` read as ``ScoringSetup.build`` reads it), else the default market's."""
    setup = getattr(env, "setup", None)
    if setup is not None:
        return tuple(setup.fields), tuple(setup.levels)
    from gymkit.dsl.operators import LEVELS

    if env is None:
        from gymkit.data import default_market

        env = default_market()  # the embedded panel's vocabulary
    return (tuple(n for n in FIELDS if env.has_field(n)),
            tuple(lv for lv in LEVELS if env.has_groups(lv)))


def env_ref(env: str, market: str | None = None) -> str:
    """How ``data_source`` names ``env`` (a registered id or a .toml path) after ``gymkit/``,
    on ``market`` when given: the same string from any working directory (module doc)."""
    from gymkit.registry import ENVIRONMENTS

    ref = env if env in ENVIRONMENTS else str(Path(env).resolve())
    return ref + (f"@{Path(market).resolve()}" if market is not None else "")


def brief_rows(briefs: Sequence[Brief], env: Any | None = None,
               reasoning: bool | None = None) -> list[dict[str, Any]]:
    """One chat-format row per brief; ``env``: an Environment or a market Panel (module doc)."""
    fields, levels = vocabulary(env)
    return [{**b.to_dict(), "brief": b.text,
             "prompt": chat_messages(b.text, fields, levels, OPERATORS, reasoning),
             "prompt_version": PROMPT_VERSION} for b in briefs]


def verl_rows(briefs: Sequence[Brief], env_id: str = "us46-default", env: Any | None = None,
              reasoning: bool | None = None) -> list[dict[str, Any]]:
    """verl's RL dataset rows; ``data_source`` is ``gymkit/<env_id>`` (a registered id, or
    :func:`env_ref`'s name of a config file or market); ``env`` as in :func:`brief_rows`."""
    fields, levels = vocabulary(env)
    return [{"data_source": f"gymkit/{env_id}",
             "prompt": chat_messages(b.text, fields, levels, OPERATORS, reasoning),
             "ability": "alpha-design",
             "reward_model": {"style": "rule", "ground_truth": b.brief_id},
             "extra_info": {"brief_id": b.brief_id, "split": b.split, "index": i,
                            "brief": b.text}}
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
    p.add_argument("--env", default="us46-default",
                   help="environment id or .toml: its market's vocabulary, verl data_source")
    p.add_argument("--filter-answers", default=None,
                   help="JSONL of {brief_id, completion} samples: keep briefs solved in some but "
                        "not all tries")
    p.add_argument("--threshold", type=float, default=0.0, help="solved = valid and reward > this")
    from gymkit.cli.options import add_market_args

    # the shared --market/--lenient/--columns/--adjust; `gymkit briefs --split` is the briefs' split
    add_market_args(p, split=False)


def check_strict_market(path: str, fingerprint: str, who: str = "verl's reward function") -> None:
    """``ValueError`` (one line) unless ``path`` loaded strictly, as verl's reward function loads
    a row's ``data_source``, is the market the prompts were written for (``fingerprint``): with
    ``--lenient``, ``--columns`` or ``--adjust`` it may fail there, or, worse, load a different
    market (unadjusted prices) and score every answer on it."""
    import warnings

    from gymkit.data.loaders import load_panel

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same = load_panel(path).fingerprint == fingerprint
    except ValueError:
        same = False
    if not same:
        raise ValueError(f"{who} loads {path} strictly from each row's "
                         "data_source, without --lenient/--columns/--adjust, which does not give "
                         f"this market: write it once with 'gymkit market clean {path} OUT' (same "
                         "options) and run briefs on OUT")


def run_briefs_cli(args: Any) -> int:
    """Handler of ``gymkit briefs``: the prompts name the fields and group levels of the
    environment's market (``--env``, or ``--market FILE``)."""
    import sys

    from gymkit.briefs import difficulty_filter, generate_briefs, read_samples, split_briefs
    from gymkit.cli.options import make_env

    briefs = split_briefs(generate_briefs(args.n, args.seed), args.split)
    # args.split is the briefs' split, not a market split (make_env reads --split KEYS from it)
    market_args = argparse.Namespace(**{**vars(args), "split": None})
    if args.filter_answers:
        env = make_env(market_args, args.env)
        rep = difficulty_filter(read_samples(args.filter_answers), briefs, env, args.threshold)
        keep = set(rep.kept)
        print(f"difficulty filter: kept {len(keep)} of {len(rep.tries)} sampled briefs",
              file=sys.stderr)
        briefs = [b for b in briefs if b.brief_id in keep]
    else:  # the vocabulary only: no need to seed the novelty archive
        env = make_env(market_args, args.env, archive={"seed": "none"})
    if args.format == "verl-parquet":
        if not args.out:
            raise ValueError("--format verl-parquet needs --out FILE")
        if args.market is not None and (args.lenient or args.columns or args.adjust):
            check_strict_market(args.market, env.market.fingerprint)
        write_parquet(verl_rows(briefs, env_ref(args.env, args.market), env), args.out)
    else:
        write_jsonl(brief_rows(briefs, env), args.out)
    if args.out:  # stdout stays the data when there is no --out; a file gets a receipt
        print(f"wrote {len(briefs)} briefs (split {args.split}) to {args.out}", file=sys.stderr)
    return 0
