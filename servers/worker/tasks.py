"""The worker server's tasks, read from ``WORKER_TASKS``, and its grade: the worker's own reward and done flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openenv_mcp import ConfigError, Grade, Observation, TaskSet
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.servers.worker.settings import WorkerSettings
from openenv_mcp.settings import load_settings
from openenv_mcp.worlds import WorldBackend, WorldTask

__all__ = ["grade", "load_tasks", "read_tasks", "solve"]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    split: str = Field(min_length=1)
    env_id: str
    params: dict[str, Any] = Field(default_factory=dict)
    prompt: str | None = None
    difficulty: str | None = None
    solution: list[str] = Field(default_factory=list)


def read_tasks(path: Path) -> TaskSet:
    """The tasks of a JSON file: a list of ``{id, split, env_id, params?, prompt?, difficulty?, solution?}``."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"WORKER_TASKS: cannot read the tasks file {path} ({exc})") from None
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"WORKER_TASKS: {path} must hold a non-empty JSON list of tasks")
    tasks = []
    for index, item in enumerate(raw):
        try:
            entry = _Entry.model_validate(item)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(task)'}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"WORKER_TASKS: task {index} of {path} is invalid: {problems}") from None
        prompt = entry.prompt or f"Task {entry.id}: {entry.env_id}. The world's first observation follows."
        tasks.append(
            WorldTask(
                id=entry.id,
                split=entry.split,
                prompt=prompt,
                difficulty=entry.difficulty,
                env_id=entry.env_id,
                params=entry.params,
                solution=tuple(entry.solution),
            )
        )
    try:
        return TaskSet(tasks)
    except ValueError as exc:
        raise ConfigError(f"WORKER_TASKS: {path}: {exc}") from None


def load_tasks() -> TaskSet:
    """The tasks of the file ``WORKER_TASKS`` names."""
    settings = load_settings(WorkerSettings, required=("command", "tasks"))
    assert settings.tasks is not None
    return read_tasks(settings.tasks)


async def grade(task: WorldTask, world: WorldBackend, call: BoundCall, observation: Observation) -> Grade:
    """The worker's own reward and done flag, unchanged (a refused step earns nothing)."""
    reply = world.last
    if observation.is_error or reply is None:
        return Grade()
    return Grade(reward=reply.reward, done=reply.done)


def solve(task: WorldTask) -> list[tuple[str, dict[str, Any]]]:
    """The task's reference solution as ``act`` calls (none when the tasks file gives none)."""
    return [("act", {"action": action}) for action in task.solution]
