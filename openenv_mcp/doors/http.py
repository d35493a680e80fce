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
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Route

from openenv_mcp.doors.body_limit import BodyLimit, too_large
from openenv_mcp.doors.guard import AUTHENTICATED, AccessPolicy, Guard, serving_warning
from openenv_mcp.doors.mcp_mount import McpMount
from openenv_mcp.doors.openenv import OpenEnvMcpShim, OpenEnvSessions
from openenv_mcp.doors.ors import ors_router
from openenv_mcp.doors.web.pages import web_router
from openenv_mcp.doors.websocket import websocket_door
from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import OpenEnvError, ResetNeeded
from openenv_mcp.models import (
    BatchResult,
    EpisodeState,
    ErrorBody,
    Readiness,
    ResetRequest,
    Snapshot,
    StepBatchRequest,
    StepRequest,
    StepResult,
    TaskList,
)
from openenv_mcp.runtime import ForkVia, Runtime
from openenv_mcp.runtime.metrics import CONTENT_TYPE
from openenv_mcp.settings import Settings, load_settings

__all__ = ["build_app", "build_runtime"]

log = logging.getLogger(__name__)

_SIM_PATHS = ("/reset", "/step", "/state", "/episodes", "/tasks", "/ws")
_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
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
_EPISODE_DOC = "The episode_id that POST /reset returned"
EpisodeHeader = Annotated[str | None, Header(alias="X-Episode-Id", description=_EPISODE_DOC)]
_EPISODE_PARAMETER = {  # the OpenAPI parameter EpisodeHeader makes, for the route that reads the header itself
    "name": "X-Episode-Id",
    "in": "header",
    "required": False,
    "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": _EPISODE_DOC, "title": "X-Episode-Id"},
    "description": _EPISODE_DOC,
}


