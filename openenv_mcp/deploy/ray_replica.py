"""One replica as a Ray actor: ``openenv-mcp serve NAME`` in the actor's own process, on its node's address.

The actor's process is the server's (a :class:`~openenv_mcp.deploy.providers.ThreadServer`): both doors, the
control plane and ``/mcp``, on one port of the node Ray placed it on, reported by :meth:`ServerReplica.placement`.
When Ray kills the actor, or its node goes, the server goes with it; nothing is left to reap.
Needs Ray (``pip install 'openenv-mcp[ray]'``); :mod:`openenv_mcp.deploy.ray_pool` starts and tracks these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import ray

from openenv_mcp.deploy.providers.thread import ThreadServer
from openenv_mcp.settings import Mode

__all__ = ["Placement", "Replica", "ServerReplica"]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a replica serves: its URL, and the Ray node, actor and process it runs in."""

    url: str
    node_id: str
    actor_id: str
    pid: int


@dataclass(frozen=True, kw_only=True)
class Replica:
    """What each replica actor serves, and how.

    Attributes:
        server: The server, as ``openenv-mcp list`` shows it.
        mode: sim or prod.
        environment: Variables set in the actor's process before the server reads its settings (prod
            connection URLs, ``OPENENV_*``), as a child process's environment would be; passed as an
            argument, not as Ray's ``runtime_env``, so secrets stay out of Ray's state API.
        token: The bearer token the server requires (``OPENENV_AUTH_TOKEN``), or None.
        startup_timeout: Seconds to wait for ``/readyz``.
        log_level: The server's log level (its log is the actor's, in Ray's worker logs).
    """

    server: str
    mode: Mode = "sim"
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)  # secrets, often
    token: str | None = field(default=None, repr=False)
    startup_timeout: float = 120.0
    log_level: str = "warning"


class ServerReplica:
    """The body of a replica actor (``ray.remote(ServerReplica)``): starts the server ``replica`` describes, says
    where, stops it."""

    def __init__(self, replica: Replica) -> None:
        os.environ.update(replica.environment)  # this process is the server's own: the composition root of its settings
        settings = {"auth_token": replica.token} if replica.token is not None else {}
        self._server = ThreadServer(
            replica.server,
            mode=replica.mode,
            host=ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]  # untyped in Ray 2.60
            settings=settings,
            startup_timeout=replica.startup_timeout,
            log_level=replica.log_level,
        )
        url = self._server.start()
        context = ray.get_runtime_context()
        self._placement = Placement(url, context.get_node_id(), context.get_actor_id() or "", os.getpid())

    def placement(self) -> Placement:
        """Where this replica serves."""
        return self._placement

    def stop(self) -> None:
        """Stop the server gracefully (episodes closed, trajectories flushed); the pool then ends the actor."""
        self._server.stop()
