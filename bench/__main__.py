"""The benchmark suite: ``scripts/bench [--quick] [--only SECTION[,SECTION]] [--envs NAME[,NAME]] [--strict]``.

Sections: step (HTTP step latency), mcp (MCP tool-call latency over Streamable HTTP and stdio), reset (reset
latency), throughput (steps/s with 1, 16, 64 clients), memory (per open episode, episodes in 2 GB), startup (to
ready), fork (fork at step 10 against a reset; snapshot sizes), ors (our ORS door against the ORS SDK's own
server: tool-call latency, episodes/s). Every server is a subprocess on this machine;
ours and the baselines are measured in the same run, interleaved, and every figure is printed with its ratio to
its baseline. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.metadata
import os
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import fork, latency, measure, memory, ors, servers, startup, throughput
from bench.context import ENVS, FULL, QUICK, SECTIONS, Context
from bench.report import Row, table, write_json
from bench.trivial import TABLES

RESULTS = Path(__file__).resolve().parent / "results"
LATENCY = {"step", "mcp", "reset"}


def _specs(ctx: Context) -> list[servers.ServerSpec]:
    wanted: dict[str, servers.ServerSpec] = {}
    sections = ctx.sections
    if sections & (LATENCY | {"throughput", "ors"}):
        wanted["ours-trivial"] = servers.ours_trivial()
    if "ors" in sections and (spec := ors.server_spec(ctx)) is not None:
        wanted["ors-sdk"] = spec
    if sections & {"step", "reset", "throughput"}:
        wanted["bare-fastapi"] = servers.bare_fastapi(ctx.tables)
        if ctx.openenv_python is not None:
            wanted["openenv"] = servers.openenv(ctx.tables, ctx.openenv_python)
    if sections & {"step", "throughput"}:
        wanted["ours-trivial-recording"] = servers.ours_trivial(recording=True)
    if "mcp" in sections:
        wanted["bare-mcp"] = servers.bare_mcp(ctx.tables)
        if "sql" in ctx.envs:
            wanted["ours-sql"] = servers.ours("sql")
    if sections & {"step", "reset"}:
        for env in ctx.envs:
            wanted[f"ours-{env}"] = servers.ours(env)
    return list(wanted.values())


async def _run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    specs = _specs(ctx)
    if specs:
        print(f"starting {len(specs)} servers ({', '.join(s.name for s in specs)}) ...", flush=True)
        with servers.running(specs, ctx.log_dir, ctx.skipped) as up:
            ctx.up = up
            if ctx.sections & LATENCY:
                rows += await latency.run(ctx)
            if "throughput" in ctx.sections:
                rows += await throughput.run(ctx)
            if "ors" in ctx.sections:
                rows += await ors.run(ctx)
        ctx.up = {}
    if "memory" in ctx.sections:
        rows += await memory.run(ctx)
    if "startup" in ctx.sections:
        rows += await startup.run(ctx)
    if "fork" in ctx.sections:
        rows += await fork.run(ctx)
    order = {name: i for i, name in enumerate(SECTIONS)}
    return sorted(rows, key=lambda r: order[r.section])


def _meta(quick: bool, load_before: tuple[float, float, float], openenv: Path | None) -> dict[str, Any]:
    packages = ["mcp", "fastapi", "starlette", "uvicorn", "uvloop", "httptools", "websockets", "pydantic"]
    return {
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "versions": {name: importlib.metadata.version(name) for name in packages},
        "openenv": servers.openenv_version(openenv) if openenv else None,
        "openreward": servers.peer_version(servers.ORS_VENV / "bin" / "python", "openreward")
        if (servers.ORS_VENV / "bin" / "python").exists()
        else None,
    }


def _split(values: list[str] | None, allowed: tuple[str, ...], what: str) -> list[str] | None:
    if not values:
        return None
    chosen = [v.strip() for value in values for v in value.split(",") if v.strip()]
    unknown = sorted(set(chosen) - set(allowed))
    if unknown:
        raise SystemExit(f"scripts/bench: unknown {what} {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a ~1 minute smoke run (fewer rounds, calls, episodes)")
    parser.add_argument("--only", action="append", metavar="SECTION", help=f"run only these: {', '.join(SECTIONS)}")
    parser.add_argument("--envs", action="append", metavar="NAME", help=f"shipped environments: {', '.join(ENVS)}")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--output", type=Path, default=RESULTS / "latest.json", help="where to write the JSON")
    args = parser.parse_args(argv)
    sections = set(_split(args.only, SECTIONS, "section") or SECTIONS)
    envs = _split(args.envs, ENVS, "environment") or list(ENVS)
    plan = QUICK if args.quick else FULL

    load_before = os.getloadavg()
    loads = " ".join(f"{x:.2f}" for x in load_before)
    print(f"load average {loads} (2 shared cores: read the ratios, not the absolute figures)")
    openenv, why = servers.openenv_python()
    ctx = Context(plan, sections, envs, list(TABLES), RESULTS / "logs", openenv)
    if openenv is None:
        ctx.skipped["openenv"] = why
        print(f"note: OpenEnv baselines skipped: {why}", file=sys.stderr)
    started = dt.datetime.now()
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            rows = runner.run(_run(ctx))
    except (measure.BenchError, RuntimeError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        servers.clean_trajectories()
    meta = {
        **_meta(args.quick, load_before, openenv),
        "sections": sorted(sections),
        "envs": envs,
        "plan": asdict(plan),
        "seconds": round((dt.datetime.now() - started).total_seconds(), 1),
        "skipped": ctx.skipped,
    }
    write_json(args.output, rows, ctx.details, meta)
    if args.output == RESULTS / "latest.json":
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        write_json(RESULTS / f"run-{stamp}{'-quick' if args.quick else ''}.json", rows, ctx.details, meta)
    print()
    print(table(rows))
    print(
        "\nratio = ours / baseline (for medians and steps/s: the median over rounds of the per-round ratio, "
        "both measured back to back);\nlower is better for ms, us, KB, s; higher for steps/s and episodes."
    )
    for row in rows:
        if row.note:
            print(f"note on {row.metric!r}: {row.note}")
    for name, reason in ctx.skipped.items():
        print(f"skipped {name}: {reason}")
    load_after = meta["load_average_after"]
    print(f"\n{meta['seconds']} s; load average {load_before[0]:.2f} -> {load_after[0]:.2f}; written to {args.output}")
    failed = [r.metric for r in rows if r.verdict == "FAIL"]
    return 1 if failed and args.strict else 0


def _loop_factory() -> Any:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


if __name__ == "__main__":
    sys.exit(main())
