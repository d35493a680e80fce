"""Task sets checked by playing them: every task's reference solution must earn its full reward through the one
path, and the splits must be clean.

    from openenv_mcp.authoring.tasksets import check_task_set
    report = check_task_set(environment, sample=200, seed=0)   # report.ok when every played task earned 1.0

A task set is data a generator made, so nothing about it is trusted: each played task is reset and its reference
solution (``Environment.solve``) is sent call by call through :meth:`Runtime.call <openenv_mcp.runtime.Runtime>`,
in process (the same validation, dispatch and grading as every door); the episode must end done with a total
reward of 1.0. The hygiene checks need no play: no prompt appears twice (so no test prompt is in train), and every
task has a difficulty.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Task
from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.settings import Settings, load_settings

__all__ = ["TaskSetReport", "check_task_set", "hygiene", "play_references"]

_FULL = 1.0 - 1e-9  # a total reward at least this is a solved task (rewards are sums of floats)


@dataclass
class TaskSetReport:
    """What :func:`check_task_set` found.

    Attributes:
        environment: The environment's name.
        counts: Tasks per split, then per difficulty (``"-"`` for none).
        played: How many tasks were played.
        failures: One line per played task whose reference did not earn 1.0 (or raised), naming it and why.
        problems: One line per hygiene problem (a prompt twice, a task with no difficulty).
    """

    environment: str
    counts: dict[str, dict[str, int]]
    played: int = 0
    failures: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures and not self.problems


def hygiene(tasks: Iterable[Task]) -> list[str]:
    """The task set's hygiene problems: a prompt used by two tasks (within a split or across splits: a test prompt
    seen in train), a task without a difficulty."""
    problems = []
    seen: dict[str, Task] = {}
    for task in tasks:
        first = seen.setdefault(task.prompt, task)
        if first is not task:
            problems.append(f"{task.id} ({task.split}) repeats the prompt of {first.id} ({first.split})")
        if not task.difficulty:
            problems.append(f"{task.id} has no difficulty")
    return problems


async def play_references(
    environment: Environment[Any, Any], tasks: Sequence[Task], *, seed: int = 0, concurrency: int = 4
) -> list[str]:
    """Play each task's reference solution through the one path, in process; a line per task that fell short."""
    if environment.solve is None:
        raise ConfigError(f"{environment.name} has no reference solutions (Environment.solve) to play")
    from openenv_mcp.runtime import Runtime  # the runtime loads only when something is played

    settings = Settings(mode="sim", trajectories="off", max_episodes=max(concurrency, 1) + 1)
    runtime = Runtime(environment, settings, load_settings(environment.settings))
    solve = environment.solve
    gate = asyncio.Semaphore(concurrency)

    async def play(task: Task) -> str | None:
        async with gate:
            try:
                opened = await runtime.reset(task_id=task.id, seed=seed)
            except OpenEnvError as exc:
                return f"{task.id}: reset failed: {exc.message}"
            total, done, steps, last = 0.0, False, 0, ""
            try:
                # off the event loop: a world's reference can take seconds to make (ScienceWorld plays its gold path
                # first), and the other episodes' steps must not wait on it (their workers' timeouts run meanwhile)
                for tool, arguments in await asyncio.to_thread(solve, task):
                    outcome = await runtime.call(tool, arguments, opened.episode_id)
                    steps += 1
                    total, done, last = outcome.episode.total_reward if outcome.episode else 0.0, outcome.done, ""
                    if outcome.observation.is_error:
                        last = outcome.observation.text[:200]
                    if done:
                        break
            except OpenEnvError as exc:
                return f"{task.id}: step {steps + 1} of the reference failed: {exc.message}"
            finally:
                await runtime.close_episode(opened.episode_id)
            if done and total >= _FULL:
                return None
            why = f"; a tool refused: {last}" if last else ""
            return f"{task.id}: the reference earned {total:g} in {steps} steps (done {done}){why}"

    await runtime.start()
    try:
        results = await asyncio.gather(*(play(task) for task in tasks))
    finally:
        await runtime.stop()
    return [line for line in results if line is not None]


def check_task_set(
    environment: Environment[Any, Any],
    *,
    sample: int | None = None,
    seed: int = 0,
    concurrency: int = 4,
    tasks: Sequence[Task] | None = None,
) -> TaskSetReport:
    """Check an environment's task set: its hygiene, and its reference solutions played through the one path.

    Args:
        environment: The environment.
        sample: Play this many tasks, drawn with ``seed`` (at least one per split and difficulty when there is
            room); ``None`` plays every task.
        seed: The draw of the sample, and the episodes' seed.
        concurrency: Episodes played at once.
        tasks: The tasks to check instead of the environment's own.
    """
    chosen = list(tasks) if tasks is not None else list(environment.tasks())
    counts: dict[str, Counter[str]] = {}
    for task in chosen:
        counts.setdefault(task.split, Counter())[task.difficulty or "-"] += 1
    report = TaskSetReport(environment.name, {split: dict(sorted(c.items())) for split, c in counts.items()})
    report.problems = hygiene(chosen)
    played = chosen if sample is None or sample >= len(chosen) else _draw(chosen, sample, seed)
    report.played = len(played)
    report.failures = asyncio.run(play_references(environment, played, seed=seed, concurrency=concurrency))
    return report


def _draw(tasks: list[Task], size: int, seed: int) -> list[Task]:
    """A seeded sample that covers every (split, difficulty) stratum before drawing the rest at random."""
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[Task]] = {}
    for task in tasks:
        strata.setdefault((task.split, task.difficulty or "-"), []).append(task)
    picked = [rng.choice(members) for _, members in sorted(strata.items())][:size]
    chosen = {id(task) for task in picked}
    rest = [task for task in tasks if id(task) not in chosen]
    picked += rng.sample(rest, size - len(picked))
    return picked
