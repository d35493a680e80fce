"""Tasks: what an episode is about, in splits, picked deterministically under a seed."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from openenv_mcp.errors import EpisodeError

__all__ = ["Grade", "Task", "TaskSet"]


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

    def __iter__(self) -> Iterator[Task]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    @property
    def splits(self) -> dict[str, int]:
        """Each split's name and how many tasks it holds."""
        return {split: len(tasks) for split, tasks in self._by_split.items()}

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
