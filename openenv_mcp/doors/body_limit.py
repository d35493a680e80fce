"""The largest request body a server reads (``OPENENV_MAX_BODY_BYTES``): one ASGI middleware, for every route.

A request that declares its length (``Content-Length``, as nearly every client does) costs one header lookup: over
the limit it is refused with 413 without being parsed; under it, nothing more is done, because the HTTP parser
ends the body at the declared length. A request without one (chunked) has its body counted as it is read: past
the limit the read raises :class:`BodyTooLarge` (an ``HTTPException`` that the app answers with its error body),
and should whatever was reading swallow that, this middleware answers 413 itself, if no response has started.
Before its own 413 it reads what is left of the body and drops it (up to :data:`DRAIN_BYTES`): a server that
answers and closes while the body is still arriving resets the connection, and a client that sent
``Connection: close`` then loses the answer (it sees the connection drop, not the 413). (FastAPI's own
``max_body_size`` wraps every request's receive and send in three layers instead: a third of the control plane's
overhead over a bare endpoint, measured with callgrind in ``bench/README.md``.)
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DRAIN_BYTES", "BodyLimit", "BodyTooLarge", "too_large"]

DRAIN_BYTES = 64 * 1024 * 1024
"""The most of a refused body read (and dropped) before the 413, so the client is listening when it comes;
a larger one is answered at once (its sender may see the connection reset rather than the answer)."""


def too_large(limit: int) -> str:
    """What a 413 says."""
    return f"Request body too large: over {limit} bytes (OPENENV_MAX_BODY_BYTES)"


class BodyTooLarge(HTTPException):
    """A chunked request body went past the limit while it was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large(limit))


class BodyLimit:
    """Refuse HTTP request bodies over ``max_bytes`` with 413 ``body_too_large``."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit():
                if int(value) > self.max_bytes:
                    await self._refuse(scope, receive, send, pending=int(value))
                else:
                    await self.app(scope, receive, send)
                return
        await self._counted(scope, receive, send)

    async def _counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit, read, started = self.max_bytes, 0, False

        async def counted_receive() -> Message:
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send, pending=DRAIN_BYTES)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, pending: int) -> None:
        if pending <= DRAIN_BYTES:
            await _drain(receive)
        body = {"error": {"code": "body_too_large", "message": too_large(self.max_bytes)}}
        await JSONResponse(body, 413)(scope, receive, send)


async def _drain(receive: Receive) -> None:
    """Read what is left of the request body (at most :data:`DRAIN_BYTES`) and drop it."""
    read = 0
    while read <= DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return  # the client went away
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
