"""The trials of an evaluation, played through the rollout runner and kept in a JSON Lines file.

The file's first line says what the run is (server, split, trials per task, policy, seed, and for a chat model
the model, its endpoint, sampling settings, turn cap and parser); each further line is one finished trial, with
why it ended and its times. Running the same evaluation again with the same file skips
the trials already in it, so an interrupted run resumes where it stopped. A trial that infrastructure
ended (:func:`~openenv_mcp.rollout.endings.is_infra`: the server gone, failing or too slow, a backend,
the judge or the model endpoint unavailable) is written down with its error, left out of every figure
and played again on the next run, and only those: it says nothing about the policy. A trial that
stopped on a call the policy insisted on (``policy_error``) is the policy's failure, scored as it stands.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from openenv_mcp.environment.tasks import by_difficulty
from openenv_mcp.errors import ConfigError
from openenv_mcp.evaluation.metrics import TaskScore, mean_over_tasks, score_tasks
from openenv_mcp.rollout.endings import is_infra
from openenv_mcp.rollout.runner import Batch, EpisodeResult, Policy, Reset, run_plan

__all__ = ["Evaluation", "Trial", "TrialLog", "evaluate"]


@dataclass(frozen=True, slots=True)
class Trial:
    """One episode of the evaluation: trial ``index`` of ``task_id``, started with ``seed``.

    ``end_reason`` is why it ended (:data:`~openenv_mcp.rollout.runner.END_REASONS`); ``seconds`` its wall time
    (reset to close), ``env_seconds`` the environment's part and ``model_seconds`` the model's. A chat model's
    side: ``turns`` (model calls), ``text_replies`` (replies without a call), ``parsed_calls`` (calls read from
    the text), ``refused_calls`` (calls that did not become steps) and ``last_text`` (its last reply, cut).
    """

    task_id: str
    index: int
    seed: int
    reward: float
    steps: int
    done: bool
    seconds: float
    error: str | None = None
    end_reason: str = ""
    env_seconds: float = 0.0
    model_seconds: float = 0.0
    turns: int = 0
    text_replies: int = 0
    parsed_calls: int = 0
    refused_calls: int = 0
    last_text: str | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.task_id, self.index

    @property
    def infra(self) -> bool:
        """Whether infrastructure ended it (not scored; a resumed eval plays it again)."""
        return is_infra(self.end_reason)


class TrialLog:
    """The run's trials in a JSON Lines file, appended to as each one ends."""

    def __init__(self, path: Path, run: dict[str, Any]) -> None:
        self.path = path
        self.run = dict(run)
        self.trials: dict[tuple[str, int], Trial] = {}
        if path.exists() and path.stat().st_size:
            lines = path.read_text().splitlines()
            try:
                found = json.loads(lines[0])["run"]
                trials = [Trial(**json.loads(line)) for line in lines[1:] if line.strip()]
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(f"{path} is not an evaluation's trial log ({exc}); give another --out") from None
            if found != self.run:
                differ = ", ".join(
                    f"{k} {found.get(k)!r} there, {v!r} now" for k, v in self.run.items() if found.get(k) != v
                )
                raise ConfigError(
                    f"{path} holds another evaluation ({differ}); give another --out, or --restart to replace it"
                )
            for trial in trials:
                self.trials[trial.key] = trial  # a later line (a replayed failure) wins
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"run": self.run}) + "\n")

    def finished(self) -> set[tuple[str, int]]:
        """The trials that need not run again: all but those that infrastructure ended."""
        return {key for key, trial in self.trials.items() if not trial.infra}

    def add(self, trial: Trial) -> None:
        self.trials[trial.key] = trial
        with self.path.open("a") as out:
            out.write(json.dumps(asdict(trial)) + "\n")


