"""Task sets checked by playing them: every task's reference solution must earn its full reward through the one
path, and the splits must be clean.

    from openenv_mcp.authoring.tasksets import check_task_set
    report = check_task_set(environment, sample=200, seed=0)   # report.ok when nothing is wrong
    print(report.render())

A task set is data a generator made, so nothing about it is trusted:

- **hygiene** (no play): task ids are unique; every prompt is non-blank and no prompt appears twice, in a split or
  across splits (so no test prompt is in train), compared after collapsing whitespace and case; every task has a
  difficulty, and the tiers ``easy``, ``medium`` and ``hard`` all occur (``tiers=`` changes or drops that rule);
- **play**: each played task is reset and its reference solution (``Environment.solve``) is sent call by call
  through :meth:`Runtime.call <openenv_mcp.runtime.Runtime.call>`, in process (the same validation, dispatch and
  grading as every door). The reference must run cleanly (no call refused, the episode not ending before its last
  call) and end the episode done with a total reward of 1.0.

A sample (``sample=N``) covers every (split, difficulty) stratum before drawing the rest at random, with ``seed``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Task, by_difficulty, stratified_sample
from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.settings import Settings

if TYPE_CHECKING:
    from openenv_mcp.runtime import Runtime

__all__ = ["TIERS", "TaskSetReport", "check_task_set", "hygiene", "play_references"]

TIERS = ("easy", "medium", "hard")
"""The difficulty tiers every task set has (more are allowed)."""

_TOLERANCE = 1e-6  # a total reward this close to 1.0 is 1.0 (rewards are sums of floats)


@dataclass
class TaskSetReport:
    """What :func:`check_task_set` found.

    Attributes:
        environment: The environment's name.
        counts: Tasks per split, then per difficulty (``"-"`` for none).
        played: How many tasks were played.
        seconds: How long the check took.
        failures: One line per played task whose reference fell short, naming it and why.
        problems: One line per hygiene problem (a repeated id or prompt, a missing difficulty or tier).
    """

    environment: str
    counts: dict[str, dict[str, int]]
    played: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the task set is clean and every played reference earned 1.0."""
        return not self.failures and not self.problems

    def render(self, *, limit: int = 20, counts: bool = True) -> str:
        """The report for a terminal: the counts (unless ``counts`` is false), then at most ``limit`` problems and
        failures, then the verdict."""
        lines = []
        if counts:
            lines.append(f"{self.environment}: {sum(sum(tiers.values()) for tiers in self.counts.values())} tasks")
            for split, tiers in self.counts.items():
                by_tier = "  ".join(f"{tier} {n}" for tier, n in tiers.items())
                lines.append(f"  {split:<8} {sum(tiers.values()):>6}  {by_tier}")
        for title, found in (("problems", self.problems), ("failures", self.failures)):
            if found:
                lines.append(f"{len(found)} {title}:")
                lines += [f"  {line}" for line in found[:limit]]
                if len(found) > limit:
                    lines.append(f"  ... and {len(found) - limit} more")
        if self.ok:
            lines.append(f"ok: {self.played} references played, each to reward 1.0 ({self.seconds:.1f} s)")
        else:
            lines.append(
                f"FAILED: {len(self.problems)} problems; {len(self.failures)} of {self.played} references played "
                f"fell short ({self.seconds:.1f} s)"
            )
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """The report as one JSON document."""
        return {
            "environment": self.environment,
            "ok": self.ok,
            "counts": self.counts,
            "played": self.played,
            "seconds": round(self.seconds, 3),
            "problems": self.problems,
            "failures": self.failures,
        }


def hygiene(tasks: Iterable[Task], *, tiers: Sequence[str] | None = TIERS) -> list[str]:
    """The task set's hygiene problems, one line each.

    A task id used twice; a blank prompt; a prompt used by two tasks (within a split or across splits: a test
    prompt seen in train), compared with whitespace collapsed and case folded; a task without a difficulty; a tier
    of ``tiers`` that no task has.
    """
    problems = []
    ids: set[str] = set()
    seen: dict[str, Task] = {}
    found: set[str] = set()
    for task in tasks:
        if task.id in ids:
            problems.append(f"{task.id} is the id of two tasks")
        ids.add(task.id)
        key = _prompt_key(task.prompt)
        if not key:
            problems.append(f"{task.id} has a blank prompt")
        else:
            first = seen.setdefault(key, task)
            if first is not task:
                problems.append(f"{task.id} ({task.split}) repeats the prompt of {first.id} ({first.split})")
        if task.difficulty:
            found.add(task.difficulty)
        else:
            problems.append(f"{task.id} has no difficulty")
    missing = [tier for tier in tiers or () if tier not in found]
    if missing and ids:
        problems.append(
            f"no task is {' or '.join(map(repr, missing))}: every task set has the tiers {', '.join(tiers or ())}"
        )
    return problems


def _prompt_key(prompt: str) -> str:
    return " ".join(re.split(r"\s+", prompt.casefold())).strip()


