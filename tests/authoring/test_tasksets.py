"""The task-set check: each way a reference or a task set can be broken is reported, a clean set passes, and a
sample covers every split and difficulty."""

from __future__ import annotations

from dataclasses import replace

import pytest

from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.environment.tasks import stratified_sample
from openenv_mcp.errors import ConfigError
from tests.support.sums import BROKEN, sum_tasks, sums_environment


def test_a_clean_task_set_passes_with_every_reference_played_to_one() -> None:
    played: list[str] = []
    report = check_task_set(sums_environment(sum_tasks(30)), on_played=lambda task, failure: played.append(task.id))
    assert report.ok and report.played == 30 and sorted(played) == [f"sum-{i:05d}" for i in range(30)]
    assert report.counts == {"test": {"easy": 2, "medium": 2, "hard": 2}, "train": {"easy": 8, "medium": 8, "hard": 8}}
    assert report.render().endswith(f"ok: 30 references played, each to reward 1.0 ({report.seconds:.1f} s)")


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("wrong", "sum-00003: the reference earned 0, not 1.0, in 2 calls"),
        (
            "refused",
            "sum-00003: step 2 (answer) of the reference was refused: Sums here are never negative; answer again",
        ),
        ("raises", "sum-00003: the reference could not be made: ValueError: no reference for sum-00003"),
        ("open", "sum-00003: the reference's 1 calls left the episode open (total reward 0)"),
        ("overlong", "sum-00003: the episode ended at step 2, before the reference's 3 calls"),
        ("empty", "sum-00003: the reference has no calls"),
    ],
)
def test_each_way_a_reference_can_be_broken_is_reported_against_its_task(broken: str, said: str) -> None:
    report = check_task_set(sums_environment(sum_tasks(6, broken={3: broken})))
    assert not report.ok and report.problems == []
    assert report.failures == [said]  # the other five still played, to 1.0
    assert report.played == 6 and "FAILED: 0 problems; 1 of 6 references played fell short" in report.render()
    assert set(BROKEN) >= {broken}


def test_a_repeated_prompt_a_missing_difficulty_and_a_missing_tier_are_problems() -> None:
    tasks = sum_tasks(6, tiers=("easy", "medium"))
    tasks[4] = replace(tasks[4], prompt="  " + tasks[0].prompt.upper() + "\n")  # train repeats test, case aside
    tasks[2] = replace(tasks[2], difficulty=None)
    tasks[3] = replace(tasks[3], prompt=" ")
    problems = hygiene(tasks)
    assert problems == [
        "sum-00002 has no difficulty",
        "sum-00003 has a blank prompt",
        "sum-00004 (train) repeats the prompt of sum-00000 (test)",
        "no task is 'hard': every task set has the tiers easy, medium, hard",
    ]
    assert hygiene([*tasks[:2], tasks[1]], tiers=None) == ["sum-00001 is the id of two tasks"]
    report = check_task_set(sums_environment(sum_tasks(6)), tasks=tasks, sample=0)
    assert report.problems == problems and report.played == 0 and not report.ok


def test_a_sample_covers_every_split_and_difficulty_and_is_the_same_for_the_same_seed() -> None:
    tasks = sum_tasks(300)
    strata = {(t.split, t.difficulty) for t in tasks}
    for seed in range(5):
        drawn = stratified_sample(tasks, 6, seed=seed, key=lambda t: (t.split, t.difficulty))
        assert {(t.split, t.difficulty) for t in drawn} == strata and len({t.id for t in drawn}) == 6
    assert stratified_sample(tasks, 20, seed=1, key=lambda t: t.split) == stratified_sample(
        tasks, 20, seed=1, key=lambda t: t.split
    )
    played: list[tuple[str, str | None]] = []
    report = check_task_set(
        sums_environment(tasks), sample=8, seed=3, on_played=lambda t, _: played.append((t.split, t.difficulty))
    )
    assert report.ok and report.played == 8 and set(played) == strata


def test_an_environment_without_references_cannot_be_checked() -> None:
    env = replace(sums_environment(sum_tasks(3)), solve=None)
    with pytest.raises(ConfigError, match="sums has no reference solutions"):
        check_task_set(env)
