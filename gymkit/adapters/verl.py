"""verl adapter: ``compute_score`` for verl's custom reward function and its batch variant.

Loading: verl reads ``reward.custom_reward_function.path`` / ``.name`` (verl >= 0.9; older
releases have the block at the top level) with its own ``load_extern_object``.  Both forms work:

* ``path: pkg://gymkit.adapters.verl`` (verl >= 0.7 imports the installed module), or
* ``path: <site-packages>/gymkit/adapters/verl.py`` — verl then runs this file with
  ``spec_from_file_location`` and no parent package, so this module uses absolute imports only.

Calls: the naive reward managers call ``compute_score(data_source=, solution_str=,
ground_truth=, extra_info=)``; ``reward_manager=batch`` calls :func:`compute_score_batch`
(``data_sources=, solution_strs=, ground_truths=, extra_infos=``) once per batch, so each
brief's answers are scored as one group (R2 filled).  A dict result holds ``'score'``; verl
collects its other keys per sample into ``reward_extra_info``, so every sample carries the same
keys: ``score`` (the card's scalar reward, passed through), ``valid`` (1/0), ``internal_error``
(1 when scoring raised; score ``INTERNAL_REWARD``, the table's lowest), one per active channel
(raw value; invalid answers carry the card's penalties/zeros) and ``brief_compliance``.
``ground_truth`` is the ``brief_id`` (``gymkit briefs --format verl-parquet`` puts it there and in
``extra_info``): the answer is scored with its brief, so R13 (brief compliance) counts in the
score, and ``brief_compliance`` reports it (0.0 for a row without a brief).  The brief is
found by its id among the default generator's briefs, or from the row's own copy,
``extra_info["brief"]`` (the rows carry it, so briefs of any ``--seed``/``--n`` score with their
brief); a row whose brief cannot be found raises a one-line ``ValueError`` naming the sample.

``data_source`` names the environment: ``"gymkit/<env_id>"`` (``"gymkit"`` alone =
us46-default), ``"gymkit/<absolute .toml path>"``, and either with ``@<absolute market path>``
appended — the forms ``gymkit briefs [--env X] --market FILE --format verl-parquet`` writes
(:func:`gymkit.adapters.common.parse_env_ref`; the files must exist on the reward worker, and the
market loads strictly: a file that fails strict loading is a one-line ``ValueError`` naming
``gymkit market clean``).  Any other data source — a typo, or another task's rows routed here — raises a
one-line ``ValueError`` naming it and the sample index: it is a configuration error, never a
silent 0 and never scored as an alpha.  Answers themselves never raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gymkit.adapters.common import (
    INTERNAL_REWARD,
    InternalResult,
    UnknownBrief,
    UnknownEnvironment,
    get_env,
    parse_env_ref,
    resolve_brief,
    score_rows,
)

__all__ = ["DATA_SOURCE", "compute_score", "compute_score_batch", "env_id_of"]

#: ``data_source`` of rows for the default environment.
DATA_SOURCE = "gymkit/us46-default"


def env_id_of(data_source: Any, where: str = "data_source") -> str:
    """Environment reference named by ``data_source`` (module doc); raises ValueError for
    anything not gymkit's."""
    from gymkit.registry import list_envs

    if data_source == "gymkit":
        return "us46-default"
    if isinstance(data_source, str) and data_source.startswith("gymkit/"):
        try:
            parse_env_ref(data_source[7:])
            return data_source[7:]
        except UnknownEnvironment:
            pass
        except ValueError as exc:  # an environment whose market file is missing
            raise ValueError(f"{where}: data_source {data_source!r}: {exc}") from None
    raise ValueError(f"{where}: unknown data_source {data_source!r}; gymkit scores "
                     f"{['gymkit/' + e for e in list_envs()]}, gymkit/<existing .toml> and either "
                     "followed by @<existing market file> (route other data sources to their own "
                     "reward function)")


def _brief_id(ground_truth: Any, extra_info: Any) -> str | None:
    if isinstance(extra_info, dict) and isinstance(extra_info.get("brief_id"), str):
        return extra_info["brief_id"]
    return ground_truth if isinstance(ground_truth, str) and ground_truth else None


