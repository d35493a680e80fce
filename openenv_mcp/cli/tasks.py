"""``openenv-mcp tasks NAME``: an installed environment's task set, counted, and checked by playing it."""

from __future__ import annotations

import argparse
import time
from typing import Any

from openenv_mcp.cli.rollout import positive

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``tasks`` to the ``openenv-mcp`` parser."""
    tasks = commands.add_parser(
        "tasks",
        help="count an installed server's tasks by split and difficulty; --check plays their reference solutions",
        description="With --check, each played task is reset and its reference solution sent through the one path "
        "(in this process); it must end done with a total reward of 1. Worlds make what a task needs on first use "
        "(TextWorld's games), so a first full check takes long: docs/worlds.md.",
    )
    tasks.set_defaults(handler=_tasks)
    tasks.add_argument("name", help="the server's name, as 'openenv-mcp list' shows it")
    tasks.add_argument("--check", action="store_true", help="play reference solutions (a seeded sample by default)")
    tasks.add_argument("--sample", type=positive, default=30, help="tasks played with --check (default 30)")
    tasks.add_argument("--all", action="store_true", help="with --check: play every task")
    tasks.add_argument("--split", help="only this split's tasks")
    tasks.add_argument("--seed", type=int, default=0, help="the sample's draw and the episodes' seed (0)")
    tasks.add_argument("--concurrency", "-c", type=positive, default=2, help="episodes at once (default 2)")


def _tasks(args: argparse.Namespace) -> int:
    from openenv_mcp.authoring.tasksets import check_task_set
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.errors import ConfigError

    env = load_environment(args.name)
    chosen = [task for task in env.tasks() if args.split is None or task.split == args.split]
    if not chosen:
        raise ConfigError(f"Server {args.name!r} has no tasks in split {args.split!r}")
    if not args.check:
        counts: dict[str, dict[str, int]] = {}
        for task in chosen:
            tally = counts.setdefault(task.split, {})
            tally[task.difficulty or "-"] = tally.get(task.difficulty or "-", 0) + 1
        for split, by_difficulty in counts.items():
            parts = ", ".join(f"{difficulty} {count}" for difficulty, count in sorted(by_difficulty.items()))
            print(f"{split:<8} {sum(by_difficulty.values()):>6}  ({parts})")
        return 0
    started = time.perf_counter()
    report = check_task_set(
        env, tasks=chosen, sample=None if args.all else args.sample, seed=args.seed, concurrency=args.concurrency
    )
    for line in [*report.problems, *report.failures]:
        print(line)
    verdict = "ok" if report.ok else f"{len(report.failures)} failed, {len(report.problems)} problems"
    print(
        f"{args.name}: played {report.played} of {len(chosen)} tasks: {verdict} ({time.perf_counter() - started:.0f} s)"
    )
    return 0 if report.ok else 1
