"""Tests of the memory environment as its author runs them: conformance, tasks, rewards, semantics."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest
from memory_env import environment
from memory_env.backends import SimMemory, open_sim
from memory_env.settings import MemorySettings
from memory_env.tasks import MemoryTask, load_tasks, score

from openenv_mcp import EnvClient
from openenv_mcp.authoring.testing import serving
from openenv_mcp.authoring.validate import validate_environment

SOLUTIONS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "record-0": [
        (
            "create_entities",
            {
                "entities": [
                    {"name": "Ada Park", "entityType": "person", "observations": []},
                    {"name": "Lumen Labs", "entityType": "organization", "observations": []},
                    {"name": "Oslo", "entityType": "city", "observations": []},
                ]
            },
        ),
        (
            "create_relations",
            {
                "relations": [
                    {"from": "Ada Park", "to": "Lumen Labs", "relationType": "works_at"},
                    {"from": "Lumen Labs", "to": "Oslo", "relationType": "located_in"},
                ]
            },
        ),
    ],
    "correct-0": [
        ("delete_observations", {"deletions": [{"entityName": "Carla Diaz", "observations": ["born in 1980"]}]}),
        ("add_observations", {"observations": [{"entityName": "Carla Diaz", "contents": ["born in 1981"]}]}),
    ],
    "forget-1": [("delete_entities", {"entityNames": ["Femi Ade"]})],
}


def test_the_environment_passes_the_conformance_check() -> None:
    report = validate_environment(environment)
    assert report.ok, report.render()


def test_there_are_at_least_twenty_hand_written_tasks_in_train_and_test() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 20
    assert set(tasks.splits) == {"train", "test"}
    assert {task.difficulty for task in tasks} == {"easy", "medium", "hard"}
    assert all(tasks.get(task.id) == task for task in tasks)  # the environment serves them, ids unchanged
    served = environment.tasks()
    assert all(served.get(task.id) == task for task in tasks)


@pytest.mark.parametrize("seed", [0, 5])
def test_every_task_starts_at_score_zero(seed: int) -> None:
    generated = [task for task in environment.tasks() if task.id.startswith("memory-g")]
    chosen = [*load_tasks(), *random.Random(seed).sample(generated, 300)]  # all of them: tasks --check --all

    async def check() -> None:
        for task in chosen:
            assert isinstance(task, MemoryTask)
            memory = await open_sim(task, seed, MemorySettings())
            assert score(task, memory) == 0.0, task.id

    anyio.run(check)


@pytest.mark.parametrize("task_id", sorted(SOLUTIONS))
def test_a_solved_task_earns_one_and_ends(task_id: str) -> None:
    with serving(environment) as url, EnvClient(url) as env:
        env.reset(task_id=task_id, seed=11)
        for tool, arguments in SOLUTIONS[task_id]:
            result = env.step(tool, arguments)
        assert result.done
        assert env.state().total_reward == pytest.approx(1.0)


def test_the_shipped_solution_of_every_hand_written_task_earns_exactly_one_and_ends() -> None:
    assert environment.solve is not None
    with serving(environment) as url, EnvClient(url) as env:
        for task in load_tasks():
            env.reset(task_id=task.id, seed=7)
            results = [env.step(tool, arguments) for tool, arguments in environment.solve(task)]
            assert [r.done for r in results] == [False] * (len(results) - 1) + [True], task.id
            assert env.state().total_reward == 1.0, task.id  # exactly: the rewards add up to the final score


def test_destroying_what_was_not_asked_costs_reward() -> None:
    with serving(environment) as url, EnvClient(url) as env:
        env.reset(task_id="forget-1", seed=11)
        everyone = [e["name"] for e in env.step("read_graph").observation.structured_content["entities"]]
        result = env.step("delete_entities", {"entityNames": everyone})
        assert result.done
        assert env.state().total_reward < 1.0


def test_the_same_seed_gives_the_same_world_and_another_seed_another() -> None:
    async def world(seed: int) -> Any:
        return (await open_sim(environment.tasks().get("link-0"), seed, MemorySettings())).graph()

    assert anyio.run(world, 3) == anyio.run(world, 3)
    assert anyio.run(world, 3) != anyio.run(world, 4)


def test_sim_follows_the_upstream_semantics() -> None:
    async def run() -> None:
        memory = SimMemory([], [])
        made = await memory.call(
            "create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []}]}
        )
        assert made == {"entities": [{"name": "A", "entityType": "t", "observations": []}]}
        again = await memory.call(
            "create_entities", {"entities": [{"name": "A", "entityType": "u", "observations": []}]}
        )
        assert again == {"entities": []}  # an existing name is skipped, not replaced
        await memory.call("create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "knows"}]})
        found = await memory.call("search_nodes", {"query": "a"})
        assert [e["name"] for e in found["entities"]] == ["A"] and len(found["relations"]) == 1
        await memory.call("delete_entities", {"entityNames": ["A"]})
        assert await memory.call("read_graph", {}) == {"entities": [], "relations": []}

    anyio.run(run)
