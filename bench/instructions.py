"""Instructions per request, counted by callgrind: ``python -m bench.instructions [PATH ...] [--calls 1000]``.

Wall-clock and CPU time move with the machine's load (on the shared 2-core machine, by up to 2x between minutes);
the instructions a request executes do not. Each PATH is an app driven in-process, request by request, straight
through its ASGI interface (no socket, no HTTP parser: what is left is the app's own work, which is what differs
between ours and a baseline), under ``valgrind --tool=callgrind``: after start-up and 50 requests of warm-up the
process has callgrind dump its counts (``callgrind_control``), drives ``--calls`` requests, and dumps again; the
second dump less the cost of a dump alone, divided by the requests, is one request's cost (the cycle collector's
share included, spread over the requests).

PATH is one of:

- ``mcp``: ours (the trivial environment, ``bench/trivial.py``), ``POST /mcp`` ``tools/call`` of ``list_tables``
  as the SDK's ``Client`` sends it (sessionless, protocol 2026-07-28: the headers and body it sends, captured);
- ``mcp-bare``: the same request to the bare SDK server (``bench/baseline_mcp.py``, ``json_response=True``);
- ``mcp-openenv``: ours, the same call as OpenEnv's ``MCPToolClient`` posts it (JSON-RPC with a ``session_id``);
- ``step``: ours, ``POST /step`` of ``list_tables``; ``step-bare``: the bare FastAPI app's ``POST /step``;
- ``batch`` and ``batch-recording``: ours, ``POST /step_batch`` of 64 steps (one per episode), recording off and
  on; the count is per step, and the writer process is not counted (``--trace-children=no``): it is the
  server's share of recording.

- ``mcp-sql`` and ``mcp-sql-bare``: the ``mcp`` request to ours serving sql (``openenv-mcp serve sql``'s app,
  trajectories off; the call steps the default episode) and to the bare SDK server answering sql's table names;
- ``mcp-sql-legacy`` and ``mcp-sql-legacy-bare``: the same call in the legacy era with a session, as
  ``Client(mode="legacy")`` sends it: ``initialize`` and ``notifications/initialized`` first (untimed), then
  ``tools/call`` with the session's ``Mcp-Session-Id`` (ours binds the session to an episode of its own).

The ``served-`` paths count the real servers from outside instead (issue 34's way of measuring, bench/mcp_door.py):
the server (``openenv-mcp serve sql``, or ``bench/baseline_mcp.py`` with sql's tables) runs under callgrind as a
process of its own, uvicorn and its socket included, every thread counted; this process drives it with the SDK's
``Client`` over HTTP, zeroes its counts after the warm-up and has it dump them after ``--calls`` calls:
``served-sql``, ``served-sql-bare`` (protocol 2026-07-28, sessionless), ``served-sql-legacy``,
``served-sql-legacy-bare`` (the legacy era, one session).

``--cache-sim`` adds callgrind's cache model, its last level the size of one core's L2 here (1 MiB), and prints the
misses per request: what an instruction count cannot show, a path that executes less but touches more memory.

``--run PATH N`` (what valgrind runs) drives N requests after the warm-up and prints nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.trivial import TABLES

PATHS = (
    "mcp", "mcp-bare", "mcp-openenv", "mcp-sql", "mcp-sql-bare", "mcp-sql-legacy", "mcp-sql-legacy-bare",
    "served-sql", "served-sql-bare", "served-sql-legacy", "served-sql-legacy-bare",
    "step", "step-bare", "batch", "batch-recording",
)  # fmt: skip
SQL_TABLES = [  # what sql's list_tables answers (its shop database); bench.mcp_door reads them from the server
    "categories", "customers", "employees", "order_items", "orders", "products", "regions", "suppliers",
]  # fmt: skip
BATCH = 64
HOST = [(b"host", b"127.0.0.1:8000")]
SDK_BASE = [  # what mcp 2.3's Client sends with every POST (its httpx2 client's own headers too)
    *HOST,
    (b"accept-encoding", b"gzip, deflate"),
    (b"connection", b"keep-alive"),
    (b"user-agent", b"python-httpx2/2.16.2"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
]
SDK_HEADERS = [  # ... and with a sessionless tools/call (protocol 2026-07-28)
    *SDK_BASE,
    (b"mcp-protocol-version", b"2026-07-28"),
    (b"mcp-method", b"tools/call"),
    (b"mcp-name", b"list_tables"),
]
_CLIENT_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SDK_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_tables", "arguments": {}, "_meta": _CLIENT_META}}  # fmt: skip
LEGACY_VERSION = "2025-11-25"
LEGACY_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                                "clientInfo": {"name": "mcp", "version": "0.1.0"}}}  # fmt: skip
LEGACY_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_tables", "arguments": {}}}
OPENENV_HEADERS = [  # httpx's defaults and json=: what OpenEnv 0.10's MCPToolClient posts
    *HOST,
    (b"accept", b"*/*"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"connection", b"keep-alive"),
    (b"user-agent", b"python-httpx/0.28.1"),
    (b"content-type", b"application/json"),
]
JSON_HEADERS = [*HOST, (b"content-type", b"application/json")]

Request = tuple[str, str, list[tuple[bytes, bytes]], bytes]


class Driver:
    """Sends requests to an ASGI app in-process as uvicorn would (after the body, ``receive`` waits for the
    response to end and then says the client disconnected)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers: list[tuple[bytes, bytes]] = []  # of the last response

    async def send(self, request: Request) -> tuple[int, bytes]:
        method, path, headers, body = request
        scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
            "query_string": b"", "headers": [*headers, (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000), "state": {},
        }  # fmt: skip
        done = asyncio.Event()
        sent = False
        status, chunks = 0, []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                self.headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    async def call(self, request: Request, expect: bytes = b"", status_ok: int = 200) -> bytes:
        status, body = await self.send(request)
        if status != status_ok or expect not in body:
            raise RuntimeError(f"{request[0]} {request[1]} answered {status}: {body[:500]!r}")
        return body


