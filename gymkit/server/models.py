"""Request and response schemas of the verifier server (pydantic; they make ``/openapi.json``).

Native requests are strict: unknown keys, wrong JSON types (no coercion: ``"1"`` is not an
int), non-finite numbers and over-long strings or lists are 422 with a one-line message.  The
lengths written here are the hard ceilings; the server's configured limits (``/v1/info``)
may be lower and are checked with the same 422.  Compatibility requests (OpenRLHF, slime,
NeMo-Gym) accept and ignore keys those trainers add.  Responses of the scoring routes are
assembled from the cards' deterministic JSON bytes; the models below document their shape.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from .settings import HARD_MAX_ANSWER_CHARS, HARD_MAX_COMPLETIONS

__all__ = [
    "AdvantagesRequest",
    "AdvantagesResponse",
    "ArchiveResponse",
    "CommitRequest",
    "CommitResponse",
    "ErrorResponse",
    "InfoResponse",
    "NemoVerifyRequest",
    "NemoVerifyResponse",
    "OpenRLHFRequest",
    "OpenRLHFResponse",
    "ScoreGroupRequest",
    "ScoreGroupResponse",
    "ScoreRequest",
    "ScoreResponse",
    "SlimeRequest",
    "SlimeResponse",
]

Answer = Annotated[str, StringConstraints(max_length=HARD_MAX_ANSWER_CHARS)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


def _integral(v: Any) -> Any:
    """JSON Schema's ``integer`` admits 2.0: a float with no fraction is that integer; anything
    else is left for strict validation to refuse (no other coercion, ``"1"`` stays invalid)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


#: A strict int that also takes JSON numbers like ``2.0`` (JSON Schema integers).
JsonInt = Annotated[int, BeforeValidator(_integral)]
MAX_CHANNELS = 64
_COMPLETIONS_DOC = ("Answers, each the model's whole completion (reasoning, then one "
                    "<alpha>formula</alpha>); order is preserved in the response.")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ------------------------------------------------------------------------ requests
class ScoreRequest(_Strict):
    """``POST /v1/score``: each completion scored alone, exactly as ``env.score``."""

    completions: list[Answer] = Field(min_length=1, max_length=HARD_MAX_COMPLETIONS,
                                      description=_COMPLETIONS_DOC)
    include_timings: bool = Field(False, description="add per-phase timings to each entry "
                                  "(they vary between runs, so the bytes then differ)")


class ScoreGroupRequest(ScoreRequest):
    """``POST /v1/score_group``: G answers to one prompt (``env.score_group``) + GDPO advantages."""

    brief: Annotated[str, StringConstraints(max_length=4096)] | None = Field(
        None, description="the brief's text (as gymkit.briefs generates it), or a generated "
        "brief's id (16 hex digits, as `gymkit briefs` lists them; an id no generated brief has "
        "is 422 unknown_brief): brief compliance (R13) is checked and counts; a text the "
        "generator did not make gets R13 = 0 and a note; recorded as a sha256 digest in every card")


class AdvantagesRequest(_Strict):
    """``POST /v1/advantages``: the pure ``gdpo_advantages`` of a channel matrix."""

    channels: list[Annotated[list[Finite], Field(min_length=1, max_length=MAX_CHANNELS)]] = Field(
        min_length=1, max_length=HARD_MAX_COMPLETIONS,
        description="G rows (answers) of K raw channel values")
    valid: list[bool] = Field(min_length=1, max_length=HARD_MAX_COMPLETIONS,
                              description="validity of each answer (G)")
    priorities: list[Finite] | None = Field(
        None, max_length=MAX_CHANNELS,
        description="K channel priorities; default: the environment's active priorities")
    floor: Finite | None = Field(None, description="advantage floor on the core column (off when null)")
    core: JsonInt = Field(0, ge=0, lt=MAX_CHANNELS, description="core column for the floor")
    guarded: list[bool] | None = Field(
        None, max_length=HARD_MAX_COMPLETIONS,
        description="answers whose reward the motif guard (R10) actually capped: no positive "
                    "advantage, ranked below every eligible answer. To reproduce "
                    "/v1/score_group's advantages, an answer is guarded when its card is valid, "
                    "its metrics.motif_guard is true and the sum over the active channels of "
                    "priority x channel is > 0 (env.group_advantages); motif_guard alone also "
                    "marks answers whose reward the guard did not cap")

    @model_validator(mode="after")
    def _shapes(self) -> AdvantagesRequest:
        k = len(self.channels[0])
        for i, row in enumerate(self.channels):
            if len(row) != k:
                raise ValueError(f"channels[{i}] has {len(row)} values, row 0 has {k}")
        if len(self.valid) != len(self.channels):
            raise ValueError(f"valid has {len(self.valid)} entries for {len(self.channels)} rows")
        if self.priorities is not None and len(self.priorities) != k:
            raise ValueError(f"priorities has {len(self.priorities)} entries for {k} channels")
        if self.core >= k:
            raise ValueError(f"core column {self.core} is outside the {k} channels")
        if self.guarded is not None and len(self.guarded) != len(self.channels):
            raise ValueError(f"guarded has {len(self.guarded)} entries for {len(self.channels)} rows")
        return self


