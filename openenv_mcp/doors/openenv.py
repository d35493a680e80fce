"""OpenEnv's wire protocol (package ``openenv`` 0.10), as a door onto the runtime: its clients drive our servers.

Two pieces, each a translation onto :class:`~openenv_mcp.runtime.Runtime` (one tool table, one dispatch):

- **WebSocket** (``/ws``, the messages of OpenEnv's ``EnvClient``/``GenericEnvClient``; our own ``{"op": ...}``
  messages share the socket and are told apart by their ``type`` key):
  ``{"type": "reset", "data": {"task_id"?, "split"?, "seed"?, "episode_id"?}}`` opens an episode (closing the
  one this socket had); ``{"type": "step", "data": ACTION}`` is a step, where ACTION is ours
  (``{"tool", "arguments"}``) or OpenEnv's MCP actions ``{"type": "call_tool", "tool_name", "arguments"}`` and
  ``{"type": "list_tools"}``; ``{"type": "state"}``; ``{"type": "close"}``. Answers are
  ``{"type": "observation", "data": {"observation", "reward", "done", "metadata"}}``,
  ``{"type": "state", "data": {...}}`` or ``{"type": "error", "data": {"message", "code"}}``.
- **JSON-RPC at /mcp** (OpenEnv's ``MCPToolClient``, which posts plain JSON-RPC without MCP's ``initialize``):
  ``openenv/session/create`` (sim: opens an episode, its id is the session id), ``tools/list`` and
  ``tools/call`` with ``params.session_id``, ``openenv/session/close``. Every other ``/mcp`` request goes to
  the MCP SDK untouched. A socket opened with ``/ws?session_id=ID`` acts on that session's episode.

  Which requests are OpenEnv's is decided from the headers first, so that an MCP client's request reaches the SDK
  without this door reading its body: ``MCPToolClient`` posts with httpx's defaults (``Accept: */*``, no MCP
  header), while an MCP client sends ``MCP-Protocol-Version`` (every request but ``initialize``) or
  ``Mcp-Session-Id``, and must accept ``text/event-stream`` (the Streamable HTTP transport says so). A request with
  any of these goes straight to the SDK (:func:`speaks_mcp`). Only the others are read and parsed here, bounded:
  the app's body limit answers a body too large with 413 before it is parsed (``OPENENV_MAX_BODY_BYTES``,
  :mod:`openenv_mcp.doors.body_limit`), and JSON nested more than about 200 levels deep is answered 400 (the
  parser's own limit, the one the MCP SDK applies to its requests too); a body that is not OpenEnv's goes on to the
  SDK as it came.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import pydantic_core
from starlette.types import ASGIApp, Receive, Scope, Send

from openenv_mcp.errors import (
    EpisodeNotFound,
    InvalidToolArguments,
    ModeError,
    OpenEnvError,
    ResetNeeded,
    ToolFailed,
    ToolNotFound,
)
from openenv_mcp.models import Observation
from openenv_mcp.runtime import Runtime, SessionKey

__all__ = ["TOO_DEEP", "OpenEnvMcpShim", "OpenEnvSessions", "is_openenv_message", "speaks_mcp"]

log = logging.getLogger(__name__)

_RESET_KEYS = {"task_id", "split", "seed", "episode_id"}
_DOOR = "openenv"  # OpenEnv's sessions in the runtime's binding: ("openenv", session id)
_SOCKET = "openenv-ws"  # a socket's own episodes, without a session: ("openenv-ws", a random id)


class OpenEnvSessions:
    """OpenEnv's sessions of one server, kept in the runtime's binding of sessions to episodes as
    ``("openenv", id)``: in sim a session is its episode and ends with it (closed, or reaped when idle), so nothing
    is kept for a client that went away; in prod a session has no episode and lives until it is closed."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.sessions = runtime.sessions

    async def create(self) -> str:
        session_id = secrets.token_hex(16)
        key = (_DOOR, session_id)
        if self.runtime.sim:
            await self.sessions.open(key, lasting=False)
        else:
            self.sessions.begin(key, lasting=False)
        return session_id

    def episode_of(self, session_id: str) -> str | None:
        session = self.sessions.find((_DOOR, session_id))
        if session is None:
            raise EpisodeNotFound(
                f"No OpenEnv session {session_id!r} on this server (closed, its episode reaped after "
                f"{self.runtime.settings.idle_timeout:g} s idle, or never created): call openenv/session/create first"
            )
        return session.current

    async def close(self, session_id: str) -> None:
        await self.sessions.end((_DOOR, session_id))


# the WebSocket messages --------------------------------------------------------------------------------


def is_openenv_message(message: Any) -> bool:
    """Whether a decoded WebSocket message is OpenEnv's (``type``) rather than ours (``op``)."""
    return isinstance(message, dict) and "type" in message and "op" not in message


