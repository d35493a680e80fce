"""pass@k and pass^k over k trials per task.

With ``n`` trials of a task of which ``c`` succeeded:

- **pass@k**, the chance that at least one of ``k`` trials drawn without replacement succeeds:
  ``1 - C(n - c, k) / C(n, k)`` (the unbiased estimator of Chen et al., 2021);
- **pass^k**, the chance that all ``k`` drawn trials succeed: ``C(c, k) / C(n, k)`` (tau-bench's
  reliability measure). pass^1 equals pass@1, the success rate.

Figures over a split are the mean over its tasks, so a task with more trials weighs no more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import comb

__all__ = ["TaskScore", "pass_at_k", "pass_hat_k", "score_tasks"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` of ``n`` trials (``c`` successes) succeeds."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all ``k`` of ``n`` trials (``c`` successes) succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= successes <= trials and 1 <= k <= trials; got n={n}, c={c}, k={k}")


@dataclass(slots=True)
class TaskScore:
    """One task's trials and figures."""

    task_id: str
    rewards: list[float] = field(default_factory=list)
    successes: int = 0

    @property
    def trials(self) -> int:
        return len(self.rewards)

    @property
    def mean_reward(self) -> float:
        return sum(self.rewards) / len(self.rewards) if self.rewards else 0.0

    def pass_at(self, k: int) -> float:
        return pass_at_k(self.trials, self.successes, k)

    def pass_hat(self, k: int) -> float:
        return pass_hat_k(self.trials, self.successes, k)


def score_tasks(trials: Iterable[tuple[str, float]], *, threshold: float = 1.0) -> list[TaskScore]:
    """Group ``(task_id, reward)`` pairs by task (sorted by id); a reward >= ``threshold`` is a success."""
    scores: dict[str, TaskScore] = {}
    for task_id, reward in trials:
        score = scores.setdefault(task_id, TaskScore(task_id))
        score.rewards.append(reward)
        score.successes += reward >= threshold
    return [scores[task_id] for task_id in sorted(scores)]


def mean_over_tasks(scores: Sequence[TaskScore], measure: str, k: int) -> float:
    """The mean over tasks of ``pass_at`` or ``pass_hat`` at ``k`` (tasks with fewer than k trials left out)."""
    values = [getattr(score, measure)(k) for score in scores if score.trials >= k]
    return sum(values) / len(values) if values else 0.0
