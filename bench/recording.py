"""What recording every step costs, and where its CPU goes: ``python -m bench.recording [--rounds 8] [--compare DIR]``.

Starts the trivial environment twice, recording off and on (the shipped default: every step into SQLite), and
steps ``/step_batch`` with 64 clients on each in interleaved rounds (order reversed every other round), as the
``throughput`` section's "trajectories on / off" row does. Per server it reports steps/s, the ratio on/off (the
median over rounds of the per-round ratio), and CPU per 1,000 steps: the server process's own (every thread of
it), and its children's (the trajectory writer process), both within its rounds, and the writer's in all: it runs
at a lower priority and catches up between rounds (and after the last, which is waited for), so what it spends
outside its server's rounds counts too. ``--compare DIR`` adds a third server recording with the
``openenv_mcp`` package found in DIR (another checkout, e.g. a ``git worktree`` of an earlier commit), measured in
the same rounds. Results go to ``bench/results/recording.json``.

``--lossless`` checks instead that nothing is lost under load: 1,000 episodes of 100 steps each through
``/step_batch`` (one request carries a step of every episode), as fast as the server takes them, then a clean stop
(SIGTERM), then the rows in the store are counted: 100,000 of 100,000, or it exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import measure, servers
from bench.measure import STEP

CLIENTS = 64
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Subject:
    name: str
    server: servers.Server
    episodes: list[str] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)
    own_cpu_s: float = 0.0
    children_cpu_s: float = 0.0
    steps: float = 0.0
    children_at_start: float | None = None  # the writer's CPU before the first round
    children_in_all: float = 0.0  # ... and all it spent by the end, catching up between rounds included

    def cpu(self) -> tuple[float, float]:
        own = self.server.cpu_seconds()
        children = 0.0
        for pid in servers.descendants(self.server.process.pid):
            with contextlib.suppress(OSError):  # a child that has just exited
                children += servers._cpu_seconds(pid)
        return own, children


async def _round(subject: Subject, warm: float, duration: float) -> None:
    port = subject.server.port
    body = json.dumps({"steps": [{"episode_id": e, "action": STEP} for e in subject.episodes]}).encode()
    request = measure.request(port, "POST", "/step_batch", body)
    own, children = subject.cpu()
    if subject.children_at_start is None:
        subject.children_at_start = children
    rate = await measure.http_throughput(port, [request], CLIENTS, warm, duration)
    own_after, children_after = subject.cpu()
    subject.rounds.append(rate)
    # CPU over the whole cell (warm-up included), steps over the timed window scaled to the same span
    subject.own_cpu_s += own_after - own
    subject.children_cpu_s += children_after - children
    subject.steps += rate * (warm + duration)


async def _settled_children(subject: Subject, quiet: float = 0.5, limit: float = 120.0) -> float:
    """The children's CPU once it has stopped growing (the writer has written everything), in seconds."""
    _, before = subject.cpu()
    for _ in range(int(limit / quiet)):
        await asyncio.sleep(quiet)
        _, after = subject.cpu()
        if after - before < 0.002:
            return after
        before = after
    return before


async def paired_rounds(subjects: list[Subject], rounds: int, warm: float, duration: float) -> None:
    """``rounds`` rounds of every subject back to back (order reversed every other round), then the writers'
    catching up (:attr:`Subject.children_in_all`)."""
    for round_ in range(rounds):
        for subject in subjects if round_ % 2 == 0 else list(reversed(subjects)):
            await _round(subject, warm, duration)
        line = ", ".join(f"{s.name} {s.rounds[-1]:,.0f}" for s in subjects)
        print(f"  round {round_ + 1}/{rounds}: {line}", flush=True)
    for subject in subjects:  # a writer at a lower priority catches up between rounds: count all it spends
        subject.children_in_all = await _settled_children(subject) - (subject.children_at_start or 0.0)