def _brief_text(extra_info: Any) -> Any:
    return extra_info.get("brief") if isinstance(extra_info, dict) else None


def _result_dict(res: Any, channels: Sequence[str]) -> dict[str, float]:
    """One sample's dict: the active channels and R13 ``brief_compliance`` (counted in the score
    whenever the row names its brief, 0.0 when it does not), the same keys for every sample."""
    if getattr(res, "internal", False):
        return {"score": INTERNAL_REWARD, "valid": 0.0, "internal_error": 1.0,
                **{c: 0.0 for c in channels}, "brief_compliance": 0.0}
    return {"score": float(res.reward), "valid": float(res.valid), "internal_error": 0.0,
            **{c: float(res.channels[c]) for c in channels},
            "brief_compliance": float(res.channels.get("brief_compliance", 0.0))}


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any], extra_infos: Sequence[Any] | None = None,
                        **kwargs: Any) -> list[dict[str, float]]:
    """Batch form (verl ``reward_manager=batch``): one dict per sample, each brief one group."""
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n:
        raise ValueError(f"compute_score_batch: {len(data_sources)} data_sources, {n} "
                         f"solution_strs and {len(ground_truths)} ground_truths differ in length")
    infos = list(extra_infos) if extra_infos is not None else [None] * n
    env_ids = [env_id_of(ds, f"sample {i}") for i, ds in enumerate(data_sources)]
    ids = [_brief_id(g, e) for g, e in zip(ground_truths, infos, strict=True)]
    texts = [_brief_text(e) for e in infos]
    # The group of a row: its brief; a row without one groups with the other samples of its
    # dataset row (extra_info["index"], shared by verl's n rollouts of one prompt), else alone;
    # never with unrelated prompts (R2 and R9's duplicate penalty compare within a group).
    keys = [b or (f"\x00row {e['index']}" if isinstance(e, dict) and "index" in e else f"\x00sample {i}")
            for i, (b, e) in enumerate(zip(ids, infos, strict=True))]
    out: list[dict[str, float] | None] = [None] * n
    by_env: dict[str, list[int]] = {}
    for i, env_id in enumerate(env_ids):
        by_env.setdefault(env_id, []).append(i)
    envs = {}
    for env_id, idx in by_env.items():  # a market that fails to load is a configuration error
        try:
            envs[env_id] = get_env(env_id)
        except ValueError as exc:
            raise ValueError(f"sample {idx[0]}: data_source 'gymkit/{env_id}': {exc}") from None
    for i, (b, t) in enumerate(zip(ids, texts, strict=True)):  # before scoring anything
        resolve_brief(b, t, f"sample {i}: ")
    for env_id, idx in by_env.items():
        try:
            env = envs[env_id]
            channels = env.channels
            res = score_rows(env, [keys[i] for i in idx], [solution_strs[i] for i in idx],
                             [ids[i] for i in idx], [texts[i] for i in idx],
                             keys=[keys[i] for i in idx])
        except UnknownBrief:
            raise
        except Exception as exc:  # never raise on answers: the environment itself failed
            from gymkit.verifiers.channels import CHANNEL_NAMES

            channels = tuple(c for c in CHANNEL_NAMES if c != "jepa_stress")
            res = [InternalResult(f"{type(exc).__name__}: {exc}") for _ in idx]
        for i, r in zip(idx, res, strict=True):
            out[i] = _result_dict(r, channels)
    return [o for o in out if o is not None]


def compute_score(data_source: str, solution_str: str, ground_truth: Any = None,
                  extra_info: Any = None, **kwargs: Any) -> dict[str, float]:
    """Single-sample form (verl naive manager): the dict of one answer scored as a group of one;
    an error names the sample by ``extra_info["index"]`` when the row carries it."""
    try:
        return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]
    except ValueError as exc:
        index = extra_info.get("index") if isinstance(extra_info, dict) else None
        text = str(exc)
        if text.startswith("sample 0: "):
            text = (f"sample {index}: " if index is not None else "") + text[len("sample 0: "):]
        raise ValueError(text) from None
