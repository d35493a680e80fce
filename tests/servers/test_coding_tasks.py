"""The coding task set: hand-written problems and generated families, each task with a real reference program.

Counts, tiers, hygiene, the held-out split and stable ids need nothing but the package. Playing references needs
the sandbox (root and Linux namespaces, as CI has): a seeded sample, one task of every family, here; the whole set
with ``check_task_set(environment)`` (servers/coding/README.md gives its time).
"""

from __future__ import annotations

import os
import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_mcp import EnvClient
from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.servers.coding import environment
from openenv_mcp.servers.coding.families import FAMILIES
from openenv_mcp.servers.coding.generator import VERSION, Instance, generate, task_id
from openenv_mcp.servers.coding.problem import CodingTask, Written
from openenv_mcp.servers.coding.settings import CodingSettings
from tests.support import IN_CI, LiveServer, live_server

TASKS: list[CodingTask] = list(environment.tasks())
GENERATED = [task for task in TASKS if isinstance(task.problem, Instance)]
SEED = 20261126

sandboxed = pytest.mark.skipif(
    not (os.geteuid() == 0 and os.path.exists("/proc/self/ns/net")) and not IN_CI,
    reason="the sandbox needs root and Linux namespaces; CI runs these as root",
)


def instance(task: CodingTask) -> Instance:
    assert isinstance(task.problem, Instance)
    return task.problem


def one_per_family(seed: int) -> list[CodingTask]:
    rng = random.Random(seed)
    by_family: dict[str, list[CodingTask]] = defaultdict(list)
    for task in GENERATED:
        by_family[instance(task).family.name].append(task)
    return [rng.choice(members) for _, members in sorted(by_family.items())]


def test_there_are_a_thousand_train_and_two_hundred_test_tasks_in_three_tiers() -> None:
    counts = Counter((task.split, task.difficulty) for task in TASKS)
    splits = Counter(task.split for task in TASKS)
    assert splits["train"] >= 1000 and splits["test"] >= 200 and set(splits) == {"train", "test"}
    for split in ("train", "test"):
        assert all(counts[split, tier] >= 20 for tier in ("easy", "medium", "hard")), counts
    assert sum(isinstance(task.problem, Written) for task in TASKS) == 24  # the hand-written tasks stay
    assert {instance(task).family.name for task in GENERATED} == {family.name for family in FAMILIES}


def test_no_prompt_appears_twice_and_every_task_has_a_difficulty() -> None:
    assert hygiene(TASKS) == []


def test_test_tasks_come_from_parameters_held_out_of_train() -> None:
    keys: dict[tuple[str, str], set[Any]] = defaultdict(set)
    for task in GENERATED:
        problem = instance(task)
        keys[problem.family.name, task.split].add(problem.holdout)
        assert (task.split == "test") == problem.family.held_out(problem.holdout), task.id
    for family in FAMILIES:
        train, test = keys[family.name, "train"], keys[family.name, "test"]
        assert train and test, f"{family.name} has no train or no test task"
        assert not train & test, f"{family.name}: {train & test} in both splits"


def test_ids_are_a_function_of_the_generator_version_and_the_parameters() -> None:
    again = {task.id: task.prompt for task in generate()}
    assert again == {task.id: task.prompt for task in GENERATED}
    for task in GENERATED:
        problem = instance(task)
        assert task.id == task_id(problem.family, problem.params)
        assert task.id.startswith(f"coding-g{VERSION}-{problem.family.name}-")
    digits = next(family for family in FAMILIES if family.name == "digits")
    assert task_id(digits, (("base", 7), ("op", "sum"))) == "coding-g1-digits-74c789"  # pinned: bump VERSION to change


def test_function_and_program_tasks_have_several_hidden_tests_within_the_output_cap() -> None:
    cap = CodingSettings().max_output_bytes
    styles: Counter[str] = Counter()
    for task in one_per_family(SEED):
        suite = task.suite
        styles["function" if suite.harness else "program"] += 1
        assert len(suite.tests) >= 4, task.id
        assert all(len(test.output.encode()) < cap for test in suite.tests), task.id
        if not suite.harness:  # a program's first hidden test is its first worked example
            first = suite.tests[0]
            assert f"Input:\n{first.input.rstrip()}\nOutput:\n{first.output.rstrip()}\n" in task.prompt, task.id
    assert styles["function"] >= 4 and styles["program"] >= 20, styles


@sandboxed
def test_a_seeded_sample_of_reference_programs_one_per_family_earns_full_reward() -> None:
    sample = one_per_family(SEED)
    report = check_task_set(environment, tasks=sample, seed=SEED, concurrency=2)
    assert report.played == len(sample) == len(FAMILIES)
    assert report.failures == [] and report.problems == []


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=8) as live:
        yield live


@sandboxed
def test_a_function_task_runs_the_submission_under_its_harness_over_http(server: LiveServer) -> None:
    task = next(task for task in GENERATED if instance(task).family.name == "list-pipeline")
    total = len(task.suite.tests)
    attempts = {
        "def transform(xs):\n    return 'no'\n": "wrong answer",
        "def transform(xs):\n    raise KeyError(xs)\n": "runtime error: KeyError",
        "def other(xs):\n    return xs\n": "runtime error: NameError",
        "import sys\nprint(sys.stdin.read())\n": "wrong answer",  # a program: it reads the calls, never the results
    }
    with EnvClient(server.url, timeout=120) as env:
        for code, verdict in attempts.items():
            env.reset(task_id=task.id)
            result = env.step("submit_solution", {"code": code})
            content = result.observation.structured_content or {}
            assert (result.reward, result.done, content["total"]) == (0.0, True, total), content
            assert {failure["verdict"] for failure in content["failures"]} == {verdict}, code
        env.reset(task_id=task.id)
        assert env.step("submit_solution", {"code": task.problem.reference()}).reward == 1.0
