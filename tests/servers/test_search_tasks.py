"""The search task set: its size, tiers and hygiene, the held-out split, answers stated in their evidence, every
hop's query finding its article, stable ids, and references played to 1.0 through the one path."""

from __future__ import annotations

import hashlib
from collections import Counter

import anyio

from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.environment.tasks import stratified_sample
from openenv_mcp.servers.search import environment
from openenv_mcp.servers.search.backends import SqliteSearchBackend
from openenv_mcp.servers.search.corpus import corpus
from openenv_mcp.servers.search.generator import VERSION, fact_of, generate, held_out
from openenv_mcp.servers.search.query import parse_query
from openenv_mcp.servers.search.questions import TEMPLATES
from openenv_mcp.servers.search.settings import SearchSettings
from openenv_mcp.servers.search.tasks import SearchTask, normalize_answer

TASKS = [task for task in environment.tasks() if isinstance(task, SearchTask)]
GENERATED = [task for task in TASKS if task.family != "hand-written"]
SAMPLE: int | None = 300


def test_the_set_has_a_thousand_train_and_two_hundred_test_tasks_in_three_tiers() -> None:
    splits = Counter(task.split for task in TASKS)
    assert splits["train"] >= 1000 and splits["test"] >= 200, splits
    for split in ("train", "test"):
        tiers = Counter(task.difficulty for task in TASKS if task.split == split)
        assert set(tiers) == {"easy", "medium", "hard"} and min(tiers.values()) >= 0.1 * splits[split], tiers
    assert hygiene(TASKS) == []  # unique ids and prompts (no test prompt in train), a difficulty on each
    hand = [task.id for task in TASKS if task.family == "hand-written"]
    assert hand == [f"search-{i:03d}" for i in range(1, 40)]  # kept, with their ids
    assert {task.family for task in GENERATED} == {template.name for template in TEMPLATES}
    hops = {template.name: template.hops for template in TEMPLATES}
    assert all(len(task.hops) == hops[task.family] for task in GENERATED)
    assert all(task.difficulty == {1: "easy", 2: "medium", 3: "hard"}[len(task.hops)] for task in TASKS)


def test_test_starts_from_held_out_entities_and_no_train_question_rests_on_a_test_fact() -> None:
    candidates = list(generate())
    assert all((c.task.split == "test") == held_out(c.anchor) for c in candidates)
    train = {fact_of(task) for task in TASKS if task.split == "train"}
    test = {fact_of(task) for task in TASKS if task.split == "test"}
    assert not train & test  # whatever path a question takes, its last article and answer are never shared
    anchors = Counter((c.anchor, c.task.split) for c in candidates)
    assert not {anchor for anchor, split in anchors if split == "test"} & {a for a, s in anchors if s == "train"}


def test_every_answer_is_stated_in_the_last_article_of_its_question() -> None:
    docs = {record.doc_id: normalize_answer(f"{record.title} {record.text}") for record in corpus()}
    for task in GENERATED:
        assert task.evidence == tuple(doc_id for _, doc_id in task.hops)
        assert normalize_answer(task.answers[0]) in docs[task.evidence[-1]], (task.id, task.answers[0])


def test_the_hop_queries_of_a_sample_covering_every_template_find_their_articles_in_the_top_ten() -> None:
    """The references search with these queries: a sample of them here (with SAMPLE = None all of them, about 2,800,
    pass: some 15 s on the test machine)."""
    chosen = GENERATED if SAMPLE is None else stratified_sample(GENERATED, SAMPLE, seed=7, key=lambda t: t.family)

    async def misses() -> list[tuple[str, str]]:
        backend = await SqliteSearchBackend.open(TASKS[0], 0, SearchSettings())
        missed = []
        for task in chosen:
            for query, doc_id in task.hops:
                hits = await backend.search(parse_query(query), k=10, category=None, date_from=None, date_to=None)
                if doc_id not in [hit.doc_id for hit in hits]:
                    missed.append((task.id, query))
        return missed

    assert anyio.run(misses) == []


def test_ids_are_a_function_of_the_generator_version_template_and_entity() -> None:
    candidates = list(generate())
    for c in candidates:
        digest = hashlib.sha256(f"{VERSION}:{c.template.name}:{c.anchor}".encode()).hexdigest()[:6]
        assert c.task.id == f"search-g{VERSION}-{c.template.name}-{digest}"
    first = {c.task.id: c.task for c in candidates}
    assert {c.task.id: c.task for c in generate()} == first
    other = {c.task.id: c.task for c in generate(seed=1)}  # the seed samples other entities, ids stay theirs
    shared = other.keys() & first.keys()
    assert other.keys() != first.keys() and shared and all(other[i] == first[i] for i in shared)


def test_a_seeded_sample_of_references_searches_fetches_and_earns_full_reward() -> None:
    report = check_task_set(environment, sample=40, seed=24)
    assert report.ok, report.render()
    assert report.played == 40
