"""``openenv-mcp serve NAME`` on a thread of this process: the server lives and dies with the process.

A Ray replica actor serves this way (``openenv_mcp.deploy.ray_replica``): when Ray kills the actor's process,
the server goes with it, and nothing is left behind to reap.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openenv_mcp.deploy.providers.base import STOP_GRACE, Provider, http_url
from openenv_mcp.settings import Mode, Settings, load_settings

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ThreadServer"]


class ThreadServer(Provider):
    """The server ``openenv-mcp serve NAME`` runs, served by uvicorn on a thread of this process.

    Args:
        name: The server, as ``openenv-mcp list`` shows it.
        mode: sim or prod (prod settings come from this process's environment, as for the command line).
        host: The address to bind.
        port: The port; 0 (the default) lets the system pick a free one, read back once bound.
        settings: Further toolkit settings (``Settings`` fields, e.g. ``auth_token``), over the environment's.
        startup_timeout: Seconds to wait for ``/readyz``.
        log_level: uvicorn's log level.
    """

    def __init__(
        self,
        name: str,
        *,
        mode: Mode = "sim",
        host: str = "127.0.0.1",
        port: int = 0,
        settings: Mapping[str, Any] | None = None,
        startup_timeout: float = 60.0,
        log_level: str = "warning",
    ) -> None:
        self.name = name
        self.mode = mode
        self.host = host
        self.port = port
        self.settings = dict(settings or {})
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None

    def __repr__(self) -> str:
        return f"ThreadServer({self.name!r}, mode={self.mode!r})"

    def start(self) -> str:
        if self._server is not None:
            return self.url
        from openenv_mcp.doors.serving import http_server, served_runtime

        listener = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self.port))  # bound here, so port 0 is known before the server logs it
            port = int(listener.getsockname()[1])
            overrides = {**self.settings, "mode": self.mode, "host": self.host, "port": port}
            server = self._server = http_server(served_runtime(self.name, load_settings(Settings, **overrides)),
                                                log_level=self.log_level)  # fmt: skip
        except BaseException:
            listener.close()
            raise
        self._listener = listener  # the server's from now on; stop() closes it if the server did not
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [listener]}, name=f"openenv-mcp serve {self.name}", daemon=True
        )
        self._thread.start()
        return self._ready(http_url(self.host, port))

    def _died(self) -> str | None:
        if self._thread is None or self._thread.is_alive():
            return None
        return (
            f"'openenv-mcp serve {self.name} --mode {self.mode}' stopped before it was ready: its start-up failed "
            "(the reason is in this process's log)"
        )

    def stop(self) -> None:
        server, thread, listener = self._server, self._thread, self._listener
        self._server, self._thread, self._listener = None, None, None
        self._url = None
        if server is not None:
            server.should_exit = True  # the lifespan shuts down: episodes closed, trajectories flushed
        if thread is not None:
            thread.join(timeout=STOP_GRACE)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(timeout=STOP_GRACE)
        if listener is not None:
            listener.close()  # a no-op when the server closed it on shutdown
