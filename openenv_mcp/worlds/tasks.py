"""A world's task: which world its worker's ``init`` starts, with what, and the actions that solve it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.environment.tasks import Task

__all__ = ["WorldTask"]


@dataclass(frozen=True, slots=True)
class WorldTask(Task):
    """A task of a world: the ``env_id`` and ``params`` its worker's ``init`` gets, and a reference solution
    (actions that solve it), when there is one."""

    env_id: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    solution: tuple[str, ...] = ()
