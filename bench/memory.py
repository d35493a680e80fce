"""Section ``memory``: resident memory per open episode, and how many open episodes fit in 2 GB, per environment.

Each environment gets a fresh server (``OPENENV_MAX_EPISODES`` raised, trajectories off) and nothing else runs
against it. An episode is opened with ``POST /reset`` and then used: each of the environment's ``examples`` is
stepped once (coding: only its first, as ``run_python`` starts a sandboxed process per call and keeps nothing), so
caches an episode fills when it works count too. After a few warm-up episodes the server's RSS (plus its child
processes': the desktop environment's Xvfb displays and editors) is read, then episodes are opened and RSS is read
again at ten checkpoints. The cost per episode is the least-squares slope of RSS over open episodes; "fit in 2 GB"
is ``warm count + (2 GB - warm RSS) / slope`` (2 GB = 2e9 bytes). The SQL environment really opens 10,000 in a full
run. OpenEnv keeps state only per WebSocket, so its figure opens that many WebSocket sessions (reset, one step) on
its minimal environment.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from bench import measure, servers
from bench.context import Context
from bench.measure import AsyncHttp
from bench.report import Row

LIMIT = 2e9
CHECKPOINTS = 10
SQL_TARGET = 10_000
SQL_KB_TARGET = 40.0  # KB per open SQL episode
RESOLUTION = 64.0  # bytes per episode below which RSS growth is not measurable here


def _warm(total: int) -> int:
    return max(1, min(10, total // 4))


def _slope(points: list[tuple[int, int]]) -> float:
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx if sxx else 0.0


async def _open_http(port: int, count: int, connections: int, steps: list[bytes]) -> None:
    """Open ``count`` episodes, each stepped with every body in ``steps``."""
    clients = [await AsyncHttp.open(port) for _ in range(min(connections, count))]
    data = measure.request(port, "POST", "/reset", {})
    remaining = count

    async def worker(http: AsyncHttp) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            status, body = await http.send(data)
            if status != 200:
                raise measure.BenchError(f"POST /reset -> {status}: {body[:300]!r}")
            header = {"X-Episode-Id": json.loads(body)["episode_id"]}
            for step in steps:
                status, body = await http.send(measure.request(port, "POST", "/step", step, header))
                why = f"status {status}" if status != 200 else measure.step_errors(body)
                if why:
                    raise measure.BenchError(f"POST /step {step!r} -> {why}")

    try:
        await asyncio.gather(*(worker(c) for c in clients))
    finally:
        for c in clients:
            await c.close()


async def _measure(server: servers.Server, total: int, opener: Any) -> dict[str, Any]:
    warm = _warm(total)
    await opener(warm)
    await asyncio.sleep(0.2)
    points = [(warm, server.rss_bytes())]
    started = time.perf_counter()
    opened = warm
    for k in range(1, CHECKPOINTS + 1):
        target = warm + (total - warm) * k // CHECKPOINTS
        if target > opened:
            await opener(target - opened)
            opened = target
            await asyncio.sleep(0.05)
            points.append((opened, server.rss_bytes()))
    seconds = time.perf_counter() - started
    slope = _slope(points) if len(points) > 1 else 0.0
    rss0 = points[0][1]
    measurable = max(slope, RESOLUTION)
    return {
        "episodes": opened,
        "points": points,
        "bytes_per_episode": slope,
        "below_resolution": slope < RESOLUTION,
        "rss_warm_bytes": rss0,
        "rss_last_bytes": points[-1][1],
        "fit_in_2gb": warm + (LIMIT - rss0) / measurable,
        "open_seconds": seconds,
    }


def _examples(env: str) -> list[tuple[str, dict[str, Any]]]:
    from openenv_mcp.environment.catalog import load_environment

    examples = [(tool, dict(arguments)) for tool, arguments in load_environment(env).examples]
    return examples[:1] if env == "coding" else examples


async def _ours(ctx: Context, env: str, total: int) -> dict[str, Any]:
    spec = servers.ours_trivial() if env == "trivial" else servers.ours(env)
    spec.env["OPENENV_MAX_EPISODES"] = str(total + 100)
    spec.name = f"memory-{env}"
    server = servers.start(spec, ctx.log_dir)
    try:
        servers.wait_ready(server, time.monotonic() + servers.READY_TIMEOUT, poll=0.05)
        connections = 1 if env == "desktop" else 8
        examples = [("list_tables", {})] if env == "trivial" else _examples(env)
        steps = [measure.step_body(tool, arguments) for tool, arguments in examples]

        async def opener(count: int) -> None:
            await _open_http(server.port, count, connections, steps)

        return await _measure(server, total, opener)
    finally:
        servers.stop(server)


async def _openenv(ctx: Context, total: int) -> dict[str, Any]:
    assert ctx.openenv_python is not None
    spec = servers.openenv(ctx.tables, ctx.openenv_python)
    spec.name = "memory-openenv"
    server = servers.start(spec, ctx.log_dir)
    sockets: list[ClientConnection] = []
    reset = json.dumps({"type": "reset", "data": {}})
    step = json.dumps({"type": "step", "data": {"tool": "list_tables", "arguments": {}}})
    try:
        servers.wait_ready(server, time.monotonic() + servers.READY_TIMEOUT, poll=0.05)

        async def one() -> ClientConnection:
            ws = await ws_connect(f"ws://{servers.HOST}:{server.port}/ws", compression=None, max_size=None)
            for message in (reset, step):
                await ws.send(message)
                answer = await ws.recv()
                if not str(answer).startswith('{"type":"observation"'):
                    raise measure.BenchError(f"OpenEnv session: {str(answer)[:300]}")
            return ws

        async def opener(count: int) -> None:
            for start in range(0, count, 32):
                sockets.extend(await asyncio.gather(*(one() for _ in range(min(32, count - start)))))

        return await _measure(server, total, opener)
    finally:
        for ws in sockets:
            await ws.close()
        servers.stop(server)


async def run(ctx: Context) -> list[Row]:
    results: dict[str, dict[str, Any]] = {}
    envs = ["trivial", *(ctx.envs if ctx.plan.memory_all else [e for e in ctx.envs if e == "sql"])]
    for env in envs:
        total = ctx.plan.episodes[env]
        print(f"memory: {env}, {total} episodes ...", flush=True)
        try:
            results[env] = await _ours(ctx, env, total)
        except (RuntimeError, OSError, measure.BenchError) as exc:
            if env != "desktop":
                raise
            ctx.skipped[f"memory {env}"] = str(exc).strip().splitlines()[0]
    if ctx.openenv_python is not None:
        print(f"memory: OpenEnv, {ctx.plan.episodes['openenv']} WebSocket sessions ...", flush=True)
        results["openenv"] = await _openenv(ctx, ctx.plan.episodes["openenv"])
    ctx.details["memory"] = results

    base = results.get("openenv")
    base_name = "OpenEnv session" if base else ""
    base_kb = base["bytes_per_episode"] / 1024 if base else None
    base_fit = base["fit_in_2gb"] if base else None
    rows: list[Row] = []
    for env in envs:
        if env not in results:
            continue
        r = results[env]
        kb = r["bytes_per_episode"] / 1024
        note = f"below this bench's resolution ({RESOLUTION:g} B)" if r["below_resolution"] else ""
        rows.append(
            Row(
                "memory",
                f"{env}: memory per open episode",
                kb,
                "KB",
                base_name,
                base_kb,
                SQL_KB_TARGET if env == "sql" else None,
                "value<=",
                note=note,
            )
        )
        fit_limit = SQL_TARGET if env == "sql" else None
        rows.append(
            Row(
                "memory",
                f"{env}: open episodes that fit in 2 GB",
                r["fit_in_2gb"],
                "episodes",
                base_name and "OpenEnv sessions",
                base_fit,
                fit_limit,
                "value>=",
                note=f"measured up to {r['episodes']}, extrapolated beyond",
            )
        )
        if env == "sql" and r["episodes"] >= SQL_TARGET:
            rows.append(
                Row(
                    "memory",
                    f"sql: RSS with {r['episodes']:,} episodes open",
                    r["rss_last_bytes"] / 1e6,
                    "MB",
                    limit=LIMIT / 1e6,
                    check="value<=",
                )
            )
    return rows