def _ours(recording: bool, env_name: str = "trivial") -> Any:
    """Our app over the trivial environment (or an installed one), as ``openenv-mcp serve`` builds it (settings from
    the environment)."""
    os.environ.update({"MODE": "sim", "OPENENV_MAX_STEPS": str(10**9), "OPENENV_MAX_EPISODES": "20000"})
    if recording:
        where = Path(tempfile.mkdtemp(prefix="bench-instructions-")) / "trajectories.db"
        os.environ["OPENENV_TRAJECTORIES"] = f"sqlite:///{where}"
    else:
        os.environ["OPENENV_TRAJECTORIES"] = "off"
    from bench.trivial import environment
    from openenv_mcp.doors.http import build_app
    from openenv_mcp.doors.serving import served_runtime
    from openenv_mcp.runtime import build_runtime
    from openenv_mcp.settings import Settings, load_settings
    from openenv_mcp.trajectories import record_trajectories

    if env_name != "trivial":
        return build_app(served_runtime(env_name, load_settings(Settings)))
    runtime = build_runtime(environment, load_settings(Settings))
    record_trajectories(runtime)
    return build_app(runtime)


async def _ready(driver: Driver) -> None:
    for _ in range(2000):
        if (await driver.send(("GET", "/readyz", HOST, b"")))[0] == 200:
            return
        await asyncio.sleep(0.01)
    raise RuntimeError("the app never answered /readyz 200")


async def _episodes(driver: Driver, count: int) -> list[str]:
    answers = [await driver.call(("POST", "/reset", JSON_HEADERS, b"{}")) for _ in range(count)]
    return [json.loads(answer)["episode_id"] for answer in answers]


