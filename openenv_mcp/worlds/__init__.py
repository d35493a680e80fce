"""Worlds: environments that already exist behind a reset/step API, run as worker processes (or containers) that
speak DockerGym's JSON-lines protocol, one per episode, from a warm pool (docs/worlds.md).

- ``protocol.py``: the protocol's lines and answers (:class:`Reply`, :class:`Refused`).
- ``config.py``: :class:`WorkerConfig`, how a world's workers are started and spoken to.
- ``process.py``: :class:`Worker`, one running worker.
- ``pool.py``: :class:`WorkerPool`, workers started ahead of resets and kept between episodes.
- ``backend.py``: :class:`WorldBackend`, one episode's world (a leased worker), and what an agent sees of it.
- ``tasks.py``: :class:`WorldTask`, which world an episode's ``init`` starts.
- ``tools.py``: the one tool of every world, ``act``.
- ``world.py``: :class:`World`, the sim backend, tools and opening an ``Environment`` of a world declares.

The ``worker``, ``scienceworld`` and ``textworld`` servers are built on it; so can any package's world.
"""

from __future__ import annotations

from openenv_mcp.worlds.backend import WorldBackend, WorldView
from openenv_mcp.worlds.config import WorkerConfig
from openenv_mcp.worlds.pool import WorkerPool
from openenv_mcp.worlds.process import Worker
from openenv_mcp.worlds.protocol import Refused, Reply
from openenv_mcp.worlds.tasks import WorldTask
from openenv_mcp.worlds.tools import world_tools
from openenv_mcp.worlds.world import World, world_tasks

__all__ = [
    "Refused",
    "Reply",
    "Worker",
    "WorkerConfig",
    "WorkerPool",
    "World",
    "WorldBackend",
    "WorldTask",
    "WorldView",
    "world_tasks",
    "world_tools",
]
