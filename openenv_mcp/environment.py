"""An environment as its author declares it: tools, tasks, backends per mode, and grading."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic_settings import BaseSettings

from openenv_mcp.models import Observation
from openenv_mcp.tasks import Grade, Task, TaskSet
from openenv_mcp.tools import BoundCall, Toolbox

__all__ = ["Environment"]

BackendT = TypeVar("BackendT")
TaskT = TypeVar("TaskT", bound=Task)


@dataclass(frozen=True, kw_only=True)
class Environment(Generic[BackendT, TaskT]):
    """Everything that makes one server, bound to a mode only when the server is assembled.

    Attributes:
        name: The server's name (``openenv-mcp serve NAME``).
        description: One paragraph for agents and for ``openenv-mcp list``.
        tools: The tool table; the same in both modes.
        tasks: Loads the tasks (called once, when the server is assembled).
        settings: The server's own settings class (connection URLs, secrets), read once at start.
        sim_backend: Opens a fresh, isolated sim backend for one episode from its task and seed.
        prod_backend: Opens the one shared prod backend from the settings.
        grade: Computes a step's reward and whether the episode is done, from the task, the
            episode's backend, the call and its result. The one place rewards are computed.
        prod_requires: Settings fields that must be set in prod (checked before serving starts).
        examples: A few valid tool calls ``(tool, arguments)`` that work on any task; the
            conformance check replays them for determinism and the benchmark times them.
        max_steps: Steps after which an episode is done whatever the grade says.
        version: The server's version, as MCP ``serverInfo`` reports it.
    """

    name: str
    description: str
    tools: Toolbox[BackendT]
    tasks: Callable[[], TaskSet]
    settings: type[BaseSettings]
    sim_backend: Callable[[TaskT, int, Any], Awaitable[BackendT]]
    prod_backend: Callable[[Any], Awaitable[BackendT]]
    grade: Callable[[TaskT, BackendT, BoundCall, Observation], Awaitable[Grade]]
    prod_requires: tuple[str, ...] = ()
    examples: tuple[tuple[str, dict[str, Any]], ...] = ()
    max_steps: int = 20
    version: str = "0.1.0"