class OpenEnvSocket:
    """The OpenEnv side of one WebSocket connection: its episode, and the session it may be bound to.

    Bound to a session (``/ws?session_id=ID``), it acts on the session's episode, which outlives the socket;
    otherwise the episodes it opens are its own (a session of the binding as ``("openenv-ws", id)``), closed with it.
    """

    def __init__(self, sessions: OpenEnvSessions, session_id: str | None) -> None:
        self.sessions = sessions
        self.runtime = sessions.runtime
        self.own = session_id is None
        if session_id is not None:
            sessions.episode_of(session_id)  # an unknown session: refused now
            self.key: SessionKey = (_DOOR, session_id)
        else:
            self.key = (_SOCKET, secrets.token_hex(16))

    @property
    def episode_id(self) -> str | None:
        """The episode this socket acts on (``None``: no reset yet)."""
        session = self.runtime.sessions.find(self.key)
        return session.current if session is not None else None

    async def answer(self, message: dict[str, Any]) -> str:
        try:
            kind, data = await self._run(message)
        except OpenEnvError as exc:
            kind, data = "error", {"message": exc.message, "code": exc.code}
        except Exception as exc:  # a bug of ours: answered, so the connection and its episode go on
            log.exception("An OpenEnv %r message on /ws failed inside the server", message.get("type"))
            text = f"The server failed on this message ({type(exc).__name__}: {exc}); its log has the traceback"
            kind, data = "error", {"message": text, "code": "internal_error"}
        return json.dumps({"type": kind, "data": data}, separators=(",", ":"))

    async def _run(self, message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        kind, data = message.get("type"), message.get("data") or {}
        if not isinstance(data, dict):
            raise InvalidToolArguments(f"'data' of a {kind!r} message must be an object")
        if kind == "reset":
            return "observation", await self._reset(data)
        if kind == "step":
            return "observation", await self._step(data)
        if kind == "state":
            return "state", self._state()
        if kind == "close":
            await self.aclose()
            return "state", {"closed": True}
        raise InvalidToolArguments(f"Unknown message type {kind!r}: OpenEnv's are reset, step, state and close")

    async def _reset(self, data: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(data) - _RESET_KEYS)
        if unknown:
            raise InvalidToolArguments(f"reset takes task_id, split and seed; unknown: {', '.join(unknown)}")
        seed = data.get("seed")
        result = await self.runtime.sessions.open(  # the socket's (or its session's) episode before is closed
            self.key, task_id=data.get("task_id"), split=data.get("split"), seed=seed, lasting=self.own, replace=True
        )
        return _result(result.observation, 0.0, False, {"episode_id": result.episode_id, **result.info})

    async def _step(self, data: dict[str, Any]) -> dict[str, Any]:
        if data.get("type") == "list_tools":
            tools = _tools(self.runtime)
            return {"observation": {"tools": tools}, "reward": None, "done": False, "metadata": {}}
        mcp = data.get("type") == "call_tool"
        tool = data.get("tool_name") if mcp else data.get("tool")
        arguments = data.get("arguments") or {}
        if not isinstance(tool, str) or not tool or not isinstance(arguments, dict):
            raise InvalidToolArguments(
                'A step\'s data is {"tool": NAME, "arguments": {...}} or '
                '{"type": "call_tool", "tool_name": NAME, "arguments": {...}}'
            )
        episode = self.episode_id
        if self.runtime.sim and episode is None:
            raise ResetNeeded('No episode on this connection: send {"type": "reset"} first')
        try:
            outcome = await self.runtime.call(tool, arguments, episode)
        except (ToolNotFound, InvalidToolArguments) as exc:
            if not mcp:
                raise
            kind = "tool_not_found" if isinstance(exc, ToolNotFound) else "invalid_args"
            error = {"error_type": kind, "message": exc.message}
            return {"observation": {"tool_name": tool, "result": None, "error": error}, "reward": None, "done": False}
        observation = outcome.observation
        metadata: dict[str, Any] = outcome.as_step().info if outcome.episode is not None else {}
        if mcp:
            shown = {"tool_name": tool, "result": _call_result(observation), "error": None}
            return {"observation": shown, "reward": outcome.reward, "done": outcome.done, "metadata": metadata}
        return _result(observation, outcome.reward, outcome.done, metadata)

    def _state(self) -> dict[str, Any]:
        if not self.runtime.sim:
            raise ModeError("state exists in sim mode only; this server runs in prod mode (MODE=prod)")
        if self.episode_id is None:
            raise ResetNeeded('No episode on this connection: send {"type": "reset"} first')
        state: dict[str, Any] = self.runtime.episode(self.episode_id).state().model_dump()
        return state

    async def aclose(self) -> None:
        """Close the episodes this socket opened (a bound session's episode lives until the session closes)."""
        if self.own:
            await self.runtime.sessions.end(self.key)


def _tools(runtime: Runtime) -> list[dict[str, Any]]:
    """The tool table as OpenEnv's clients read it (name, description, inputSchema)."""
    return [{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in runtime.tools.listing()]


def _call_result(observation: Observation) -> dict[str, Any]:
    """An MCP ``CallToolResult`` as JSON, plus ``data`` (the structured result, else the text) that
    OpenEnv's ``call_tool`` returns."""
    data = observation.structured_content if observation.structured_content is not None else observation.text
    return {
        "content": [block.model_dump(by_alias=True) for block in observation.content],
        "structuredContent": observation.structured_content,
        "isError": observation.is_error,
        "data": data,
    }


def _result(observation: Observation, reward: float, done: bool, metadata: dict[str, Any]) -> dict[str, Any]:
    shown = {**observation.model_dump(by_alias=True), "text": observation.text}
    return {"observation": shown, "reward": reward, "done": done, "metadata": metadata}


# the JSON-RPC dialect at /mcp ---------------------------------------------------------------------------

_JSON_RPC_ERRORS = {"tool_not_found": -32601, "invalid_arguments": -32602}


class OpenEnvMcpShim:
    """``/mcp``: OpenEnv's JSON-RPC requests answered here, every other request passed to ``inner`` unchanged."""

    def __init__(self, inner: ASGIApp, sessions: OpenEnvSessions) -> None:
        self.inner, self.sessions = inner, sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or speaks_mcp(scope["headers"]):
            await self.inner(scope, receive, send)
            return
        chunks, more = [], True
        while more:  # the app's BodyLimit stops a body over OPENENV_MAX_BODY_BYTES (413) before it is all read
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = _openenv_request(body)
        except _TooDeep:
            await _send_json(send, 400, {"error": {"code": "malformed_request", "message": TOO_DEEP}})
            return
        if request is None:
            await self.inner(scope, _replay(body, receive), send)
            return
        await _send_json(send, 200, await _handle(self.sessions, request))


_MCP_HEADERS = (b"mcp-protocol-version", b"mcp-session-id")


def speaks_mcp(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request's headers are an MCP client's (``MCP-Protocol-Version``, ``Mcp-Session-Id``, or an
    ``Accept`` naming ``text/event-stream``), which OpenEnv's ``MCPToolClient`` never sends."""
    for name, value in headers:
        if name in _MCP_HEADERS or (name == b"accept" and b"text/event-stream" in value.lower()):
            return True
    return False


TOO_DEEP = "Malformed request: JSON nested too deeply to read (over 200 levels); send a flatter JSON body"


class _TooDeep(Exception):
    """A body whose JSON nests past the parser's limit."""


async def _send_json(send: Send, status: int, answer: dict[str, Any]) -> None:
    payload = json.dumps(answer, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _openenv_request(body: bytes) -> dict[str, Any] | None:
    """The OpenEnv JSON-RPC request in ``body``; ``None`` for anything else (:class:`_TooDeep` if nested too deeply)."""
    try:
        request = pydantic_core.from_json(body)
    except ValueError as exc:  # not JSON (the SDK answers it), or nested past the parser's limit
        if str(exc).startswith("recursion limit exceeded"):
            raise _TooDeep from exc
        return None
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return None
    params = request.get("params")
    if request["method"].startswith("openenv/") or (isinstance(params, dict) and "session_id" in params):
        return request
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _handle(sessions: OpenEnvSessions, request: dict[str, Any]) -> dict[str, Any]:
    method, params = request["method"], request.get("params") or {}
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    handlers: dict[str, Callable[[OpenEnvSessions, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
        "openenv/session/create": _create,
        "openenv/session/close": _close,
        "tools/list": _list,
        "tools/call": _call,
    }
    handler = handlers.get(method)
    try:
        if handler is None:
            raise ToolNotFound(f"No method {method!r} here; OpenEnv's are {', '.join(handlers)}")
        answer["result"] = await handler(sessions, params)
    except OpenEnvError as exc:
        answer["error"] = {"code": _JSON_RPC_ERRORS.get(exc.code, -32000), "message": exc.message,
                           "data": {"code": exc.code}}  # fmt: skip
    return answer


async def _create(sessions: OpenEnvSessions, params: dict[str, Any]) -> dict[str, Any]:
    return {"session_id": await sessions.create()}


async def _close(sessions: OpenEnvSessions, params: dict[str, Any]) -> dict[str, Any]:
    await sessions.close(str(params.get("session_id")))
    return {"closed": True}


async def _list(sessions: OpenEnvSessions, params: dict[str, Any]) -> dict[str, Any]:
    sessions.episode_of(str(params.get("session_id")))
    return {"tools": _tools(sessions.runtime)}


async def _call(sessions: OpenEnvSessions, params: dict[str, Any]) -> dict[str, Any]:
    episode = sessions.episode_of(str(params.get("session_id")))
    name, arguments = params.get("name"), params.get("arguments") or {}
    if not isinstance(name, str) or not isinstance(arguments, dict):
        raise InvalidToolArguments("tools/call takes params {name, arguments: {...}, session_id}")
    outcome = await sessions.runtime.call(name, arguments, episode)
    if outcome.observation.is_error:
        raise ToolFailed(outcome.observation.text)
    result = _call_result(outcome.observation)
    if outcome.episode is not None:
        result["_meta"] = {"reward": outcome.reward, "done": outcome.done}
    return result
