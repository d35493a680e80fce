"""The ORS routes over one sim-mode runtime: discovery, sessions, prompt, tool calls over SSE.

Every tool call goes through :meth:`Runtime.call` (the one path); an ORS session is one of our
episodes (:meth:`Runtime.reset` on the session's task); tasks and splits are the runtime's.
Errors are mapped once, in :class:`_OrsRoute`: ``{"detail": message, "error": {"code", "message"}}``
(``detail`` is what ORS clients read).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from openenv_mcp.doors.openapi import Errors
from openenv_mcp.doors.ors.sessions import Session, Sessions
from openenv_mcp.doors.ors.streams import SSE_HEADERS, CallStreams, frame
from openenv_mcp.doors.ors.wire import (
    CallBody,
    CreateBody,
    EnvironmentNotFound,
    OrsErrorBody,
    RangeBody,
    SplitBody,
    TaskBody,
    TaskSpec,
    blocks,
    refusal,
    split_type,
    task_spec,
    tool_output,
)
from openenv_mcp.environment.tasks import Task
from openenv_mcp.errors import (
    EpisodeError,
    EpisodeFinished,
    EpisodeNotFound,
    InvalidToolArguments,
    ModeError,
    OpenEnvError,
    ResetNeeded,
    ToolNotFound,
)
from openenv_mcp.models import Observation
from openenv_mcp.runtime import Outcome, Runtime
from openenv_mcp.runtime.episodes import Episode

__all__ = ["ORS_ERRORS", "ors_router"]

SessionHeader = Annotated[
    str | None, Header(alias="X-Session-ID", description="The sid from POST /create_session, bound by POST /create")
]
_SSE = "text/event-stream"
# Declared in the OpenAPI schema, so that it describes what these routes answer (they are not ErrorBody).
ORS_ERRORS: Errors = {  # in the OpenAPI document, over the app's (see openenv_mcp/doors/openapi.py)
    status: (OrsErrorBody, text)
    for status, text in [
        (400, "Malformed request, missing X-Session-ID, or no such split or task"),
        (404, "Unknown environment or session"),
        (409, "Episode already done"),
        (422, "Invalid arguments"),
        (503, "At capacity"),
    ]
}
_STREAMED: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events",
        "content": {
            _SSE: {
                "schema": {
                    "type": "object",
                    "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
                    "required": ["event", "data"],
                }
            }
        },
    }
}


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"detail": message, "error": {"code": code, "message": message}}, status_code=status)


class _OrsRoute(APIRoute):
    """Maps errors to ORS-shaped JSON, for the ORS routes only."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except OpenEnvError as exc:
                return _error(exc.status, exc.code, exc.message)
            except RequestValidationError as exc:
                problems = []
                for error in exc.errors():
                    where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
                    problems.append(f"{where}: {error.get('msg', 'invalid')}")
                return _error(400, "malformed_request", "Malformed request: " + "; ".join(problems))
            except HTTPException as exc:  # FastAPI's own 400 for a body it cannot read (not UTF-8, say)
                if exc.status_code != 400:
                    raise
                return _error(400, "malformed_request", f"Malformed request: {exc.detail}; send a JSON body")

        return guarded


class _Lifecycle:
    """An episode observer: shutdown ends running calls (a closed episode ends its ORS session in the binding)."""

    def __init__(self, streams: CallStreams) -> None:
        self.streams = streams

    async def start(self) -> None:
        """Nothing to open."""

    async def stop(self) -> None:
        self.streams.close()

    def on_reset(self, episode: Episode, observation: Observation) -> None:
        """Sessions are recorded by ``/create`` itself."""

    def on_step(self, episode: Episode, call: Any, outcome: Outcome, seconds: float) -> None:
        """Nothing to record."""

    def on_close(self, episode: Episode) -> None:
        """The runtime's binding forgets the episode's session."""


def _sid(header: str | None) -> str:
    if not header or not header.strip():
        raise ResetNeeded("Missing X-Session-ID header: POST /create_session, then POST /create with the sid")
    return header.strip()


