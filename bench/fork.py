"""Section ``fork``: forking an episode at step 10 against opening one with ``/reset``, and snapshot sizes.

Each environment's server (started for this section alone, trajectories off) gets a source episode stepped 10
times through its ``examples`` in turn. Then, in rounds, three blocks run back to back (order reversed every other
round): ``POST /episodes/{id}/fork`` (the environment's fast path where it declares one), the same with
``?via=replay`` (the source's 10 actions replayed on a fresh backend and checked step by step), and ``POST /reset``
of the same environment. Every new episode is closed after its call, untimed. A ratio is the median over rounds of
the per-round median fork over the per-round median reset. The snapshot size is the JSON of
``POST /episodes/{id}/snapshot`` at step 10 (its length in bytes, as sent).
"""

from __future__ import annotations

import json
import statistics
import time
from itertools import cycle, islice

from bench import measure, servers
from bench.context import Context
from bench.measure import BenchError, Http
from bench.report import Row

STEPS = 10
FORK_ENVS = ("sql", "email", "search", "coding", "desktop")
FAST_TARGET = 2.0  # fork by the fast path: within 2x a /reset of the same environment
REPLAY_TARGET = 10.0  # fork by replay: within 10x
TARGETS = {"sql", "email", "search"}  # the environments the targets are set for


def _calls(ctx: Context, env: str) -> int:
    slow = env in ("desktop", "coding")
    if slow:
        return 2 if ctx.plan.rounds > 3 else 1
    return 30 if ctx.plan.rounds > 3 else 10


def _timed(http: Http, method: str, path: str, body: object, n: int) -> list[float]:
    data = measure.request(http.port, method, path, body)
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        status, answer = http.send(data)
        out.append((time.perf_counter_ns() - start) / 1e6)
        if status != 200:
            raise BenchError(f"{method} {path} on port {http.port} -> {status}: {answer[:300]!r}")
        http.call("DELETE", f"/episodes/{json.loads(answer)['episode_id']}")
    return out


def _source(http: Http, examples: list[tuple[str, dict[str, object]]]) -> str:
    episode = str(http.call("POST", "/reset", {"seed": 1})["episode_id"])
    for tool, arguments in islice(cycle(examples), STEPS):
        answer = http.call(
            "POST", "/step", {"action": {"tool": tool, "arguments": arguments}}, {"X-Episode-Id": episode}
        )
        if answer["done"]:
            raise BenchError(f"the source episode ended at {tool}: the examples must not end an episode")
    return episode


def _measure_env(ctx: Context, env: str, server: servers.Server) -> list[Row]:
    from openenv_mcp.environment.catalog import load_environment

    environment = load_environment(env)
    examples = [(name, dict(arguments)) for name, arguments in environment.examples]
    http = Http(server.port)
    try:
        source = _source(http, examples)
        snapshot = measure.request(http.port, "POST", f"/episodes/{source}/snapshot", None)
        status, body = http.send(snapshot)
        if status != 200:
            raise BenchError(f"snapshot -> {status}: {body[:300]!r}")
        size = len(body)
        n = _calls(ctx, env)
        blocks = {
            "fast": ("POST", f"/episodes/{source}/fork", None),
            "replay": ("POST", f"/episodes/{source}/fork?via=replay", None),
            "reset": ("POST", "/reset", {"seed": 1}),
        }
        if environment.sim_fork is None:
            del blocks["fast"]
        for method, path, block_body in blocks.values():  # warm-up, untimed
            _timed(http, method, path, block_body, 1)
        medians: dict[str, list[float]] = {name: [] for name in blocks}
        for round_ in range(ctx.plan.rounds):
            order = list(blocks) if round_ % 2 == 0 else list(reversed(blocks))
            for name in order:
                method, path, block_body = blocks[name]
                medians[name].append(statistics.median(_timed(http, method, path, block_body, n)))
    finally:
        http.close()
    ctx.details[f"fork {env}"] = {"medians_ms": medians, "calls_per_block": n, "snapshot_bytes": size}
    rows = []
    reset = statistics.median(medians["reset"])
    for name, limit in (("fast", FAST_TARGET), ("replay", REPLAY_TARGET)):
        if name not in medians:
            continue
        ratio = statistics.median(f / r for f, r in zip(medians[name], medians["reset"], strict=True))
        rows.append(
            Row(
                "fork",
                f"fork {env} at step {STEPS} ({name})",
                statistics.median(medians[name]),
                "ms",
                baseline=f"/reset {env}",
                baseline_value=reset,
                limit=limit if env in TARGETS else None,
                paired_ratio=ratio,
            )
        )
    rows.append(Row("fork", f"snapshot {env} at step {STEPS}", float(size), "B"))
    return rows


async def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    for env in ctx.envs:
        if env not in FORK_ENVS:
            continue
        spec = servers.ours(env, name=f"ours-{env}-fork")
        with servers.running([spec], ctx.log_dir, ctx.skipped) as up:
            if spec.name not in up:  # an optional server (desktop) that could not start here: reason in skipped
                continue
            print(f"fork: {env} ...", flush=True)
            rows += _measure_env(ctx, env, up[spec.name])
    return rows
