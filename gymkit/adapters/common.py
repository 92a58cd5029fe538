"""What every trainer adapter shares: one environment per process, a content-addressed score memo,
group formation, fail-safe scoring and the brief look-up.

Fail-safe: :func:`score_rows` never raises on answers.  An exception inside scoring becomes an
:class:`InternalResult` (error code ``'internal'``) for every answer of that group — distinct
from an invalid answer, which is a real :class:`~gymkit.card.ScoreCard` with ``valid=False``.
Adapters map the two differently (e.g. TRL: invalid → None on every channel but ``valid``;
internal → None everywhere, so TRL gives it no advantage at all).

Internal errors and scalar trainers: an adapter that must hand a trainer one number for an
internal error hands it :data:`INTERNAL_REWARD`, the lowest reward of the table (a missing tag's,
:data:`gymkit.verifiers.channels.INVALID_REWARDS`), flagged as internal; an internal error
therefore never outranks an answer, so no output can raise a reward by making scoring fail.

Memo: results are keyed by sha256 of (environment fingerprint, archive version, brief, the
group's completions), so the K per-channel reward functions that a trainer calls on one batch
score it once.  The memo holds the last :data:`MEMO_SIZE` groups (LRU).

Groups: rows of one call with the same group key (``brief_id`` when the dataset carries it,
else the prompt text) are scored together with ``env.score_group`` — the trainer's G answers
to one prompt — so group channels (R2, R9's in-group duplicates) see the whole group.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gymkit.verifiers.channels import INVALID_REWARDS

__all__ = [
    "INTERNAL_REWARD",
    "MEMO_SIZE",
    "InternalResult",
    "UnknownBrief",
    "UnknownEnvironment",
    "brief_text_of",
    "clear_memo",
    "completion_text",
    "get_env",
    "group_keys",
    "model_call_failed",
    "parse_env_ref",
    "resolve_brief",
    "score_group_safe",
    "score_rows",
]

#: The scalar reward of an internal scoring error: the table's lowest (module doc).
INTERNAL_REWARD: float = min(INVALID_REWARDS.values())

#: Number of scored groups kept in the per-process memo.
MEMO_SIZE = 4096

_ENVS: dict[str, Any] = {}
_MEMO: OrderedDict[str, list[Any]] = OrderedDict()


class UnknownEnvironment(ValueError):
    """A reference that names no environment (:func:`parse_env_ref`), not a missing file."""


def parse_env_ref(ref: str) -> tuple[str, str | None]:
    """``(environment, market file or None)`` named by ``ref``: a registered id or a ``.toml``
    path, optionally followed by ``@<market file>`` (the form ``gymkit briefs --market`` writes,
    :func:`gymkit.adapters.datasets.env_ref`).  :class:`UnknownEnvironment` when it names no
    environment, ``ValueError`` when it names one whose market file is missing (one line each)."""
    from gymkit.registry import ENVIRONMENTS, list_envs

    def is_env(s: str) -> bool:
        return s in ENVIRONMENTS or (s.endswith(".toml") and Path(s).is_file())

    if isinstance(ref, str):
        if is_env(ref):
            return ref, None
        at = ref.find("@")
        named = None  # an environment found before an '@' whose market file is missing
        while at >= 0:  # the first '@' after which an environment and a file both exist
            env, market = ref[:at], ref[at + 1:]
            if is_env(env):
                if Path(market).is_file():
                    return env, market
                named = named or (env, market)
            at = ref.find("@", at + 1)
        if named is not None:
            where = "" if Path(named[1]).is_absolute() else (
                f", resolved against the working directory {Path.cwd()}")
            raise ValueError(f"environment {named[0]!r} names the market file {named[1]!r}, which "
                             f"does not exist here{where}")
    raise UnknownEnvironment(f"unknown environment {ref!r}: expected a registered id {list_envs()} "
                             "or an existing .toml, optionally followed by @<existing market file>")


def model_call_failed(state: Any) -> bool:
    """True where verifiers (0.2) recorded a failed model call for a rollout: its ``state`` holds
    an ``error`` (a provider error, a timeout, a malformed response; the rollout then stopped)."""
    try:
        return state is not None and state.get("error") is not None
    except AttributeError:
        return False


def get_env(env_id: str) -> Any:
    """The process's :class:`~gymkit.env.Environment` for ``env_id`` (built once, then reused):
    any reference :func:`parse_env_ref` reads; a market file is loaded strictly (a file that
    needs ``--lenient``, ``--columns`` or ``--adjust``: write it once with ``gymkit market
    clean IN OUT`` and name OUT)."""
    env = _ENVS.get(env_id)
    if env is None:
        from gymkit.registry import make

        name, market = parse_env_ref(env_id)
        if market is None:
            env = make(name)
        else:
            from gymkit.data.loaders import PANEL_SUFFIXES, load_panel

            try:
                panel = load_panel(market)
            except ValueError as exc:
                if not market.lower().endswith(PANEL_SUFFIXES):  # not a panel file at all
                    raise
                raise ValueError(f"{exc} (environment {env_id!r} loads its market strictly: "
                                 f"run 'gymkit market clean {market} OUT' and name OUT)") from None
            env = make(name, market=panel)
        _ENVS[env_id] = env
    return env


@dataclass(frozen=True)
class InternalResult:
    """A card-like result for an answer whose scoring raised (not the answer's fault)."""

    message: str
    valid: bool = False
    reward: float = INTERNAL_REWARD
    internal: bool = True

    @property
    def error_code(self) -> str:
        """Always ``'internal'``."""
        return "internal"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict shaped like a card's top level."""
        return {"valid": False, "error": {"code": "internal", "message": self.message,
                                          "position": None, "layer": "internal"},
                "reward": None, "channels": {}}


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a mapping, else ``obj.name`` (message objects of pydantic/dataclass kind)."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # content parts: {"type": "text", "text": ...} or objects
        return "".join(str(_field(p, "text", "") or "") for p in content
                       if _field(p, "type", "text") in ("text", "output_text"))
    return str(content)


def completion_text(completion: Any) -> str:
    """Text of a completion: a string, one message, or a message list (the last message's content).

    Messages may be dicts or objects with a ``content`` attribute (verifiers and OpenAI hand
    pydantic message objects); content may be a string or a list of text parts.  Never the
    Python repr of a message.
    """
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict) or hasattr(completion, "content"):
        return _content_text(_field(completion, "content"))
    if isinstance(completion, Sequence):
        return completion_text(completion[-1]) if len(completion) else ""
    return str(completion)


