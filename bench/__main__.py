"""Run the benchmark: ``python -m bench [--quick]`` from the repository root.

Every server runs as its own subprocess on this machine. The measurements of ours and of the baselines are
interleaved in rounds (the order reversed every other round), and each metric's median is the median of its
per-round medians; p99 is taken over every timed call of every round.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.metadata
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mcp import Client

from bench import measure, servers
from bench.measure import Summary
from bench.report import Row, table, write_json

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Plan:
    rounds: int
    calls: int  # timed calls per checked metric, over all rounds
    info_calls: int  # timed calls per informational metric
    resets: int
    warmup: int  # untimed calls per target before the first round
    rewarm: int  # untimed calls before each timed block
    in_process: int


FULL = Plan(rounds=20, calls=2000, info_calls=1000, resets=2000, warmup=300, rewarm=10, in_process=1000)
QUICK = Plan(rounds=4, calls=600, info_calls=200, resets=400, warmup=100, rewarm=10, in_process=300)

Timed = Callable[[int], Awaitable[list[float]]]


@dataclass(frozen=True)
class Block:
    """One measured thing: ``run(n)`` makes ``n`` sequential calls to ``server`` and returns their latencies."""

    name: str
    calls: int  # timed calls over all rounds
    run: Timed
    server: servers.Server


@dataclass
class Cpu:
    """CPU seconds the server process and this (client) process spent in a block's timed calls."""

    server_s: float = 0.0
    client_s: float = 0.0
    calls: int = 0

    def per_call_ms(self) -> dict[str, float]:
        return {"server_ms": 1000 * self.server_s / self.calls, "client_ms": 1000 * self.client_s / self.calls}


def _sync(fn: Callable[[int], list[float]]) -> Timed:
    async def timed(n: int) -> list[float]:
        return fn(n)  # blocking on purpose: nothing else is timed while it runs

    return timed


def _mcp(client: Client) -> Timed:
    return lambda n: measure.tool_calls(client, n)


async def run(plan: Plan) -> tuple[list[Row], dict[str, Any]]:
    print(f"in-process reference ({plan.in_process} calls each) ...", flush=True)
    tables, in_process = await measure.in_process(plan.in_process)

    specs = [
        servers.ours(),
        servers.bare_fastapi(tables),
        servers.bare_mcp(tables),
        servers.bare_mcp(tables, sse=True),
        servers.bare_mcp(tables, runner="sdk"),
    ]
    print(f"starting {len(specs)} servers ...", flush=True)
    with servers.running(specs, RESULTS / "logs") as up:
        ours, bare = up["ours"], up["bare-fastapi"]
        mcp_json, mcp_sse, mcp_sdk = up["bare-mcp-uvicorn-json"], up["bare-mcp-uvicorn-sse"], up["bare-mcp-sdk-json"]
        async with AsyncExitStack() as stack:
            setup = measure.http_client(ours.url)
            ours_http = measure.http_client(ours.url, measure.open_episode(setup))
            bare_http = measure.http_client(bare.url, "bench")
            for http in (setup, ours_http, bare_http):
                stack.callback(http.close)

            async def mcp(server: servers.Server, mode: str = "auto") -> Client:
                return await stack.enter_async_context(Client(server.url + "/mcp", mode=mode))

            clients = {
                "mcp ours": (await mcp(ours), ours),
                "mcp bare json": (await mcp(mcp_json), mcp_json),
                "mcp bare sse": (await mcp(mcp_sse), mcp_sse),
                "mcp bare sdk-run": (await mcp(mcp_sdk), mcp_sdk),
                "mcp ours legacy": (await mcp(ours, "legacy"), ours),
                "mcp bare json legacy": (await mcp(mcp_json, "legacy"), mcp_json),
            }
            checked = {"mcp ours", "mcp bare json"}
            # pairs to compare sit next to each other; the order is reversed every other round
            blocks = [
                Block(
                    "step ours list_tables",
                    plan.calls,
                    _sync(lambda n: measure.steps(ours_http, measure.LIST_TABLES, n)),
                    ours,
                ),
                Block("step bare", plan.calls, _sync(lambda n: measure.steps(bare_http, measure.LIST_TABLES, n)), bare),
                Block(
                    "step ours run_query",
                    plan.calls,
                    _sync(lambda n: measure.steps(ours_http, measure.RUN_QUERY, n)),
                    ours,
                ),
                *[
                    Block(name, plan.calls if name in checked else plan.info_calls, _mcp(client), server)
                    for name, (client, server) in clients.items()
                ],
                Block("reset ours", plan.resets, _sync(lambda n: measure.resets(ours_http, n)), ours),
            ]
            print("warming up ...", flush=True)
            for block in blocks:
                await block.run(plan.warmup)
            samples: dict[str, list[list[float]]] = {block.name: [] for block in blocks}
            cpu = {block.name: Cpu() for block in blocks}
            for round_ in range(plan.rounds):
                print(f"round {round_ + 1}/{plan.rounds} ...", flush=True)
                for block in blocks if round_ % 2 == 0 else reversed(blocks):
                    await block.run(plan.rewarm)
                    n = block.calls // plan.rounds
                    server_before, client_before = block.server.cpu_seconds(), time.process_time()
                    samples[block.name].append(await block.run(n))
                    used = cpu[block.name]
                    used.server_s += block.server.cpu_seconds() - server_before
                    used.client_s += time.process_time() - client_before
                    used.calls += n
            protocols = {name: str(client.protocol_version) for name, (client, _) in clients.items()}

    stats = {name: Summary.of(rounds) for name, rounds in samples.items()}
    inproc = {name: Summary.of([values]) for name, values in in_process.items()}
    cpu_ms = {name: used.per_call_ms() for name, used in cpu.items()}
    details = {
        "latency": {name: asdict(s) for name, s in stats.items()},
        "cpu_per_call": cpu_ms,
        "in_process": {name: asdict(s) for name, s in inproc.items()},
        "mcp_protocol_versions": protocols,
        "notes": {
            "median": "median of the per-round medians",
            "ratio": "for medians, the median over rounds of ours/baseline (each round measures both, back to back)",
            "p99": "nearest rank over every timed call of every round",
            "cpu_per_call": "from /proc/PID/stat (10 ms ticks, summed over the rounds) and time.process_time(); "
            "the reset block's server CPU includes the untimed DELETE that closes each episode",
        },
    }
    return _rows(stats, cpu_ms, inproc), details


