"""Clients and timed loops: every loop returns per-call latencies in milliseconds, or a count of completed steps.

The HTTP clients here are deliberately lean (a socket, pre-encoded requests, only ``Content-Length`` parsed) so that
the client's own cost, which lands on the same 2 cores as the server's, stays small and equal for every server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import socket
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp import Client
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.sync.client import ClientConnection as SyncWs
from websockets.sync.client import connect as sync_ws_connect

HOST = "127.0.0.1"
STEP = {"tool": "list_tables", "arguments": {}}  # the trivial environment's one step (bench/trivial.py)
_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:\s*chunked", re.IGNORECASE)


class BenchError(RuntimeError):
    """A call under measurement did not succeed: the numbers would be meaningless."""


class _Closed(Exception):
    """The server had closed the connection before this request."""


@dataclass(frozen=True)
class Summary:
    """Median of the per-round medians (robust to a noisy round) and p99 over every call of every round."""

    median_ms: float
    p99_ms: float
    calls: int
    round_medians_ms: list[float]

    @classmethod
    def of(cls, rounds: list[list[float]]) -> Summary:
        pooled = sorted(x for r in rounds for x in r)
        p99 = pooled[max(0, math.ceil(0.99 * len(pooled)) - 1)]  # nearest rank
        medians = [statistics.median(r) for r in rounds if r]
        return cls(statistics.median(medians), p99, len(pooled), medians)


def paired_ratio(ours: Sequence[float], base: Sequence[float]) -> float:
    """Median over rounds of ours/baseline (both measured back to back in each round)."""
    return statistics.median(o / b for o, b in zip(ours, base, strict=True))


def _ms(start: int) -> float:
    return (time.perf_counter_ns() - start) / 1e6


# requests ------------------------------------------------------------------------------------------


def request(port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> bytes:
    """One pre-encoded HTTP/1.1 keep-alive request."""
    payload = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    lines += [f"{key}: {value}" for key, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def step_body(tool: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"action": {"tool": tool, "arguments": arguments}}).encode()


def _split(buffer: bytes) -> tuple[int, int, int] | None:
    """(status, header length, body length) once the head is complete; body length -1 for a chunked body."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end]
    found = _LENGTH.search(head)
    if found is None and _CHUNKED.search(head):
        return int(head[9:12]), end + 4, -1
    return int(head[9:12]), end + 4, int(found.group(1)) if found else 0


def _dechunk(buffer: bytes, start: int) -> tuple[bytes, int] | None:
    """A chunked body starting at ``start``: (the joined chunks, where the answer ends), or None while incomplete."""
    parts: list[bytes] = []
    at = start
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(buffer[at:line_end].split(b";", 1)[0], 16)
        if size == 0:  # the last chunk; no trailers expected
            if len(buffer) < line_end + 4:
                return None
            return b"".join(parts), line_end + 4
        if len(buffer) < line_end + 2 + size + 2:
            return None
        parts.append(buffer[line_end + 2 : line_end + 2 + size])
        at = line_end + 2 + size + 2


