"""ScienceWorld: elementary science experiments in a text simulator (the ``scienceworld`` package, its own JVM).

All 30 task types with all their variations (7,207 tasks) in the package's train/dev/test splits; one tool,
``act``; reward = the world's score / 100 per step, so a solved task totals 1.0; the world's gold action sequence
is the scripted policy. Each episode's world runs in a worker process of ours from a warm pool (docs/worlds.md).
Needs ``pip install 'openenv-mcp[worlds]'`` and Java 17.
"""

from __future__ import annotations

import importlib.util
import shutil
from typing import Any

from openenv_mcp import Environment
from openenv_mcp.servers.scienceworld.settings import ScienceWorldSettings
from openenv_mcp.servers.scienceworld.tasks import grade, load_tasks, solve
from openenv_mcp.worlds import World, WorldBackend, WorldTask, world_tasks

__all__ = ["environment"]


def _missing() -> list[str]:
    hints = []
    if importlib.util.find_spec("scienceworld") is None:
        hints.append("the scienceworld package: pip install 'openenv-mcp[worlds]'")
    if shutil.which("java") is None:
        hints.append("Java 17 (Debian: apt-get install openjdk-17-jre-headless)")
    return hints


def _init_params(task: WorldTask, seed: int, settings: ScienceWorldSettings) -> dict[str, Any]:
    return {**task.params, "simplifications": settings.simplifications}


_world = World(
    name="scienceworld",
    config=ScienceWorldSettings.config,
    init_params=_init_params,
    show_valid_actions=lambda settings: settings.valid_actions,
)

environment: Environment[WorldBackend, WorldTask] = Environment(
    name=_world.name,
    description=(
        "ScienceWorld: do an elementary science experiment (boil, melt, grow a plant, build a circuit, test "
        "conductivity...) in a simulated house by typing commands such as 'open door to kitchen' or 'focus on "
        "water'; the task is given first, then the room you are in."
    ),
    settings=ScienceWorldSettings,
    tasks=world_tasks("scienceworld", load_tasks, _missing),
    tools=_world.tools,
    sim_backend=_world.sim_backend,
    opening=_world.opening,
    prod_sessions=True,  # prod: a world of its own per MCP session, no reward (docs/worlds.md)
    grade=grade,
    solve=solve,
    sim_summary="a ScienceWorld simulator (its own JVM) per episode, in a worker process from a warm pool",
    max_steps=1_000,
    requires=_missing,
)
