"""Providers: start a server somewhere, hand back a connected client, clean up on exit and on error.

    with LocalServer("sql") as env:                  # openenv-mcp serve sql, here, on a free port
        env.reset(seed=1)
    async with LocalServer("sql") as env:            # the same with an AsyncEnvClient
        await env.reset(seed=1)
    with DockerImage("sql") as env: ...              # docker run openenv-mcp:latest serve sql
    with ComposeService("sql", mode="sim") as env:   # one service of compose/docker-compose.sim.yml
    with ThreadServer("sql") as env: ...             # the same server on a thread of this process

A provider is ready when the server's ``/readyz`` answers 200; one that does not get there within
``startup_timeout`` seconds, or whose process or container dies first, raises
:class:`ProviderError` with what the server printed, after cleaning up. Leaving the ``with``
block, normally or by an exception, closes the client and then stops what the provider started.
``start()``/``stop()`` (and ``url``) give the server without a client, e.g. for an ``EnvPool``.
"""

from openenv_mcp.deploy.providers.base import Provider, ProviderError, free_port
from openenv_mcp.deploy.providers.docker import ComposeService, DockerImage
from openenv_mcp.deploy.providers.local import LocalServer
from openenv_mcp.deploy.providers.thread import ThreadServer

__all__ = ["ComposeService", "DockerImage", "LocalServer", "Provider", "ProviderError", "ThreadServer", "free_port"]
