"""What one seeded draw of a task family makes (a :class:`Plan`), and the helpers the families share."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_env.world import Graph

__all__ = ["Check", "Plan", "phrase"]

Check = dict[str, str]


@dataclass
class Plan:
    """One drawn task.

    Attributes:
        prompt: The task as the agent reads it.
        goals: Checks the end state must pass (each false at the start).
        graph: The graph the episode starts from.
        phrasing: Which prompt phrasing was used (the last of each family's list is held out for test).
        hops: Relations to follow from what the prompt names to what must be read or written.
        near: Look-alikes in the graph (people sharing a first name with someone the task is about, ...).
        keep: Checks that hold at the start and must still hold at the end (a look-alike left untouched).
    """

    prompt: str
    goals: list[Check]
    graph: Graph
    phrasing: str
    hops: int = 1
    near: int = 0
    keep: list[Check] = field(default_factory=list)

    def load(self) -> int:
        """How much the task asks: two points per hop beyond the first, a point per two look-alikes (at most
        two), a point per two goal checks beyond the first, a point for facts that must be left alone."""
        return 2 * (self.hops - 1) + min(self.near, 4) // 2 + (len(self.goals) - 1) // 2 + bool(self.keep)


def phrase(rng: random.Random, phrasings: Sequence[str], *, test: bool) -> tuple[int, str]:
    """A prompt phrasing: test tasks take the last one (held out), train tasks one of the others."""
    index = len(phrasings) - 1 if test else rng.randrange(len(phrasings) - 1)
    return index, phrasings[index]


def first_name(name: str) -> str:
    return name.split()[0]
