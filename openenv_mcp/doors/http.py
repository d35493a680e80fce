"""The HTTP door: one ASGI app per server, control plane and ``/mcp`` on one port.

Both modes: ``GET /healthz``, ``GET /readyz``, ``GET /metrics``, and MCP at ``/mcp``.
Sim mode adds ``POST /reset``, ``POST /step``, ``POST /step_batch``, ``GET /state``,
``DELETE /episodes/{id}``, ``POST /episodes/{id}/fork``, ``POST /episodes/{id}/snapshot``,
``GET /tasks`` and the WebSocket ``/ws``; in prod those paths
answer 404 with a message saying so.
Errors are ``{"error": {"code", "message"}}``, mapped from the exception tree here, once.
Before any route, :class:`~openenv_mcp.doors.guard.Guard` checks Host, Origin and the optional
bearer token for the whole app (``docs/security.md``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Route

from openenv_mcp.doors.body_limit import BodyLimit, too_large
from openenv_mcp.doors.episodes import add_episode_routes
from openenv_mcp.doors.guard import AccessPolicy, Guard, serving_warning
from openenv_mcp.doors.health import add_health_routes
from openenv_mcp.doors.mcp_mount import McpMount
from openenv_mcp.doors.openapi import Errors, document_errors
from openenv_mcp.doors.openenv import OpenEnvMcpShim, OpenEnvSessions
from openenv_mcp.doors.ors import ORS_ERRORS, ors_router
from openenv_mcp.doors.web.pages import web_router
from openenv_mcp.doors.websocket import websocket_door
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import ErrorBody
from openenv_mcp.runtime import Runtime, build_runtime

# build_runtime lives in the runtime layer (openenv_mcp.runtime); it is still importable from here, where it was
__all__ = ["build_app", "build_runtime"]

log = logging.getLogger(__name__)

_SIM_PATHS = ("/reset", "/step", "/state", "/episodes", "/tasks", "/ws")
_ERRORS: Errors = {  # in the OpenAPI document (see openenv_mcp/doors/openapi.py)
    status: (ErrorBody, text)
    for status, text in [
        (400, "Malformed request or missing X-Episode-Id header"),
        (401, "Missing or invalid bearer token (when the server has one)"),
        (403, "A browser Origin this server does not accept"),
        (404, "Unknown episode or tool"),
        (409, "Episode already done"),
        (421, "A Host this server does not answer to"),
        (422, "Invalid tool arguments"),
        (503, "At capacity or backend down"),
    ]
}


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def build_app(runtime: Runtime) -> FastAPI:
    """The ASGI app serving ``runtime`` (its lifespan runs the runtime: :meth:`Runtime.run`).

    A malformed ``OPENENV_ALLOWED_*`` entry or bearer token raises :class:`ConfigError` here.
    """
    policy = AccessPolicy.from_settings(runtime.settings)
    if (warning := serving_warning(runtime.settings, policy)) is not None:
        log.warning(warning)
    sessions = OpenEnvSessions(runtime)  # OpenEnv's clients: openenv_mcp/doors/openenv.py
    mcp = McpMount(  # the SDK loads once serving; /readyz waits for it
        runtime, session_idle_timeout=runtime.settings.idle_timeout, max_sessions=runtime.settings.max_mcp_sessions
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        mcp.preload()  # the SDK loads in a thread while the runtime starts (the trajectory writer's start is a wait)
        async with runtime.run(), mcp.serving():
            yield

    env = runtime.env
    app = FastAPI(
        title=f"openenv-mcp: {env.name}",
        description=env.description,
        version=env.version,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.state.mcp = mcp
    app.add_middleware(BodyLimit, max_bytes=runtime.settings.max_body_bytes)  # inside the Guard: it checks first
    app.add_middleware(Guard, policy=policy)
    _install_error_handlers(app, runtime)
    # On the app itself, not included as routers: FastAPI (0.165) puts an included router's routes behind a lazy
    # dispatch layer, out of reach of _order_routes, and the step routes are the hottest there are.
    add_health_routes(app, runtime, mcp)
    if runtime.sim:
        add_episode_routes(app, runtime)
        app.include_router(web_router(runtime))  # the page for people (before ORS's /{env}/... routes)
        app.include_router(ors_router(runtime))  # ORS (the Open Reward Standard), sim only: docs/ors.md
    # /ws in both modes: OpenEnv's MCP client opens it in prod too (our reset and state answer 404 there)
    app.add_api_websocket_route("/ws", websocket_door(runtime, sessions))
    # OpenEnv's JSON-RPC requests are answered before the MCP SDK sees them
    app.router.routes.append(Route("/mcp", OpenEnvMcpShim(mcp, sessions)))
    _order_routes(app)
    document_errors(app, _ERRORS, by_tag={"ors": ORS_ERRORS} if runtime.sim else None)
    return app


def _install_error_handlers(app: FastAPI, runtime: Runtime) -> None:
    """Every error the app answers, as ``{"error": {"code", "message"}}`` with its status: the one mapping."""

    @app.exception_handler(OpenEnvError)
    async def on_openenv_error(request: Request, exc: OpenEnvError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def on_malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
            problems.append(f"{where}: {error.get('msg', 'invalid')}")
        return _error(400, "malformed_request", "Malformed request: " + "; ".join(problems))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        path = request.url.path
        if exc.status_code == 404 and not runtime.sim and path.startswith(_SIM_PATHS):
            return _error(404, "not_in_this_mode", f"{path} is served in sim mode only; this server runs in prod mode")
        if exc.status_code == 400:  # a body FastAPI could not even read (not UTF-8, say)
            return _error(400, "malformed_request", f"Malformed request: {exc.detail}")
        if exc.status_code == 413:
            return _error(413, "body_too_large", too_large(runtime.settings.max_body_bytes))
        return _error(exc.status_code, f"http_{exc.status_code}", f"{exc.detail} ({request.method} {path})")


def _order_routes(app: FastAPI) -> None:
    """Routes are tried in order and every path here is exact, so order changes speed, not meaning: the step
    routes first, FastAPI's documentation pages last."""
    docs = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}

    def rank(route: BaseRoute) -> int:
        path = getattr(route, "path", "")
        return 0 if path in _HOT else 2 if path in docs else 1

    app.router.routes.sort(key=rank)


_HOT = ("/step", "/step_batch", "/mcp")
