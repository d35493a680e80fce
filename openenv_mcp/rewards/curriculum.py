"""The curriculum: a task sampler that adapts to observed success, seeded and reproducible.

    curriculum = Curriculum(tasks, band=(0.2, 0.8), seed=0)
    task = curriculum.sample(split="train")
    ...  # play an episode of it
    curriculum.record(task.id, total_reward)

Each task keeps the outcomes of its last ``window`` finished episodes (a success is a total reward at or above
``success_threshold``). Once a task has ``min_attempts`` outcomes its estimated success rate is its own recent rate.
Before that, its **difficulty is the prior**: the estimate is the recent success rate of all tasks of its tier
(pooled over their windows) for the outcomes it lacks, mixed with its own, so with ``n`` of ``m = min_attempts``
outcomes, ``s`` of them successes, and tier rate ``p``: ``(s + (m - n) * p) / m``. A task whose tier has fewer than
``min_attempts`` outcomes in all (or that has no difficulty) has no estimate yet: it is ``new`` and weighs 1. A task
whose estimate is inside ``band`` is ``learning`` and weighs 1; one above it (``too_easy``) or below it
(``too_hard``) weighs ``outside_weight``. So once the easy tier is mastered, its unplayed tasks are drawn rarely,
and the hard tier's are drawn rarely while it is still out of reach. Draws come from one ``random.Random(seed)``:
the same seed and the same outcomes in the same order give the same tasks. A sim server uses one for
``POST /reset`` without a ``task_id`` when ``OPENENV_CURRICULUM`` is on (its state is in ``GET /tasks`` and
``/metrics``); a trainer's dataset can use one directly, with the tasks ``EnvClient.tasks()`` lists.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Literal, Protocol

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from openenv_mcp.errors import EpisodeError
from openenv_mcp.models import CurriculumState, TaskProgress
from openenv_mcp.settings import Settings

__all__ = ["Curriculum"]


class _Task(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def split(self) -> str: ...

    @property
    def difficulty(self) -> str | None: ...


Status = Literal["new", "learning", "too_easy", "too_hard"]


class Curriculum:
    """Samples tasks, favouring those whose recent success rate is inside the target band.

    Args:
        tasks: The tasks to draw from (anything with ``id``, ``split`` and ``difficulty``:
            :class:`~openenv_mcp.environment.tasks.Task`, :class:`~openenv_mcp.models.TaskInfo`).
        band: The target success rate, low and high (inclusive).
        window: How many recent finished episodes of a task its rate uses.
        min_attempts: Outcomes a task needs before its rate counts (until then it is ``new``, weight 1).
        success_threshold: Total reward at or above which an episode is a success.
        outside_weight: The weight of a task outside the band (one inside weighs 1).
        seed: Seed of the draws.
    """

    def __init__(
        self,
        tasks: Iterable[_Task],
        *,
        band: tuple[float, float] = (0.2, 0.8),
        window: int = 20,
        min_attempts: int = 3,
        success_threshold: float = 1.0,
        outside_weight: float = 0.1,
        seed: int = 0,
    ) -> None:
        low, high = band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"The curriculum band {band} must be two rates with 0 <= low <= high <= 1")
        if window < 1 or min_attempts < 1 or min_attempts > window:
            raise ValueError("The curriculum needs window >= 1 and 1 <= min_attempts <= window")
        if outside_weight < 0:
            raise ValueError("outside_weight must be >= 0")
        self.tasks = list(tasks)
        if not self.tasks:
            raise ValueError("A curriculum needs at least one task")
        self.band = (low, high)
        self.window = window
        self.min_attempts = min_attempts
        self.success_threshold = success_threshold
        self.outside_weight = outside_weight
        self.seed = seed
        self.draws = 0
        self._rng = random.Random(seed)
        self._by_id: dict[str, _Task] = {task.id: task for task in self.tasks}
        self._recent: dict[str, deque[bool]] = {task.id: deque(maxlen=window) for task in self.tasks}
        self._attempts: dict[str, int] = dict.fromkeys(self._recent, 0)
        self._successes: dict[str, int] = dict.fromkeys(self._recent, 0)
        # per difficulty tier: outcomes and successes in its tasks' windows (the prior of the tier's new tasks)
        self._tier_outcomes: dict[str, int] = {}
        self._tier_successes: dict[str, int] = {}

    @classmethod
    def from_settings(cls, tasks: Iterable[_Task], settings: Settings) -> Curriculum:
        """The curriculum the ``OPENENV_CURRICULUM_*`` settings describe, over ``tasks``."""
        return cls(
            tasks,
            band=settings.curriculum_band,
            window=settings.curriculum_window,
            min_attempts=settings.curriculum_min_attempts,
            success_threshold=settings.curriculum_success,
            outside_weight=settings.curriculum_outside_weight,
            seed=settings.curriculum_seed,
        )

    def rate(self, task_id: str) -> float | None:
        """The task's own recent success rate, or ``None`` before ``min_attempts`` outcomes."""
        recent = self._outcomes(task_id)
        return sum(recent) / len(recent) if len(recent) >= self.min_attempts else None

    def tier_rate(self, difficulty: str | None) -> float | None:
        """The recent success rate of the tasks of a difficulty tier, pooled; ``None`` before ``min_attempts``
        outcomes in all (and for tasks without a difficulty)."""
        outcomes = self._tier_outcomes.get(difficulty, 0) if difficulty else 0
        return self._tier_successes[difficulty] / outcomes if difficulty and outcomes >= self.min_attempts else None

    def estimate(self, task_id: str) -> float | None:
        """The task's estimated success rate: its own rate, or before ``min_attempts`` outcomes its tier's rate for
        the outcomes it lacks (see the module's description); ``None`` when neither is known."""
        recent = self._outcomes(task_id)
        if len(recent) >= self.min_attempts:
            return sum(recent) / len(recent)
        prior = self.tier_rate(self._by_id[task_id].difficulty)
        if prior is None:
            return None
        return (sum(recent) + (self.min_attempts - len(recent)) * prior) / self.min_attempts

    def status(self, task_id: str) -> Status:
        rate = self.estimate(task_id)
        if rate is None:
            return "new"
        low, high = self.band
        return "too_hard" if rate < low else "too_easy" if rate > high else "learning"

    def weight(self, task_id: str) -> float:
        return 1.0 if self.status(task_id) in ("new", "learning") else self.outside_weight

    def sample(self, split: str | None = None) -> _Task:
        """Draw a task (of ``split`` when given) by the current weights."""
        pool = [task for task in self.tasks if split is None or task.split == split]
        if not pool:
            splits = sorted({task.split for task in self.tasks})
            raise EpisodeError(f"The curriculum has no task in split {split!r}; splits: {', '.join(splits)}")
        weights = [self.weight(task.id) for task in pool]
        if not any(weights):  # every task outside the band with outside_weight 0: draw among all alike
            weights = [1.0] * len(pool)
        self.draws += 1
        return self._rng.choices(pool, weights)[0]

    def record(self, task_id: str, total_reward: float) -> None:
        """Count a finished episode of ``task_id`` (unknown ids are ignored: a task outside the curriculum)."""
        if task_id not in self._recent:
            return
        success = total_reward >= self.success_threshold
        recent = self._recent[task_id]
        tier = self._by_id[task_id].difficulty
        if tier:
            if len(recent) == recent.maxlen:  # the oldest outcome leaves the window, and the tier's pool
                self._tier_outcomes[tier] -= 1
                self._tier_successes[tier] -= recent[0]
            self._tier_outcomes[tier] = self._tier_outcomes.get(tier, 0) + 1
            self._tier_successes[tier] = self._tier_successes.get(tier, 0) + success
        recent.append(success)
        self._attempts[task_id] += 1
        self._successes[task_id] += success

    def _outcomes(self, task_id: str) -> deque[bool]:
        try:
            return self._recent[task_id]
        except KeyError:
            raise EpisodeError(f"No task {task_id!r} in this curriculum") from None

    def state(self, task_ids: Iterable[str] | None = None) -> CurriculumState:
        """Settings and, per task (of ``task_ids`` when given), attempts, successes, recent rate, weight, status."""
        chosen = self.tasks if task_ids is None else [self._by_id[i] for i in task_ids if i in self._by_id]
        return CurriculumState(
            band=self.band,
            window=self.window,
            min_attempts=self.min_attempts,
            success_threshold=self.success_threshold,
            outside_weight=self.outside_weight,
            seed=self.seed,
            draws=self.draws,
            tasks=[
                TaskProgress(
                    task_id=task.id,
                    attempts=self._attempts[task.id],
                    successes=self._successes[task.id],
                    recent_success_rate=self.rate(task.id),
                    estimated_success_rate=self.estimate(task.id),
                    difficulty=task.difficulty,
                    weight=self.weight(task.id),
                    status=self.status(task.id),
                )
                for task in chosen
            ],
        )

    def collect(self) -> Iterator[Metric]:
        """Prometheus view (a collector): per task its recent success rate and weight, and the draws."""
        rate = GaugeMetricFamily(
            "openenv_curriculum_success_rate", "Recent success rate per task (-1 before min_attempts)", labels=["task"]
        )
        weight = GaugeMetricFamily("openenv_curriculum_weight", "Sampling weight per task", labels=["task"])
        for task in self.tasks:
            value = self.rate(task.id)
            rate.add_metric([task.id], -1.0 if value is None else value)
            weight.add_metric([task.id], self.weight(task.id))
        yield rate
        yield weight
        draws = GaugeMetricFamily("openenv_curriculum_draws", "Tasks the curriculum has drawn")
        draws.add_metric([], float(self.draws))
        yield draws