async def _setup(path: str) -> tuple[Any, Callable[[Driver], Any]]:
    """The app of ``path`` and a coroutine function giving the request (and what its answer holds)."""
    tables = b'"order_items"'  # in every answer, however it spaces its JSON
    if path.endswith("-bare") and path.startswith("mcp"):
        from bench.baseline_mcp import build_server

        server = build_server(SQL_TABLES if path.startswith("mcp-sql") else TABLES)
        app = server.streamable_http_app(streamable_http_path="/mcp", json_response=True)
    elif path == "step-bare":
        from bench.baseline_fastapi import build_app

        app = build_app(TABLES)
    else:
        app = _ours(recording=path == "batch-recording", env_name="sql" if path.startswith("mcp-sql") else "trivial")

    async def request(driver: Driver) -> tuple[Request, bytes]:
        if path.startswith("mcp-sql") and not path.endswith("-bare"):
            await _ready(driver)
        if path in ("mcp", "mcp-bare", "mcp-sql", "mcp-sql-bare"):
            return ("POST", "/mcp", SDK_HEADERS, _json(SDK_CALL)), tables
        if path.startswith("mcp-sql-legacy"):
            return await _legacy_session(driver), tables
        if path == "step-bare":
            return ("POST", "/step", [*JSON_HEADERS, (b"x-episode-id", b"e")], _STEP), tables
        await _ready(driver)
        if path == "mcp-openenv":
            created = await driver.call(("POST", "/mcp", OPENENV_HEADERS, _rpc("openenv/session/create", {})))
            session = json.loads(created)["result"]["session_id"]
            call = _rpc("tools/call", {"name": "list_tables", "arguments": {}, "session_id": session})
            return ("POST", "/mcp", OPENENV_HEADERS, call), tables
        if path == "step":
            [episode] = await _episodes(driver, 1)
            return ("POST", "/step", [*JSON_HEADERS, (b"x-episode-id", episode.encode())], _STEP), tables
        action = {"tool": "list_tables", "arguments": {}}
        steps = [{"episode_id": episode, "action": action} for episode in await _episodes(driver, BATCH)]
        return ("POST", "/step_batch", JSON_HEADERS, json.dumps({"steps": steps}).encode()), tables

    return app, request


async def _legacy_session(driver: Driver) -> Request:
    """Open a session as the SDK's ``Client(mode="legacy")`` does (``initialize``, then ``notifications/initialized``
    with the session id it was given); the session's ``tools/call`` request."""
    await driver.call(("POST", "/mcp", SDK_BASE, _json(LEGACY_INITIALIZE)), b'"protocolVersion"')
    session = dict(driver.headers).get(b"mcp-session-id")
    if session is None:
        raise RuntimeError(f"initialize answered without a session id: {driver.headers}")
    headers = [*SDK_BASE, (b"mcp-session-id", session), (b"mcp-protocol-version", LEGACY_VERSION.encode())]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await driver.call(("POST", "/mcp", headers, _json(initialized)), status_ok=202)
    return "POST", "/mcp", headers, _json(LEGACY_CALL)


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


_STEP = json.dumps({"action": {"tool": "list_tables", "arguments": {}}}).encode()


def _rpc(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": 1}, separators=(",", ":")).encode()


async def _run(path: str, calls: int) -> None:
    app, make = await _setup(path)
    driver = Driver(app)
    async with app.router.lifespan_context(app):
        request, expect = await make(driver)
        if path == "mcp":
            await _ready(driver)
        for _ in range(WARM_UP):
            await driver.call(request, expect)
        _mark()  # the counts so far (start-up, imports, warm-up) end up in a dump of their own
        for _ in range(calls):
            await driver.call(request, expect)
        _mark()  # the calls (and the tail of one mark, the head of the next)
        _mark()  # one mark alone: subtracted


WARM_UP = 50


def _mark() -> None:
    """Have callgrind dump (and zero) its counts now, if it runs this process."""
    if os.environ.get("BENCH_UNDER_CALLGRIND"):
        subprocess.run(["callgrind_control", "--dump", str(os.getpid())], check=True, capture_output=True)


CACHE_SIM = ["--cache-sim=yes", "--LL=1048576,16,64"]
"""``--cache-sim``: callgrind's cache model with a last level the size of one core's L2 here (1 MiB; the model has
two levels only, and a miss there is what an L2 miss costs: a trip to the shared L3)."""


def _valgrind(out: Path, cache_sim: bool) -> list[str]:
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--trace-children=no",
            *(CACHE_SIM if cache_sim else [])]  # fmt: skip


