"""A world as a server: the ``act`` tool, a worker per episode from the warm pool, the world's own tasks and
rewards. The generic ``worker`` server and the shipped worlds (``scienceworld``, ``textworld``) are built here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic_settings import BaseSettings

from openenv_mcp import ConfigError, Environment, Grade, Observation, TaskSet
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.servers.worker.backend import WorldBackend
from openenv_mcp.servers.worker.settings import WorkerConfig
from openenv_mcp.servers.worker.tasks import WorldTask
from openenv_mcp.servers.worker.tools import world_tools

__all__ = ["world_environment", "world_tasks"]


def world_tasks(name: str, load: Callable[[], TaskSet], missing: Callable[[], list[str]]) -> Callable[[], TaskSet]:
    """``load``, preceded by a check that the world can run here: serving stops at once, saying what to install."""

    def checked() -> TaskSet:
        if hints := missing():
            raise ConfigError(f"{name} cannot run here; it needs " + "; and ".join(hints))
        return load()

    return checked


def world_environment(
    *,
    name: str,
    description: str,
    settings: type[BaseSettings],
    config: Callable[[Any], WorkerConfig],
    tasks: Callable[[], TaskSet],
    grade: Callable[[WorldTask, WorldBackend, BoundCall, Observation], Awaitable[Grade]],
    solve: Callable[[WorldTask], Sequence[tuple[str, dict[str, Any]]]] | None,
    init_params: Callable[[WorldTask, int, Any], Mapping[str, Any]] = lambda task, seed, settings: task.params,
    show_valid_actions: Callable[[Any], bool] = lambda settings: True,
    prepare: Callable[[WorldTask, Any], Awaitable[None]] | None = None,
    sim_summary: str,
    max_steps: int,
    requires: Callable[[], list[str]] | None = None,
    version: str = "0.1.0",
) -> Environment[WorldBackend, WorldTask]:
    """An environment whose sim backend is a world's worker, sent ``init`` with each episode's task.

    Args:
        name: The server's name.
        description: What the world is, for agents and ``openenv-mcp list``.
        settings: The server's settings class.
        config: How its workers run, from an instance of ``settings``.
        tasks: Loads the tasks (each names the ``env_id`` and ``params`` of its ``init``).
        grade: A step's reward and done flag, from the worker's answer (``WorldBackend.last``).
        solve: The reference solution of a task as ``act`` calls (``--policy scripted`` plays it).
        init_params: The ``init`` parameters of a task under a seed (the task's own ``params`` by default).
        show_valid_actions: Whether answers list the actions the world accepts, from the settings.
        prepare: Makes what a task's world needs before its ``init`` (a game file), given the settings.
        sim_summary: What the sim backend is, in one sentence.
        max_steps: Steps after which an episode is done.
        requires: What is missing here for the world to run, as install hints.
        version: The server's version.
    """
    tools = world_tools(name)
    act = tools.get("act")

    async def sim_backend(task: WorldTask, seed: int, server_settings: Any) -> WorldBackend:
        if prepare is not None:
            await prepare(task, server_settings)
        return await WorldBackend.open(
            config(server_settings),
            task.env_id,
            init_params(task, seed, server_settings),
            show_valid_actions=show_valid_actions(server_settings),
        )

    def opening(world: WorldBackend) -> Observation:
        return act.render(world.view(world.opening))

    return Environment(
        name=name,
        description=description,
        tools=tools,
        tasks=tasks,
        settings=settings,
        sim_backend=sim_backend,
        grade=grade,
        sim_summary=sim_summary,
        solve=solve,
        max_steps=max_steps,
        opening=opening,
        prod_sessions=True,  # prod: a world of its own per MCP session, no reward (docs/worlds.md)
        requires=requires,
        version=version,
    )