def _rows(s: dict[str, Summary], cpu: dict[str, dict[str, float]], inproc: dict[str, Summary]) -> list[Row]:
    def pair(metric: str, ours: str, base: str, limit: float | None, p99: bool = True) -> list[Row]:
        rounds = zip(s[ours].round_medians_ms, s[base].round_medians_ms, strict=True)
        paired = statistics.median(o / b for o, b in rounds)
        out = [Row(f"{metric} median", s[ours].median_ms, s[base].median_ms, limit, baseline=base, paired_ratio=paired)]
        if p99:
            out.append(Row(f"{metric} p99", s[ours].p99_ms, s[base].p99_ms, baseline=base))
        return out

    return [
        *pair("/step list_tables vs bare FastAPI", "step ours list_tables", "step bare", 1.25),
        *pair("/step run_query COUNT(*) vs bare FastAPI", "step ours run_query", "step bare", 1.25),
        *pair("MCP call_tool vs bare SDK (json_response=True)", "mcp ours", "mcp bare json", 1.1),
        *pair("MCP call_tool vs bare SDK json_response=False", "mcp ours", "mcp bare sse", None, p99=False),
        *pair("MCP call_tool vs bare SDK server.run() as shipped", "mcp ours", "mcp bare sdk-run", None, p99=False),
        *pair("MCP legacy handshake vs bare SDK (json)", "mcp ours legacy", "mcp bare json legacy", None, p99=False),
        *[
            Row(f"server CPU per call: {metric}", cpu[ours]["server_ms"], cpu[base]["server_ms"], baseline=base)
            for metric, ours, base in [
                ("/step list_tables", "step ours list_tables", "step bare"),
                ("/step run_query", "step ours run_query", "step bare"),
                ("MCP call_tool (json)", "mcp ours", "mcp bare json"),
            ]
        ],
        Row("/reset median", s["reset ours"].median_ms, limit=2.0, check="absolute"),
        Row("/reset p99", s["reset ours"].p99_ms),
        *[Row(f"in-process {name} median", summary.median_ms) for name, summary in inproc.items()],
    ]


def _meta(quick: bool, load_before: tuple[float, float, float]) -> dict[str, Any]:
    packages = ["mcp", "fastapi", "starlette", "uvicorn", "uvloop", "httptools", "httpx", "httpx2", "pydantic"]
    return {
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "versions": {name: importlib.metadata.version(name) for name in packages},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a ~20 s smoke run (fewer rounds and calls)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--output", type=Path, default=RESULTS / "latest.json", help="where to write the JSON")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    load_before = os.getloadavg()
    if load_before[0] > 0.5:
        print(f"note: load average {load_before[0]:.2f} before starting; other work on this machine adds noise")
    started = dt.datetime.now()
    try:
        rows, details = asyncio.run(run(plan))
    except (measure.BenchError, RuntimeError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    meta = {
        **_meta(args.quick, load_before),
        "plan": asdict(plan),
        "seconds": round((dt.datetime.now() - started).total_seconds(), 1),
    }
    write_json(args.output, rows, details, meta)
    print()
    print(table(rows))
    print("ratio of medians: median over rounds of ours/baseline (both measured back to back in each round)")
    print(
        f"\n{meta['seconds']} s; load average {load_before[0]:.2f} -> {meta['load_average_after'][0]:.2f}; "
        f"MCP protocols {sorted(set(details['mcp_protocol_versions'].values()))}; written to {args.output}"
    )
    failed = [r.metric for r in rows if r.verdict == "FAIL"]
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