@lru_cache(maxsize=4)
def _brief_index(n: int, seed: int) -> dict[str, str]:
    from gymkit.briefs import generate_briefs

    return {b.brief_id: b.text for b in generate_briefs(n, seed)}


def brief_text_of(brief_id: str | None) -> str | None:
    """The text of a generated brief (default generator) by id; None when unknown or absent."""
    if not isinstance(brief_id, str):
        return None
    from gymkit.briefs import DEFAULT_N, DEFAULT_SEED

    return _brief_index(DEFAULT_N, DEFAULT_SEED).get(brief_id)


class UnknownBrief(ValueError):
    """A dataset row names a brief that cannot be found (:func:`resolve_brief`): a configuration
    error, raised through the adapters' never-raise rule (R13 would silently not count)."""


def resolve_brief(brief_id: Any, text: Any = None, where: str = "") -> str | None:
    """The brief text a dataset row names; None when it names none (no id, no text).

    ``text``: the row's own copy of the brief (``extra_info["brief"]`` / ``info["brief"]``, as
    gymkit's dataset rows carry it): used when its id (:func:`gymkit.briefs.brief_id_of`) is
    ``brief_id``, so briefs of any generator seed or count are scored with their brief.  Without
    it, the default generator's brief of that id.  An id that neither finds, or a text that is
    not the id's, raises :class:`UnknownBrief` (prefixed by ``where``): scoring on would drop
    R13 (brief compliance) for that row.
    """
    from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, brief_id_of

    if brief_id is None or brief_id == "":
        return text if isinstance(text, str) and text else None
    if not isinstance(brief_id, str):
        raise UnknownBrief(f"{where}brief_id must be a string, got {type(brief_id).__name__}")
    if isinstance(text, str) and text:
        if brief_id_of(text) != brief_id:
            raise UnknownBrief(f"{where}the row's brief text is not brief {brief_id!r} (its id is "
                             f"{brief_id_of(text)!r}): the row was edited or mixed up")
        return text
    found = brief_text_of(brief_id)
    if found is None:
        raise UnknownBrief(f"{where}unknown brief_id {brief_id[:40]!r}: not a brief of the default "
                         f"generator (n={DEFAULT_N}, seed={DEFAULT_SEED}) and the row carries no "
                         "brief text (its 'brief' field, as gymkit's dataset rows write it), so "
                         "R13 (brief compliance) could not count")
    return found


def group_keys(prompts: Sequence[Any], brief_ids: Sequence[Any] | None) -> list[str]:
    """Group key per row: the ``brief_id`` when given, else the prompt's JSON text."""
    if brief_ids is not None:
        return [str(b) for b in brief_ids]
    return [p if isinstance(p, str) else json.dumps(p, sort_keys=True, default=str) for p in prompts]


def _memo_key(env: Any, brief: str | None, texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in (env.fingerprint, str(env.archive.version), brief or "", *texts):
        h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()


def score_group_safe(env: Any, texts: Sequence[str], brief: str | None) -> list[Any]:
    """``env.score_group`` through the memo; an exception gives InternalResults, never raises."""
    key = _memo_key(env, brief, texts)
    hit = _MEMO.get(key)
    if hit is not None:
        _MEMO.move_to_end(key)
        return hit
    try:
        out: list[Any] = env.score_group(list(texts), brief=brief)
    except Exception as exc:  # the adapter contract: never raise from a reward function
        out = [InternalResult(f"{type(exc).__name__}: {exc}") for _ in texts]
    _MEMO[key] = out
    while len(_MEMO) > MEMO_SIZE:
        _MEMO.popitem(last=False)
    return out


def score_rows(env: Any, prompts: Sequence[Any], completions: Sequence[Any],
               brief_ids: Sequence[Any] | None = None,
               briefs: Sequence[Any] | None = None,
               keys: Sequence[str] | None = None) -> list[Any]:
    """Score a batch row by row in groups (module doc); returns one card or InternalResult per row.

    ``briefs``: each row's own brief text, when the rows carry it (:func:`resolve_brief`); a
    row naming a brief that cannot be found raises :class:`UnknownBrief` before anything is
    scored.  ``keys``: the group of each row (default :func:`group_keys`).
    """
    keys = group_keys(prompts, brief_ids) if keys is None else list(keys)
    texts = [completion_text(c) for c in completions]
    rows: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        rows.setdefault(k, []).append(i)
    resolved = {}
    for idx in rows.values():
        i = idx[0]
        resolved[i] = resolve_brief(brief_ids[i] if brief_ids is not None else None,
                                    briefs[i] if briefs is not None else None, f"row {i}: ")
    out: list[Any] = [None] * len(texts)
    for idx in rows.values():
        brief = resolved[idx[0]]
        for i, res in zip(idx, score_group_safe(env, [texts[i] for i in idx], brief), strict=True):
            out[i] = res
    return out


def clear_memo() -> None:
    """Empty the score memo (tests; or after ``env.commit`` changed nothing the key covers)."""
    _MEMO.clear()
