"""The worker environment: any world behind DockerGym's JSON-lines worker protocol, on the one path.

``WORKER_COMMAND`` is the worker's command line, ``WORKER_TASKS`` a JSON file of tasks; ``WORKER_IMAGE`` runs the
command in a container per worker. One tool, ``act``; the step reward and done flag are the worker's own.
See docs/worlds.md.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp import Environment
from openenv_mcp.servers.worker.backend import WorldBackend
from openenv_mcp.servers.worker.settings import WorkerSettings
from openenv_mcp.servers.worker.tasks import WorldTask, grade, load_tasks, solve
from openenv_mcp.servers.worker.world import world_environment

__all__ = ["environment"]


def _init_params(task: WorldTask, seed: int, settings: WorkerSettings) -> dict[str, Any]:
    if settings.seed_param:
        return {**task.params, settings.seed_param: seed}
    return dict(task.params)


environment: Environment[WorldBackend, WorldTask] = world_environment(
    name="worker",
    description=(
        "A world behind a reset/step worker (DockerGym's JSON-lines protocol): read the observation, then act with "
        "one text command at a time until the task is done."
    ),
    settings=WorkerSettings,
    config=lambda settings: settings.config(world="worker"),
    tasks=load_tasks,
    grade=grade,
    solve=solve,
    init_params=_init_params,
    sim_summary="a worker process per episode (WORKER_COMMAND), or a container of WORKER_IMAGE, from a warm pool",
    max_steps=100,
)