def build_runtime(env: Environment[Any, Any], settings: Settings) -> Runtime:
    """Bind an environment to the mode in ``settings``; a missing prod setting raises ConfigError here."""
    required = env.prod_requires if settings.mode == "prod" else ()
    return Runtime(env, settings, load_settings(env.settings, required=required))


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def build_app(runtime: Runtime) -> FastAPI:
    """The ASGI app serving ``runtime`` (its lifespan starts and stops the runtime).

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
        await runtime.start()
        try:
            async with mcp.serving():
                yield
        finally:
            await runtime.stop()

    env = runtime.env
    app = FastAPI(
        title=f"openenv-mcp: {env.name}",
        description=env.description,
        version=env.version,
        lifespan=lifespan,
        responses=_ERRORS,
    )
    app.state.runtime = runtime
    app.state.mcp = mcp
    app.add_middleware(BodyLimit, max_bytes=runtime.settings.max_body_bytes)  # inside the Guard: it checks first
    app.add_middleware(Guard, policy=policy)

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

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process serves."""
        return {"status": "ok", "mode": runtime.mode, "server": env.name}

    @app.get(
        "/readyz",
        tags=["health"],
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "A backend failed its ping"}},
    )
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: every backend answers its ping and the MCP door is up (why not only with the token, if any)."""
        backends = {**await runtime.readiness(), "mcp": mcp.state()}  # the MCP door counts: clients use both
        ready = all(state == "ok" for state in backends.values())
        if not request.scope.get("state", {}).get(AUTHENTICATED, True):
            backends = {name: "ok" if state == "ok" else "unavailable" for name, state in backends.items()}
        body: dict[str, Any] = {"status": "ready" if ready else "unavailable", "backends": backends}
        if not ready:
            failed = ", ".join(f"{name}: {state}" for name, state in backends.items() if state != "ok")
            body["error"] = {"code": "backend_unavailable", "message": f"Backend not ready ({failed})"}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get(
        "/metrics",
        tags=["health"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}, "description": "Prometheus text"}},
    )
    async def metrics() -> Response:
        """Prometheus metrics."""
        return Response(runtime.metrics.render(), media_type=CONTENT_TYPE)

    if runtime.sim:

        @app.post("/reset", tags=["episodes"])
        async def reset(body: ResetRequest | None = None) -> StepResult:
            """Open an episode on a task picked by id, or by split and seed; or restore one from a snapshot."""
            body = body or ResetRequest()
            return await runtime.reset(task_id=body.task_id, split=body.split, seed=body.seed, snapshot=body.snapshot)

        @app.post("/step", tags=["episodes"], openapi_extra={"parameters": [_EPISODE_PARAMETER]})
        async def step(body: StepRequest, request: Request) -> StepResult:
            """Call one tool on the episode named by X-Episode-Id."""
            # The header is read here, not declared as a Header parameter: FastAPI's parameter handling cost this,
            # the hottest route, 13% of its instructions (callgrind; bench/README.md). The schema still shows it.
            episode_id = _require(request.headers.get("x-episode-id"))
            outcome = await runtime.call(body.action.tool, body.action.arguments, episode_id)
            return outcome.as_step()

        @app.post("/step_batch", tags=["episodes"])
        async def step_batch(body: StepBatchRequest) -> BatchResult:
            """Steps of many episodes in one request, answered in order; a failing step fails alone."""
            return BatchResult.model_construct(results=await runtime.step_batch(body.steps))

        @app.get("/state", tags=["episodes"])
        async def state(x_episode_id: EpisodeHeader = None) -> EpisodeState:
            """The episode's task, step count, total reward and done flag."""
            return runtime.episode(_require(x_episode_id)).state()

        @app.delete("/episodes/{episode_id}", tags=["episodes"])
        async def close_episode(episode_id: str) -> EpisodeState:
            """Close an episode and free its backend; returns its final state."""
            episode = await runtime.close_episode(episode_id)
            return episode.state()

        @app.post("/episodes/{episode_id}/fork", tags=["episodes"])
        async def fork_episode(episode_id: str, via: ForkVia = "auto") -> StepResult:
            """A new episode in this one's state now (task, steps, reward so far); both go on independently."""
            return await runtime.fork(episode_id, via=via)

        @app.post("/episodes/{episode_id}/snapshot", tags=["episodes"])
        async def snapshot_episode(episode_id: str) -> Snapshot:
            """The episode as signed data (task, seed, actions); POST /reset {"snapshot": ...} restores it."""
            return await runtime.snapshot(episode_id)

        @app.get("/tasks", tags=["episodes"])
        async def tasks(
            split: str | None = None,
            difficulty: str | None = None,
            q: Annotated[str | None, Query(max_length=500, description="Text the id or prompt contains")] = None,
            offset: Annotated[int, Query(ge=0)] = 0,
            limit: Annotated[int | None, Query(ge=1, description="At most this many (default: all)")] = None,
        ) -> TaskList:
            """The tasks (without answers) that match the filters, from ``offset``; ``total`` counts the matches,
            ``splits`` and ``difficulties`` the whole set."""
            return runtime.task_list(split, difficulty=difficulty, query=q, offset=offset, limit=limit)

        app.include_router(web_router(runtime))  # the page for people (before ORS's /{env}/... routes)
        app.include_router(ors_router(runtime))  # ORS (the Open Reward Standard), sim only: docs/ors.md

    # /ws in both modes: OpenEnv's MCP client opens it in prod too (our reset and state answer 404 there)
    app.add_api_websocket_route("/ws", websocket_door(runtime, sessions))
    # OpenEnv's JSON-RPC requests are answered before the MCP SDK sees them
    app.router.routes.append(Route("/mcp", OpenEnvMcpShim(mcp, sessions)))
    # Routes are tried in order and every path here is exact, so order changes speed, not meaning:
    # the step routes first, FastAPI's documentation pages last.
    docs = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}

    def rank(route: BaseRoute) -> int:
        path = getattr(route, "path", "")
        return 0 if path in _HOT else 2 if path in docs else 1

    app.router.routes.sort(key=rank)
    return app


_HOT = ("/step", "/step_batch", "/mcp")


def _require(episode_id: str | None) -> str:
    if not episode_id:
        raise ResetNeeded("Missing X-Episode-Id header: POST /reset first and send the episode_id it returns")
    return episode_id
