"""Timed loops (each returns per-call latencies in milliseconds) and their summary."""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from mcp import Client

from bench.servers import MAX_STEPS

COUNT_SQL = "SELECT COUNT(*) FROM customers"
LIST_TABLES = json.dumps({"action": {"tool": "list_tables", "arguments": {}}}).encode()
RUN_QUERY = json.dumps({"action": {"tool": "run_query", "arguments": {"sql": COUNT_SQL}}}).encode()


class BenchError(RuntimeError):
    """A call under measurement did not succeed: the numbers would be meaningless."""


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
        medians = [statistics.median(r) for r in rounds]
        return cls(statistics.median(medians), p99, len(pooled), medians)


def _ms(start: int) -> float:
    return (time.perf_counter_ns() - start) / 1e6


def _check(response: httpx.Response) -> httpx.Response:
    if response.status_code != 200:
        raise BenchError(f"{response.request.method} {response.request.url} -> {response.status_code}: {response.text}")
    return response


# control plane over HTTP (one keep-alive httpx.Client per server) -------------------------------


def http_client(base_url: str, episode_id: str | None = None) -> httpx.Client:
    headers = {"content-type": "application/json"}
    if episode_id:
        headers["x-episode-id"] = episode_id
    return httpx.Client(base_url=base_url, headers=headers, timeout=10.0)


def open_episode(client: httpx.Client) -> str:
    episode_id: str = _check(client.post("/reset", content=b"{}")).json()["episode_id"]
    return episode_id


def steps(client: httpx.Client, body: bytes, n: int) -> list[float]:
    """``n`` sequential ``POST /step`` with a pre-encoded body."""
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        response = client.post("/step", content=body)
        out.append(_ms(start))
        _check(response)
    return out


def resets(client: httpx.Client, n: int) -> list[float]:
    """``n`` sequential ``POST /reset``, each episode closed afterwards (the close is not timed)."""
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        response = client.post("/reset", content=b"{}")
        out.append(_ms(start))
        episode_id = _check(response).json()["episode_id"]
        _check(client.delete(f"/episodes/{episode_id}"))
    return out


# MCP over Streamable HTTP (one SDK Client per server and mode) -----------------------------------


async def tool_calls(client: Client, n: int) -> list[float]:
    """``n`` sequential ``call_tool("list_tables", {})``."""
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        result = await client.call_tool("list_tables", {})
        out.append(_ms(start))
        if result.is_error:
            raise BenchError(f"list_tables over MCP failed: {result.content}")
    return out


# in process, for reference (no HTTP) --------------------------------------------------------------


async def _timed(
    n: int, work: Callable[[], Awaitable[Any]], after: Callable[[Any], Awaitable[Any]] | None = None
) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        value = await work()
        out.append(_ms(start))
        if after is not None:
            await after(value)
    return out


async def in_process(n: int) -> tuple[list[str], dict[str, list[float]]]:
    """The table list, and the in-process cost of the pieces under ``/step`` and ``/reset``."""
    from openenv_mcp.app import build_runtime
    from openenv_mcp.catalog import load_environment
    from openenv_mcp.settings import Settings
    from servers.sql.backends import SqliteBackend
    from servers.sql.settings import SqlSettings

    sql_settings = SqlSettings()
    runtime = build_runtime(load_environment("sql"), Settings(max_steps=MAX_STEPS))
    await runtime.start()
    try:
        backend = await SqliteBackend.open(None, 0, sql_settings)
        tables = await backend.tables()
        episode_id = (await runtime.reset(seed=0)).episode_id

        async def close_backend(b: SqliteBackend) -> None:
            await b.aclose()

        async def close_episode(result: Any) -> None:
            await runtime.close_episode(result.episode_id)

        timings: dict[str, list[float]] = {}
        for _ in range(2):  # the first pass warms up; the second is kept
            timings = {
                "SqliteBackend.open": await _timed(n, lambda: SqliteBackend.open(None, 0, sql_settings), close_backend),
                "backend.tables()": await _timed(n, backend.tables),
                "backend.query(COUNT)": await _timed(n, lambda: backend.query(COUNT_SQL)),
                "runtime.reset": await _timed(n, lambda: runtime.reset(seed=0), close_episode),
                "runtime.call(list_tables)": await _timed(n, lambda: runtime.call("list_tables", {}, episode_id)),
                "runtime.call(run_query)": await _timed(
                    n, lambda: runtime.call("run_query", {"sql": COUNT_SQL}, episode_id)
                ),
            }
        await backend.aclose()
        return tables, timings
    finally:
        await runtime.stop()
