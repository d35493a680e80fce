"""The server's end of the sim editor's control socket: readiness, ``sync`` after input, ``state``.

The server listens on a Unix socket in the episode's private folder and starts the editor with
its path; the editor connects once its window is drawn and says ``ready``. Requests and answers
are JSON lines matched by id. Closing the channel makes the editor exit (and, with it, its display).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

__all__ = ["ChannelClosed", "EditorChannel"]


class ChannelClosed(Exception):
    """The editor went away (or never came)."""


class EditorChannel:
    """One listening socket, one editor connection."""

    def __init__(self) -> None:
        self._connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.get_running_loop().create_future()
        )
        self._server: asyncio.Server | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._next_id = 0
        self.ready: dict[str, Any] = {}

    @classmethod
    async def listen(cls, path: Path, *, line_limit: int = 2**16) -> EditorChannel:
        """Listen at ``path``; ``line_limit`` bytes is the longest message (a ``state`` carries the document)."""
        channel = cls()
        channel._server = await asyncio.start_unix_server(channel._accept, path=str(path), limit=line_limit)
        return channel

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._connected.done():  # one editor per channel: anyone else is turned away
            writer.close()
            return
        self._connected.set_result((reader, writer))

    async def wait_ready(self, editor_exited: asyncio.Future[Any]) -> dict[str, Any]:
        """Wait for the editor's ``ready`` message (bound the wait with ``asyncio.timeout``)."""
        done, _ = await asyncio.wait({self._connected, editor_exited}, return_when=asyncio.FIRST_COMPLETED)
        if self._connected not in done:
            raise ChannelClosed("the editor exited before connecting")
        self._reader, self._writer = self._connected.result()
        assert self._server is not None
        self._server.close()  # no further connections
        self.ready = await self._read()
        if self.ready.get("event") != "ready":
            raise ChannelClosed(f"the editor said {self.ready!r} instead of ready")
        return self.ready

    async def _read(self) -> dict[str, Any]:
        assert self._reader is not None
        try:
            line = await self._reader.readline()
        except ValueError:  # longer than the line limit: the stream cannot be resynchronised
            raise ChannelClosed("the editor sent a message longer than the control socket's limit") from None
        if not line:
            raise ChannelClosed("the editor closed its control socket")
        try:
            message = json.loads(line)
        except ValueError:
            raise ChannelClosed(f"the editor sent something that is not JSON: {line[:80]!r}") from None
        if not isinstance(message, dict):
            raise ChannelClosed(f"the editor sent {message!r} instead of an object")
        return message

    async def request(self, op: str) -> dict[str, Any]:
        """Send one request and return its answer (bound the wait with ``asyncio.timeout``)."""
        async with self._lock:
            if self._writer is None or self._writer.is_closing():
                raise ChannelClosed("the editor is not connected")
            self._next_id += 1
            wanted = self._next_id
            try:
                self._writer.write(json.dumps({"op": op, "id": wanted}).encode() + b"\n")
                await self._writer.drain()
                while True:
                    answer = await self._read()
                    if answer.get("id") == wanted:
                        return answer
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                raise ChannelClosed(f"the editor's control socket broke: {exc}") from None
            # When a wait is cut short, its late answer is skipped by the next request (ids differ).

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        if not self._connected.done():
            self._connected.cancel()
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()
