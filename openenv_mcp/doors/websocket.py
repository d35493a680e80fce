"""The WebSocket door (sim mode): reset, step, state and close over one connection, no per-call HTTP.

Each message (a text frame, or a binary frame holding UTF-8 JSON) is a JSON object with an ``op``
and an optional ``id`` echoed in the answer:

    {"op": "reset", "task_id"?, "split"?, "seed"?}
    {"op": "step", "action": {"tool", "arguments"}, "episode_id"?, "step_id"?}
    {"op": "step_batch", "steps": [{"episode_id", "action", "step_id"?}, ...]}
    {"op": "state", "episode_id"?}
    {"op": "close", "episode_id"?}
    {"op": "fork", "episode_id"?, "via"?}          a new episode in this one's state (opened on this connection)
    {"op": "snapshot", "episode_id"?}             the episode as signed data
    {"op": "restore", "snapshot": {...}}          a new episode from a snapshot (opened on this connection)

Answers are ``{"id"?, "ok": true, "result": ...}`` (the same shapes as the HTTP routes) or
``{"id"?, "ok": false, "status": 404, "error": {"code", "message"}}``. ``episode_id`` defaults to
the episode this connection's last reset opened; a step sent again with the ``step_id`` it had is answered with
what it did (as ``X-Step-Id`` over HTTP), not run twice. Episodes opened on a connection are closed when
it ends, so a client that goes away leaks nothing. A frame over ``OPENENV_MAX_BODY_BYTES`` is answered 413
``body_too_large`` (and one nested too deeply to read, 400), and the connection goes on.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter, ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect

from openenv_mcp.doors.body_limit import too_large
from openenv_mcp.doors.openenv import OpenEnvSessions, OpenEnvSocket, is_openenv_message
from openenv_mcp.errors import OpenEnvError, ResetNeeded
from openenv_mcp.models import Action, BatchFork, BatchItem, BatchStep, Snapshot
from openenv_mcp.runtime import ForkVia, Runtime, SessionKey

__all__ = ["websocket_door"]

log = logging.getLogger(__name__)


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | int | None = None


class _Reset(_Op):
    op: Literal["reset"]
    task_id: str | None = None
    split: str | None = None
    seed: StrictInt | None = None


class _Step(_Op):
    op: Literal["step"]
    action: Action
    episode_id: str | None = None
    step_id: str | None = Field(default=None, min_length=1, max_length=128)


class _Batch(_Op):
    op: Literal["step_batch"]
    steps: list[Annotated[BatchStep | BatchFork, Field(union_mode="left_to_right")]] = Field(
        min_length=1, max_length=4096
    )


class _State(_Op):
    op: Literal["state", "close"]
    episode_id: str | None = None


class _Fork(_Op):
    op: Literal["fork"]
    episode_id: str | None = None
    via: ForkVia = "auto"


class _Snapshot(_Op):
    op: Literal["snapshot"]
    episode_id: str | None = None


class _Restore(_Op):
    op: Literal["restore"]
    snapshot: Snapshot


_Message = TypeAdapter(
    Annotated[_Reset | _Step | _Batch | _State | _Fork | _Snapshot | _Restore, Field(discriminator="op")]
)


def websocket_door(runtime: Runtime, sessions: OpenEnvSessions) -> Callable[[WebSocket], Awaitable[None]]:
    """The ``/ws`` endpoint over ``runtime``; OpenEnv's messages (``openenv_mcp.doors.openenv``) share it."""

    limit = runtime.settings.max_body_bytes  # a frame's limit, as a request body's

    async def endpoint(socket: WebSocket) -> None:
        await socket.accept()
        key: SessionKey = ("ws", secrets.token_hex(16))  # this connection's episodes, in the runtime's binding
        openenv: list[OpenEnvSocket] = []  # made on the first OpenEnv message
        try:
            while True:
                frame = await socket.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                # A binary frame is read like a text one (UTF-8 JSON), rather than ending the connection.
                raw: str | bytes = frame["text"] if frame.get("text") is not None else frame.get("bytes") or b""
                if len(raw) > limit:  # characters of a text frame: at least its bytes / 4, at most its bytes
                    await socket.send_text(_error(None, 413, "body_too_large", too_large(limit)))
                    continue
                answer = await _answer(runtime, raw, key)
                if answer is None:
                    answer = await _openenv_answer(sessions, socket, openenv, raw)
                await socket.send_text(answer)
        except WebSocketDisconnect:
            pass
        finally:
            await runtime.sessions.end(key)
            for side in openenv:
                await side.aclose()

    return endpoint


