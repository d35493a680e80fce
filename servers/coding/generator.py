"""The generated coding tasks: every instance of every problem family, in train and test.

    from openenv_mcp.servers.coding.generator import VERSION, generate
    tasks = list(generate())      # deterministic: the same tasks, ids and prompts on every load

A task's id is a function of the generator's version, its family and its parameters
(``coding-g1-digits-3fa2c1``), never of its place in a list, so ids stay stable as families are added. Its split
comes from the family's hold-out rule (a knob's values, or whole compositions, seen only in test), its difficulty
from the family's points (0 easy, 1 medium, 2 or more hard). Prompts and their examples are made at load time
(about 1,300 tasks: tens of milliseconds); hidden tests, which can hold large inputs, only when an episode first
needs them, and the last few are kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from openenv_mcp.servers.coding.families import FAMILIES
from openenv_mcp.servers.coding.families.base import Family, Params
from openenv_mcp.servers.coding.judge import TestSuite
from openenv_mcp.servers.coding.problem import CodingTask

__all__ = ["VERSION", "Instance", "generate", "tier"]

VERSION = 1
TIERS = ("easy", "medium", "hard")


@dataclass(frozen=True, slots=True)
class Instance:
    """One generated problem: a family at one point of its grid; ``key`` (the task id) seeds its data."""

    family: Family
    params: tuple[tuple[str, Any], ...]
    key: str

    @property
    def p(self) -> Params:
        return dict(self.params)

    def suite(self) -> TestSuite:
        return _suite(self)

    def reference(self) -> str:
        return self.family.program(self.p)

    @property
    def holdout(self) -> Any:
        """What the test split holds out for this instance (see :meth:`Family.holdout`)."""
        return self.family.holdout(self.p)


@lru_cache(maxsize=16)
def _suite(instance: Instance) -> TestSuite:
    family, p = instance.family, instance.p
    return TestSuite(family.tests(p, instance.key), family.time_limit_s, family.harness(p))


def tier(points: int) -> str:
    """A difficulty tier from a family's points."""
    return TIERS[min(points, len(TIERS) - 1)]


def task_id(family: Family, params: tuple[tuple[str, Any], ...]) -> str:
    digest = hashlib.sha256(json.dumps([VERSION, family.name, params]).encode()).hexdigest()[:6]
    return f"coding-g{VERSION}-{family.name}-{digest}"


def generate() -> Iterator[CodingTask]:
    """Every generated task, family by family (train and test interleaved as their parameters fall)."""
    for family in FAMILIES:
        for point in family.grid():
            params = tuple(sorted(point.items()))
            key = task_id(family, params)
            instance = Instance(family, params, key)
            p = instance.p
            yield CodingTask(
                key,
                "test" if family.held_out(family.holdout(p)) else "train",
                family.prompt(p, key),
                instance,
                difficulty=tier(family.points(p)),
            )
