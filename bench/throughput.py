"""Section ``throughput``: steps per second of the trivial tool with 1, 16 and 64 concurrent clients.

A "client" is one episode being stepped. Per path:

- ``/step`` (ours, bare FastAPI, OpenEnv's HTTP): one keep-alive connection per client, requests back to back;
- ``/ws`` (ours, OpenEnv's): one WebSocket per client (a session each), step messages back to back;
- ``/step_batch`` and the ``/ws`` ``step_batch`` op (ours): one connection carrying every client's step in each
  request, so N clients make one request of N steps.

Every cell runs ``Plan.tp_warmup_s`` then counts completed steps for ``Plan.tp_duration_s``; cells run in rounds
(order reversed every other round) and each figure is the median over rounds. The clients are lean (pre-encoded
requests, answers checked but not parsed) and share the 2 cores with the server, as a trainer on the same box would.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench import measure, recording
from bench.context import Context
from bench.measure import STEP, Http
from bench.report import Row

# our best path against the latest OpenEnv's best path (3x until issue 27: OpenEnv 0.10's /ws costs what ours does)
BEST_PATH_RATIO = 2.0
TAIL_RATIO = 3.0  # /step p99 over its median with 64 clients
RECORDING_RATIO = 0.9  # batched steps/s recording every step (the default) against recording nothing


def _episodes(ctx: Context, server: str) -> list[str]:
    if server not in ctx.up:
        return []
    setup = Http(ctx.up[server].port)
    try:
        return measure.open_episodes(setup, max(ctx.plan.concurrency))
    finally:
        setup.close()


@dataclass
class Cell:
    path: str
    clients: int
    run: Callable[[Cell], Awaitable[float]]
    rounds: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # ms of each /step in the timed windows (HTTP /step cells)

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)


def _cells(ctx: Context, episodes: list[str]) -> list[Cell]:
    up, plan = ctx.up, ctx.plan
    warm, duration = plan.tp_warmup_s, plan.tp_duration_s
    ours, bare = up["ours-trivial"].port, up["bare-fastapi"].port
    step_body = measure.step_body("list_tables", {})
    cells: list[Cell] = []
    for n in plan.concurrency:

        def ours_step(cell: Cell, n: int = n) -> Awaitable[float]:
            requests = [
                measure.request(ours, "POST", "/step", step_body, {"X-Episode-Id": episodes[i]}) for i in range(n)
            ]
            return measure.http_throughput(ours, requests, 1, warm, duration, cell.latencies)

        def ours_ws(cell: Cell, n: int = n) -> Awaitable[float]:
            step = json.dumps({"op": "step", "action": STEP})
            return measure.ws_throughput(
                ours, [json.dumps({"op": "reset"})], lambda i: step, n, 1, '{"ok":true', warm, duration
            )

        def ours_batch(cell: Cell, n: int = n) -> Awaitable[float]:
            body = json.dumps({"steps": [{"episode_id": episodes[i], "action": STEP} for i in range(n)]}).encode()
            return measure.http_throughput(
                ours, [measure.request(ours, "POST", "/step_batch", body)], n, warm, duration
            )

        def ours_ws_batch(cell: Cell, n: int = n) -> Awaitable[float]:
            message = json.dumps(
                {"op": "step_batch", "steps": [{"episode_id": episodes[i], "action": STEP} for i in range(n)]}
            )
            return measure.ws_throughput(ours, [], lambda i: message, 1, n, '{"ok":true', warm, duration)

        def bare_step(cell: Cell, n: int = n) -> Awaitable[float]:
            return measure.http_throughput(
                bare, [measure.request(bare, "POST", "/step", step_body)] * n, 1, warm, duration, cell.latencies
            )

        cells += [
            Cell("ours /step", n, ours_step),
            Cell("ours /ws", n, ours_ws),
            Cell("ours /step_batch", n, ours_batch),
            Cell("ours /ws step_batch", n, ours_ws_batch),
            Cell("bare FastAPI /step", n, bare_step),
        ]
        if "openenv" in up:
            oe = up["openenv"].port

            def oe_step(cell: Cell, n: int = n, oe: int = oe) -> Awaitable[float]:
                return measure.http_throughput(
                    oe, [measure.request(oe, "POST", "/step", step_body)] * n, 1, warm, duration
                )

            def oe_ws(cell: Cell, n: int = n, oe: int = oe) -> Awaitable[float]:
                step = json.dumps({"type": "step", "data": STEP})
                reset = json.dumps({"type": "reset", "data": {}})
                return measure.ws_throughput(oe, [reset], lambda i: step, n, 1, '{"type":"observation"', warm, duration)

            cells += [Cell("OpenEnv /step", n, oe_step), Cell("OpenEnv /ws", n, oe_ws)]
    return cells


async def run(ctx: Context) -> list[Row]:
    episodes, recorded = _episodes(ctx, "ours-trivial"), _episodes(ctx, "ours-trivial-recording")
    cells = _cells(ctx, episodes)
    print(f"throughput: {len(cells)} cells x {ctx.plan.tp_rounds} rounds ...", flush=True)
    for round_ in range(ctx.plan.tp_rounds):
        print(f"  round {round_ + 1}/{ctx.plan.tp_rounds} ...", flush=True)
        for cell in cells if round_ % 2 == 0 else list(reversed(cells)):
            cell.rounds.append(await cell.run(cell))

    by = {(c.path, c.clients): c for c in cells}
    ctx.details["throughput"] = {f"{c.path} x{c.clients}": c.rounds for c in cells}
    rows: list[Row] = []
    has_openenv = "openenv" in ctx.up
    for n in ctx.plan.concurrency:
        bare = by[("bare FastAPI /step", n)]
        oe_ws = by.get(("OpenEnv /ws", n))
        for path in ("ours /step", "ours /ws", "ours /step_batch", "ours /ws step_batch"):
            cell = by[(path, n)]
            base, base_name = (
                (bare, "bare FastAPI /step") if path == "ours /step" or oe_ws is None else (oe_ws, "OpenEnv /ws")
            )
            ratio = measure.paired_ratio(cell.rounds, base.rounds)
            rows.append(
                Row(
                    "throughput",
                    f"{path}, {n} clients",
                    cell.median,
                    "steps/s",
                    base_name,
                    base.median,
                    paired_ratio=ratio,
                )
            )
        if has_openenv:
            oe_http = by[("OpenEnv /step", n)]
            ratio = measure.paired_ratio(oe_http.rounds, bare.rounds)
            rows.append(
                Row(
                    "throughput",
                    f"OpenEnv /step, {n} clients (reference)",
                    oe_http.median,
                    "steps/s",
                    "bare FastAPI /step",
                    bare.median,
                    paired_ratio=ratio,
                )
            )
    # the tail under load: p99 over the median of every /step of 64 clients (ours, and bare FastAPI's for reference)
    most = max(ctx.plan.concurrency)
    for path, limit in (("ours /step", TAIL_RATIO), ("bare FastAPI /step", None)):
        times = sorted(by[(path, most)].latencies)
        if times:
            p99 = times[max(0, math.ceil(0.99 * len(times)) - 1)]
            rows.append(
                Row(
                    "throughput",
                    f"{path.removeprefix('ours ')} p99 / median, {most} clients",
                    p99,
                    "ms",
                    "its median",
                    statistics.median(times),
                    limit,
                )
            )
    # the target: our best path against OpenEnv's best path (any path, any client count), round by round
    ours_cells = [c for c in cells if c.path.startswith("ours")]
    best_ours = max(ours_cells, key=lambda c: c.median)
    if has_openenv:
        oe_cells = [c for c in cells if c.path.startswith("OpenEnv")]
        best_oe = max(oe_cells, key=lambda c: c.median)
        per_round = [
            max(c.rounds[r] for c in ours_cells) / max(c.rounds[r] for c in oe_cells) for r in range(ctx.plan.tp_rounds)
        ]
        rows.append(
            Row(
                "throughput",
                f"training throughput, best path ({best_ours.path} x{best_ours.clients})",
                best_ours.median,
                "steps/s",
                f"OpenEnv best ({best_oe.path.removeprefix('OpenEnv ')} x{best_oe.clients})",
                best_oe.median,
                BEST_PATH_RATIO,
                "ratio>=",
                statistics.median(per_round),
            )
        )
    else:
        ctx.skipped["throughput target"] = "OpenEnv did not start: " + ctx.skipped.get("openenv", "?")
    if recorded:
        rows += await _recording(ctx, episodes, recorded)
    return rows


async def _recording(ctx: Context, episodes: list[str], recorded: list[str]) -> list[Row]:
    """Recording every step against recording nothing: ``/step_batch`` with every client's step, on the two
    trivial servers in rounds of their own, back to back (bench/recording.py's way), with each server's CPU per
    step and its trajectory writer's (a process of its own beside the server)."""
    plan = ctx.plan
    off = recording.Subject("trajectories off", ctx.up["ours-trivial"], episodes)
    on = recording.Subject("trajectories on", ctx.up["ours-trivial-recording"], recorded)
    print(f"throughput: recording on / off x {plan.rec_rounds} rounds ...", flush=True)
    await recording.paired_rounds([off, on], plan.rec_rounds, plan.tp_warmup_s, plan.tp_duration_s)
    found = {subject.name: recording.figures(subject, off) for subject in (off, on)}
    ctx.details["throughput recording"] = found
    cpu = "server_cpu_ms_per_1000_steps"  # ms per 1,000 steps: us per step
    writer = found[on.name]["children_cpu_ms_per_1000_steps_in_all"]  # its catching up after the rounds too
    return [
        Row(
            "throughput",
            f"/step_batch, {len(recorded)} clients, trajectories on (the default)",
            statistics.median(on.rounds),
            "steps/s",
            "trajectories off",
            statistics.median(off.rounds),
            RECORDING_RATIO,
            "ratio>=",
            measure.paired_ratio(on.rounds, off.rounds),
        ),
        Row(
            "throughput",
            "server CPU per /step_batch step, trajectories on",
            found[on.name][cpu],
            "us",
            "trajectories off",
            found[off.name][cpu],
        ),
        Row("throughput", "trajectory writer CPU per step (its own process)", writer, "us"),
    ]
