"""Tasks: what an episode is about, in splits, picked deterministically under a seed."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from openenv_mcp.errors import ConfigError, EpisodeError

__all__ = ["Grade", "Task", "TaskSet", "by_difficulty", "stratified_sample", "task_record", "with_extra_tasks"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Task:
    """A task: its id, its split, the prompt an agent is given, and how hard it is.

    Environments subclass it to carry what grading needs (gold answers, hidden tests). ``difficulty`` is a tier
    name (``easy``, ``medium``, ``hard``...) from what made the task (joins, steps, distractors, hops); ``None``
    when unknown. It is keyword-only, so a subclass's own fields need no defaults.
    """

    id: str
    split: str
    prompt: str
    difficulty: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class Grade:
    """What one step earned: its reward, whether the episode is over, and optionally why.

    ``scores`` names the parts the reward is made of (see :class:`~openenv_mcp.rewards.rubrics.Rubric`, which
    builds them): an explanation of ``reward``, never a second reward. They appear in the step's
    ``info["scores"]``, the MCP result's ``_meta``, trajectories and metrics. ``reasons`` says in words why
    some of them scored what they did (an LLM judge's reason): ``info["reasons"]`` and ``_meta``.
    """

    reward: float = 0.0
    done: bool = False
    scores: Mapping[str, float] | None = None
    reasons: Mapping[str, str] | None = None


class TaskSet:
    """The tasks of one environment, indexed by id and by split."""

    def __init__(self, tasks: Iterable[Task], *, default_split: str = "train") -> None:
        self._by_id: dict[str, Task] = {}
        self._by_split: dict[str, list[Task]] = {}
        for task in tasks:
            if task.id in self._by_id:
                raise ValueError(f"Task id {task.id!r} appears twice; task ids must be unique")
            self._by_id[task.id] = task
            self._by_split.setdefault(task.split, []).append(task)
        if not self._by_id:
            raise ValueError("An environment needs at least one task")
        self.default_split = default_split if default_split in self._by_split else next(iter(self._by_split))
        self._difficulties: dict[str, int] | None = None

    def __iter__(self) -> Iterator[Task]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    @property
    def splits(self) -> dict[str, int]:
        """Each split's name and how many tasks it holds."""
        return {split: len(tasks) for split, tasks in self._by_split.items()}

    @property
    def difficulties(self) -> dict[str, int]:
        """Each difficulty tier's name and how many tasks have it (tasks without one are not counted)."""
        if self._difficulties is None:
            counts: dict[str, int] = {}
            for task in self._by_id.values():
                if task.difficulty:
                    counts[task.difficulty] = counts.get(task.difficulty, 0) + 1
            self._difficulties = counts
        return dict(self._difficulties)

    def select(
        self, *, split: str | None = None, difficulty: str | None = None, query: str | None = None
    ) -> list[Task]:
        """The tasks of ``split`` with ``difficulty`` whose id or prompt contains ``query`` (any case), in order.

        Raises:
            EpisodeError: No such split or difficulty (the message lists those there are).
        """
        if split is not None and split not in self._by_split:
            raise EpisodeError(f"No split {split!r}; splits: {', '.join(self._by_split)}")
        if difficulty is not None and difficulty not in self.difficulties:
            tiers = ", ".join(self.difficulties) or "none (no task has a difficulty)"
            raise EpisodeError(f"No difficulty {difficulty!r}; difficulties: {tiers}")
        chosen: Iterable[Task] = self._by_split[split] if split is not None else self._by_id.values()
        if difficulty is not None:
            chosen = (task for task in chosen if task.difficulty == difficulty)
        if query:
            needle = query.casefold()
            chosen = (task for task in chosen if needle in task.id.casefold() or needle in task.prompt.casefold())
        return list(chosen)

    def get(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise EpisodeError(f"No task {task_id!r}; GET /tasks lists the {len(self)} task ids") from None

    def pick(self, *, task_id: str | None, split: str | None, seed: int) -> Task:
        """The task for a reset: by id if given, else drawn from ``split`` with ``seed``."""
        if task_id is not None:
            task = self.get(task_id)
            if split is not None and task.split != split:
                raise EpisodeError(f"Task {task_id!r} is in split {task.split!r}, not {split!r}")
            return task
        name = split or self.default_split
        if name not in self._by_split:
            raise EpisodeError(f"No split {name!r}; splits: {', '.join(self._by_split)}")
        return random.Random(seed).choice(self._by_split[name])


def stratified_sample(items: Sequence[T], size: int, *, seed: int, key: Callable[[T], Hashable]) -> list[T]:
    """``size`` of ``items`` drawn with ``seed``, every stratum (``key``) first, then the rest at random.

    The strata are taken in sorted order and one item of each is drawn before any other, so a sample at least as
    large as the number of strata covers them all; a smaller one covers as many as it holds. The same items, size
    and seed always give the same sample, in the same order.
    """
    if size >= len(items):
        return list(items)
    rng = random.Random(seed)
    strata: dict[Hashable, list[int]] = {}
    for index, item in enumerate(items):
        strata.setdefault(key(item), []).append(index)
    picked = [rng.choice(members) for _, members in sorted(strata.items(), key=lambda kv: repr(kv[0]))][:size]
    chosen = set(picked)
    picked += rng.sample([i for i in range(len(items)) if i not in chosen], size - len(picked))
    return [items[i] for i in picked]


def by_difficulty(tier: str) -> tuple[int, str]:
    """A sort key for difficulty tiers: easy, medium, hard, then other names in order, then ``"-"`` (none)."""
    known = {"easy": 0, "medium": 1, "hard": 2, "-": 4}
    return known.get(tier, 3), tier


def task_record(task: Task) -> dict[str, Any]:
    """A task as one JSON object (its dataclass fields), as :func:`with_extra_tasks` reads it back."""
    return {f.name: getattr(task, f.name) for f in dataclasses.fields(task)}


def with_extra_tasks(tasks: TaskSet, path: Path) -> TaskSet:
    """``tasks`` and the tasks of a JSON-lines file (``OPENENV_EXTRA_TASKS``, e.g. from ``openenv-mcp tasks mine``).

    Each line is ``{"task": {FIELD: VALUE, ...}}`` (other keys are kept for the reader): the fields of the
    environment's own task class (its first task's), so a mined sql task is a ``SqlTask`` the environment grades
    as any other. A bad file stops the start-up with :class:`ConfigError` naming the line.
    """
    kind = type(next(iter(tasks)))
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"OPENENV_EXTRA_TASKS: cannot read {path}: {exc.strerror}") from None
    extra = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            extra.append(kind(**json.loads(line)["task"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f'OPENENV_EXTRA_TASKS: {path}:{number} is not a {kind.__name__} ({{"task": {{fields}}}}): {exc}'
            ) from None
    try:
        return TaskSet([*tasks, *extra], default_split=tasks.default_split)
    except ValueError as exc:
        raise ConfigError(f"OPENENV_EXTRA_TASKS: {path}: {exc}") from None
