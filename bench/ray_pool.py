"""Throughput through the Ray pool with 1, 2 and 4 replicas, against the same replicas through EnvPool.

    .venv/bin/python -m bench.ray_pool [--rounds 4] [--duration 2] [--clients 16] [--replicas 1,2,4]

Starts a real two-node Ray cluster on this machine (tests/support/ray.py: a head and a worker node, each
its own process group), then for each replica count: an ``AsyncRayPool`` of sql replicas (actors spread
over both nodes) and an ``AsyncEnvPool`` over the very same replicas' URLs. Each pool opens ``--clients``
episodes, and each episode is a client stepping ``list_tables`` back to back through its pool; a cell counts
completed steps for ``--duration`` seconds after a warm-up. Cells run in rounds, the two pools' order
reversed every other round; a figure is the median over rounds, a ratio the median of per-round ratios.

Where the cores go is measured too: the client's CPU (this process) and the replicas' CPU (each actor's
process, from /proc) per step. Writes ``bench/results/ray_pool.json`` and prints a table; figures and what
they mean are in bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import ray

from openenv_mcp.deploy.pool import AsyncEnvPool
from openenv_mcp.deploy.ray_pool import AsyncRayPool
from tests.support.ray import ray_cluster

RESULTS = Path(__file__).resolve().parent / "results"
SERVER_ENV = {"OPENENV_TRAJECTORIES": "off", "OPENENV_MAX_STEPS": str(10**9)}
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


@dataclass
class Cell:
    pool: str
    replicas: int
    rate: list[float] = field(default_factory=list)  # steps/s per round
    client_ms: list[float] = field(default_factory=list)  # client CPU ms per step
    server_ms: list[float] = field(default_factory=list)  # replicas' CPU ms per step
    cores: list[float] = field(default_factory=list)  # CPU seconds per second, client and replicas together


async def _measure(
    step: Callable[[str], Awaitable[Any]], episodes: list[str], pids: list[int], warmup: float, duration: float
) -> tuple[float, float, float, float]:
    count = 0
    counting = False
    stop = time.monotonic() + warmup + duration

    async def client(episode: str) -> None:
        nonlocal count
        while time.monotonic() < stop:
            await step(episode)
            if counting:
                count += 1

    async def clock() -> tuple[float, float, float]:
        nonlocal counting
        await anyio.sleep(warmup)
        counting = True
        started, own, theirs = time.monotonic(), _own_cpu(), _cpu_of(pids)
        await anyio.sleep(duration)
        counting = False
        return time.monotonic() - started, _own_cpu() - own, _cpu_of(pids) - theirs

    result: list[tuple[float, float, float]] = []

    async def timed() -> None:
        result.append(await clock())

    async with anyio.create_task_group() as group:
        group.start_soon(timed)
        for episode in episodes:
            group.start_soon(client, episode)
    seconds, own, theirs = result[0]
    steps = max(count, 1)
    return count / seconds, own / steps * 1000, theirs / steps * 1000, (own + theirs) / seconds


async def _run_replicas(replicas: int, args: argparse.Namespace) -> list[Cell]:
    cells = [Cell("RayPool", replicas), Cell("EnvPool (plain URLs)", replicas)]
    async with AsyncRayPool("sql", replicas=replicas, environment=SERVER_ENV, log_level="error") as ray_pool:
        urls = await ray_pool.refresh()
        placements = ray_pool.placements()
        pids = [placements[url].pid for url in urls]
        nodes = sorted({placements[url].node_id[:8] for url in urls})
        print(f"  {replicas} replica(s) on node(s) {', '.join(nodes)}", flush=True)
        async with AsyncEnvPool(urls) as plain:
            pools: list[Any] = [ray_pool, plain]
            opened = [[(await pool.reset(seed=i)).episode_id for i in range(args.clients)] for pool in pools]
            for round_ in range(args.rounds):
                order = [0, 1] if round_ % 2 == 0 else [1, 0]
                for index in order:
                    pool = pools[index]

                    async def step(episode: str, pool: Any = pool) -> Any:
                        return await pool.step(episode, "list_tables")

                    rate, client_ms, server_ms, cores = await _measure(
                        step, opened[index], pids, args.warmup, args.duration
                    )
                    cell = cells[index]
                    cell.rate.append(rate)
                    cell.client_ms.append(client_ms)
                    cell.server_ms.append(server_ms)
                    cell.cores.append(cores)
    return cells


def _table(cells: list[Cell]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    base = {c.pool: statistics.median(c.rate) for c in cells if c.replicas == min(x.replicas for x in cells)}
    by = {(c.pool, c.replicas): c for c in cells}
    for cell in cells:
        plain = by[("EnvPool (plain URLs)", cell.replicas)]
        ratio = statistics.median(r / p for r, p in zip(cell.rate, plain.rate, strict=True))
        rows.append(
            {
                "pool": cell.pool,
                "replicas": cell.replicas,
                "steps_per_s": statistics.median(cell.rate),
                "vs_envpool": ratio,
                "vs_one_replica": statistics.median(cell.rate) / base[cell.pool],
                "client_cpu_ms_per_step": statistics.median(cell.client_ms),
                "replicas_cpu_ms_per_step": statistics.median(cell.server_ms),
                "cores_busy": statistics.median(cell.cores),
                "rounds": cell.rate,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--clients", type=int, default=16, help="concurrent episodes per pool")
    parser.add_argument("--replicas", default="1,2,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    load_before = os.getloadavg()
    with ray_cluster() as cluster:
        print(f"Ray cluster of 2 nodes up in {cluster.start_seconds:.1f} s", flush=True)
        ray.init(address=cluster.address, log_to_driver=False)
        try:
            cells: list[Cell] = []
            for count in counts:
                cells += anyio.run(_run_replicas, count, args)
        finally:
            ray.shutdown()
    rows = _table(cells)
    print(f"\n{'pool':<22}{'replicas':>9}{'steps/s':>10}{'vs EnvPool':>12}{'vs 1':>7}"
          f"{'client ms/step':>16}{'replicas ms/step':>18}{'cores busy':>12}")  # fmt: skip
    for row in rows:
        print(
            f"{row['pool']:<22}{row['replicas']:>9}{row['steps_per_s']:>10.0f}{row['vs_envpool']:>12.2f}"
            f"{row['vs_one_replica']:>7.2f}{row['client_cpu_ms_per_step']:>16.3f}"
            f"{row['replicas_cpu_ms_per_step']:>18.3f}{row['cores_busy']:>12.2f}"
        )
    load_after = os.getloadavg()
    print(f"\nload average before {load_before[0]:.1f}, after {load_after[0]:.1f} (2 cores)")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "ray_pool.json"
    meta = {"args": vars(args), "load_before": load_before, "load_after": load_after, "cpus": os.cpu_count()}
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
