"""Prod SQL under load: the server's peak memory for a huge result, and the cost of one call.

    .venv/bin/python -m bench.sql_prod postgresql://reader@127.0.0.1:5432/shop [--rows 4000000] [--calls 300]

Serves ``openenv-mcp serve sql --mode prod`` as a subprocess against the given database (the role
the server connects as), then over MCP: the median and 90th percentile of ``run_query`` on a small
query over ``--calls`` calls (each a whole call: pool checkout, the query, the session reset), and
the server's resident memory (VmRSS, and its peak VmHWM) before and after one query returning
``--rows`` rows. ``--tree DIR`` serves the code of another checkout (e.g. a ``git worktree`` of an
older commit), to compare two versions on the same machine and database.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.servers import free_port

QUERY = "SELECT name, unit_price FROM products ORDER BY product_id LIMIT 3"


def _memory(pid: int) -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


async def _calls(url: str, rows: int, calls: int) -> dict[str, Any]:
    from mcp import Client

    async with Client(url) as client:
        for _ in range(20):  # warm the pool and the caches
            await client.call_tool("run_query", {"sql": QUERY})
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("run_query", {"sql": QUERY})
            times.append(time.perf_counter() - started)
        big = await client.call_tool("run_query", {"sql": f"SELECT g, md5(g::text) FROM generate_series(1, {rows}) g"})
    times.sort()
    return {
        "median_ms": statistics.median(times) * 1000,
        "p90_ms": times[int(len(times) * 0.9)] * 1000,
        "big_is_error": big.is_error,
        "big_chars": len(big.content[0].text) if big.content else 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sql_prod", description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the PostgreSQL URL the server connects with")
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--tree", type=Path, help="serve the code of this checkout (default: this one)")
    args = parser.parse_args(argv)
    port = free_port()
    env = {
        **os.environ,
        "SQL_DATABASE_URL": args.url,
        "SQL_STATEMENT_TIMEOUT_MS": "120000",
        "OPENENV_TRAJECTORIES": "off",
    }
    command = [sys.executable, "-m", "openenv_mcp.cli", "serve", "sql", "--mode", "prod", "--port", str(port)]
    if args.tree is not None:
        env["PYTHONPATH"] = str(args.tree.resolve())
    cwd = args.tree.resolve() if args.tree is not None else None
    server = subprocess.Popen(command, env=env, cwd=cwd, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the server did not become ready within 30 s")
            time.sleep(0.1)
        idle = _memory(server.pid)
        found = anyio.run(_calls, f"http://127.0.0.1:{port}/mcp", args.rows, args.calls)
        after = _memory(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=20)
    print(
        f"run_query median {found['median_ms']:.2f} ms, p90 {found['p90_ms']:.2f} ms over {args.calls} calls; "
        f"{args.rows:,}-row query: RSS {idle['VmRSS']:.0f} -> {after['VmRSS']:.0f} MiB, "
        f"peak {after['VmHWM']:.0f} MiB (answer {found['big_chars']:,} characters, error={found['big_is_error']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
