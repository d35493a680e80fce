"""The MCP door's cost against a bare SDK server: ``python -m bench.mcp_door [--runs 7] [--calls 3000]``.

Issue 34's way of measuring it: an MCP SDK ``Client`` over Streamable HTTP calls ``list_tables`` on
``openenv-mcp serve sql`` (sim, trajectories off) and on the bare SDK server (``bench/baseline_mcp.py``) answering the
same table names (read from ours first), both with JSON responses, from this process. Each cell is one protocol
era with its session shape:

- ``legacy, session``: ``Client(mode="legacy")``, the 2025-11-25 handshake; both servers give it an
  ``Mcp-Session-Id`` (ours binds the session to an episode of its own, opened by its first call);
- ``2026-07-28, sessionless``: ``Client(mode="2026-07-28")``, no handshake and no session (ours steps the shared
  default episode).

A third shape, the legacy era without a session, needs a server in the SDK's stateless mode: the bare SDK server
has one, ours has not (a legacy client always gets a session there, because the session is what holds its
episode), so there is nothing of ours to compare; it is listed as skipped with that reason.

Per run and cell, each server in turn (the order alternates run by run) gets a fresh ``Client``, ``--warmup``
untimed calls, then ``--calls`` timed ones; the server's CPU (``/proc`` utime + stime, 10 ms ticks) is read just
around the timed calls. A cell's ratios are ours / bare per run (median latency, CPU per call); printed is their
median over the runs with the min-max. Results go to ``bench/results/mcp_door.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client

from bench import measure, servers

RESULTS = Path(__file__).resolve().parent / "results"
CALL: list[tuple[str, dict[str, Any]]] = [("list_tables", {})]
CELLS = {"legacy, session": "legacy", "2026-07-28, sessionless": "2026-07-28"}
SKIPPED = {
    "legacy, sessionless": "ours has no stateless mode for the legacy era: a legacy client always gets a session, "
    "which holds its episode (the bare SDK server could serve it with stateless_http=True, ours could not)"
}


@dataclass
class Side:
    """One server's figures in one cell, run by run."""

    median_ms: list[float] = field(default_factory=list)
    cpu_ms_per_call: list[float] = field(default_factory=list)


async def _block(server: servers.Server, mode: str, warmup: int, calls: int, side: Side) -> None:
    async with Client(server.url + "/mcp", mode=mode) as client:
        await measure.tool_calls(client, CALL, warmup)
        before = server.cpu_seconds()
        latencies = await measure.tool_calls(client, CALL, calls)
        after = server.cpu_seconds()
    side.median_ms.append(statistics.median(latencies))
    side.cpu_ms_per_call.append(1000 * (after - before) / calls)


async def _tables(server: servers.Server) -> list[str]:
    async with Client(server.url + "/mcp", mode="2026-07-28") as client:
        result = await client.call_tool("list_tables", {})
    if result.is_error or not isinstance(result.structured_content, dict):
        raise measure.BenchError(f"list_tables on {server.name} answered {result.content}")
    return list(result.structured_content["result"])


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def run(runs: int, calls: int, warmup: int) -> dict[str, Any]:
    log_dir = RESULTS / "logs"
    load_before = os.getloadavg()
    cells: dict[str, dict[str, Side]] = {cell: {"ours": Side(), "bare": Side()} for cell in CELLS}
    with servers.running([servers.ours("sql")], log_dir) as up:
        ours = up["ours-sql"]
        tables = await _tables(ours)
        with servers.running([servers.bare_mcp(tables)], log_dir) as bare_up:
            subjects = {"ours": ours, "bare": bare_up["bare-mcp"]}
            for run_ in range(runs):
                order = ["ours", "bare"] if run_ % 2 == 0 else ["bare", "ours"]
                for cell, mode in CELLS.items():
                    for name in order:
                        await _block(subjects[name], mode, warmup, calls, cells[cell][name])
                figures = "; ".join(
                    f"{cell}: {sides['ours'].median_ms[-1] / sides['bare'].median_ms[-1]:.2f} latency, "
                    f"{_ratio(sides['ours'].cpu_ms_per_call[-1], sides['bare'].cpu_ms_per_call[-1]):.2f} CPU"
                    for cell, sides in cells.items()
                )
                print(f"  run {run_ + 1}/{runs} ({' first, '.join(order)} second): {figures}", flush=True)
    out: dict[str, Any] = {
        "tables": tables,
        "runs": runs,
        "calls": calls,
        "warmup": warmup,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "skipped": SKIPPED,
        "cells": {},
    }
    for cell, sides in cells.items():
        ours_side, bare_side = sides["ours"], sides["bare"]
        out["cells"][cell] = {
            "latency_ratio": _spread([o / b for o, b in zip(ours_side.median_ms, bare_side.median_ms, strict=True)]),
            "cpu_ratio": _spread(
                [_ratio(o, b) for o, b in zip(ours_side.cpu_ms_per_call, bare_side.cpu_ms_per_call, strict=True)]
            ),
            "ours": {"median_ms": ours_side.median_ms, "cpu_ms_per_call": ours_side.cpu_ms_per_call},
            "bare": {"median_ms": bare_side.median_ms, "cpu_ms_per_call": bare_side.cpu_ms_per_call},
        }
    return out


def _ratio(ours: float, bare: float) -> float:
    return ours / bare if bare else float("inf")  # no tick at all in the bare block: too few calls


def _print(result: dict[str, Any]) -> None:
    load = result["load_average_before"][0], result["load_average_after"][0]
    print(f"{result['runs']} runs x {result['calls']} calls per server and cell; load {load[0]:.2f} -> {load[1]:.2f}")
    print(f"{'cell':<26}{'latency ours/bare':>24}{'server CPU ours/bare':>24}{'CPU ms/call ours, bare':>26}")
    for cell, figures in result["cells"].items():
        latency, cpu = figures["latency_ratio"], figures["cpu_ratio"]
        ours, bare = (statistics.median(figures[side]["cpu_ms_per_call"]) for side in ("ours", "bare"))
        print(
            f"{cell:<26}{latency['median']:>12.2f} ({latency['min']:.2f}-{latency['max']:.2f})"
            f"{cpu['median']:>12.2f} ({cpu['min']:.2f}-{cpu['max']:.2f}){ours:>16.3f}, {bare:.3f}"
        )
    for cell, why in result["skipped"].items():
        print(f"{cell:<26}skipped: {why}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    # 3,000: at 400 a block is about 30 ticks of 10 ms, and seven runs of it gave 1.23 and 1.09 where 3,000 gave
    # 0.94 and 0.88 minutes later (bench/README.md, issue 34 item 6)
    parser.add_argument("--calls", type=int, default=3000, help="timed calls per server, cell and run (3000)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed calls before them (50)")
    args = parser.parse_args()
    result = asyncio.run(run(args.runs, args.calls, args.warmup))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mcp_door.json").write_text(json.dumps(result, indent=2))
    _print(result)


if __name__ == "__main__":
    main()
