"""Section ``ors``: our ORS door against the ORS SDK's own server (``openreward.environments.Server``).

Both serve the trivial environment (ours: ``bench/trivial.py``; theirs: ``bench/baseline_ors.py``, the same tool and
task written on the SDK's ``Environment``), and one client loop drives both, over the same ORS routes:

- **tool call**: one session open on each server; sequential ``POST /trivial/call`` of ``list_tables``, timed until
  the last event of the answer (ours answers a quick call as one response, the SDK streams it chunked: the client
  reads both to the end). Latency blocks interleaved in rounds, as in ``step``.
- **episodes/s**: with 1 and 16 concurrent clients, each plays whole episodes back to back, as the reference client
  does: ``POST /create_session`` (its ``task_id`` event is the sid), ``POST /create`` of task 0 of ``train``,
  ``GET /trivial/prompt``, one ``list_tables`` call, ``POST /delete``. Cells interleaved in rounds, as in
  ``throughput``.

Each answer is checked (status 200, a successful call), never parsed beyond the sid.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from bench import measure, servers
from bench.context import Context
from bench.latency import Block, _cpu_row, _details, _pair, _sync, run_blocks
from bench.measure import AsyncHttp, BenchError, Http
from bench.report import Row

ENV = "trivial"  # the environment's name on both servers (the SDK names it after its class, lower-cased)
CALL = json.dumps({"name": "list_tables", "input": {}}).encode()
CREATE = json.dumps({"env_name": ENV, "split": "train", "index": 0}).encode()
EPISODE_CLIENTS = (1, 16)
SSE = {"Accept": "text/event-stream"}  # as the reference client asks
SERVERS = {"ours": "ours-trivial", "theirs": "ors-sdk"}
_SID = re.compile(rb"event: task_id\r?\ndata: ([^\r\n]+)")


def _sid(body: bytes, port: int) -> str:
    found = _SID.search(body)
    if found is None:
        raise BenchError(f"POST /create_session on port {port}: no task_id event in {body[:300]!r}")
    return found.group(1).decode()


def _checked_call(status: int, body: bytes, port: int) -> None:
    if status != 200 or b'"ok":true' not in body or b"event: end" not in body:
        raise BenchError(f"ORS call on port {port} -> {status}: {body[:300]!r}")


def _open_session(http: Http) -> str:
    """A session with its episode (task 0 of train), through the same routes as the episode loop."""
    status, body = http.send(measure.request(http.port, "POST", "/create_session", b"", SSE))
    if status != 200:
        raise BenchError(f"POST /create_session on port {http.port} -> {status}: {body[:300]!r}")
    sid = _sid(body, http.port)
    http.call("POST", "/create", CREATE, {"X-Session-ID": sid})
    return sid


def _call_loop(http: Http, data: bytes, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        status, body = http.send(data)
        out.append((time.perf_counter_ns() - start) / 1e6)
        _checked_call(status, body, http.port)
    return out


async def _episode(http: AsyncHttp, port: int) -> None:
    """One whole episode, as the reference client plays it."""
    status, body = await http.send(measure.request(port, "POST", "/create_session", b"", SSE))
    if status != 200:
        raise BenchError(f"POST /create_session on port {port} -> {status}: {body[:300]!r}")
    session = {"X-Session-ID": _sid(body, port)}
    for method, path, payload in (("POST", "/create", CREATE), ("GET", f"/{ENV}/prompt", None)):
        status, body = await http.send(measure.request(port, method, path, payload, session))
        if status != 200:
            raise BenchError(f"{method} {path} on port {port} -> {status}: {body[:300]!r}")
    status, body = await http.send(measure.request(port, "POST", f"/{ENV}/call", CALL, session))
    _checked_call(status, body, port)
    status, body = await http.send(measure.request(port, "POST", "/delete", b"", session))
    if status != 200:
        raise BenchError(f"POST /delete on port {port} -> {status}: {body[:300]!r}")


async def episodes_per_second(port: int, clients: int, warmup: float, duration: float) -> float:
    """``clients`` connections, each playing whole episodes back to back; episodes completed per second."""
    counter = measure.Counter()
    connections = [await AsyncHttp.open(port) for _ in range(clients)]

    async def worker(http: AsyncHttp) -> None:
        while not counter.stop:
            await _episode(http, port)
            counter.steps += 1

    try:
        return await measure._measure([worker(c) for c in connections], counter, warmup, duration)
    finally:
        for connection in connections:
            await connection.close()


@dataclass
class Cell:
    side: str
    clients: int
    run: Callable[[], Awaitable[float]]
    rounds: list[float] = field(default_factory=list)


async def run(ctx: Context) -> list[Row]:
    if SERVERS["theirs"] not in ctx.up:
        ctx.skipped["ors"] = "the ORS SDK's server did not start: " + ctx.skipped.get("ors-sdk", "?")
        return []
    up = {side: ctx.up[name] for side, name in SERVERS.items()}
    rows: list[Row] = []
    # the tool call, sequential
    async with AsyncExitStack() as stack:
        blocks: dict[str, Block] = {}
        for side, server in up.items():
            http = Http(server.port)
            stack.callback(http.close)
            sid = _open_session(http)
            data = measure.request(http.port, "POST", f"/{ENV}/call", CALL, {"X-Session-ID": sid})

            def loop(n: int, http: Http = http, data: bytes = data) -> list[float]:
                return _call_loop(http, data, n)

            blocks[side] = Block(f"ors call {server.name}", _sync(loop), server)
        print(f"ors: {len(blocks)} latency blocks, {ctx.plan.rounds} rounds ...", flush=True)
        await run_blocks(list(blocks.values()), ctx)
    ctx.details["ors latency"] = _details(list(blocks.values()))
    rows += _pair("ors", "ORS tool call, trivial", blocks["ours"], blocks["theirs"], "ORS SDK server")
    rows.append(_cpu_row("ors", "ORS tool call, server CPU", blocks["ours"], blocks["theirs"], "ORS SDK server"))

    # whole episodes, concurrent
    warm, duration = ctx.plan.tp_warmup_s, ctx.plan.tp_duration_s
    cells: list[Cell] = []
    for n in EPISODE_CLIENTS:
        for side, server in up.items():

            def cell_run(port: int = server.port, n: int = n) -> Awaitable[float]:
                return episodes_per_second(port, n, warm, duration)

            cells.append(Cell(side, n, cell_run))
    print(f"ors: {len(cells)} episode cells x {ctx.plan.tp_rounds} rounds ...", flush=True)
    for round_ in range(ctx.plan.tp_rounds):
        for cell in cells if round_ % 2 == 0 else list(reversed(cells)):
            cell.rounds.append(await cell.run())
    ctx.details["ors episodes"] = {f"{c.side} x{c.clients}": c.rounds for c in cells}
    by = {(c.side, c.clients): c for c in cells}
    for n in EPISODE_CLIENTS:
        ours, theirs = by[("ours", n)], by[("theirs", n)]
        rows.append(
            Row(
                "ors",
                f"ORS episodes/s, {n} client{'s' if n > 1 else ''}",
                statistics.median(ours.rounds),
                "episodes/s",
                "ORS SDK server",
                statistics.median(theirs.rounds),
                paired_ratio=measure.paired_ratio(ours.rounds, theirs.rounds),
                note="an episode: create_session, create, prompt, one call, delete",
            )
        )
    return rows


def server_spec(ctx: Context) -> servers.ServerSpec | None:
    """The SDK's server, when its venv could be made (else the reason is in ``ctx.skipped``)."""
    python, why = servers.ors_python()
    if python is None:
        ctx.skipped["ors-sdk"] = why
        return None
    ctx.details["ors sdk version"] = servers.peer_version(python, "openreward")
    return servers.ors_sdk(ctx.tables, python)