async def _openenv_answer(
    sessions: OpenEnvSessions, socket: WebSocket, openenv: list[OpenEnvSocket], raw: str | bytes
) -> str:
    if not openenv:
        try:
            openenv.append(OpenEnvSocket(sessions, socket.query_params.get("session_id")))
        except OpenEnvError as exc:
            return json.dumps({"type": "error", "data": {"message": exc.message, "code": exc.code}})
    return await openenv[0].answer(json.loads(raw))


async def _answer(runtime: Runtime, raw: str | bytes, key: SessionKey) -> str | None:
    """Our answer to a message of ours; ``None`` for one of OpenEnv's (a JSON object with a ``type``)."""
    try:
        message = _Message.validate_json(raw)
    except ValidationError as exc:
        try:
            if is_openenv_message(json.loads(raw)):
                return None
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit: the problems below say so
            pass
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}" for e in exc.errors())
        return _error(None, 400, "malformed_request", f"Malformed message: {problems}")
    try:
        result = await _run(runtime, message, key)
    except OpenEnvError as exc:
        return _error(message.id, exc.status, exc.code, exc.message)
    except Exception as exc:  # a bug of ours: answered, so the connection and its other episodes go on
        op = getattr(message, "op", "?")
        log.exception("A /ws %r message failed inside the server", op)
        return _error(
            message.id,
            500,
            "internal_error",
            f"The server failed on this {op!r} message ({type(exc).__name__}: {exc}); its log has the traceback. "
            "This connection and its episodes go on",
        )
    # {"ok":true,"result":...,"id":...}, the result serialized by pydantic-core straight to JSON (several times
    # cheaper than model_dump then json.dumps; the same JSON values)
    end = b"}" if message.id is None else b',"id":' + json.dumps(message.id).encode() + b"}"
    return (b'{"ok":true,"result":' + result + end).decode()


def _json(model: BaseModel) -> bytes:
    return model.__pydantic_serializer__.to_json(model)


_ITEMS: TypeAdapter[list[BatchItem]] = TypeAdapter(list[BatchItem])


async def _run(runtime: Runtime, message: _Op, key: SessionKey) -> bytes:
    sessions = runtime.sessions

    def current(episode_id: str | None) -> str:
        session = sessions.find(key)
        chosen = episode_id or (session.current if session is not None else None)
        if chosen is None:
            raise ResetNeeded('No episode on this connection: send {"op": "reset"} first, or give episode_id')
        return chosen

    if isinstance(message, _Reset):
        return _json(await sessions.open(key, task_id=message.task_id, split=message.split, seed=message.seed))
    if isinstance(message, _Step):
        action, episode_id = message.action, current(message.episode_id)
        if message.step_id is None:
            return _json((await runtime.call(action.tool, action.arguments, episode_id)).as_step())
        return _json(await runtime.recent.step(action.tool, action.arguments, episode_id, message.step_id))
    if isinstance(message, _Batch):
        return _ITEMS.dump_json(await runtime.step_batch(message.steps), exclude_none=True)
    if isinstance(message, _Fork | _Restore):
        if isinstance(message, _Fork):
            opened_now = await runtime.fork(current(message.episode_id), via=message.via)
        else:
            opened_now = await runtime.restore(message.snapshot)
        sessions.adopt(key, opened_now.episode_id)
        return _json(opened_now)
    if isinstance(message, _Snapshot):
        return _json(await runtime.snapshot(current(message.episode_id)))
    assert isinstance(message, _State)
    episode_id = current(message.episode_id)
    if message.op == "state":
        return _json(runtime.episode(episode_id).state())
    return _json((await sessions.close(key, episode_id)).state())


def _error(message_id: str | int | None, status: int, code: str, text: str) -> str:
    body: dict[str, Any] = {"ok": False, "status": status, "error": {"code": code, "message": text}}
    if message_id is not None:
        body["id"] = message_id
    return json.dumps(body, separators=(",", ":"))