class Http:
    """A blocking keep-alive HTTP/1.1 connection (latency loops: nothing else runs while one is timed).

    Servers close a keep-alive connection idle for 5 s (uvicorn's default) while other blocks run: a request
    that finds it closed before any answer reconnects and is sent again.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self._connect()

    def _connect(self) -> None:
        self.sock = socket.create_connection((HOST, self.port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    def send(self, data: bytes) -> tuple[int, bytes]:
        try:
            return self._send(data)
        except _Closed:
            self.sock.close()
            self._connect()
            return self._send(data)

    def _recv(self, answered: bool) -> bytes:
        try:
            chunk = self.sock.recv(262144)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            if not answered:
                raise _Closed
            raise BenchError(f"connection to port {self.port} closed in the middle of an answer")
        return chunk

    def _send(self, data: bytes) -> tuple[int, bytes]:
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            raise _Closed from None
        buffer = self._buffer
        while (parts := _split(buffer)) is None:
            buffer += self._recv(bool(buffer))
        status, head, length = parts
        if length < 0:  # a chunked body (a server-sent event stream)
            while (whole := _dechunk(buffer, head)) is None:
                buffer += self._recv(True)
            body, end = whole
            self._buffer = buffer[end:]
            return status, body
        while len(buffer) < head + length:
            buffer += self._recv(True)
        self._buffer = buffer[head + length :]
        return status, buffer[head : head + length]

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        """One request; its JSON answer, or BenchError when it is not a 200."""
        status, answer = self.send(request(self.port, method, path, body, headers))
        if status != 200:
            raise BenchError(f"{method} {path} on port {self.port} -> {status}: {answer[:300]!r}")
        return json.loads(answer) if answer else None

    def close(self) -> None:
        self.sock.close()


class AsyncHttp:
    """The asyncio twin of :class:`Http`, for many concurrent connections."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> AsyncHttp:
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 22)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer)

    async def send(self, data: bytes) -> tuple[int, bytes]:
        self.writer.write(data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        found = _LENGTH.search(head)
        if found is None and _CHUNKED.search(head):  # a chunked body (a server-sent event stream)
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";", 1)[0], 16):
                parts.append((await self.reader.readexactly(size + 2))[:-2])
            await self.reader.readexactly(2)  # the empty line after the last chunk
            return int(head[9:12]), b"".join(parts)
        body = await self.reader.readexactly(int(found.group(1))) if found else b""
        return int(head[9:12]), body

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


def open_episodes(http: Http, n: int) -> list[str]:
    return [http.call("POST", "/reset", {})["episode_id"] for _ in range(n)]


# latency loops --------------------------------------------------------------------------------------


def http_loop(http: Http, requests: Sequence[bytes], n: int) -> list[float]:
    """``n`` sequential requests, cycling through ``requests``; each must answer 200."""
    out = []
    k = len(requests)
    for i in range(n):
        data = requests[i % k]
        start = time.perf_counter_ns()
        status, body = http.send(data)
        out.append(_ms(start))
        if status != 200:
            raise BenchError(f"port {http.port} answered {status}: {body[:300]!r}")
    return out


def step_errors(body: bytes) -> str | None:
    """Why a ``/step`` answer is not a clean tool result (None when it is)."""
    answer = json.loads(body)
    observation = answer.get("observation", {})
    if observation.get("is_error"):
        return str(observation.get("content"))[:300]
    return None


def resets_loop(http: Http, n: int) -> list[float]:
    """``n`` sequential ``POST /reset``, each episode closed afterwards (the close is not timed)."""
    data = request(http.port, "POST", "/reset", {})
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        status, body = http.send(data)
        out.append(_ms(start))
        if status != 200:
            raise BenchError(f"POST /reset on port {http.port} -> {status}: {body[:300]!r}")
        episode_id = json.loads(body)["episode_id"]
        http.call("DELETE", f"/episodes/{episode_id}")
    return out


def openenv_resets_loop(http: Http, n: int) -> list[float]:
    """OpenEnv's HTTP ``/reset`` (it builds and drops an environment per request: nothing to close)."""
    return http_loop(http, [request(http.port, "POST", "/reset", {})], n)


def ws_open(port: int) -> SyncWs:
    return sync_ws_connect(f"ws://{HOST}:{port}/ws", compression=None, max_size=None)


def ws_loop(ws: SyncWs, messages: Sequence[str], n: int, ok_prefix: str) -> list[float]:
    """``n`` sequential WebSocket round trips, cycling through ``messages``; each answer must start ``ok_prefix``."""
    out = []
    k = len(messages)
    for i in range(n):
        start = time.perf_counter_ns()
        ws.send(messages[i % k])
        answer = ws.recv()
        out.append(_ms(start))
        if not str(answer).startswith(ok_prefix):
            raise BenchError(f"WebSocket answer: {str(answer)[:300]}")
    return out


