"""What ``openenv-mcp serve NAME`` runs, for the command line and for processes that host a server themselves.

    runtime = served_runtime("sql", settings)     # the installed environment, bound, its trajectories recorded
    server = http_server(runtime)                 # uvicorn serving the HTTP app: control plane and /mcp
    server.run()                                  # here, or on a thread (a Ray replica actor does so)

The command line and the Ray replica actor (``openenv_mcp.deploy.ray_replica``) both build their server here,
so a replica is the same server, both doors unchanged, as ``openenv-mcp serve``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from openenv_mcp.settings import Settings

if TYPE_CHECKING:
    import uvicorn

    from openenv_mcp.runtime import Runtime

__all__ = ["STARTUP_FAILURE", "http_server", "served_runtime"]

STARTUP_FAILURE = 3  # the exit status of a server whose start-up failed (uvicorn's own)


def served_runtime(name: str, settings: Settings) -> Runtime:
    """The installed environment ``name`` bound to ``settings``, recording its trajectories (sim, unless off) and its
    sessions (prod, when on)."""
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.runtime import build_runtime
    from openenv_mcp.trajectories import record_trajectories
    from openenv_mcp.trajectories.sessions import record_sessions

    runtime = build_runtime(load_environment(name), settings)
    record_trajectories(runtime)
    record_sessions(runtime)  # prod, when OPENENV_RECORD_SESSIONS turns it on
    return runtime


def http_server(runtime: Runtime, *, log_level: str = "info") -> uvicorn.Server:
    """The uvicorn server of ``runtime``'s HTTP app on the host and port of its settings (port 0: a free one).

    After ``run()`` returns, ``started`` says whether it ever served (false: its start-up failed, logged).
    """
    import uvicorn

    from openenv_mcp.doors.http import build_app

    settings = runtime.settings
    logging.getLogger("openenv_mcp").info(
        "serving %s in %s mode on http://%s:%s (MCP at /mcp)", runtime.env.name, settings.mode, settings.host,
        settings.port,
    )  # fmt: skip
    config = uvicorn.Config(
        build_app(runtime), host=settings.host, port=settings.port, log_level=log_level, access_log=False
    )
    return uvicorn.Server(config)