class CommitRequest(_Strict):
    """``POST /v1/archive/commit``: add the valid answers to the novelty archive."""

    request_id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$",
                            description="idempotency key: a retry with the same id and body "
                            "returns the first response byte for byte; another body is 409")
    completions: list[Answer] = Field(min_length=1, max_length=HARD_MAX_COMPLETIONS,
                                      description="answers to commit (invalid ones are skipped)")
    expected_version: Annotated[int, Field(ge=0), BeforeValidator(_integral)] | None = Field(None, description="optimistic check: 409 "
                                         "unless the archive is at this version")


class OpenRLHFRequest(_Lenient):
    """OpenRLHF remote reward (``--remote_rm_url http://host:port/get_reward``)."""

    query: list[Answer] = Field(min_length=1, max_length=HARD_MAX_COMPLETIONS,
                                description="chat-templated prompt + response, one per sample")
    prompts: list[str] | None = Field(None, max_length=HARD_MAX_COMPLETIONS)
    labels: list[Any] | None = Field(None, max_length=HARD_MAX_COMPLETIONS,
                                     description="accepted and ignored (no reference answers)")

    @model_validator(mode="after")
    def _lengths(self) -> OpenRLHFRequest:
        if self.prompts is not None and len(self.prompts) != len(self.query):
            raise ValueError(f"prompts has {len(self.prompts)} entries for {len(self.query)} queries")
        return self


class SlimeRequest(_Lenient):
    """slime remote reward (``--rm-type remote_rm --rm-url http://host:port/v1/rm``)."""

    prompt: Any = Field(None, description="accepted and ignored")
    response: Answer = Field(description="the generated response")
    label: Any = Field(None, description="accepted and ignored")


class NemoResponseObject(BaseModel):
    """The OpenAI Responses-API object NeMo-Gym sends; only ``output`` is read."""

    model_config = ConfigDict(extra="allow")
    output: list[dict[str, Any]] = Field(max_length=4096)


class NemoVerifyRequest(BaseModel):
    """NeMo-Gym resources-server ``/verify`` request (``BaseVerifyRequest``)."""

    model_config = ConfigDict(extra="allow")
    responses_create_params: dict[str, Any] = Field(default_factory=dict)
    response: NemoResponseObject


# ----------------------------------------------------------------------- responses
class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    """Every non-2xx answer: a stable code and a one-line message (never a traceback)."""

    error: ErrorBody


class CardErrorModel(BaseModel):
    code: str
    message: str
    position: int | None
    layer: str


class CardModel(BaseModel):
    """A score card, ``card.to_dict(timings=False)`` (see ``gymkit.card``)."""

    valid: bool
    error: CardErrorModel | None
    reward: float | None
    channels: dict[str, float | None]
    formula: str | None
    canonical: str | None
    metrics: dict[str, Any]
    notes: list[str]
    env_id: str
    env_fingerprint: str
    data_fingerprint: str
    archive_version: int
    archive_digest: str
    gymkit_version: str
    brief_digest: str | None


class CardEntry(BaseModel):
    card_sha256: str = Field(description="sha256 of the card's deterministic JSON bytes")
    card: CardModel
    timings: dict[str, float] | None = Field(None, description="only with include_timings")


class ScoreResponse(BaseModel):
    cards: list[CardEntry]


class Diagnostics(BaseModel):
    scalar_reward: list[float]
    grpo_advantage: list[float]
    channel_std: list[float]
    n_valid: int
    n_eligible: int
    share_nonzero: float
    warnings: list[str]


class AdvantagesResponse(BaseModel):
    advantages: list[float]
    diagnostics: Diagnostics


class ScoreGroupResponse(BaseModel):
    cards: list[CardEntry]
    channels: list[str] = Field(description="active channels, the columns of the advantages")
    advantages: list[float]
    diagnostics: Diagnostics


class ArchiveResponse(BaseModel):
    version: int
    digest: str
    size: int
    capacity: int


class CommitResponse(ArchiveResponse):
    request_id: str
    added: int
    previous_version: int


class ChannelInfo(BaseModel):
    id: str
    name: str
    priority: float
    active: bool
    value_range: tuple[float, float]


class InfoResponse(BaseModel):
    gymkit_version: str
    env_id: str
    env_fingerprint: str
    data_fingerprint: str
    channels: list[ChannelInfo]
    notes: list[str]
    archive: ArchiveResponse
    limits: dict[str, int | float]


class OpenRLHFResponse(BaseModel):
    rewards: list[float] = Field(description="scalar reward of each query (card.reward)")
    scores: list[float] = Field(description="OpenRLHF's [0, 1] filtering score: 1.0 solved (valid, reward > 0)")
    extra_logs: dict[str, list[float]] = Field(description="valid and each channel, per query")


class SlimeResponse(BaseModel):
    reward: float
    valid: bool
    channels: dict[str, float | None]
    error_code: str | None
    card_sha256: str


class NemoVerifyResponse(BaseModel):
    """The request echoed back with ``reward`` and ``reward_components`` (BaseMultiRewardVerifyResponse)."""

    model_config = ConfigDict(extra="allow")
    reward: float
    reward_components: dict[str, float]
    valid: bool
    error_code: str | None
    card_sha256: str
