"""Sections ``step``, ``mcp`` and ``reset``: sequential latency, ours and baselines interleaved in rounds.

Each measured thing is a :class:`Block`. Before the first round every block is warmed up and its call count per
round is set from its warm latency (``Plan.block_budget_s`` per round, capped), so slow environments (desktop,
coding) take a few calls and fast ones a few hundred. Each round runs every block back to back, in reverse order
every other round; a median is the median of the per-round medians, a ratio the median over rounds of
ours/baseline, p99 the nearest rank over every call of every round.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

from mcp import Client, StdioServerParameters

from bench import measure, servers
from bench.context import Context
from bench.measure import Http, Summary
from bench.report import Row

Run = Callable[[int], Awaitable[list[float]]]

# Every desktop action returns the screen once the application has handled it: a step is the action and its
# screenshot. Moving, clicking into the text, a key and typing; each changes a part of the screen, or not.
DESKTOP_ACTIONS: list[tuple[str, dict[str, Any]]] = [
    ("move_mouse", {"x": 500, "y": 400}),
    ("click", {"x": 400, "y": 300}),
    ("key", {"keys": "ctrl+End"}),
    ("type_text", {"text": "hello"}),
]
DESKTOP_STEP_MS = 12.0  # issue 16's target for the median desktop step


@dataclass
class Block:
    """One measured thing: ``run(n)`` makes ``n`` sequential calls and returns their latencies (ms)."""

    name: str
    run: Run
    server: servers.Server | None = None  # for server CPU per call (None: a stdio server, not measured)
    labels: list[str] = field(default_factory=lambda: [""])  # what call i was (cycled), for per-tool medians
    per_round: int = 0
    rounds: list[list[float]] = field(default_factory=list)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0


def _sync(fn: Callable[[int], list[float]]) -> Run:
    async def run(n: int) -> list[float]:
        return fn(n)  # blocking on purpose: nothing else is timed while it runs

    return run


def _per_round(latency_ms: float, ctx: Context, minimum: int = 3) -> int:
    return max(minimum, min(ctx.plan.block_cap, int(ctx.plan.block_budget_s * 1000 / max(latency_ms, 1e-3))))


async def _call(block: Block, n: int) -> list[float]:
    try:
        return await block.run(n)
    except Exception as exc:  # name the block: errors inside an MCP client surface later, wrapped in groups
        raise measure.BenchError(f"{block.name}: {type(exc).__name__}: {exc}") from exc


async def run_blocks(blocks: list[Block], ctx: Context) -> None:
    for block in blocks:  # warm up: a few calls, then more within a time budget; the warm latency sets the count
        warm = await _call(block, 5)
        more = min(ctx.plan.warmup, int(1000 * ctx.plan.block_budget_s / max(statistics.median(warm), 1e-3)))
        warm += await _call(block, more)
        block.per_round = _per_round(statistics.median(warm), ctx)
    for round_ in range(ctx.plan.rounds):
        print(f"  round {round_ + 1}/{ctx.plan.rounds} ...", flush=True)
        for block in blocks if round_ % 2 == 0 else list(reversed(blocks)):
            await _call(block, ctx.plan.rewarm)
            server_before = block.server.cpu_seconds() if block.server else 0.0
            client_before = time.process_time()
            block.rounds.append(await _call(block, block.per_round))
            block.client_cpu_s += time.process_time() - client_before
            if block.server:
                block.server_cpu_s += block.server.cpu_seconds() - server_before


def _details(blocks: list[Block]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for block in blocks:
        calls = sum(len(r) for r in block.rounds)
        entry: dict[str, Any] = asdict(Summary.of(block.rounds))
        entry["client_cpu_ms_per_call"] = 1000 * block.client_cpu_s / calls
        if block.server:
            entry["server_cpu_ms_per_call"] = 1000 * block.server_cpu_s / calls
        if len(block.labels) > 1:
            by_label: dict[str, list[float]] = {}
            for r in block.rounds:
                for i, value in enumerate(r):
                    by_label.setdefault(block.labels[i % len(block.labels)], []).append(value)
            entry["median_ms_by_call"] = {label: statistics.median(v) for label, v in by_label.items()}
        out[block.name] = entry
    return out


def _pair(
    section: str, metric: str, ours: Block, base: Block, base_name: str, limit: float | None = None, p99: bool = True
) -> list[Row]:
    s_ours, s_base = Summary.of(ours.rounds), Summary.of(base.rounds)
    rows = [
        Row(
            section,
            f"{metric} median",
            s_ours.median_ms,
            "ms",
            base_name,
            s_base.median_ms,
            limit,
            "ratio<=",
            measure.paired_ratio(s_ours.round_medians_ms, s_base.round_medians_ms),
        )
    ]
    if p99:
        rows.append(Row(section, f"{metric} p99", s_ours.p99_ms, "ms", base_name, s_base.p99_ms))
    return rows


def _cpu_row(section: str, metric: str, ours: Block, base: Block, base_name: str) -> Row:
    def per_call(block: Block) -> float:
        return 1000 * block.server_cpu_s / sum(len(r) for r in block.rounds)

    return Row(
        section, metric, per_call(ours), "ms", base_name, per_call(base), note="server CPU per call (10 ms ticks)"
    )


# the sections ---------------------------------------------------------------------------------------


def _examples(name: str) -> list[tuple[str, dict[str, Any]]]:
    from openenv_mcp.environment.catalog import load_environment

    return [(tool, dict(args)) for tool, args in load_environment(name).examples]


def _open_http(stack: AsyncExitStack, port: int) -> Http:
    http = Http(port)
    stack.callback(http.close)
    return http


def _step_blocks(ctx: Context, stack: AsyncExitStack) -> tuple[list[Block], dict[str, Block]]:
    up = ctx.up
    bare = _open_http(stack, up["bare-fastapi"].port)
    list_tables = measure.step_body("list_tables", {})
    named: dict[str, Block] = {}
    named["bare"] = Block(
        "step bare-fastapi",
        _sync(lambda n: measure.http_loop(bare, [measure.request(bare.port, "POST", "/step", list_tables)], n)),
        up["bare-fastapi"],
    )

    def ours_step(server: servers.Server, calls: list[tuple[str, dict[str, Any]]], block_name: str) -> Block:
        http = _open_http(stack, server.port)
        episode = http.call("POST", "/reset", {})["episode_id"]
        header = {"X-Episode-Id": episode}
        requests = [measure.request(http.port, "POST", "/step", measure.step_body(t, a), header) for t, a in calls]
        for data in requests:  # each example must be a clean tool result, or its timing means nothing
            status, body = http.send(data)
            why = f"status {status}" if status != 200 else measure.step_errors(body)
            if why:
                raise measure.BenchError(f"{block_name}: example on {server.name} failed: {why}")
        return Block(block_name, _sync(lambda n: measure.http_loop(http, requests, n)), server, [t for t, _ in calls])

    named["trivial"] = ours_step(up["ours-trivial"], [("list_tables", {})], "step ours-trivial")
    if "ours-trivial-recording" in up:
        named["recording"] = ours_step(
            up["ours-trivial-recording"], [("list_tables", {})], "step ours-trivial recording on"
        )
    if "openenv" in up:
        oe = _open_http(stack, up["openenv"].port)
        oe_step = measure.request(oe.port, "POST", "/step", list_tables)
        named["openenv"] = Block(
            "step openenv-http", _sync(lambda n: measure.http_loop(oe, [oe_step], n)), up["openenv"]
        )
    # the WebSocket step: ours and OpenEnv's (one session each)
    ws_ours = measure.ws_open(up["ours-trivial"].port)
    stack.callback(ws_ours.close)
    ws_ours.send(json.dumps({"op": "reset"}))
    ws_ours.recv()
    ours_msg = json.dumps({"op": "step", "action": {"tool": "list_tables", "arguments": {}}})
    named["ws"] = Block(
        "ws step ours-trivial",
        _sync(lambda n: measure.ws_loop(ws_ours, [ours_msg], n, '{"ok":true')),
        up["ours-trivial"],
    )
    if "openenv" in up:
        ws_oe = measure.ws_open(up["openenv"].port)
        stack.callback(ws_oe.close)
        ws_oe.send(json.dumps({"type": "reset", "data": {}}))
        ws_oe.recv()
        oe_msg = json.dumps({"type": "step", "data": {"tool": "list_tables", "arguments": {}}})
        named["ws openenv"] = Block(
            "ws step openenv",
            _sync(lambda n: measure.ws_loop(ws_oe, [oe_msg], n, '{"type":"observation"')),
            up["openenv"],
        )
    for env in ctx.envs:
        if f"ours-{env}" in up:
            named[env] = ours_step(up[f"ours-{env}"], _examples(env), f"step ours-{env} (examples)")
    if "ours-desktop" in up:  # issue 16's desktop step: an action and the screenshot it returns
        named["desktop actions"] = ours_step(up["ours-desktop"], DESKTOP_ACTIONS, "step ours-desktop (actions)")
    return list(named.values()), named


async def _mcp_blocks(ctx: Context, stack: AsyncExitStack) -> tuple[list[Block], dict[str, Block]]:
    up = ctx.up
    call: list[tuple[str, dict[str, Any]]] = [("list_tables", {})]
    named: dict[str, Block] = {}

    async def http_client(server: servers.Server) -> Client:
        return await stack.enter_async_context(Client(server.url + "/mcp"))

    async def stdio_client(argv: list[str], env: dict[str, str]) -> Client:
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(servers.ROOT))
        return await stack.enter_async_context(Client(params))

    def block(
        name: str, client: Client, server: servers.Server | None, calls: list[tuple[str, dict[str, Any]]]
    ) -> Block:
        return Block(name, lambda n: measure.tool_calls(client, calls, n), server, [t for t, _ in calls])

    named["http bare"] = block("mcp http bare-sdk", await http_client(up["bare-mcp"]), up["bare-mcp"], call)
    named["http trivial"] = block(
        "mcp http ours-trivial", await http_client(up["ours-trivial"]), up["ours-trivial"], call
    )
    if "ours-sql" in up:
        named["http sql"] = block(
            "mcp http ours-sql (examples)", await http_client(up["ours-sql"]), up["ours-sql"], _examples("sql")
        )
    ours_env = {**os.environ, **servers._ours_env(recording=False)}
    named["stdio bare"] = block(
        "mcp stdio bare-sdk", await stdio_client(servers.bare_mcp_stdio_argv(ctx.tables), dict(os.environ)), None, call
    )
    named["stdio trivial"] = block(
        "mcp stdio ours-trivial", await stdio_client(servers.ours_stdio_argv("trivial"), ours_env), None, call
    )
    if "sql" in ctx.envs:
        named["stdio sql"] = block(
            "mcp stdio ours-sql (examples)",
            await stdio_client(servers.ours_stdio_argv("sql"), ours_env),
            None,
            _examples("sql"),
        )
    return list(named.values()), named


def _reset_blocks(ctx: Context, stack: AsyncExitStack) -> tuple[list[Block], dict[str, Block]]:
    up = ctx.up
    named: dict[str, Block] = {}
    if "openenv" in up:
        oe = _open_http(stack, up["openenv"].port)
        named["openenv"] = Block(
            "reset openenv-http", _sync(lambda n: measure.openenv_resets_loop(oe, n)), up["openenv"]
        )
    else:
        bare = _open_http(stack, up["bare-fastapi"].port)
        body = measure.request(bare.port, "POST", "/step", measure.step_body("list_tables", {}))
        named["bare"] = Block("step bare-fastapi (for reset)", _sync(lambda n: measure.http_loop(bare, [body], n)))
    for env in ["trivial", *ctx.envs]:
        server = up.get(f"ours-{env}")
        if server is None:
            continue
        http = _open_http(stack, server.port)

        def run(n: int, http: Http = http) -> list[float]:
            return measure.resets_loop(http, n)

        named[env] = Block(f"reset ours-{env}", _sync(run), server)
    return list(named.values()), named


async def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    failure: measure.BenchError | None = None
    try:
        await _latency(ctx, rows)
    except BaseExceptionGroup as group:  # the MCP clients' task groups wrap what went wrong
        leaves = _leaves(group)
        failure = next((e for e in leaves if isinstance(e, measure.BenchError)), None)
        if failure is None:
            raise measure.BenchError("; ".join(f"{type(e).__name__}: {e}" for e in leaves)) from group
    if failure is not None:
        raise failure
    return rows


def _leaves(group: BaseException) -> list[BaseException]:
    """Every exception in a group, in what they were raised while handling, and in what caused them."""
    out: list[BaseException] = []
    seen: set[int] = set()
    todo = [group]
    while todo:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup):
            todo += list(exc.exceptions)
        else:
            out.append(exc)
        todo += [e for e in (exc.__cause__, exc.__context__) if e is not None]
    return out


async def _latency(ctx: Context, rows: list[Row]) -> None:
    async with AsyncExitStack() as stack:
        blocks: list[Block] = []
        step = mcp = reset = None
        if "step" in ctx.sections:
            step_list, step = _step_blocks(ctx, stack)
            blocks += step_list
        if "mcp" in ctx.sections:
            mcp_list, mcp = await _mcp_blocks(ctx, stack)
            blocks += mcp_list
        if "reset" in ctx.sections:
            reset_list, reset = _reset_blocks(ctx, stack)
            blocks += reset_list
        print(f"latency: {len(blocks)} blocks, {ctx.plan.rounds} rounds ...", flush=True)
        await run_blocks(blocks, ctx)

    ctx.details["latency"] = _details(blocks)
    if step:
        bare = step["bare"]
        rows += _pair("step", "/step trivial tool", step["trivial"], bare, "bare FastAPI", 1.15)
        rows.append(_cpu_row("step", "/step trivial tool, server CPU", step["trivial"], bare, "bare FastAPI"))
        if "recording" in step:
            rows += _pair("step", "/step trivial, trajectories on", step["recording"], bare, "bare FastAPI", p99=False)
        if "openenv" in step:
            rows += _pair("step", "OpenEnv /step (reference)", step["openenv"], bare, "bare FastAPI", p99=False)
        if "ws openenv" in step:
            rows += _pair("step", "/ws step trivial", step["ws"], step["ws openenv"], "OpenEnv /ws")
        for env in ctx.envs:
            if env in step:
                rows += _pair("step", f"/step {env} (its examples)", step[env], bare, "bare FastAPI")
        if "desktop actions" in step:
            actions = Summary.of(step["desktop actions"].rounds)
            rows.append(
                Row(
                    "step",
                    "/step desktop action + screenshot median",
                    actions.median_ms,
                    "ms",
                    "bare FastAPI",
                    Summary.of(bare.rounds).median_ms,
                    DESKTOP_STEP_MS,
                    "value<=",
                    measure.paired_ratio(actions.round_medians_ms, Summary.of(bare.rounds).round_medians_ms),
                    note="move, click, key, type 5 characters, each returning a 1024x768 PNG (the default settings)",
                )
            )
            rows.append(Row("step", "/step desktop action + screenshot p99", actions.p99_ms, "ms"))
    if mcp:
        rows += _pair("mcp", "MCP HTTP call, trivial", mcp["http trivial"], mcp["http bare"], "bare SDK", 1.0)
        rows.append(_cpu_row("mcp", "MCP HTTP call, server CPU", mcp["http trivial"], mcp["http bare"], "bare SDK"))
        if "http sql" in mcp:
            rows += _pair(
                "mcp", "MCP HTTP call, sql examples", mcp["http sql"], mcp["http bare"], "bare SDK", p99=False
            )
        rows += _pair("mcp", "MCP stdio call, trivial", mcp["stdio trivial"], mcp["stdio bare"], "bare SDK stdio", 1.0)
        if "stdio sql" in mcp:
            rows += _pair(
                "mcp", "MCP stdio call, sql examples", mcp["stdio sql"], mcp["stdio bare"], "bare SDK stdio", p99=False
            )
    if reset:
        base_key, base_name = ("openenv", "OpenEnv /reset") if "openenv" in reset else ("bare", "bare FastAPI")
        for env in ["trivial", *ctx.envs]:
            if env in reset:
                rows += _pair("reset", f"/reset {env}", reset[env], reset[base_key], base_name)
