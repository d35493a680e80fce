"""The worker environment: any world behind DockerGym's JSON-lines worker protocol, on the one path.

``WORKER_COMMAND`` is the worker's command line, ``WORKER_TASKS`` a JSON file of tasks; ``WORKER_IMAGE`` runs the
command in a container per worker. One tool, ``act``; the step reward and done flag are the worker's own.
See docs/worlds.md.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp import Environment
from openenv_mcp.servers.worker.settings import WorkerSettings
from openenv_mcp.servers.worker.tasks import grade, load_tasks, solve
from openenv_mcp.worlds import World, WorldBackend, WorldTask

__all__ = ["environment"]


def _init_params(task: WorldTask, seed: int, settings: WorkerSettings) -> dict[str, Any]:
    if settings.seed_param:
        return {**task.params, settings.seed_param: seed}
    return dict(task.params)


_world = World(name="worker", config=WorkerSettings.config, init_params=_init_params)

environment: Environment[WorldBackend, WorldTask] = Environment(
    name=_world.name,
    description=(
        "A world behind a reset/step worker (DockerGym's JSON-lines protocol): read the observation, then act with "
        "one text command at a time until the task is done."
    ),
    settings=WorkerSettings,
    tasks=load_tasks,
    tools=_world.tools,
    sim_backend=_world.sim_backend,
    opening=_world.opening,
    prod_sessions=True,  # prod: a world of its own per MCP session, no reward (docs/worlds.md)
    grade=grade,
    solve=solve,
    sim_summary="a worker process per episode (WORKER_COMMAND), or a container of WORKER_IMAGE, from a warm pool",
    max_steps=100,
)
