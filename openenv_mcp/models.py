"""The wire types of the control plane, shared by the server and the typed clients."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt

__all__ = [
    "Action",
    "BatchFork",
    "BatchItem",
    "BatchResult",
    "BatchStep",
    "ContentBlock",
    "CurriculumState",
    "EpisodeState",
    "ErrorBody",
    "ErrorDetail",
    "ImageBlock",
    "Observation",
    "Readiness",
    "ResetRequest",
    "Snapshot",
    "SnapshotStep",
    "StepBatchRequest",
    "StepRequest",
    "StepResult",
    "TaskInfo",
    "TaskList",
    "TaskProgress",
    "TextBlock",
    "construct",
]

ModelT = TypeVar("ModelT", bound=BaseModel)
# BaseModel's four slots, set through their descriptors (object.__setattr__ looks each one up by name first)
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def construct(cls: type[ModelT], /, **values: Any) -> ModelT:
    """An instance built from trusted, already valid values, with no validation: ``model_construct`` without its
    per-field loop (defaults, aliases), several times cheaper on the step path. Pass every field."""
    model: ModelT = _new(cls)
    _set_dict(model, values)
    _set_fields(model, set(values))
    _set_extra(model, None)
    _set_private(model, None)
    return model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextBlock(_Strict):
    """A text content block, as in an MCP tool result."""

    type: Literal["text"] = "text"
    text: str


class ImageBlock(_Strict):
    """An image content block (base64 data), as in an MCP tool result."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str = Field(alias="mimeType")

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)


ContentBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


class Observation(_Strict):
    """What an agent sees after a reset or a step: exactly what the MCP tool result carries."""

    content: list[ContentBlock]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text blocks joined by newlines."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextBlock))


class SnapshotStep(_Strict):
    """One recorded step of a snapshot: the action, and a digest of what it gave (to check a replay against)."""

    tool: str
    arguments: dict[str, Any]
    observation: str = Field(description="BLAKE2b-128 digest (hex) of the observation's content and error flag")
    reward: float
    done: bool


class Snapshot(_Strict):
    """An episode as data: its task, seed and actions, signed by the server that made it.

    ``POST /reset`` with ``{"snapshot": ...}`` replays the actions on a fresh backend, on this server or another
    replica of it, and checks every step against its digest. The signature (HMAC-SHA256 with the server's
    ``OPENENV_SNAPSHOT_KEY`` when set) doubles as the snapshot's id.
    """

    format: Literal["openenv-mcp/snapshot@1"] = "openenv-mcp/snapshot@1"
    server: str
    toolset: str = Field(description="Digest of the server's tool table (names and schemas)")
    task_id: str
    split: str
    seed: int
    max_steps: int
    step_count: int
    total_reward: float
    done: bool
    steps: list[SnapshotStep]
    signature: str = ""


class ResetRequest(_Strict):
    """Body of ``POST /reset``: pick a task by id, or by split and seed (random when omitted), or give a snapshot."""

    task_id: str | None = None
    split: str | None = None
    seed: StrictInt | None = None  # strict: true is not a seed of 1, nor "7" of 7
    snapshot: Snapshot | None = None


class Action(_Strict):
    """A tool call: the tool's name and its arguments."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class StepRequest(_Strict):
    """Body of ``POST /step``."""

    action: Action


class StepResult(_Strict):
    """Answer of ``POST /reset`` and ``POST /step``."""

    episode_id: str
    observation: Observation
    reward: float
    done: bool
    info: dict[str, Any] = Field(default_factory=dict)


class ErrorDetail(_Strict):
    code: str
    message: str


class ErrorBody(_Strict):
    """Every error the control plane answers with."""

    error: ErrorDetail


class Readiness(_Strict):
    """Answer of ``GET /readyz``: each backend's ping, ``"ok"`` or why it failed."""

    status: Literal["ready", "unavailable"]
    backends: dict[str, str]
    error: ErrorDetail | None = None


class BatchStep(_Strict):
    """One step of a batch: the episode it acts on and its action, and optionally its id (a batch sent again
    after its answer was lost: a step whose id the server already ran is answered with its recorded result)."""

    episode_id: str = Field(min_length=1)
    action: Action
    step_id: str | None = Field(default=None, min_length=1, max_length=128)


class BatchFork(_Strict):
    """A fork in a batch: ``{"episode_id", "fork": true}``; its result is the new episode's."""

    episode_id: str = Field(min_length=1)
    fork: Literal[True]


class StepBatchRequest(_Strict):
    """Body of ``POST /step_batch``: steps (and forks) of many episodes, answered in order."""

    steps: list[Annotated[BatchStep | BatchFork, Field(union_mode="left_to_right")]] = Field(
        min_length=1, max_length=4096
    )


class BatchItem(_Strict):
    """One answer of a batch: a result, or the error that step alone met (with its HTTP status)."""

    ok: bool
    result: StepResult | None = None
    error: ErrorDetail | None = None
    status: int = 200


class BatchResult(_Strict):
    """Answer of ``POST /step_batch``."""

    results: list[BatchItem]


class EpisodeState(_Strict):
    """Answer of ``GET /state``."""

    episode_id: str
    task_id: str
    split: str
    seed: int
    step_count: int
    max_steps: int
    total_reward: float
    done: bool
    created_at: float
    last_active_at: float


class TaskInfo(_Strict):
    """One task as ``GET /tasks`` lists it (without its answer)."""

    id: str
    split: str
    prompt: str
    difficulty: str | None = None


class TaskProgress(_Strict):
    """What the curriculum knows of one task."""

    task_id: str
    attempts: int
    successes: int
    recent_success_rate: float | None = Field(description="Success rate over the window; None before min_attempts")
    estimated_success_rate: float | None = Field(
        default=None, description="What weight and status use: the recent rate, else its difficulty tier's as prior"
    )
    difficulty: str | None = None
    weight: float
    status: Literal["new", "learning", "too_easy", "too_hard"]


class CurriculumState(_Strict):
    """The curriculum's settings and what it has observed, per task."""

    band: tuple[float, float]
    window: int
    min_attempts: int
    success_threshold: float
    outside_weight: float
    seed: int
    draws: int
    tasks: list[TaskProgress]


class TaskList(_Strict):
    """Answer of ``GET /tasks``: the tasks that match its filters (a page of them when it asks for one).

    ``total`` counts every task that matches, ``offset`` is where ``tasks`` starts among them; ``splits`` and
    ``difficulties`` count the whole task set. The curriculum's state covers the tasks listed.
    """

    tasks: list[TaskInfo]
    splits: dict[str, int]
    difficulties: dict[str, int] = Field(default_factory=dict)
    total: int = Field(default=0, description="Tasks that match the filters (all pages)")
    offset: int = 0
    curriculum: CurriculumState | None = None
