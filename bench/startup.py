"""Section ``startup``: seconds from process start (``Popen``) to the ready route answering.

Ours: ``openenv-mcp serve NAME`` until ``GET /readyz`` answers 200 (so the backends are open), with the shipped
defaults (the SQL server records trajectories into a SQLite file, as it does out of the box; the file goes to a
temporary directory). Baselines: bare FastAPI (``/healthz``), bare FastAPI with the bare SDK server at ``/mcp``
(``/healthz``, answered once the SDK's session manager runs: both doors and nothing else, the floor the target is
set against), the bare SDK app (any answer), OpenEnv's app with the minimal environment (``/health``). Servers start
one at a time, polled every 5 ms, in rounds (order reversed every other round); the figure is the median over
rounds.
"""

from __future__ import annotations

import statistics
import time

from bench import measure, servers
from bench.context import Context
from bench.report import Row

TARGET_RATIO = 1.25  # sql to /readyz against bare FastAPI serving the SDK at /mcp (both doors), to its first 200


def _kinds(ctx: Context) -> dict[str, servers.ServerSpec]:
    kinds = {"sql": servers.ours("sql", recording=True)}
    kinds["trivial"] = servers.ours_trivial()
    if ctx.plan.startup_all:
        for env in ctx.envs:
            if env != "sql":
                kinds[env] = servers.ours(env)
    kinds["bare FastAPI"] = servers.bare_fastapi(ctx.tables)
    kinds["FastAPI+SDK"] = servers.fastapi_with_mcp(ctx.tables)
    kinds["bare SDK"] = servers.bare_mcp(ctx.tables)
    if ctx.openenv_python is not None:
        kinds["OpenEnv"] = servers.openenv(ctx.tables, ctx.openenv_python)
    for name, spec in kinds.items():
        spec.name = "startup-" + name.replace(" ", "-")
    return kinds


async def run(ctx: Context) -> list[Row]:
    kinds = _kinds(ctx)
    times: dict[str, list[float]] = {name: [] for name in kinds}
    print(f"startup: {len(kinds)} servers x {ctx.plan.startup_reps} ...", flush=True)
    for rep in range(ctx.plan.startup_reps):
        order = list(kinds) if rep % 2 == 0 else list(reversed(kinds))
        for name in order:
            server = servers.start(kinds[name], ctx.log_dir)
            try:
                times[name].append(servers.wait_ready(server, time.monotonic() + servers.READY_TIMEOUT))
            except RuntimeError as exc:
                if not kinds[name].optional:
                    raise
                ctx.skipped[f"startup {name}"] = str(exc).strip().splitlines()[0]
            finally:
                servers.stop(server)
    ctx.details["startup_s"] = times
    med = {name: statistics.median(t) for name, t in times.items() if t}
    oe = times.get("OpenEnv") or []
    rows: list[Row] = []
    for name in kinds:
        if name in ("bare FastAPI", "FastAPI+SDK", "bare SDK", "OpenEnv") or name not in med:
            continue
        ratio = measure.paired_ratio(times[name], oe) if len(oe) == len(times[name]) else None
        rows.append(
            Row(
                "startup",
                f"{name}: start to /readyz",
                med[name],
                "s",
                "OpenEnv app" if oe else "",
                med.get("OpenEnv"),
                paired_ratio=ratio,
            )
        )
    if "sql" in med:
        rows.append(
            Row(
                "startup",
                "sql: start to /readyz (vs bare FastAPI app)",
                med["sql"],
                "s",
                "bare FastAPI app",
                med["bare FastAPI"],
                paired_ratio=measure.paired_ratio(times["sql"], times["bare FastAPI"]),
            )
        )
        rows.append(
            Row(
                "startup",
                "sql: start to /readyz (vs FastAPI app with the SDK at /mcp)",
                med["sql"],
                "s",
                "FastAPI + SDK app",
                med["FastAPI+SDK"],
                TARGET_RATIO,
                paired_ratio=measure.paired_ratio(times["sql"], times["FastAPI+SDK"]),
            )
        )
        rows.append(
            Row(
                "startup",
                "sql: start to /readyz (vs bare SDK app)",
                med["sql"],
                "s",
                "bare SDK app",
                med["bare SDK"],
                paired_ratio=measure.paired_ratio(times["sql"], times["bare SDK"]),
            )
        )
        rows.append(
            Row(
                "startup",
                "bare FastAPI app start (reference)",
                med["bare FastAPI"],
                "s",
                "bare SDK app",
                med["bare SDK"],
            )
        )
    return rows
