"""A world as an environment's sim backend: how its workers run and how each episode's world starts on one.

A :class:`World` supplies the pieces of an :class:`~openenv_mcp.environment.spec.Environment` that make it a world
(its ``tools``, ``sim_backend`` and ``opening``); the environment declares the rest itself (tasks, grade, solve)::

    world = World(name="counter", config=CounterSettings.config)
    environment = Environment(
        name=world.name, description="...", settings=CounterSettings, tasks=load_tasks, grade=grade,
        tools=world.tools, sim_backend=world.sim_backend, opening=world.opening, prod_sessions=True, ...
    )
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic_settings import BaseSettings

from openenv_mcp.environment.tasks import TaskSet
from openenv_mcp.environment.tools import Toolbox
from openenv_mcp.errors import ConfigError
from openenv_mcp.models import Observation
from openenv_mcp.worlds.backend import WorldBackend
from openenv_mcp.worlds.config import WorkerConfig
from openenv_mcp.worlds.tasks import WorldTask
from openenv_mcp.worlds.tools import world_tools

__all__ = ["World", "world_tasks"]

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


def _task_params(task: WorldTask, seed: int, settings: object) -> Mapping[str, Any]:
    return task.params


def _always(settings: object) -> bool:
    return True


@dataclass(frozen=True, kw_only=True)
class World(Generic[SettingsT]):
    """How a world's episodes start: a worker from the warm pool, sent ``init`` with the episode's task.

    Attributes:
        name: The server's name (its tool table's, and the workers' in messages).
        config: How its workers run, from the server's settings.
        init_params: The ``init`` parameters of a task under a seed (the task's own ``params`` by default).
        show_valid_actions: Whether answers list the actions the world accepts, from the settings.
        prepare: Makes what a task's world needs before its ``init`` (a game file), given the settings.
        tools: The world's one tool, ``act`` (made from ``name``).
    """

    name: str
    config: Callable[[SettingsT], WorkerConfig]
    init_params: Callable[[WorldTask, int, SettingsT], Mapping[str, Any]] = _task_params
    show_valid_actions: Callable[[SettingsT], bool] = _always
    prepare: Callable[[WorldTask, SettingsT], Awaitable[None]] | None = None
    tools: Toolbox[WorldBackend] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", world_tools(self.name))

    async def sim_backend(self, task: WorldTask, seed: int, settings: SettingsT) -> WorldBackend:
        """An episode's world: the task's world prepared, a worker leased and sent ``init``."""
        if self.prepare is not None:
            await self.prepare(task, settings)
        return await WorldBackend.open(
            self.config(settings),
            task.env_id,
            self.init_params(task, seed, settings),
            show_valid_actions=self.show_valid_actions(settings),
        )

    def opening(self, world: WorldBackend) -> Observation:
        """What the world answered to ``init``, as ``act`` renders an answer: the room the agent starts in."""
        return self.tools.get("act").render(world.view(world.opening))


def world_tasks(name: str, load: Callable[[], TaskSet], missing: Callable[[], list[str]]) -> Callable[[], TaskSet]:
    """``load``, preceded by a check that the world can run here: serving stops at once, saying what to install."""

    def checked() -> TaskSet:
        if hints := missing():
            raise ConfigError(f"{name} cannot run here; it needs " + "; and ".join(hints))
        return load()

    return checked
