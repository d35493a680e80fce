"""The generated email tasks: counts, tiers, a held-out test split, stable ids, the cache, their mailboxes, and play.

The full check (every task played) is ``openenv-mcp tasks email --check --all``; here a seeded sample is played
through the one path, every task's plan is drawn for the hygiene checks, and wrong answers are shown to cost.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openenv_mcp import EnvClient
from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.servers.email import environment, generator
from openenv_mcp.servers.email.settings import EmailSettings
from openenv_mcp.servers.email.sim import SimMailbox, fixture, mailbox_of
from openenv_mcp.servers.email.tasks import EmailTask
from openenv_mcp.servers.email.world import company_pool
from tests.support import LiveServer, live_server

GENERATED = [t for t in environment.tasks() if t.id.startswith("email-g")]
PINNED = "9278f6b67b9d519b"


@pytest.fixture(scope="module")
def sim() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=16) as server:
        yield server


def _plan(task: Any) -> Any:
    _, _, family, seed = task.id.split("-")
    return generator.draw(family, int(seed))


def test_a_thousand_train_and_two_hundred_test_tasks_in_three_tiers_with_clean_prompts() -> None:
    counts = Counter((task.split, task.difficulty) for task in GENERATED)
    for split, least in (("train", 1000), ("test", 200)):
        assert sum(n for (s, _), n in counts.items() if s == split) >= least
        assert all(counts[split, tier] >= 30 for tier in ("easy", "medium", "hard")), counts
    assert hygiene(environment.tasks()) == []  # no prompt twice (so no test prompt in train), every task tiered
    families = Counter(task.id.split("-")[2] for task in GENERATED)
    assert set(families) == set(generator.FAMILIES) and min(families.values()) >= 200, families


def test_test_tasks_use_held_out_companies_and_phrasings_only() -> None:
    seen: dict[str, dict[str, set[str]]] = {
        split: {"companies": set(), "phrasing": set()} for split in ("train", "test")
    }
    for task in GENERATED:
        plan = _plan(task)
        seen[task.split]["companies"] |= plan.companies
        seen[task.split]["phrasing"].add(f"{task.id.split('-')[2]}:{plan.phrasing}")
    held_out = {c.name for c in company_pool(test=True)}
    assert seen["test"]["companies"] and seen["test"]["companies"] <= held_out
    assert not seen["train"]["companies"] & held_out
    assert seen["test"]["phrasing"] and not seen["test"]["phrasing"] & seen["train"]["phrasing"]


def test_a_seeded_sample_of_generated_tasks_plays_to_full_reward_through_the_one_path() -> None:
    report = check_task_set(environment, sample=150, seed=24, tasks=GENERATED)
    assert report.ok and report.played == 150, report.failures[:5]


def test_a_generated_task_is_the_same_in_every_release_of_its_version_and_for_every_episode_seed() -> None:
    # the ids and what they mean are pinned: changing the generator means a new VERSION (and this digest)
    digest = hashlib.sha256()
    for family in generator.FAMILIES:
        for seed in range(12):
            plan = generator.draw(family, seed)
            expect = [[e.kind, sorted(e.to), e.targets, e.facts, e.subject, e.avoid] for e in plan.expect]
            drawn = [family, seed, plan.prompt, expect, [letter.raw for letter in plan.letters]]
            digest.update(json.dumps(drawn, sort_keys=True).encode())
    assert (generator.VERSION, digest.hexdigest()[:16]) == (1, PINNED)

    task = environment.tasks().get("email-g1-answer-0003")

    async def inbox(seed: int) -> Any:
        mailbox = await SimMailbox.open(task, seed, EmailSettings())
        return [await mailbox.fetch(s.message.id, mark_read=False) for s in mailbox.fixture.folders["INBOX"]]

    assert anyio.run(inbox, 1) == anyio.run(inbox, 2)


def test_a_generated_mailbox_is_the_shipped_one_with_the_scenario_filed_in_date_order() -> None:
    shipped = fixture()
    for task in GENERATED[::97]:
        assert isinstance(task, EmailTask) and task.scenario is not None
        mailbox = mailbox_of(task.scenario)
        added = set(mailbox.by_message_id) - set(shipped.by_message_id)
        assert set(shipped.by_message_id) <= set(mailbox.by_message_id) and added
        for expectation in task.expect:
            assert set(expectation.targets) <= added  # a task is about its own scenario's messages
        for name, stored in mailbox.folders.items():
            assert [s.message.id for s in stored] == [f"{name}/{uid}" for uid in range(1, len(stored) + 1)]
            dates = [s.message.date for s in stored]
            assert dates == sorted(dates)  # type: ignore[type-var]
    assert mailbox_of(None) is shipped and len(shipped.folders["INBOX"]) == 38  # the shipped one is untouched


def test_the_task_table_is_cached_per_generator_and_a_broken_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENENV_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(generator, "PER_FAMILY", 6)  # a small table: the same code path, less drawing
    fresh = list(generator.generate(per_family=6))
    generator.generated.cache_clear()
    try:
        made = generator.generated()
        (table,) = (tmp_path / "openenv-mcp").glob("email-tasks-g1-*.json")
        generator.generated.cache_clear()
        again = generator.generated()  # read back
        table.write_text("[{")
        generator.generated.cache_clear()
        rebuilt = generator.generated()
    finally:
        generator.generated.cache_clear()
    for tasks in (made, again, rebuilt):
        assert [_fields(t) for t in tasks] == [_fields(t) for t in fresh]
    assert json.loads(table.read_text())[0]["id"] == fresh[0].id


def _fields(task: EmailTask) -> tuple[Any, ...]:
    assert task.scenario is not None and isinstance(task.scenario.messages, functools.partial)
    return (task.id, task.split, task.difficulty, task.prompt, task.expect, task.scenario.messages.args)


def _first(family: str, kind: str, *, avoid: bool = False) -> EmailTask:
    return next(
        t
        for t in GENERATED
        if isinstance(t, EmailTask)
        and t.id.split("-")[2] == family
        and t.expect[0].kind == kind
        and (bool(t.expect[0].avoid) or not avoid)
    )


def _message(task: EmailTask, message_id: str) -> str:
    return mailbox_of(task.scenario).by_message_id[message_id].id


def test_naming_a_look_alikes_value_earns_nothing_for_facts(sim: LiveServer) -> None:
    task = _first("answer", "reply", avoid=True)
    expected = task.expect[0]
    target = _message(task, expected.targets[-1])
    right, wrong = expected.facts[0][0], expected.avoid[0][0]
    with EnvClient(sim.url) as env:
        for body, reward in ((f"It is {right}.", 1.0), (f"It is {wrong}.", 0.5), (f"{right} or {wrong}", 0.5)):
            env.reset(task_id=task.id)
            sent = env.step("reply_email", {"message_id": target, "body": body, "reply_all": len(expected.to) > 1})
            assert (sent.reward, sent.done) == (reward, True), body


def test_forwarding_what_no_rule_routes_costs_reward(sim: LiveServer) -> None:
    task = _first("triage", "forward")
    mailbox = mailbox_of(task.scenario)
    wanted = {t for e in task.expect for t in e.targets}
    folder = mailbox.by_message_id[task.expect[0].targets[0]].folder
    stray = next(s.message for s in mailbox.folders[folder] if s.message.message_id not in wanted)
    first = mailbox.by_message_id[task.expect[0].targets[0]].id
    share = 1 / len(task.expect)
    with EnvClient(sim.url) as env:
        env.reset(task_id=task.id)
        right = env.step("forward_email", {"message_id": first, "to": sorted(task.expect[0].to)})
        extra = env.step("forward_email", {"message_id": stray.id, "to": sorted(task.expect[0].to)})
    assert right.reward == pytest.approx(share)
    assert extra.reward == pytest.approx(max(0.0, share - 0.2) - share) and extra.reward < 0 and not extra.done