async def play_references(
    environment: Environment[Any, Any],
    tasks: Sequence[Task],
    *,
    seed: int = 0,
    concurrency: int = 4,
    on_played: Callable[[Task, str | None], None] | None = None,
) -> list[str]:
    """Play each task's reference solution through the one path, in process; a line per task that fell short.

    Args:
        environment: The environment (a runtime of it is started here, in sim mode, and stopped at the end).
        tasks: The tasks to play (each must be one of the environment's).
        seed: The episodes' seed.
        concurrency: Episodes played at once.
        on_played: Called as each task ends, with the task and its failure line (``None`` when it earned 1.0).

    Raises:
        ConfigError: The environment has no reference solutions.
    """
    if environment.solve is None:
        raise ConfigError(f"{environment.name} has no reference solutions (Environment.solve) to play")
    from openenv_mcp.runtime import build_runtime  # the runtime loads only when something is played

    settings = Settings(mode="sim", trajectories="off", curriculum=False, max_episodes=max(concurrency, 1) + 1)
    runtime = build_runtime(environment, settings)
    solve = environment.solve
    gate = asyncio.Semaphore(concurrency)

    async def play(task: Task) -> str | None:
        try:
            # off the event loop: a world's reference can take seconds to make (ScienceWorld plays its gold path
            # first), and the other episodes' steps must not wait on it (their workers' timeouts run meanwhile)
            calls = list(await asyncio.to_thread(solve, task))
        # the task's data does not fit its generator's solver, or a world's gold-path worker is gone: reported
        # against the task and the others still play; any other exception is a bug in the solver and surfaces
        except (ValueError, LookupError, TypeError, OpenEnvError) as exc:
            return f"{task.id}: the reference could not be made: {type(exc).__name__}: {exc}"
        if not calls:
            return f"{task.id}: the reference has no calls"
        try:
            opened = await runtime.reset(task_id=task.id, seed=seed)
        except OpenEnvError as exc:
            return f"{task.id}: reset failed: {exc.message}"
        try:
            return await _follow(runtime, task, opened.episode_id, calls)
        finally:
            await runtime.close_episode(opened.episode_id)

    async def gated(task: Task) -> str | None:
        async with gate:
            failure = await play(task)
        if on_played is not None:
            on_played(task, failure)
        return failure

    async with runtime.run():
        results = await asyncio.gather(*(gated(task) for task in tasks))
    return [line for line in results if line is not None]


async def _follow(runtime: Runtime, task: Task, episode_id: str, calls: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Send a reference's calls to its episode; why it fell short, or ``None`` when it earned 1.0 cleanly."""
    total, done = 0.0, False
    for step, (tool, arguments) in enumerate(calls, start=1):
        if done:
            return f"{task.id}: the episode ended at step {step - 1}, before the reference's {len(calls)} calls"
        try:
            outcome = await runtime.call(tool, arguments, episode_id)
        except OpenEnvError as exc:
            return f"{task.id}: step {step} ({tool}) of the reference failed: {exc.message}"
        if outcome.observation.is_error:
            return f"{task.id}: step {step} ({tool}) of the reference was refused: {outcome.observation.text[:200]}"
        total, done = outcome.episode.total_reward if outcome.episode is not None else 0.0, outcome.done
    if not done:
        return f"{task.id}: the reference's {len(calls)} calls left the episode open (total reward {total:g})"
    if abs(total - 1.0) > _TOLERANCE:
        return f"{task.id}: the reference earned {total:g}, not 1.0, in {len(calls)} calls"
    return None


def check_task_set(
    environment: Environment[Any, Any],
    *,
    sample: int | None = None,
    seed: int = 0,
    concurrency: int = 4,
    tasks: Sequence[Task] | None = None,
    tiers: Sequence[str] | None = TIERS,
    on_played: Callable[[Task, str | None], None] | None = None,
) -> TaskSetReport:
    """Check an environment's task set: its hygiene, and its reference solutions played through the one path.

    Args:
        environment: The environment.
        sample: Play this many tasks, drawn with ``seed``, every (split, difficulty) stratum first; ``None`` plays
            every task; 0 plays none (hygiene only).
        seed: The draw of the sample, and the episodes' seed.
        concurrency: Episodes played at once.
        tasks: The tasks to check instead of the environment's own (each must be one of the environment's).
        tiers: The difficulty tiers that must all occur (``None``: any).
        on_played: Called as each played task ends (see :func:`play_references`), e.g. for a progress bar.

    Must not be called from a running event loop (it runs one); ``await play_references(...)`` there.
    """
    started = time.perf_counter()
    chosen = list(tasks) if tasks is not None else list(environment.tasks())
    counts: dict[str, Counter[str]] = {}
    for task in chosen:
        counts.setdefault(task.split, Counter())[task.difficulty or "-"] += 1
    ordered = {split: dict(sorted(c.items(), key=lambda kv: by_difficulty(kv[0]))) for split, c in counts.items()}
    report = TaskSetReport(environment.name, ordered)
    report.problems = hygiene(chosen, tiers=tiers)
    played = chosen if sample is None else _draw(chosen, sample, seed)
    report.played = len(played)
    if played:
        report.failures = asyncio.run(
            play_references(environment, played, seed=seed, concurrency=concurrency, on_played=on_played)
        )
    report.seconds = time.perf_counter() - started
    return report


def _draw(tasks: list[Task], size: int, seed: int) -> list[Task]:
    """A seeded sample that covers every (split, difficulty) stratum before drawing the rest at random."""
    return stratified_sample(tasks, size, seed=seed, key=lambda task: (task.split, task.difficulty or "-"))