@dataclass(slots=True)
class Evaluation:
    """What an evaluation found: the run, its trials, and the figures per task, per difficulty tier and overall.

    ``difficulties`` maps task ids to their difficulty (as ``GET /tasks`` lists them); tasks without one count in
    tier ``"-"``.
    """

    run: dict[str, Any]
    trials: list[Trial]
    threshold: float = 1.0
    difficulties: Mapping[str, str | None] = field(default_factory=dict)
    resumes: list[float] = field(default_factory=list)  # this run's rebuilds of episodes whose replica went away
    scores: list[TaskScore] = field(init=False)

    def __post_init__(self) -> None:
        self.trials.sort(key=lambda t: t.key)
        self.scores = score_tasks(((t.task_id, t.reward) for t in self.ok), threshold=self.threshold)

    @property
    def ok(self) -> list[Trial]:
        """The trials scored: all but those that infrastructure ended."""
        return [t for t in self.trials if not t.infra]

    @property
    def infra(self) -> list[Trial]:
        """The trials that infrastructure ended: left out of the figures, played again by a resumed eval."""
        return [t for t in self.trials if t.infra]

    @property
    def errors(self) -> list[Trial]:
        """The trials that stopped on an error, infrastructure's or a call the policy insisted on."""
        return [t for t in self.trials if t.error is not None]

    @property
    def k(self) -> int:
        return int(self.run["k"])

    def overall(self, measure: str, k: int) -> float:
        """``pass_at`` or ``pass_hat`` at ``k``, averaged over tasks."""
        return mean_over_tasks(self.scores, measure, k)

    @property
    def mean_reward(self) -> float:
        ok = self.ok
        return sum(t.reward for t in ok) / len(ok) if ok else 0.0

    @property
    def tasks(self) -> int:
        """The tasks evaluated, those whose every trial failed included."""
        return len(self.run.get("tasks") or {t.task_id for t in self.trials})

    @property
    def end_reasons(self) -> dict[str, int]:
        """How many trials ended for each reason, most first."""
        return dict(Counter(t.end_reason or "?" for t in self.trials).most_common())

    def totals(self) -> dict[str, Any]:
        """The trials' summed times, and a chat model's turns, replies without a call, and calls read or refused."""
        found: dict[str, Any] = {
            "seconds": {
                "wall": round(sum(t.seconds for t in self.trials), 3),
                "environment": round(sum(t.env_seconds for t in self.trials), 3),
                "model": round(sum(t.model_seconds for t in self.trials), 3),
            }
        }
        if any(t.turns for t in self.trials):
            found["model"] = {
                name: sum(getattr(t, name) for t in self.trials)
                for name in ("turns", "text_replies", "parsed_calls", "refused_calls")
            }
        return found

    def tiers(self) -> dict[str, list[TaskScore]]:
        """The task scores per difficulty tier: easy, medium, hard first, other tiers by name, ``"-"`` last; empty
        when no task has a difficulty."""
        if not any(self.difficulties.get(s.task_id) for s in self.scores):
            return {}
        groups: dict[str, list[TaskScore]] = {}
        for score in self.scores:
            groups.setdefault(self.difficulties.get(score.task_id) or "-", []).append(score)
        return dict(sorted(groups.items(), key=lambda kv: by_difficulty(kv[0])))

    def figures(self, scores: list[TaskScore]) -> dict[str, Any]:
        """Tasks, trials, mean reward, pass@k and pass^k (k = 1..K) over ``scores`` (e.g. a tier's)."""
        ks = range(1, self.k + 1)
        trials = sum(s.trials for s in scores)
        return {
            "tasks": len(scores),
            "trials": trials,
            "mean_reward": sum(sum(s.rewards) for s in scores) / trials if trials else 0.0,
            "pass@k": {str(k): mean_over_tasks(scores, "pass_at", k) for k in ks},
            "pass^k": {str(k): mean_over_tasks(scores, "pass_hat", k) for k in ks},
        }

    def as_json(self) -> dict[str, Any]:
        """The results as one JSON document (``results.json``)."""
        ks = range(1, self.k + 1)
        return {
            "run": self.run,
            "overall": {
                "tasks": self.tasks,
                "tasks_scored": len(self.scores),
                "trials": len(self.ok),
                "infra_failures": len(self.infra),
                "errors": len(self.errors),
                "end_reasons": self.end_reasons,
                **self.totals(),
                "mean_reward": self.mean_reward,
                "pass@k": {str(k): self.overall("pass_at", k) for k in ks},
                "pass^k": {str(k): self.overall("pass_hat", k) for k in ks},
            },
            "tiers": {tier: self.figures(scores) for tier, scores in self.tiers().items()},
            "tasks": [
                {
                    "task_id": s.task_id,
                    "difficulty": self.difficulties.get(s.task_id),
                    "trials": s.trials,
                    "successes": s.successes,
                    "mean_reward": s.mean_reward,
                    "rewards": s.rewards,
                    "pass@k": {str(k): s.pass_at(k) for k in ks if k <= s.trials},
                    "pass^k": {str(k): s.pass_hat(k) for k in ks if k <= s.trials},
                }
                for s in self.scores
            ],
            "errors": [
                {
                    "task_id": t.task_id,
                    "trial": t.index,
                    "error": t.error,
                    "end_reason": t.end_reason,
                    "infra": t.infra,
                }
                for t in self.errors
            ],
        }

    def render(self) -> str:
        """A short table for the terminal (the task column as wide as the longest task id)."""
        k = self.k
        w = max([24, *(len(s.task_id) + 2 for s in self.scores)])
        lines = [f"{'task':<{w}}{'trials':>7}{'mean':>8}{'pass@' + str(k):>9}{'pass^' + str(k):>9}"]
        for s in self.scores:
            lines.append(
                f"{s.task_id:<{w}}{s.trials:>7}{s.mean_reward:>8.3f}"
                f"{s.pass_at(k) if s.trials >= k else float('nan'):>9.3f}"
                f"{s.pass_hat(k) if s.trials >= k else float('nan'):>9.3f}"
            )
        lines.append(
            f"{'overall':<{w}}{len(self.ok):>7}{self.mean_reward:>8.3f}"
            f"{self.overall('pass_at', k):>9.3f}{self.overall('pass_hat', k):>9.3f}"
        )
        for tier, scores in self.tiers().items():
            figures = self.figures(scores)
            lines.append(
                f"{'  ' + tier:<{w}}{figures['trials']:>7}{figures['mean_reward']:>8.3f}"
                f"{figures['pass@k'][str(k)]:>9.3f}{figures['pass^k'][str(k)]:>9.3f}"
            )
        lines.append("ended: " + ", ".join(f"{reason} {count}" for reason, count in self.end_reasons.items()))
        if self.infra:
            lines.append(
                f"{len(self.infra)} trials ended by infrastructure failures, left out of the figures "
                "(run again with the same --out to retry them):"
            )
            lines += [f"  {t.task_id} trial {t.index} ({t.end_reason}): {t.error}" for t in self.infra[:5]]
        refused = [t for t in self.errors if not t.infra]
        if refused:
            lines.append(f"{len(refused)} trials stopped on an error of the policy's (scored):")
            lines += [f"  {t.task_id} trial {t.index}: {t.error}" for t in refused[:5]]
        return "\n".join(lines)