class _Ors:
    """The ORS endpoints of one runtime (registered by :func:`ors_router`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.name = runtime.env.name
        settings = runtime.settings
        self.sessions = Sessions(runtime.sessions, idle_timeout=settings.idle_timeout)
        self.streams = CallStreams(keepalive=settings.ors_keepalive, result_ttl=settings.ors_result_ttl)
        self.by_split: dict[str, list[Task]] = {}
        for task in runtime.tasks:
            self.by_split.setdefault(task.split, []).append(task)
        self.tools = {  # ORS names the schema input_schema
            "tools": [
                {"name": tool["name"], "description": tool["description"], "input_schema": tool["inputSchema"]}
                for tool in runtime.tools.listing()
            ]
        }
        runtime.observe(_Lifecycle(self.streams))

    # helpers -----------------------------------------------------------------------------------

    def _env(self, env_name: str | None) -> None:
        if env_name is not None and env_name.lower() != self.name:
            raise EnvironmentNotFound(f"No environment {env_name!r} here; this server serves {self.name!r}")

    def _split(self, split: str) -> list[Task]:
        try:
            return self.by_split[split]
        except KeyError:
            raise EpisodeError(f"No split {split!r}; splits: {', '.join(self.by_split)}") from None

    def _task_at(self, split: str, index: int) -> Task:
        tasks = self._split(split)
        if not 0 <= index < len(tasks):
            raise EpisodeError(f"No task {index} in split {split!r}: it has {len(tasks)} (0 to {len(tasks) - 1})")
        return tasks[index]

    def _episode(self, session: Session) -> Episode:
        try:
            return self.runtime.episode(session.episode_id)
        except EpisodeNotFound:  # closing, its session not yet forgotten
            raise self.sessions.gone(session.id) from None

    # discovery ---------------------------------------------------------------------------------

    async def health(self) -> dict[str, str]:
        """ORS liveness."""
        return {"status": "ok"}

    async def list_environments(self) -> list[str]:
        """The environments this server serves: one, this server's."""
        return [self.name]

    async def list_tools(self, env_name: str | None = None) -> dict[str, Any]:
        """The tools, with their JSON input schemas."""
        self._env(env_name)
        return self.tools

    async def splits(self, env_name: str | None = None) -> list[dict[str, str]]:
        """The splits and their ORS types."""
        self._env(env_name)
        return [{"name": name, "type": split_type(name)} for name in self.by_split]

    async def tasks(self, body: SplitBody, env_name: str | None = None) -> dict[str, Any]:
        """The task specs of a split (id, split, prompt; never answers)."""
        self._env(env_name)
        return {"tasks": [task_spec(t) for t in self._split(body.split)], "env_name": self.name}

    async def num_tasks(self, body: SplitBody, env_name: str | None = None) -> dict[str, int]:
        """How many tasks a split holds."""
        self._env(env_name)
        return {"num_tasks": len(self._split(body.split))}

    async def task(self, body: TaskBody, env_name: str | None = None) -> dict[str, Any]:
        """One task spec, by split and index."""
        self._env(env_name)
        return {"task": task_spec(self._task_at(body.split, body.index)), "env_name": self.name}

    async def task_range(self, body: RangeBody, env_name: str | None = None) -> dict[str, Any]:
        """The task specs of ``split[start:stop]`` (Python slice rules)."""
        self._env(env_name)
        tasks = self._split(body.split)[body.start : body.stop]
        return {"tasks": [task_spec(t) for t in tasks], "env_name": self.name}

    # sessions ----------------------------------------------------------------------------------

    async def create_session(self, request: Request) -> Response:
        """A new session id, as SSE (``task_id`` then ``end``), or JSON ``{"sid"}`` if asked for."""
        sid = uuid.uuid4().hex
        accept = request.headers.get("accept", "")
        if "application/json" in accept and _SSE not in accept:
            return JSONResponse({"sid": sid})
        return Response(frame("task_id", sid) + frame("end", ""), media_type=_SSE, headers=SSE_HEADERS)

    async def create(self, body: CreateBody, x_session_id: SessionHeader = None) -> dict[str, str]:
        """Bind the session to a new episode on a task (from a task spec, or a split and an index)."""
        sid = _sid(x_session_id)
        self._env(body.env_name)
        if body.toolset_name is not None:
            raise EpisodeError(f"Toolsets are not served here (toolset_name={body.toolset_name!r}); omit it")
        seed = None
        if body.task_spec is not None:
            try:
                spec = TaskSpec.model_validate(body.task_spec)
            except ValidationError:
                raise EpisodeError(
                    f"task_spec needs the string 'id' of one of our tasks (POST /{self.name}/tasks lists them), "
                    f"got {body.task_spec!r}"
                ) from None
            task = self.runtime.tasks.get(spec.id)
            if spec.split is not None and spec.split != task.split:
                raise EpisodeError(f"Task {task.id!r} is in split {task.split!r}, not {spec.split!r}")
            seed = spec.seed
        else:
            assert body.split is not None and body.index is not None  # checked by CreateBody
            task = self._task_at(body.split, body.index)
        if (existing := self.sessions.find(sid)) is None:
            if await self.sessions.create(sid, task, seed, blocks) is not None:
                return {"sid": sid}
            existing = self.sessions.get(sid)  # a concurrent /create with this sid won
        return self._recreated(existing, task)

    def _recreated(self, session: Session, task: Task) -> dict[str, str]:
        if session.task_id != task.id:
            raise EpisodeError(
                f"Session {session.id!r} is already on task {session.task_id!r}; "
                "POST /create_session for a new sid to start another task"
            )
        return {"sid": session.id}  # a retried /create: the same session, not a second episode

    def _touch(self, header: str | None) -> Session:
        """The session named by the header; any request on it counts as activity (no idle reaping)."""
        session = self.sessions.get(_sid(header))
        self._episode(session).touch()
        return session

    async def prompt(self, env_name: str | None = None, x_session_id: SessionHeader = None) -> list[dict[str, Any]]:
        """The session's task prompt as blocks (what ``POST /reset`` observes first)."""
        self._env(env_name)
        return self._touch(x_session_id).prompt

    async def task_tools(self, env_name: str | None = None, x_session_id: SessionHeader = None) -> dict[str, Any]:
        """The session's tools: the server's tools (they do not vary by task)."""
        self._env(env_name)
        self._touch(x_session_id)
        return self.tools

    async def ping(self, x_session_id: SessionHeader = None) -> dict[str, str]:
        """Keep the session (and its episode) from being reaped as idle."""
        self._touch(x_session_id)
        return {"status": "ok"}

    async def delete(self, x_session_id: SessionHeader = None) -> dict[str, str]:
        """Close the session's episode (after a call in flight); idempotent."""
        sid = _sid(x_session_id)
        await self.sessions.delete(sid)  # waits for a call in flight
        return {"sid": sid}

    # tool calls --------------------------------------------------------------------------------

    async def call(self, body: CallBody, env_name: str | None = None, x_session_id: SessionHeader = None) -> Response:
        """Run a tool on the session's episode; the result comes as SSE (see ``streams``)."""
        self._env(env_name)
        session = self.sessions.get(_sid(x_session_id))
        if body.task_id is None:
            task_id = self.streams.start(session.id, self._run(session, body.name, body.input))
        elif self.streams.owns(session.id, body.task_id):
            task_id = body.task_id
        else:
            error = frame("error", self.streams.unknown(body.task_id))
            return Response(error, media_type=_SSE, headers=SSE_HEADERS)
        if await self.streams.settled(task_id):
            events = b"".join([event async for event in self.streams.events(task_id)])
            return Response(events, media_type=_SSE, headers=SSE_HEADERS)
        return StreamingResponse(self.streams.events(task_id), media_type=_SSE, headers=SSE_HEADERS)

    async def _run(self, session: Session, tool: str, arguments: dict[str, Any]) -> str:
        try:
            outcome = await self.runtime.call(tool, arguments, session.episode_id)
        except ToolNotFound as exc:
            return refusal(exc.message, "not_found")
        except InvalidToolArguments as exc:
            return refusal(exc.message, "input_validation")
        except EpisodeFinished:
            message = (
                f"{tool!r} was not run: this session's episode has finished (a call returned finished=true); "
                "delete the session and create another for a new episode"
            )
            return refusal(message, "episode_finished")
        return tool_output(outcome)