async def tool_calls(client: Client, calls: Sequence[tuple[str, dict[str, Any]]], n: int) -> list[float]:
    """``n`` sequential MCP ``tools/call``, cycling through ``calls``."""
    out = []
    k = len(calls)
    for i in range(n):
        name, arguments = calls[i % k]
        start = time.perf_counter_ns()
        result = await client.call_tool(name, arguments)
        out.append(_ms(start))
        if result.is_error:
            raise BenchError(f"{name} over MCP failed: {result.content}")
    return out


# throughput ----------------------------------------------------------------------------------------


@dataclass
class Counter:
    steps: int = 0
    stop: bool = False
    measuring: bool = False  # inside the timed window (after the warm-up, before the stop)


async def _measure(workers: list[Awaitable[None]], counter: Counter, warmup: float, duration: float) -> float:
    """Run ``workers`` until stopped; the steps/s they completed in ``duration`` after ``warmup``."""
    tasks = [asyncio.ensure_future(w) for w in workers]
    try:
        await asyncio.sleep(warmup)
        for task in tasks:
            if task.done():
                task.result()  # a worker that failed: raise its error
        before, started = counter.steps, time.perf_counter()
        counter.measuring = True
        await asyncio.sleep(duration)
        done, elapsed = counter.steps - before, time.perf_counter() - started
        counter.measuring = False
        counter.stop = True
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    return done / elapsed


async def http_throughput(
    port: int,
    requests: Sequence[bytes],
    steps_per_request: int,
    warmup: float,
    duration: float,
    latencies: list[float] | None = None,
) -> float:
    """One connection per request in ``requests``, each sending its request back to back.

    With ``latencies``, the milliseconds of every request answered inside the timed window are appended to it.
    """
    counter = Counter()
    connections = [await AsyncHttp.open(port) for _ in requests]

    async def worker(http: AsyncHttp, data: bytes) -> None:
        status, body = await http.send(data)
        if status != 200 or (steps_per_request > 1 and body.count(b'"ok":true') != steps_per_request):
            raise BenchError(f"port {port} answered {status}: {body[:300]!r}")
        while not counter.stop:
            sent = time.perf_counter_ns()
            status, body = await http.send(data)
            if status != 200:
                raise BenchError(f"port {port} answered {status}: {body[:300]!r}")
            counter.steps += steps_per_request
            if latencies is not None and counter.measuring:
                latencies.append(_ms(sent))

    try:
        return await _measure(
            [worker(c, r) for c, r in zip(connections, requests, strict=True)], counter, warmup, duration
        )
    finally:
        for connection in connections:
            await connection.close()


async def ws_throughput(
    port: int,
    setup: Sequence[str],
    message: Callable[[int], str],
    connections: int,
    steps_per_message: int,
    ok_prefix: str,
    warmup: float,
    duration: float,
) -> float:
    """``connections`` WebSockets; each sends ``setup`` once, then ``message(i)`` back to back."""
    counter = Counter()
    sockets: list[ClientConnection] = []
    for _ in range(connections):
        sockets.append(await ws_connect(f"ws://{HOST}:{port}/ws", compression=None, max_size=None))

    async def worker(ws: ClientConnection, i: int) -> None:
        for text in setup:
            await ws.send(text)
            answer = await ws.recv()
            if not str(answer).startswith(ok_prefix):
                raise BenchError(f"WebSocket set-up answer: {str(answer)[:300]}")
        data = message(i)
        while not counter.stop:
            await ws.send(data)
            answer = await ws.recv()
            if not str(answer).startswith(ok_prefix):
                raise BenchError(f"WebSocket answer: {str(answer)[:300]}")
            counter.steps += steps_per_message

    try:
        return await _measure([worker(ws, i) for i, ws in enumerate(sockets)], counter, warmup, duration)
    finally:
        for ws in sockets:
            await ws.close()
