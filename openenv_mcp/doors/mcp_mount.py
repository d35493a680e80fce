"""The HTTP app's ``/mcp``: the MCP door, whose SDK loads while the server already serves.

Importing the MCP SDK costs about 0.3 s, a third of a server's start-up, and the control plane (``/healthz``,
``/readyz``, ``/reset``, ``/step``) needs none of it. So the app's lifespan calls :meth:`McpMount.preload`, which
starts importing :mod:`openenv_mcp.doors.mcp` in a worker thread (what the runtime's start waits for meanwhile, the
trajectory writer opening its store in a process of its own, overlaps it), then :meth:`McpMount.serving`, which
takes the import from there once the server is up, builds the
:class:`~openenv_mcp.doors.mcp.McpDoor` over the same runtime and runs its session manager until shutdown.
``/healthz`` answers meanwhile; ``/readyz`` answers 503 (``mcp``: starting) until the door is up, so a client
that waits for readiness finds both doors open. A ``/mcp`` request that comes earlier waits for the door (at
most :data:`LOAD_TIMEOUT`); if the door could not be built, it answers 503 saying so (the cause is logged).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from openenv_mcp.runtime import Collector, Runtime

__all__ = ["LOAD_TIMEOUT", "McpMount"]

log = logging.getLogger(__name__)

_MODULE = "openenv_mcp.doors.mcp"

LOAD_TIMEOUT = 60.0
"""Seconds a ``/mcp`` request waits for the door to come up (it takes well under one on an idle machine)."""


class McpMount:
    """The ASGI app behind ``/mcp``: the MCP door over ``runtime``, once :meth:`serving` has brought it up."""

    def __init__(self, runtime: Runtime, *, session_idle_timeout: float, max_sessions: int) -> None:
        self.runtime = runtime
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        runtime.metrics.count_mcp_sessions(self.open_sessions)
        self.door: Any = None  # the McpDoor, once loaded
        self._app: ASGIApp | None = None
        self._ready: asyncio.Event | None = None
        self._failed = ""
        self._loading: asyncio.Task[Any] | None = None

    def preload(self) -> None:
        """Start importing the door's module (the MCP SDK) in a worker thread now; :meth:`serving` awaits it."""
        self._loading = asyncio.get_running_loop().create_task(asyncio.to_thread(importlib.import_module, _MODULE))

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Bring the door up in the background (the server answers meanwhile); take it down on the way out."""
        self._ready, self._failed = asyncio.Event(), ""
        if self._loading is None:
            self.preload()
        stop = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._serve(self._ready, stop))
        try:
            yield
        finally:
            stop.set()
            await task

    async def _serve(self, ready: asyncio.Event, stop: asyncio.Event) -> None:
        loading, self._loading = self._loading, None
        try:
            assert loading is not None  # serving() started it
            adapter = await loading
            door = adapter.McpDoor(self.runtime)
            routes = door.http_routes(session_idle_timeout=self.session_idle_timeout, max_sessions=self.max_sessions)
            app = next(route.app for route in routes if isinstance(route, Route) and route.path == "/mcp")
        except Exception as exc:  # reported on every /mcp request (503) and logged here with its traceback
            log.exception("The MCP door could not be built; /mcp answers 503")
            self._failed = f"{type(exc).__name__}: {exc}"
            Collector.settle()
            ready.set()
            return
        async with door.session_manager.run():
            self.door, self._app = door, app
            Collector.settle()  # the server's start is over: the SDK's modules live as long as it does
            ready.set()
            await stop.wait()
        self._app = None

    def open_sessions(self) -> int:
        """Stateful MCP sessions open now (0 while the door is not up)."""
        return int(self.door.open_sessions()) if self.door is not None else 0

    def state(self) -> str:
        """``ok`` once the door serves, else why not (for ``/readyz``)."""
        if self._app is not None:
            return "ok"
        return "starting: the MCP door is loading" if self.loading else self._why()

    @property
    def loading(self) -> bool:
        """The door is being built (the lifespan started it and it has neither come up nor failed yet)."""
        return self._ready is not None and not self._ready.is_set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app
        if app is None:
            if self._ready is not None:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._ready.wait(), LOAD_TIMEOUT)
            app = self._app
        if app is None:
            await _unavailable(scope, send, self._why())
            return
        await app(scope, receive, send)

    def _why(self) -> str:
        if self._failed:
            return f"The MCP door failed to start ({self._failed}); see the server's log"
        if self._ready is None:
            return "The MCP door is not running: the app's lifespan has not started (serve it with uvicorn)"
        return f"The MCP door is still starting after {LOAD_TIMEOUT:g} s; try again"


async def _unavailable(scope: Scope, send: Send, message: str) -> None:
    if scope["type"] != "http":
        return
    body = json.dumps({"error": {"code": "mcp_unavailable", "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
