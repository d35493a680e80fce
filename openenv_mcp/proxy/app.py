"""The proxy's HTTP surface: one route per wire format, each under ``/ep/<episode_id>`` (and bare, the API key
naming the episode), every failure in that format's own error shape.

    /ep/ID/v1/chat/completions                          OpenAI chat completions
    /ep/ID/v1/responses                                 OpenAI Responses
    /ep/ID/v1/messages, /ep/ID/v1/messages/count_tokens Anthropic Messages
    /ep/ID/v1beta/models/M:streamGenerateContent        Gemini (also :generateContent, :countTokens)
    /ep/ID/v1/models                                    the model, for clients that list models first
    /healthz                                            the proxy is up (its upstream may not be)

A harness that appends ``/v1`` to its base URL itself (Claude Code, Gemini CLI) is given ``http://PROXY/ep/ID``;
the others ``http://PROXY/ep/ID/v1``. Without the prefix, the API key is the episode id (``Authorization: Bearer
ID``, ``x-api-key``, ``x-goog-api-key`` or ``?key=``).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.proxy.engine import Engine
from openenv_mcp.proxy.errors import BodyTooLarge, EpisodeNotFound, RequestInvalid, http_status
from openenv_mcp.proxy.wires import chat, gemini, messages, responses

__all__ = ["MAX_BODY", "build_app"]

MAX_BODY = 32 << 20  # bytes; the largest harness prompt seen was under 100 KB


def build_app(engine: Engine) -> Starlette:
    """The proxy's ASGI app over ``engine``."""

    async def turn(request: Request, wire: ModuleType, **reading: Any) -> Response:
        try:
            body = await _body(request)
            conversation = wire.read(body, **reading)
            reply = await engine.answer(_episode(request), conversation, wire=wire.NAME)
        except OpenEnvError as exc:
            return JSONResponse(wire.error(exc), status_code=http_status(exc))
        if conversation.stream:
            return StreamingResponse(wire.stream(reply, conversation, body), media_type="text/event-stream")
        return JSONResponse(wire.answer(reply, conversation))

    async def chat_route(request: Request) -> Response:
        return await turn(request, chat)

    async def responses_route(request: Request) -> Response:
        return await turn(request, responses)

    async def messages_route(request: Request) -> Response:
        return await turn(request, messages)

    async def count_route(request: Request) -> Response:
        try:
            tokens = await engine.count(messages.read(await _body(request)))
        except OpenEnvError as exc:
            return JSONResponse(messages.error(exc), status_code=http_status(exc))
        return JSONResponse(messages.counted(tokens))

    async def gemini_route(request: Request) -> Response:
        model, _, action = request.path_params["target"].partition(":")
        if action in ("streamGenerateContent", "generateContent"):
            return await turn(request, gemini, model=model, stream=action == "streamGenerateContent")
        try:
            if action != "countTokens":
                raise RequestInvalid(
                    f"No Gemini method {action!r}; the proxy serves streamGenerateContent, generateContent, countTokens"
                )
            body = await _body(request)
            inner = body.get("generateContentRequest")
            given: dict[str, Any] = inner if isinstance(inner, dict) else body
            return JSONResponse(gemini.counted(await engine.count(gemini.read(given, model=model))))
        except OpenEnvError as exc:
            return JSONResponse(gemini.error(exc), status_code=http_status(exc))

    async def models_route(request: Request) -> Response:
        try:
            await engine.start()
        except OpenEnvError as exc:
            return JSONResponse(chat.error(exc), status_code=http_status(exc))
        name = engine.card.model if engine.card is not None else "model"
        return JSONResponse({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "openenv-mcp"}]})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstream": engine.upstream.url})

    routes = [Route("/healthz", health, methods=["GET"])]
    for prefix in ("/ep/{episode}", ""):
        routes += [
            Route(f"{prefix}/v1/chat/completions", chat_route, methods=["POST"]),
            Route(f"{prefix}/v1/responses", responses_route, methods=["POST"]),
            Route(f"{prefix}/v1/messages", messages_route, methods=["POST"]),
            Route(f"{prefix}/v1/messages/count_tokens", count_route, methods=["POST"]),
            Route(f"{prefix}/v1beta/models/{{target}}", gemini_route, methods=["POST"]),
            Route(f"{prefix}/v1/models", models_route, methods=["GET"]),
        ]
    return Starlette(routes=routes)


async def _body(request: Request) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLarge(f"The request body is over {MAX_BODY >> 20} MiB; send a shorter conversation")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise BodyTooLarge(f"The request body is over {MAX_BODY >> 20} MiB; send a shorter conversation")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise RequestInvalid(f"The request body is not JSON ({exc.__class__.__name__}: {str(exc)[:200]})") from None
    if not isinstance(body, dict):
        raise RequestInvalid("The request body must be a JSON object")
    return body


def _episode(request: Request) -> str:
    """The episode a request belongs to: its path's ``/ep/ID``, else its API key."""
    episode = request.path_params.get("episode")
    if episode:
        return str(episode)
    authorization = request.headers.get("authorization", "")
    key = authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""
    key = key or request.headers.get("x-api-key") or request.headers.get("x-goog-api-key") or ""
    key = key or request.query_params.get("key", "")
    if not key:
        raise EpisodeNotFound(
            "The request names no episode: give the harness the base URL http://PROXY/ep/EPISODE_ID/v1 "
            "(or http://PROXY/ep/EPISODE_ID where it appends /v1 itself), or the episode id as its API key"
        )
    return key
