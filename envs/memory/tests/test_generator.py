"""The generated memory tasks: counts, tiers, held-out test split, stable ids, the cache, and play.

The full check (every task played) is ``openenv-mcp tasks memory --check --all``; here a seeded sample is played
through the one path, and every task's plan is drawn for the hygiene checks.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from memory_env import environment, generator
from memory_env.backends import open_sim
from memory_env.settings import MemorySettings
from memory_env.tasks import MemoryTask, parts, score

from openenv_mcp.authoring.tasksets import check_task_set, hygiene

GENERATED = [task for task in environment.tasks() if task.id.startswith("memory-g")]


def _plans() -> dict[str, Any]:
    return {task.id: generator.draw(task.id.split("-")[2], int(task.id.split("-")[3])) for task in GENERATED}


def test_a_thousand_train_and_two_hundred_test_tasks_in_three_tiers_with_clean_prompts() -> None:
    counts = Counter((task.split, task.difficulty) for task in GENERATED)
    for split, least in (("train", 1000), ("test", 200)):
        assert sum(n for (s, _), n in counts.items() if s == split) >= least
        assert all(counts[split, tier] >= 30 for tier in ("easy", "medium", "hard")), counts
    assert hygiene(environment.tasks()) == []  # no prompt twice (so no test prompt in train), every task tiered
    assert {task.id.split("-")[2] for task in GENERATED} == set(generator.FAMILIES)


def test_test_tasks_use_held_out_names_and_phrasings_only() -> None:
    plans = _plans()
    seen: dict[str, dict[str, set[str]]] = {"train": {"names": set(), "phrasing": set()}, "test": {}}
    seen["test"] = {"names": set(), "phrasing": set()}
    for task in GENERATED:
        plan = plans[task.id]
        held = {e["name"] for e in plan.graph.entities if e["entityType"] in ("organization", "project")}
        held |= set(plan.graph.spare_orgs) | set(plan.graph.spare_projects)
        seen[task.split]["names"] |= held
        seen[task.split]["phrasing"].add(plan.phrasing)
    assert seen["test"]["names"] and not seen["test"]["names"] & seen["train"]["names"]
    assert seen["test"]["phrasing"] and not seen["test"]["phrasing"] & seen["train"]["phrasing"]


def test_a_seeded_sample_of_generated_tasks_plays_to_full_reward_through_the_one_path() -> None:
    report = check_task_set(environment, sample=150, seed=24, tasks=GENERATED)
    assert report.ok and report.played == 150, report.failures[:5]


def test_a_generated_task_is_the_same_for_every_episode_seed_and_in_every_release_of_its_version() -> None:
    # the ids and what they mean are pinned: changing the generator means a new VERSION (and this digest)
    digest = hashlib.sha256()
    for family in generator.FAMILIES:
        for seed in range(12):
            plan = generator.draw(family, seed)
            drawn = [family, seed, plan.prompt, plan.goals, plan.keep, plan.graph.entities, plan.graph.relations]
            digest.update(json.dumps(drawn, sort_keys=True).encode())
    assert (generator.VERSION, digest.hexdigest()[:16]) == (1, PINNED)
    task = next(t for t in GENERATED if t.id == "memory-g1-chain-0003")

    async def graphs() -> list[Any]:
        found = []
        for seed in (0, 9):
            memory = await open_sim(task, seed, MemorySettings(distractors=0))
            found.append(memory.graph())
        return found

    first, second = anyio.run(graphs)
    assert first == second  # the episode's seed adds only unrelated people, which distractors=0 leaves out


PINNED = "c402e67e1705c748"


def test_the_task_table_is_cached_per_generator_and_a_broken_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENENV_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(generator, "PER_FAMILY", 6)  # a small table: the same code path, less drawing
    fresh = list(generator.generate(per_family=6))
    generator.generated.cache_clear()
    try:
        made = generator.generated()
        (table,) = (tmp_path / "openenv-mcp").glob("memory-tasks-g1-*.json")
        generator.generated.cache_clear()
        again = generator.generated()  # read back
        table.write_text("{not json")
        generator.generated.cache_clear()
        rebuilt = generator.generated()
    finally:
        generator.generated.cache_clear()
    for tasks in (made, again, rebuilt):
        assert [_fields(t) for t in tasks] == [_fields(t) for t in fresh]
    assert json.loads(table.read_text())[0]["id"] == fresh[0].id


def _fields(task: MemoryTask) -> tuple[Any, ...]:
    assert isinstance(task.build, functools.partial)
    return (task.id, task.split, task.difficulty, task.prompt, task.goals, task.keep, task.build.args)


def _open(task_id: str) -> Any:
    task = environment.tasks().get(task_id)
    return task, anyio.run(open_sim, task, 3, MemorySettings())


def _first(family: str, predicate: Any = lambda task: True) -> str:
    return next(t.id for t in GENERATED if t.id.split("-")[2] == family and predicate(t))


def test_an_answer_is_one_observation_of_the_asked_form_and_a_list_of_guesses_fails() -> None:
    task, memory = _open(_first("chain"))
    check = task.goals[0]
    name, prefix, value = check["name"], check["prefix"], check["value"]

    def add(*texts: str) -> float:
        anyio.run(memory.call, "add_observations", {"observations": [{"entityName": name, "contents": list(texts)}]})
        return float(score(task, memory))

    assert add(f"{prefix} Nowhere") == 0.0
    assert add(f"{prefix} {value}") == 0.0  # two answers: a guess among candidates
    deletion = {"entityName": name, "observations": [f"{prefix} Nowhere"]}
    anyio.run(memory.call, "delete_observations", {"deletions": [deletion]})
    assert score(task, memory) == 1.0


def test_inviting_everyone_fails_the_only_check() -> None:
    task, memory = _open(_first("collect"))
    event = task.goals[0]["name"]
    everyone = [e["name"] for e in memory.entities if e["entityType"] == "person"]
    anyio.run(
        memory.call, "create_entities", {"entities": [{"name": event, "entityType": "event", "observations": []}]}
    )
    relations = [{"from": p, "to": event, "relationType": "invited_to"} for p in everyone]
    anyio.run(memory.call, "create_relations", {"relations": relations})
    found = parts(task, memory)
    assert found["goals"] == (len(task.goals) - 1) / len(task.goals)  # every invitation but the "only them" check


def test_changing_a_look_alike_costs_reward() -> None:
    task, memory = _open(_first("correct", lambda t: bool(t.keep)))
    wrong = next(c for c in task.goals if c["kind"] == "no_observation")["contains"]
    twins = [c["name"] for c in task.keep]
    deletions = [{"entityName": p, "observations": [wrong]} for p in [task.goals[0]["name"], *twins]]
    anyio.run(memory.call, "delete_observations", {"deletions": deletions})
    right = {"entityName": task.goals[0]["name"], "contents": [task.goals[0]["contains"]]}
    anyio.run(memory.call, "add_observations", {"observations": [right]})
    found = parts(task, memory)
    assert found["goals"] == 1.0 and found["broken"] == 1.0 and score(task, memory) == 0.5
