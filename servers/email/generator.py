"""The generated email tasks: scenarios filed into the shipped mailbox, in train and held-out test splits.

A generated task is a function of three things: the generator's :data:`VERSION`, its family and its seed. Its id
says them (``email-g1-answer-0042``); the seed drives a :class:`random.Random` that draws the scenario (people,
suppliers, values, look-alikes, the prompt's phrasing and a level), so the same id is the same task in every
release of this version. The task's mailbox is the shipped one with the scenario's messages filed in (see
:func:`.sim.mailbox_of`): it depends on the task alone, never on an episode's seed, so the reference solution
(:func:`.tasks.solve`) needs only the task.

Splits: seed ``s`` is a test task when ``s % 6 == 5``. Test tasks hold out two things train never has: their
suppliers come from the held-out quarter of the companies (:func:`.world.company_pool`), and their prompt uses
the held-out phrasing of each family's prompt lists. A seed whose prompt another task already has is skipped.

Tier, from what the plan reports (:meth:`.families.Plan.load`): easy at most 1, medium 2-3, hard 4 or more.

Drawing every plan takes about a quarter of a second, too much for a server's start-up, so the task table (ids,
splits, tiers, prompts, expectations: no messages) is cached as JSON in the user's cache directory
(``$XDG_CACHE_HOME/openenv-mcp``: :mod:`openenv_mcp.environment.cache`), under a name that carries a hash of
the generator's source: a changed generator never reads a stale table. Reading it back takes about 20 ms. The
scenario messages are drawn again only when an episode of the task opens.
"""

from __future__ import annotations

import functools
import logging
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

from openenv_mcp import TaskSet
from openenv_mcp.environment.cache import cached_table, source_fingerprint
from openenv_mcp.servers.email.families import Family, Plan
from openenv_mcp.servers.email.families.answer import answer
from openenv_mcp.servers.email.families.brief import brief
from openenv_mcp.servers.email.families.forward import forward
from openenv_mcp.servers.email.families.schedule import schedule
from openenv_mcp.servers.email.families.triage import triage
from openenv_mcp.servers.email.sim import Scenario
from openenv_mcp.servers.email.tasks import EmailTask, Expectation, common_tail, load_tasks

__all__ = ["FAMILIES", "PER_FAMILY", "VERSION", "draw", "generate", "generated", "load_all", "tier"]

_log = logging.getLogger(__name__)

VERSION = 1
PER_FAMILY = 300
FAMILIES: dict[str, Family] = {
    "answer": answer,
    "forward": forward,
    "schedule": schedule,
    "triage": triage,
    "brief": brief,
}


def split_of(seed: int) -> str:
    return "test" if seed % 6 == 5 else "train"


def draw(family: str, seed: int) -> Plan:
    """The scenario of ``family`` at ``seed`` (the same every time)."""
    rng = random.Random(f"email-g{VERSION}-{family}-{seed}")
    level = rng.choice((0, 0, 0, 1, 1, 1, 1, 2, 2, 2))
    return FAMILIES[family](rng, tag=f"g{VERSION}-{family}-{seed}", test=split_of(seed) == "test", level=level)


def tier(plan: Plan) -> str:
    load = plan.load()
    return "easy" if load <= 1 else "medium" if load <= 3 else "hard"


def generate(*, per_family: int = PER_FAMILY) -> Iterator[EmailTask]:
    """Every generated task, family by family, seeds ``0 .. per_family - 1`` (skipping repeated prompts)."""
    seen: set[str] = set()
    tail = common_tail()
    for family in FAMILIES:
        for seed in range(per_family):
            plan = draw(family, seed)
            if plan.prompt in seen:
                continue
            seen.add(plan.prompt)
            task_id = f"email-g{VERSION}-{family}-{seed:04d}"
            yield EmailTask(
                id=task_id,
                split=split_of(seed),
                prompt=plan.prompt + tail,
                expect=plan.expect,
                scenario=Scenario(task_id, functools.partial(_messages, family, seed)),
                difficulty=tier(plan),
            )


def _messages(family: str, seed: int) -> list[dict[str, Any]]:
    return [letter.raw for letter in draw(family, seed).letters]


def load_all() -> TaskSet:
    """The environment's tasks: the hand-written ones (``data/tasks.json``), then the generated ones."""
    return TaskSet([*load_tasks(), *generated()])


@functools.cache
def generated() -> tuple[EmailTask, ...]:
    """The generated tasks, from the cache when it holds this generator's table, else drawn (and cached)."""
    fingerprint = source_fingerprint(
        "openenv_mcp.servers.email", ["generator.py", "world.py", "families"], extra=f"{VERSION}:{PER_FAMILY}"
    )
    rows = cached_table(
        f"email-tasks-g{VERSION}", fingerprint, lambda: [_row(task) for task in generate(per_family=PER_FAMILY)]
    )
    tail = common_tail()
    return tuple(_task(row, tail, sys.intern) for row in rows)


def _row(task: EmailTask) -> dict[str, Any]:
    return {
        "id": task.id,
        "split": task.split,
        "difficulty": task.difficulty,
        "prompt": task.prompt.removesuffix(common_tail()),
        "expect": [
            {
                "kind": e.kind,
                "to": sorted(e.to),
                "targets": list(e.targets),
                "facts": [list(f) for f in e.facts],
                "subject": [list(s) for s in e.subject],
                "avoid": [list(a) for a in e.avoid],
            }
            for e in task.expect
        ],
    }


def _task(row: dict[str, Any], tail: str, same: Callable[[str], str]) -> EmailTask:
    """A task from its cached row; ``same`` shares equal strings (a date's spellings recur in many tasks)."""
    _, _, family, seed = row["id"].split("-")
    return EmailTask(
        id=row["id"],
        split=row["split"],
        prompt=row["prompt"] + tail,
        expect=tuple(
            Expectation(
                kind=e["kind"],
                to=frozenset(map(same, e["to"])),
                targets=tuple(e["targets"]),
                facts=tuple(tuple(map(same, f)) for f in e["facts"]),
                subject=tuple(tuple(map(same, s)) for s in e["subject"]),
                avoid=tuple(tuple(map(same, a)) for a in e["avoid"]),
            )
            for e in row["expect"]
        ),
        scenario=Scenario(row["id"], functools.partial(_messages, family, int(seed))),
        difficulty=row["difficulty"],
    )