# (method, path, endpoint name, under /{env_name} too)
_ROUTES: list[tuple[str, str, str, bool]] = [
    ("GET", "/health", "health", False),
    ("GET", "/list_environments", "list_environments", False),
    ("GET", "/tools", "list_tools", True),
    ("GET", "/splits", "splits", True),
    ("POST", "/tasks", "tasks", True),
    ("POST", "/num_tasks", "num_tasks", True),
    ("POST", "/task", "task", True),
    ("POST", "/task_range", "task_range", True),
    ("POST", "/create_session", "create_session", False),
    ("POST", "/create", "create", False),
    ("GET", "/prompt", "prompt", True),
    ("GET", "/task_tools", "task_tools", True),
    ("POST", "/call", "call", True),
    ("POST", "/ping", "ping", False),
    ("POST", "/delete", "delete", False),
    ("POST", "/delete_session", "delete", False),
]


def ors_router(runtime: Runtime) -> APIRouter:
    """The ORS routes for a sim-mode runtime, to ``app.include_router``.

    Environment routes are served at ``/{env}/...`` (the spec) and, for the reference client's
    default environment, at the bare path (``/call``, ``/tools``, ...); only the former are in
    the OpenAPI schema.
    """
    if not runtime.sim:
        raise ModeError("ORS is served in sim mode only; this server runs in prod mode (MODE=prod)")
    ors = _Ors(runtime)
    router = APIRouter(route_class=_OrsRoute, tags=["ors"])
    for method, path, name, per_env in _ROUTES:
        endpoint = getattr(ors, name)
        responses = _STREAMED if name in ("create_session", "call") else None
        if per_env:
            router.add_api_route(
                "/{env_name}" + path, endpoint, methods=[method], name=f"ors_env_{name}", responses=responses
            )
        router.add_api_route(
            path, endpoint, methods=[method], name=f"ors_{name}", include_in_schema=not per_env, responses=responses
        )
    return router