def _events(dump: Path) -> dict[str, int]:
    """A callgrind dump's totals by event (``Ir``; with the cache model also ``I1mr``, ``D1mr``, ``DLmw``...)."""
    text = dump.read_bytes()
    names = re.search(rb"^events:\s*(.+)$", text, re.MULTILINE)
    totals = re.search(rb"^totals:\s*(.+)$", text, re.MULTILINE)
    if names is None or totals is None:
        raise RuntimeError(f"no totals in callgrind's dump {dump}")
    return dict(zip(names[1].decode().split(), (int(n) for n in totals[1].split()), strict=True))


def _count(path: str, calls: int, cache_sim: bool = False) -> dict[str, float]:
    """Events per request of ``--run PATH calls`` under callgrind: the dump of the calls less a mark's own."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        argv = [*_valgrind(out, cache_sim), sys.executable, "-m", "bench.instructions", "--run", path, str(calls)]
        env = {**os.environ, "PYTHONHASHSEED": "0", "BENCH_UNDER_CALLGRIND": "1"}
        subprocess.run(argv, check=True, capture_output=True, env=env)
        calls_dump, mark = _events(Path(f"{out}.2")), _events(Path(f"{out}.3"))
        return {event: (calls_dump[event] - mark[event]) / calls for event in calls_dump}


def _count_served(path: str, calls: int, cache_sim: bool = False) -> dict[str, float]:
    """Events per call of a real server (a process of its own, under callgrind) answering the SDK's ``Client``
    over HTTP: its counts zeroed after the warm-up, dumped after ``calls`` calls."""
    from bench import servers

    ours = not path.endswith("-bare")
    mode = "legacy" if "-legacy" in path else "2026-07-28"
    spec = servers.ours("sql") if ours else servers.bare_mcp(SQL_TABLES)
    if ours:  # the console script's own command, run by this python: valgrind then runs python itself
        spec.argv = [sys.executable, "-m", "openenv_mcp.cli", *spec.argv[1:]]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        spec.argv = [*_valgrind(out, cache_sim), *spec.argv]
        spec.env["PYTHONHASHSEED"] = "0"
        server = servers.start(spec, Path(tmp))
        try:
            servers.wait_ready(server, time.monotonic() + 900, poll=0.5)
            asyncio.run(_drive_served(server.url + "/mcp", mode, server.process.pid, calls))
        finally:
            servers.stop(server)
        return {event: count / calls for event, count in _events(Path(f"{out}.1")).items()}


async def _drive_served(url: str, mode: str, pid: int, calls: int) -> None:
    from mcp import Client

    from bench.measure import tool_calls

    async with Client(url, mode=mode) as client:
        await tool_calls(client, [("list_tables", {})], WARM_UP)
        subprocess.run(["callgrind_control", "--zero", str(pid)], check=True, capture_output=True)
        await tool_calls(client, [("list_tables", {})], calls)
        subprocess.run(["callgrind_control", "--dump", str(pid)], check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", metavar="PATH", help=f"any of {', '.join(PATHS)} (default: mcp mcp-bare)")
    parser.add_argument("--calls", type=int, default=1000, help="requests counted, after 50 of warm-up (1000)")
    parser.add_argument("--cache-sim", action="store_true", help="also count cache misses (an L2-sized last level)")
    parser.add_argument("--run", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        import uvloop

        uvloop.run(_run(args.run[0], int(args.run[1])))
        return 0
    unknown = sorted(set(args.paths) - set(PATHS))
    if unknown:
        parser.error(f"unknown PATH {', '.join(unknown)}: choose from {', '.join(PATHS)}")
    for path in args.paths or ["mcp", "mcp-bare"]:
        count = _count_served if path.startswith("served-") else _count
        per = count(path, args.calls, args.cache_sim)
        scale = BATCH if path.startswith("batch") else 1
        unit = "step" if path.startswith("batch") else "request"
        line = f"{path:24} {per['Ir'] / scale / 1000:9.1f}k instructions per {unit}"
        if args.cache_sim:
            l1 = sum(per[event] for event in ("I1mr", "D1mr", "D1mw")) / scale
            l2 = sum(per[event] for event in ("ILmr", "DLmr", "DLmw")) / scale
            line += f", {l1 / 1000:.1f}k L1 misses, {l2:,.0f} L2-sized last-level misses"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