async def evaluate(
    url: str | Sequence[str],
    policy: Policy,
    *,
    task_ids: Sequence[str],
    k: int,
    log: TrialLog,
    seed: int = 0,
    batch: Batch | None = None,
    on_trial: Callable[[Trial], None] | None = None,
    difficulties: Mapping[str, str | None] | None = None,
) -> Evaluation:
    """Play trial ``i`` of each task with seed ``seed + i`` (those not finished in ``log``) on the server at ``url``
    (or spread over its replicas' URLs) and score them all
    (per difficulty tier too, from ``difficulties``: task id to tier); ``batch`` says how many at once, the
    reward that counts as a success, the server's token and what it offers."""
    batch = batch or Batch()
    done = log.finished()
    plan = [Reset(seed + i, task_id) for task_id in task_ids for i in range(k) if (task_id, i) not in done]

    def record(result: EpisodeResult) -> None:
        model = result.model
        trial = Trial(
            task_id=result.task_id,
            index=result.seed - seed,
            seed=result.seed,
            reward=result.reward,
            steps=result.steps,
            done=result.done,
            seconds=round(result.seconds, 6),
            error=result.error,
            end_reason=result.end_reason,
            env_seconds=round(result.env_seconds, 6),
            model_seconds=round(model.seconds, 6),
            turns=model.turns,
            text_replies=model.text_replies,
            parsed_calls=model.parsed_calls,
            refused_calls=model.refused_calls,
            last_text=model.last_text,
        )
        log.add(trial)
        if on_trial is not None:
            on_trial(trial)

    resumes: list[float] = []
    if plan:
        resumes = (await run_plan(url, policy, plan, batch=batch, on_result=record)).resumes
    wanted = set(task_ids)
    trials = [t for t in log.trials.values() if t.task_id in wanted and t.index < k]
    return Evaluation(log.run, trials, batch.success_threshold, dict(difficulties or {}), resumes)
