"""ORS tool-call streams: SSE framing, keep-alive, and results kept for a reconnect by task id.

A ``/call`` runs its tool in a task of its own, so a dropped connection does not cancel it: the
client posts the same call again with the ``task_id`` it was given and receives the result, which
is kept for ``result_ttl`` seconds after the call completes. One call on the wire::

    event: task_id
    data: 5f0c...

    : keep-alive                     (every ``keepalive`` seconds while the tool runs)

    event: chunk
    data: {"ok":true,"output":...    (4096 characters at most)

    event: end
    data: ...}                       (the last piece)

A call that raised ends with ``event: error`` and a message instead of the result. A call that
ends within ``QUICK`` seconds is sent as one response holding the same events.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any

from openenv_mcp.errors import OpenEnvError

__all__ = ["CHUNK_SIZE", "KEEPALIVE", "QUICK", "SSE_HEADERS", "CallStreams", "frame", "pieces"]

log = logging.getLogger(__name__)

CHUNK_SIZE = 4096
KEEPALIVE = b": keep-alive\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
QUICK = 0.05


def frame(event: str, data: str) -> bytes:
    """One SSE event; a multi-line ``data`` becomes several ``data:`` lines (the client joins them)."""
    lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return (f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n").encode()


def pieces(text: str, size: int = CHUNK_SIZE) -> list[str]:
    """Cut ``text`` into pieces of at most ``size`` characters, none starting with whitespace.

    The SSE spec strips one space after ``data:``, but the reference client strips all leading
    whitespace, so a piece that began with a space would lose it on reassembly. Cutting a little
    earlier avoids that; in compact JSON whitespace occurs only inside strings. (A run of
    whitespace longer than ``size`` cannot be cut that way and is cut at ``size``.)
    """
    out: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = start + size
        while cut > start + 1 and text[cut].isspace():
            cut -= 1
        if text[cut].isspace():
            cut = start + size
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


@dataclass(eq=False, slots=True)
class _Call:
    session: str
    task: asyncio.Task[str]
    expiry: asyncio.TimerHandle | None = None


class CallStreams:
    """Running and recently finished tool calls, by task id."""

    def __init__(self, *, keepalive: float, result_ttl: float) -> None:
        self.keepalive = keepalive
        self.result_ttl = result_ttl
        self._calls: dict[str, _Call] = {}

    def __len__(self) -> int:
        return len(self._calls)

    def start(self, session: str, work: Coroutine[Any, Any, str]) -> str:
        """Run ``work`` (which returns the JSON result) for ``session``; return its task id."""
        task_id = uuid.uuid4().hex
        task = asyncio.get_running_loop().create_task(work, name=f"ors-call-{task_id}")
        self._calls[task_id] = _Call(session, task)
        task.add_done_callback(lambda _: self._completed(task_id))
        return task_id

    def owns(self, session: str, task_id: str) -> bool:
        """Whether ``task_id`` is a call of ``session`` whose result is still kept."""
        call = self._calls.get(task_id)
        return call is not None and call.session == session

    async def settled(self, task_id: str) -> bool:
        """Wait a moment (``QUICK`` s, or less than a keep-alive) for the call to end; whether it did.

        A call that ends that quickly (most do) is answered in one response: the same events,
        without the cost of a stream.
        """
        call = self._calls.get(task_id)
        if call is None:
            return True
        done, _ = await asyncio.wait({call.task}, timeout=min(QUICK, self.keepalive / 2))
        return bool(done)

    def unknown(self, task_id: str) -> str:
        """What an ``error`` event says of a task id whose result is not (or no longer) here."""
        return (
            f"Unknown task_id {task_id!r} for this session: a call's result is kept "
            f"{self.result_ttl:g} s after the call ends"
        )

    def _completed(self, task_id: str) -> None:
        call = self._calls.get(task_id)
        if call is None:
            return
        if not call.task.cancelled():
            exc = call.task.exception()  # read here, so a failure nobody streams is logged now, not at exit
            if exc is not None and not isinstance(exc, OpenEnvError):
                log.error("ORS tool call %s raised", task_id, exc_info=exc)
        call.expiry = asyncio.get_running_loop().call_later(self.result_ttl, self._calls.pop, task_id, None)

    async def events(self, task_id: str) -> AsyncIterator[bytes]:
        """The SSE events of one call: its task id, keep-alives while it runs, then its result."""
        call = self._calls.get(task_id)
        if call is None:
            yield frame("error", self.unknown(task_id))
            return
        yield frame("task_id", task_id)
        while not call.task.done():
            # asyncio.wait never cancels the call: a client that goes away leaves it running
            done, _ = await asyncio.wait({call.task}, timeout=self.keepalive)
            if not done:
                yield KEEPALIVE
        if call.task.cancelled():
            yield frame("error", "The call was cancelled: the server is shutting down")
            return
        exc = call.task.exception()
        if exc is not None:
            message = exc.message if isinstance(exc, OpenEnvError) else f"{type(exc).__name__}: {exc}"
            yield frame("error", message)
            return
        parts = pieces(call.task.result())
        for index, part in enumerate(parts):
            yield frame("end" if index == len(parts) - 1 else "chunk", part)

    def close(self) -> None:
        """Cancel running calls and forget every result (at shutdown)."""
        for call in self._calls.values():
            call.task.cancel()
            if call.expiry is not None:
                call.expiry.cancel()
        self._calls.clear()
