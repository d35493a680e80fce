"""The ORS wire: request bodies, task specs, and our observations as ORS ``ToolOutput``s."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from openenv_mcp.environment.tasks import Task
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import ContentBlock, ErrorDetail, TextBlock
from openenv_mcp.runtime import Outcome

__all__ = [
    "CallBody",
    "CreateBody",
    "EnvironmentNotFound",
    "OrsErrorBody",
    "RangeBody",
    "Reason",
    "SplitBody",
    "TaskBody",
    "TaskSpec",
    "blocks",
    "refusal",
    "split_type",
    "task_spec",
    "tool_output",
]

Reason = Literal["not_found", "input_validation", "episode_finished"]
"""The ORS ``RunToolError.reason`` values we answer with (``name_collision`` cannot happen here)."""


class EnvironmentNotFound(OpenEnvError):
    """An ORS path or body named an environment this server does not serve."""

    code: ClassVar[str] = "environment_not_found"
    status: ClassVar[int] = 404


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OrsErrorBody(_Strict):
    """Every error an ORS route answers with: ``detail`` (what ORS clients read) and our ``error``."""

    detail: str
    error: ErrorDetail


class CallBody(_Strict):
    """Body of ``POST /{env}/call``; ``task_id`` resumes a call whose stream was cut."""

    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = None


class CreateBody(_Strict):
    """Body of ``POST /create``: a task spec (from ``/tasks``), or a split and an index."""

    env_name: str | None = None
    task_spec: dict[str, Any] | None = None
    split: str | None = None
    index: StrictInt | None = None
    toolset_name: str | None = None

    @model_validator(mode="after")
    def _one_task_source(self) -> CreateBody:
        if (self.task_spec is not None) == (self.split is not None or self.index is not None):
            raise ValueError("give either task_spec, or split and index (not both, not neither)")
        if self.task_spec is None and (self.split is None or self.index is None):
            raise ValueError("split and index go together")
        return self


class SplitBody(_Strict):
    split: str


class TaskBody(_Strict):
    split: str
    index: StrictInt


class RangeBody(_Strict):
    split: str
    start: StrictInt | None = None
    stop: StrictInt | None = None


class TaskSpec(BaseModel):
    """What ``/create`` reads from a task spec: our task id, and optionally its split and a seed."""

    model_config = ConfigDict(extra="ignore")

    id: str
    split: str | None = None
    seed: StrictInt | None = None


def task_spec(task: Task) -> dict[str, Any]:
    """A task as ORS lists it (its ``task_spec``): id, split, prompt and difficulty (when known), never the answer."""
    spec = {"id": task.id, "split": task.split, "prompt": task.prompt}
    if task.difficulty:
        spec["difficulty"] = task.difficulty
    return spec


def split_type(name: str) -> str:
    """ORS split types are train, validation or test; other names count as validation."""
    return name if name in ("train", "validation", "test") else "validation"


def blocks(content: list[ContentBlock]) -> list[dict[str, Any]]:
    """Our content blocks as ORS blocks (text, or image with ``mimeType``)."""
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextBlock):
            out.append({"type": "text", "text": block.text})
        else:
            out.append({"type": "image", "data": block.data, "mimeType": block.mime_type})
    return out


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_output(outcome: Outcome) -> str:
    """A successful call as ``RunToolSuccess`` JSON: blocks, metadata, reward and ``finished``."""
    observation, episode = outcome.observation, outcome.episode
    assert episode is not None, "ORS is served in sim mode only"
    metadata = {
        "structured_content": observation.structured_content,
        "is_error": observation.is_error,
        "episode_id": episode.id,
        "step_count": episode.step_count,
    }
    output = {
        "blocks": blocks(observation.content),
        "metadata": metadata,
        "reward": outcome.reward,
        "finished": outcome.done,
    }
    return _dumps({"ok": True, "output": output})


def refusal(message: str, reason: Reason) -> str:
    """A refused call as ``RunToolError`` JSON: what to do, and the ORS reason."""
    return _dumps({"ok": False, "error": message, "reason": reason})
