"""The curriculum, driven by a scripted policy whose success per task is known, through HTTP as trainers do."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pydantic_settings import BaseSettings

from openenv_mcp import EnvClient, Environment, Grade, Task, TaskSet, Toolbox
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.models import TaskInfo
from openenv_mcp.rewards.curriculum import Curriculum
from tests.support import live_server

# The scripted policy succeeds at each task with this probability.
SUCCESS = {"always": 1.0, "often": 0.9, "half": 0.5, "rarely": 0.3, "never": 0.0}


class Attempt:
    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


tools: Toolbox[Attempt] = Toolbox("attempts")


@tools.tool()
async def attempt(backend: Attempt, succeed: bool) -> bool:
    """Try the task.

    Args:
        succeed: Whether this try works (the scripted policy decides).
    """
    return succeed


async def _open(task: Task, seed: int, settings: object) -> Attempt:
    return Attempt()


async def _open_prod(settings: object) -> Attempt:
    return Attempt()


async def _grade(task: Task, backend: Attempt, call: BoundCall, observation: object) -> Grade:
    return Grade(reward=1.0 if call.kwargs["succeed"] else 0.0, done=True)


class AttemptSettings(BaseSettings):
    pass


environment: Environment[Attempt, Task] = Environment(
    name="attempts",
    description="One tool; the task decides nothing, the scripted policy does.",
    tools=tools,
    tasks=lambda: TaskSet([Task(id=name, split="train", prompt=name) for name in SUCCESS]),
    settings=AttemptSettings,
    sim_backend=_open,
    prod_backend=_open_prod,
    grade=_grade,
    examples=(("attempt", {"succeed": True}),),
)


def train(url: str, episodes: int, policy_seed: int = 0) -> list[str]:
    """Reset without a task id, play the scripted policy once, close; the tasks the server drew, in order."""
    luck = random.Random(policy_seed)
    drawn = []
    with EnvClient(url) as env:
        for _ in range(episodes):
            task = env.reset().info["task_id"]
            drawn.append(task)
            env.step("attempt", {"succeed": luck.random() < SUCCESS[task]})
            env.close_episode()
    return drawn


CURRICULUM = {
    "curriculum": True,
    "curriculum_band": (0.2, 0.8),
    "curriculum_window": 10,
    "curriculum_min_attempts": 3,
    "curriculum_outside_weight": 0.05,
    "curriculum_seed": 7,
}


def test_the_curriculum_favours_tasks_inside_the_band_and_shows_its_state() -> None:
    with live_server(environment, mode="sim", **CURRICULUM) as server:
        drawn = train(server.url, 300)
        late = Counter(drawn[100:])
        # Tasks the policy masters (1.0, 0.9) or never solves (0.0) leave the band; 0.5 and 0.3 stay in it.
        assert late["half"] + late["rarely"] > 0.75 * sum(late.values())
        assert min(late["half"], late["rarely"]) > 3 * max(late["always"], late["never"])
        with EnvClient(server.url) as env:
            state = env.tasks().curriculum
        assert state is not None and state.draws == 300 and state.band == (0.2, 0.8)
        progress = {task.task_id: task for task in state.tasks}
        assert progress["always"].status == "too_easy" and progress["always"].weight == 0.05
        assert progress["never"].status == "too_hard" and progress["never"].recent_success_rate == 0.0
        assert progress["half"].status == "learning" and progress["half"].weight == 1.0
        assert sum(task.attempts for task in state.tasks) == 300
        assert progress["always"].successes == progress["always"].attempts
        with EnvClient(server.url) as env:
            metrics = env._http.get("/metrics").text
        assert 'openenv_curriculum_success_rate{task="never"} 0.0' in metrics
        assert 'openenv_curriculum_weight{task="half"} 1.0' in metrics
        assert "openenv_curriculum_draws 300.0" in metrics


def test_the_same_seed_and_outcomes_draw_the_same_tasks() -> None:
    with (
        live_server(environment, mode="sim", **CURRICULUM) as one,
        live_server(environment, mode="sim", **CURRICULUM) as two,
        live_server(environment, mode="sim", **{**CURRICULUM, "curriculum_seed": 8}) as other,
    ):
        first = train(one.url, 60)
        assert train(two.url, 60) == first
        assert train(other.url, 60) != first


def test_a_task_id_overrides_the_curriculum_and_it_is_absent_when_off() -> None:
    with live_server(environment, mode="sim", **CURRICULUM) as server, EnvClient(server.url) as env:
        assert env.reset(task_id="never").info["task_id"] == "never"
    with live_server(environment, mode="sim") as server, EnvClient(server.url) as env:
        assert env.tasks().curriculum is None


def test_a_curriculum_drives_a_trainer_dataset_from_the_task_list() -> None:
    tasks = [TaskInfo(id=name, split="train", prompt=name) for name in SUCCESS]
    curriculum = Curriculum(tasks, band=(0.2, 0.8), window=10, min_attempts=3, outside_weight=0.0, seed=1)
    luck = random.Random(1)
    for _ in range(200):
        task = curriculum.sample("train")
        curriculum.record(task.id, 1.0 if luck.random() < SUCCESS[task.id] else 0.0)
    assert curriculum.status("always") == "too_easy" and curriculum.weight("always") == 0.0
    with pytest.raises(Exception, match="no task in split 'test'"):
        curriculum.sample("test")
    with pytest.raises(ValueError, match="band"):
        Curriculum(tasks, band=(0.9, 0.1))


def test_difficulty_is_the_prior_of_tasks_with_too_few_attempts() -> None:
    tasks = [
        TaskInfo(id=f"{tier}-{i}", split="train", prompt=f"{tier} {i}", difficulty=tier)
        for tier in ("easy", "medium", "hard")
        for i in range(10)
    ]
    curriculum = Curriculum(tasks, band=(0.2, 0.8), window=10, min_attempts=3, outside_weight=0.0, seed=0)
    assert {curriculum.status(task.id) for task in tasks} == {"new"}  # nothing known yet: every task weighs 1
    for _ in range(3):  # the policy solves the easy tasks it meets and none of the hard ones
        curriculum.record("easy-0", 1.0)
        curriculum.record("easy-1", 1.0)
        curriculum.record("hard-0", 0.0)
    assert (curriculum.tier_rate("easy"), curriculum.tier_rate("hard"), curriculum.tier_rate("medium")) == (
        1.0,
        0.0,
        None,
    )
    assert curriculum.status("easy-5") == "too_easy" and curriculum.weight("easy-5") == 0.0  # never played: its tier
    assert curriculum.status("hard-7") == "too_hard" and curriculum.rate("hard-7") is None
    assert curriculum.status("medium-3") == "new" and curriculum.weight("medium-3") == 1.0
    curriculum.record("easy-9", 0.0)
    curriculum.record("easy-9", 0.0)  # its own outcomes weigh in as they come (and in its tier's: 6 of 8)
    assert curriculum.tier_rate("easy") == 0.75 and curriculum.estimate("easy-9") == pytest.approx((0 + 0 + 0.75) / 3)
    assert curriculum.status("easy-9") == "learning"
    drawn = Counter(curriculum.sample("train").id for _ in range(300))
    assert {task.split("-")[0] for task in drawn} == {"medium", "easy"} and "easy-9" in drawn
    progress = {p.task_id: p for p in curriculum.state().tasks}
    assert (progress["easy-5"].estimated_success_rate, progress["easy-5"].difficulty) == (0.75, "easy")
    assert progress["easy-5"].recent_success_rate is None and progress["medium-3"].estimated_success_rate is None


def test_a_tiers_prior_follows_the_recent_window_only() -> None:
    tasks = [TaskInfo(id=f"t{i}", split="train", prompt=str(i), difficulty="hard") for i in range(3)]
    curriculum = Curriculum(tasks, window=3, min_attempts=3)
    for reward in (1.0, 1.0, 1.0, 0.0, 0.0, 0.0):
        curriculum.record("t0", reward)
    assert curriculum.tier_rate("hard") == 0.0 and curriculum.status("t1") == "too_hard"  # the successes left
    untiered = Curriculum([TaskInfo(id="x", split="train", prompt="x"), *tasks], min_attempts=1)
    untiered.record("t0", 1.0)
    assert untiered.status("x") == "new" and untiered.status("t2") == "too_easy"  # no tier, no prior
