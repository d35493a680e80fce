"""What serving a world costs: ScienceWorld and TextWorld through our path against their own Python API.

    .venv/bin/python -m bench.worlds [--rounds 5] [--steps 20] [--resets 5] [--episodes 20] [--only step,reset,memory]

Each world is served by ``openenv-mcp serve NAME`` (a subprocess, trajectories off) and driven directly in this
process through its package (the baseline: ``ScienceWorldEnv.step``, ``textworld.start(...).step``), in interleaved
rounds (direct then ours, the order reversed every other round); a figure is the median of the rounds' medians and
a ratio the median of the rounds' ratios.

- ``step``: one ``act("look")`` (``look around`` in ScienceWorld) through ``POST /step`` against the same command
  through the package. Target: ours <= 1.2 x direct + 1 ms (the checked figure is ours - 1.2 x direct, in ms).
- ``reset``: ``POST /reset`` of a fixed task from the warm pool (the episode closed after, untimed) against the
  package's own load and reset of that task in a warm process. Target: <= 1.5 x direct.
- ``memory``: ScienceWorld episodes opened one after another, each playing the first 30 steps of its gold path, and
  left open; the RSS and the PSS (shared pages divided among their sharers) of the server and every process under
  it, per open episode (least squares over the checkpoints), with our JVM flags and with the JVM's defaults.
  Target: 20 episodes open within 8 GB.

Writes ``bench/results/worlds.json`` and prints the table (figures in bench/README.md and docs/worlds.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.measure import Http, request, step_body
from bench.report import Row, table, write_json
from bench.servers import ServerSpec, descendants, start, stop, wait_ready

RESULTS = Path(__file__).resolve().parent / "results"
SCIENCEWORLD_TASK, SCIENCEWORLD_ACTION = "boil-21", "look around"
TEXTWORLD_TASK, TEXTWORLD_ACTION = "tw-medium-100001", "look"


def _spec(name: str, **env: str) -> ServerSpec:
    cli = str(Path(sys.executable).parent / "openenv-mcp")
    base = {"OPENENV_TRAJECTORIES": "off", "OPENENV_MAX_STEPS": str(10**9), "OPENENV_MAX_EPISODES": "200"}
    return ServerSpec(f"ours-{name}", [cli, "serve", name, "--port", "{port}"], "/readyz", {**base, **env})


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _timed(call: Callable[[], Any], count: int) -> list[float]:
    found = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        found.append(time.perf_counter() - started)
    return found


class Direct:
    """A world driven through its own package in this process: ``step`` and ``reset`` as the package offers them."""

    def __init__(self, name: str, games: Path) -> None:
        self.name = name
        if name == "scienceworld":
            from openenv_mcp.servers.scienceworld.settings import JAVA_OPTIONS

            os.environ["JAVA_TOOL_OPTIONS"] = JAVA_OPTIONS  # the bench's own JVM gets our workers' flags
            from scienceworld import ScienceWorldEnv

            self.env: Any = ScienceWorldEnv("", envStepLimit=10**6)
            task, _, variation = SCIENCEWORLD_TASK.rpartition("-")
            self.task, self.variation = task, int(variation)
        else:
            import textworld

            from openenv_mcp.servers.textworld.games import LEVELS, ensure_game_now

            self.textworld = textworld
            self.game = str(ensure_game_now(games, TEXTWORLD_TASK, LEVELS[1], 100_001, timeout=600))
            self.infos = textworld.EnvInfos(admissible_commands=True, score=True, max_score=True, won=True, lost=True)
            self.env = None
        self.reset()

    def reset(self) -> None:
        if self.name == "scienceworld":
            self.env.load(self.task, self.variation, "", False)
            self.env.reset()
        else:
            if self.env is not None:
                self.env.close()
            self.env = self.textworld.start(self.game, request_infos=self.infos)
            self.env.reset()

    def step(self) -> None:
        self.env.step(SCIENCEWORLD_ACTION if self.name == "scienceworld" else TEXTWORLD_ACTION)

    def close(self) -> None:
        self.env.close()


def _ours_step(http: Http, episode: str, action: str) -> Callable[[], Any]:
    data = request(http.port, "POST", "/step", step_body("act", {"action": action}), {"X-Episode-Id": episode})

    def step() -> None:
        status, body = http.send(data)
        if status != 200:
            raise RuntimeError(f"/step answered {status}: {body[:300]!r}")

    return step


def _ours_resets(http: Http, task: str, count: int) -> list[float]:
    """``count`` timed ``POST /reset`` of ``task``, each episode closed after (untimed)."""
    found = []
    for _ in range(count):
        started = time.perf_counter()
        answer = http.call("POST", "/reset", {"task_id": task})
        found.append(time.perf_counter() - started)
        http.call("DELETE", f"/episodes/{answer['episode_id']}")
    return found


def bench_world(name: str, args: argparse.Namespace, games: Path, rows: list[Row], details: dict[str, Any]) -> None:
    task = SCIENCEWORLD_TASK if name == "scienceworld" else TEXTWORLD_TASK
    action = SCIENCEWORLD_ACTION if name == "scienceworld" else TEXTWORLD_ACTION
    server = start(_spec(name, TEXTWORLD_GAMES_DIR=str(games), SCIENCEWORLD_POOL_SIZE="2"), RESULTS / "logs")
    direct = Direct(name, games)
    try:
        wait_ready(server, time.monotonic() + 300)
        http = Http(server.port)
        try:
            episode = http.call("POST", "/reset", {"task_id": task})["episode_id"]
            ours_step = _ours_step(http, episode, action)
            _ours_resets(http, task, 3)  # the pool settles (its workers started), untimed
            steps: dict[str, list[float]] = {"direct": [], "ours": [], "ratio": []}
            resets: dict[str, list[float]] = {"direct": [], "ours": [], "ratio": []}
            for round_ in range(args.rounds):
                order = ["direct", "ours"] if round_ % 2 == 0 else ["ours", "direct"]
                figures: dict[str, float] = {}
                for side in order:  # warm up, then time
                    call = direct.step if side == "direct" else ours_step
                    _timed(call, 3)
                    figures[side] = _median_ms(_timed(call, args.steps))
                    steps[side].append(figures[side])
                steps["ratio"].append(figures["ours"] / figures["direct"])
                for side in order:
                    if side == "direct":
                        figures[side] = _median_ms(_timed(direct.reset, args.resets))
                    else:
                        figures[side] = _median_ms(_ours_resets(http, task, args.resets))
                    resets[side].append(figures[side])
                resets["ratio"].append(figures["ours"] / figures["direct"])
                print(f"{name} round {round_ + 1}: step {steps['direct'][-1]:.2f} / {steps['ours'][-1]:.2f} ms, "
                      f"reset {resets['direct'][-1]:.1f} / {resets['ours'][-1]:.1f} ms", file=sys.stderr)  # fmt: skip
        finally:
            http.close()
    finally:
        direct.close()
        stop(server)
    step_direct, step_ours = statistics.median(steps["direct"]), statistics.median(steps["ours"])
    excess = statistics.median(o - 1.2 * d for o, d in zip(steps["ours"], steps["direct"], strict=True))
    rows += [
        Row("step", f"{name} act through /step", step_ours, "ms", "its package's step", step_direct,
            paired_ratio=statistics.median(steps["ratio"])),
        Row("step", f"{name} /step - 1.2 x direct", excess, "ms", limit=1.0, check="value<=",
            note="target: ours <= 1.2 x direct + 1 ms"),
        Row("reset", f"{name} warm /reset", statistics.median(resets["ours"]), "ms", "its package's load + reset",
            statistics.median(resets["direct"]), limit=1.5, paired_ratio=statistics.median(resets["ratio"])),
    ]  # fmt: skip
    details[name] = {"step_ms": steps, "reset_ms": resets, "task": task, "action": action}


def _pss_and_rss(pid: int) -> tuple[int, int]:
    pss = rss = 0
    for process in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{process}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return pss, rss


def _slope(points: list[tuple[int, int]]) -> float:
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x in xs)


def bench_memory(episodes: int, java_options: str | None, label: str, steps: list[str]) -> dict[str, Any]:
    env = {"SCIENCEWORLD_POOL_SIZE": "0"}  # every episode's JVM counted, none idle
    if java_options is not None:
        env["SCIENCEWORLD_JAVA_OPTIONS"] = java_options
    server = start(_spec("scienceworld", **env), RESULTS / "logs")
    points: list[tuple[int, int, int]] = []
    try:
        wait_ready(server, time.monotonic() + 300)
        http = Http(server.port)
        http.sock.settimeout(300)
        base = _pss_and_rss(server.process.pid)
        points.append((0, *base))
        for count in range(1, episodes + 1):
            episode = http.call("POST", "/reset", {"task_id": SCIENCEWORLD_TASK})["episode_id"]
            for action in steps:  # a JVM's heap grows as its world is played: each episode plays part of its task
                step = {"action": {"tool": "act", "arguments": {"action": action}}}
                http.call("POST", "/step", step, {"X-Episode-Id": episode})
            points.append((count, *_pss_and_rss(server.process.pid)))
            print(f"memory ({label}): {count} episodes, PSS {points[-1][1] / 2**20:.0f} MB, "
                  f"RSS {points[-1][2] / 2**20:.0f} MB", file=sys.stderr)  # fmt: skip
        http.close()
    finally:
        stop(server)
    return {
        "episodes": episodes,
        "points": points,
        "pss_per_episode": _slope([(n, pss) for n, pss, _ in points[1:]]),
        "rss_per_episode": _slope([(n, rss) for n, _, rss in points[1:]]),
        "pss_total": points[-1][1],
        "rss_total": points[-1][2],
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worlds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per side and round")
    parser.add_argument("--resets", type=int, default=5, help="timed resets per side and round")
    parser.add_argument("--episodes", type=int, default=20, help="ScienceWorld episodes opened for memory")
    parser.add_argument("--default-episodes", type=int, default=4, help="... with the JVM's default flags")
    parser.add_argument("--memory-steps", type=int, default=30, help="gold steps each of those episodes plays")
    parser.add_argument("--only", default="step,memory", help="step (step and reset) and/or memory")
    parser.add_argument("--worlds", default="textworld,scienceworld")
    args = parser.parse_args()
    rows: list[Row] = []
    details: dict[str, Any] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-worlds-") as scratch:
        games = Path(scratch) / "games"
        if "step" in args.only:
            for name in args.worlds.split(","):
                bench_world(name, args, games, rows, details)
    if "memory" in args.only:
        from openenv_mcp.servers.scienceworld import environment
        from openenv_mcp.servers.scienceworld.tasks import solve

        gold = [arguments["action"] for _, arguments in solve(environment.tasks().get(SCIENCEWORLD_TASK))]
        steps = gold[: args.memory_steps]
        tuned = bench_memory(args.episodes, None, "our JVM flags", steps)
        default = bench_memory(args.default_episodes, "", "the JVM's defaults", steps)
        details["memory"] = {"tuned": tuned, "default": default}
        rows += [
            Row("memory", "scienceworld PSS per open episode", tuned["pss_per_episode"] / 2**20, "MB",
                "the JVM's default flags", default["pss_per_episode"] / 2**20),
            Row("memory", "scienceworld RSS per open episode", tuned["rss_per_episode"] / 2**20, "MB",
                "the JVM's default flags", default["rss_per_episode"] / 2**20),
            Row("memory", f"scienceworld {args.episodes} episodes open (RSS, all processes)",
                tuned["rss_total"] / 2**30, "GB", limit=8.0, check="value<="),
        ]  # fmt: skip
    meta = {"load_before": load_before, "load_after": os.getloadavg(), "args": vars(args)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS / "worlds.json", rows, details, meta)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
