"""The SQL task set: its size, tiers and hygiene, the held-out split, stable ids, references played to 1.0 through
the one path, and every gold query giving the same rows on SQLite and PostgreSQL."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import psycopg
import pytest

from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.servers.sql import environment
from openenv_mcp.servers.sql.backends import fixture_database
from openenv_mcp.servers.sql.families import FAMILIES
from openenv_mcp.servers.sql.generator import (
    VERSION,
    generate,
    held_out,
    judge,
    load_tasks,
    postgres_runner,
    rejected,
    sqlite_runner,
    tier,
)
from openenv_mcp.servers.sql.tasks import SqlTask, hand_written

TASKS = environment.tasks()


def test_the_set_has_a_thousand_train_and_two_hundred_test_tasks_in_three_tiers() -> None:
    splits = Counter(task.split for task in TASKS)
    assert splits["train"] >= 1000 and splits["test"] >= 200, splits
    for split in ("train", "test"):
        tiers = Counter(task.difficulty for task in TASKS if task.split == split)
        assert set(tiers) == {"easy", "medium", "hard"} and min(tiers.values()) >= 0.2 * splits[split], tiers
    assert hygiene(TASKS) == []  # unique ids and prompts (no test prompt in train), a difficulty on each
    hand = [task for task in TASKS if isinstance(task, SqlTask) and task.family == "hand-written"]
    assert [task.id for task in hand] == [f"sql-{i:03d}" for i in range(1, 35)]  # kept, with their ids


def test_test_tasks_ask_about_held_out_values_that_train_never_asks_the_same_question_about() -> None:
    candidates = list(generate(skip=rejected()))
    anchors: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for candidate in candidates:
        kind, value = candidate.anchor.split(":", 1)
        assert (candidate.task.split == "test") == held_out(kind, value if kind in ("period", "name") else int(value))
        anchors[candidate.family.name][candidate.task.split].add(candidate.anchor)
    for family, split in anchors.items():
        assert not split["train"] & split["test"], family
    families = {candidate.family.name for candidate in candidates}
    assert families == {family.name for family in FAMILIES}  # every family has tasks left after judging
    assert {name for name, split in anchors.items() if split["test"]} == families  # and test tasks


def test_ids_are_a_function_of_the_generator_version_and_parameters() -> None:
    first = {c.task.id: c.task for c in generate()}
    again = {c.task.id: c.task for c in generate()}
    assert first == again and len(first) == sum(1 for _ in generate())
    assert all(task_id.startswith(f"sql-g{VERSION}-") for task_id in first)
    pinned = first["sql-g1-top-products-" + _digest("top-products", "k=3|p=2024-Q3")]
    assert pinned.prompt.startswith("Which 3 products sold the most units in orders placed in Q3 2024")
    assert pinned.gold_sql.endswith("ORDER BY units DESC, pr.product_id LIMIT 3")
    other_seed = {c.task.id: c.task.prompt for c in generate(seed=1)}
    assert other_seed.keys() == first.keys()  # the seed picks wordings, never ids


def _digest(family: str, key: str) -> str:
    import hashlib

    return hashlib.sha256(f"{VERSION}:{family}:{key}".encode()).hexdigest()[:6]


def test_difficulty_follows_what_the_gold_query_needs() -> None:
    points = {family.name: family.points for family in FAMILIES}
    assert points["price-range"] == 0 and tier(0) == "easy"
    assert points["customer-products"] == 2 and tier(2) == "medium"  # three tables
    assert points["never-bought"] == 7 and tier(7) == "hard"  # six tables and NOT EXISTS
    assert {tier(p) for p in points.values()} == {"easy", "medium", "hard"}


def test_a_seeded_sample_of_references_earns_full_reward_through_the_one_path() -> None:
    report = check_task_set(environment, sample=60, seed=24)
    assert report.ok, report.render()
    assert report.played == 60


@pytest.mark.prod
def test_every_candidate_judged_on_sqlite_and_postgresql_gives_the_shipped_rejections(pg_url: str) -> None:
    """Every kept gold query has the same rows on both engines, non-empty, without a tie at its LIMIT; every
    rejection in data/rejected.json is still one (the file is current)."""
    shipped = rejected()
    with psycopg.connect(pg_url, autocommit=True) as pg:
        engines = [sqlite_runner(fixture_database()), postgres_runner(pg)]
        found = {c.task.id: why for c in generate() if (why := judge(c, engines)) is not None}
    assert found.keys() == shipped.keys(), sorted(found.keys() ^ shipped.keys())[:10]
    assert not [why for why in found.values() if "disagree" in why]


def test_the_generated_tasks_come_back_from_the_cache_as_generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENENV_CACHE_HOME", str(tmp_path))
    generated = [*hand_written(), *(candidate.task for candidate in generate(skip=rejected()))]
    assert list(load_tasks()) == generated  # made, and kept
    [kept] = tmp_path.rglob("sql-tasks-*.json")
    assert list(load_tasks()) == generated  # read back
    kept.write_text("[]")  # a table under the same fingerprint is what the next start reads
    assert len(load_tasks()) == len(hand_written())
