"""The generated memory tasks: questions answered into the graph and updates, at many parameters.

A generated task is a function of the generator's :data:`VERSION`, its family and its seed, and its id says them
(``memory-g1-chain-0042``): the seed drives a :class:`random.Random` that draws the graph (:func:`.world.world`),
the subject, the look-alikes, a level (0-2) and the prompt's phrasing, so the same id is the same task in every
release of this version. The graph an episode starts from is the task's, plus the unrelated people the sim adds
from the episode's seed (``backends.open_sim``), whose names and organizations the generator never uses: no
answer depends on the episode's seed, and the reference solution (``tasks.solve``) needs only the task.

Splits: seed ``s`` is a test task when ``s % 6 == 5``. Test tasks hold out what train never has: their
organizations and projects come from the held-out quarter of those pools, and their prompt uses the held-out
(last) phrasing of each family. A seed whose prompt another task already has is skipped.

Tier, from what the plan reports (:meth:`.plans.Plan.load`): easy at most 1, medium 2-3, hard 4 or more.

Drawing every plan takes over a second, far too much for a server's start-up, so the task table (ids, splits,
tiers, prompts, checks: no graphs) is cached as JSON in the user's cache directory (``$XDG_CACHE_HOME/openenv-mcp``:
:mod:`openenv_mcp.environment.cache`) under a name that carries a hash of the generator's source: a changed
generator never reads a stale table. A task's graph is drawn again when an episode of it opens (``MemoryTask.build``).
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable, Iterator
from typing import Any

from memory_env.plans import Plan
from memory_env.questions import chain, collect, count, lookup, path3
from memory_env.tasks import Graph, MemoryTask, load_tasks
from memory_env.updates import correct, forget, link, move, observe, record
from openenv_mcp import TaskSet
from openenv_mcp.environment.cache import cached_table, source_fingerprint

__all__ = ["FAMILIES", "PER_FAMILY", "VERSION", "draw", "generate", "generated", "load_all", "tier"]

_log = logging.getLogger(__name__)

VERSION = 1
PER_FAMILY = 130
FAMILIES: dict[str, Callable[..., Plan]] = {
    "lookup": lookup,
    "chain": chain,
    "path3": path3,
    "count": count,
    "collect": collect,
    "record": record,
    "observe": observe,
    "move": move,
    "forget": forget,
    "correct": correct,
    "link": link,
}


def split_of(seed: int) -> str:
    return "test" if seed % 6 == 5 else "train"


def draw(family: str, seed: int) -> Plan:
    """The plan of ``family`` at ``seed`` (the same every time)."""
    rng = random.Random(f"memory-g{VERSION}-{family}-{seed}")
    level = rng.choice((0, 0, 0, 1, 1, 1, 1, 2, 2, 2))
    return FAMILIES[family](rng, test=split_of(seed) == "test", level=level)


def tier(plan: Plan) -> str:
    load = plan.load()
    return "easy" if load <= 1 else "medium" if load <= 3 else "hard"


def generate(*, per_family: int = PER_FAMILY) -> Iterator[MemoryTask]:
    """Every generated task, family by family, seeds ``0 .. per_family - 1`` (skipping repeated prompts)."""
    seen: set[str] = set()
    for family in FAMILIES:
        for seed in range(per_family):
            plan = draw(family, seed)
            if plan.prompt in seen:
                continue
            seen.add(plan.prompt)
            yield _task(
                {
                    "id": f"memory-g{VERSION}-{family}-{seed:04d}",
                    "split": split_of(seed),
                    "difficulty": tier(plan),
                    "prompt": plan.prompt,
                    "goals": plan.goals,
                    "keep": plan.keep,
                }
            )


@functools.lru_cache(maxsize=256)
def _graph(family: str, seed: int) -> Graph:
    graph = draw(family, seed).graph
    return graph.entities, graph.relations


def _task(row: dict[str, Any]) -> MemoryTask:
    _, _, family, seed = row["id"].split("-")
    return MemoryTask(
        id=row["id"],
        split=row["split"],
        prompt=row["prompt"],
        goals=row["goals"],
        keep=row["keep"],
        build=functools.partial(_graph, family, int(seed)),
        difficulty=row["difficulty"],
    )


def load_all() -> TaskSet:
    """The environment's tasks: the hand-written ones, then the generated ones."""
    return TaskSet([*load_tasks(), *generated()])


@functools.cache
def generated() -> tuple[MemoryTask, ...]:
    """The generated tasks, from the cache when it holds this generator's table, else drawn (and cached)."""
    modules = ["generator.py", "plans.py", "questions.py", "updates.py", "world.py"]
    fingerprint = source_fingerprint("memory_env", modules, extra=f"{VERSION}:{PER_FAMILY}")
    rows = cached_table(f"memory-tasks-g{VERSION}", fingerprint, _rows)
    return tuple(_task(row) for row in rows)


def _rows() -> list[dict[str, Any]]:
    return [
        {"id": t.id, "split": t.split, "difficulty": t.difficulty, "prompt": t.prompt, "goals": t.goals, "keep": t.keep}
        for t in generate(per_family=PER_FAMILY)
    ]