def figures(subject: Subject, off: Subject) -> dict[str, Any]:
    """A subject's steps/s, its ratio to ``off`` and its CPU per 1,000 steps (the server's, its writer's)."""
    return {
        "steps_per_s": statistics.median(subject.rounds),
        "rounds": subject.rounds,
        "ratio_to_off": measure.paired_ratio(subject.rounds, off.rounds),
        "server_cpu_ms_per_1000_steps": 1e6 * subject.own_cpu_s / subject.steps,
        "children_cpu_ms_per_1000_steps": 1e6 * subject.children_cpu_s / subject.steps,
        "children_cpu_ms_per_1000_steps_in_all": 1e6 * subject.children_in_all / subject.steps,
    }


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    specs = [servers.ours_trivial(name="off"), servers.ours_trivial(recording=True, name="on")]
    if args.compare:  # the same command, with DIR first on the path (``-m`` would put the working directory first)
        spec = servers.ours_trivial(recording=True, name="on (compare)")
        first = f"import sys; sys.path.insert(0, {str(args.compare)!r}); "
        code = first + "from bench.trivial import main; sys.exit(main())"
        spec.argv = [spec.argv[0], "-c", code, *spec.argv[3:]]
        spec.cwd = args.compare  # its processes' own ``-m`` (an earlier trajectory writer) look there first too
        specs.append(spec)
    load_before = os.getloadavg()
    with servers.running(specs, RESULTS / "logs") as up:
        subjects = []
        for name, server in up.items():
            http = measure.Http(server.port)
            subjects.append(Subject(name, server, measure.open_episodes(http, CLIENTS)))
            http.close()
        await paired_rounds(subjects, args.rounds, args.warmup, args.duration)
    out: dict[str, object] = {"load_average_before": load_before, "load_average_after": os.getloadavg()}
    for subject in subjects:
        out[subject.name] = figures(subject, subjects[0])
    return out


async def lossless(episodes: int, steps: int) -> int:
    """Steps stored after ``episodes`` x ``steps`` through ``/step_batch`` and a clean stop."""
    import sqlite3
    import time

    spec = servers.ours_trivial(recording=True, name="lossless")
    with servers.running([spec], RESULTS / "logs") as up:
        server = up["lossless"]
        http = measure.Http(server.port)
        ids = measure.open_episodes(http, episodes)
        body = json.dumps({"steps": [{"episode_id": e, "action": STEP} for e in ids]}).encode()
        request = measure.request(server.port, "POST", "/step_batch", body)
        started = time.perf_counter()
        for _ in range(steps):
            status, answer = http.send(request)
            if status != 200 or answer.count(b'"ok":true') != episodes:
                raise measure.BenchError(f"/step_batch -> {status}: {answer[:300]!r}")
        took = time.perf_counter() - started
        http.close()
        database = servers.TRAJECTORY_DIR / f"trajectories-{server.port}.db"
    # stopped (SIGTERM: the recorder sends what is left and the writer writes it before the server exits)
    with sqlite3.connect(database) as connection:
        (stored,) = connection.execute("SELECT COUNT(*) FROM trajectory_steps").fetchone()
    print(f"{episodes * steps:,} steps in {took:.1f} s ({episodes * steps / took:,.0f} steps/s); {stored:,} stored")
    return int(stored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=0.3)
    parser.add_argument("--duration", type=float, default=1.5)
    parser.add_argument("--compare", type=Path, help="a directory holding another openenv_mcp package to record with")
    parser.add_argument("--lossless", action="store_true", help="check 100,000 steps under load are all stored")
    args = parser.parse_args()
    if args.lossless:
        try:
            stored = asyncio.run(lossless(1000, 100))
        finally:
            servers.clean_trajectories()
        raise SystemExit(0 if stored == 100_000 else 1)
    try:
        result = asyncio.run(main_async(args))
    finally:
        servers.clean_trajectories()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "recording.json").write_text(json.dumps(result, indent=2))
    load = result["load_average_before"], result["load_average_after"]
    print(f"load average {load[0][0]:.2f} -> {load[1][0]:.2f}")  # type: ignore[index]
    print(
        f"{'server':<16}{'steps/s':>10}{'on/off':>8}{'server CPU ms/1k steps':>24}{'writer in rounds':>18}"
        f"{'writer in all':>15}"
    )
    for name, figures in result.items():
        if isinstance(figures, dict):
            print(
                f"{name:<16}{figures['steps_per_s']:>10,.0f}{figures['ratio_to_off']:>8.2f}"
                f"{figures['server_cpu_ms_per_1000_steps']:>24.1f}{figures['children_cpu_ms_per_1000_steps']:>18.1f}"
                f"{figures['children_cpu_ms_per_1000_steps_in_all']:>15.1f}"
            )


if __name__ == "__main__":
    main()
