"""Function families made of a catalogue of small problems, one task each (see ``words.py``, ``shapes.py``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import FunctionFamily, Params

__all__ = ["Catalogue", "Op"]


@dataclass(frozen=True)
class Op:
    """One function to write.

    Attributes:
        signature: ``def name(arguments) -> result``, as the prompt shows it.
        describe: What it returns.
        call: What it must return (the expected results come from here).
        source: The reference function's source.
        draw: Random arguments of a size (small for the random test, ``large`` for the large one).
        edge: Arguments of the edge-case test.
        points: Difficulty points.
        large: The size of the large test's one call.
    """

    signature: str
    describe: str
    call: Callable[..., Any]
    source: str
    draw: Callable[[random.Random, int], tuple[Any, ...]]
    edge: tuple[tuple[Any, ...], ...]
    points: int = 0
    large: int = 1000


class Catalogue(FunctionFamily):
    """One task per :class:`Op`; the test split holds out the ops named in ``HELD_OUT``."""

    OPS: ClassVar[dict[str, Op]]
    HELD_OUT: ClassVar[tuple[str, ...]]
    TOPIC: ClassVar[str]

    def grid(self) -> Iterator[dict[str, Any]]:
        for op in self.OPS:
            yield {"op": op}

    def holdout(self, p: Params) -> Any:
        return p["op"]

    def held_out(self, key: Any) -> bool:
        return bool(key in self.HELD_OUT)

    def points(self, p: Params) -> int:
        return self.OPS[p["op"]].points

    def title(self, p: Params) -> str:
        return f"{self.TOPIC}: {self.function(p)}"

    def function(self, p: Params) -> str:
        return self.OPS[p["op"]].signature.split("(")[0].removeprefix("def ")

    def signature(self, p: Params) -> str:
        return self.OPS[p["op"]].signature

    def describe(self, p: Params) -> str:
        return self.OPS[p["op"]].describe

    def examples(self, p: Params, rng: random.Random) -> list[tuple[Any, ...]]:
        draw = self.OPS[p["op"]].draw
        return [draw(rng, 6) for _ in range(3)]

    def hidden(self, p: Params, rng: random.Random) -> list[list[tuple[Any, ...]]]:
        op = self.OPS[p["op"]]
        return [list(op.edge), [op.draw(rng, rng.randint(1, 20)) for _ in range(30)], [op.draw(rng, op.large)]]

    def call(self, p: Params, args: tuple[Any, ...]) -> Any:
        return self.OPS[p["op"]].call(*args)

    def program(self, p: Params) -> str:
        return self.OPS[p["op"]].source
