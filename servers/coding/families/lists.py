"""Function tasks over lists of integers: pipelines of one to three steps, with or without a final reduction."""

from __future__ import annotations

import itertools
import random
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from openenv_mcp.servers.coding.families.base import FunctionFamily, Params, ints

__all__ = ["ListPipeline"]

Step = Callable[[list[int], int], list[int]]


def _rotate(xs: list[int], k: int) -> list[int]:
    turned = deque(xs)
    turned.rotate(-k)
    return list(turned)


# name -> (takes an argument from, what the step does as the prompt says it, what it does, reference lines)
_STEPS: dict[str, tuple[tuple[int, ...], str, Step, str]] = {
    "sort": ((), "sort the values in increasing order", lambda xs, _: sorted(xs), "xs = sorted(xs)"),
    "sort-desc": ((), "sort the values in decreasing order", lambda xs, _: sorted(xs)[::-1],
                  "xs = sorted(xs, reverse=True)"),
    "reverse": ((), "reverse the order of the values", lambda xs, _: xs[::-1], "xs = xs[::-1]"),
    "dedupe": ((), "remove repeated values, keeping the first occurrence of each",
               lambda xs, _: list(dict.fromkeys(xs)),
               "seen = set()\nkept = []\nfor x in xs:\n    if x not in seen:\n        seen.add(x)\n"
               "        kept.append(x)\nxs = kept"),
    "evens": ((), "keep only the even values", lambda xs, _: [x for x in xs if not x & 1],
              "xs = [x for x in xs if x % 2 == 0]"),
    "odds": ((), "keep only the odd values", lambda xs, _: [x for x in xs if x & 1],
             "xs = [x for x in xs if x % 2 != 0]"),
    "abs": ((), "replace every value by its absolute value", lambda xs, _: list(map(abs, xs)),
            "xs = [x if x >= 0 else -x for x in xs]"),
    "square": ((), "replace every value by its square", lambda xs, _: [x**2 for x in xs], "xs = [x * x for x in xs]"),
    "prefix-sums": ((), "replace the list by its running sums (value i becomes the sum of values 0 to i)",
                    lambda xs, _: list(itertools.accumulate(xs)),
                    "total = 0\nout = []\nfor x in xs:\n    total += x\n    out.append(total)\nxs = out"),
    "diffs": ((), "replace the list by the differences of neighbours: each value minus the one before it (one "
              "value fewer; an empty list stays empty)", lambda xs, _: [b - a for a, b in itertools.pairwise(xs)],
              "xs = [xs[i] - xs[i - 1] for i in range(1, len(xs))]"),
    "greater": ((0, 5, 10), "keep only the values greater than K", lambda xs, k: [x for x in xs if x > k],
                "xs = [x for x in xs if x > K]"),
    "times": ((2, 3, -1), "multiply every value by K", lambda xs, k: [x * k for x in xs], "xs = [x * K for x in xs]"),
    "mod": ((3, 5, 10), "replace every value x by x mod K, the remainder from 0 to K-1 (for negative x too: -1 mod "
            "K is K-1)", lambda xs, k: [(x % k + k) % k for x in xs], "xs = [x % K for x in xs]"),
    "take": ((3, 5), "keep only the first K values (all of them when there are fewer)", lambda xs, k: xs[:k],
             "xs = xs[:K]"),
    "drop": ((1, 2), "remove the first K values (all of them when there are fewer)", lambda xs, k: xs[k:],
             "xs = xs[K:]"),
    "rotate": ((1, 2), "rotate the list left by K places: the first value moves to the end, K times (an empty list "
               "stays empty)", _rotate, "if xs:\n    k = K % len(xs)\n    xs = xs[k:] + xs[:k]"),
}  # fmt: skip
_ORDER = ("sort", "sort-desc", "reverse", "rotate")
_ORDER_SENSITIVE = ("take", "drop", "diffs", "prefix-sums")
_SHRINKING = ("dedupe", "evens", "odds", "greater", "take", "drop", "diffs")
_REDUCERS = {
    "none": ("the resulting list", "list[int]", "return xs"),
    "sum": ("the sum of the resulting list (0 when it is empty)", "int", "return sum(xs)"),
    "len": ("how many values the resulting list holds", "int", "return len(xs)"),
    "max": ("the largest value of the resulting list, or None when it is empty", "int | None",
            "return max(xs) if xs else None"),
}  # fmt: skip


def _useful(steps: tuple[str, ...], reducer: str) -> bool:
    """No step that a later one undoes or that the result cannot show."""
    names = [step.split(":")[0] for step in steps]
    if len(set(names)) < len(names) or {"evens", "odds"} <= set(names):
        return False
    for i, name in enumerate(names):
        if name in _ORDER:
            later = names[i + 1 :]
            if reducer != "none" and not any(n in _ORDER_SENSITIVE for n in later):
                return False  # a sum, a count or a largest value does not depend on the order
            if later and later[0] in ("sort", "sort-desc"):
                return False
    return reducer != "len" or any(name in _SHRINKING for name in names)


def _instances(name: str) -> list[str]:
    arguments = _STEPS[name][0]
    return [f"{name}:{k}" for k in arguments] if arguments else [name]


def _share(key: str, size: int) -> int:
    """A stable pseudo-random number below ``size`` for ``key`` (CRC-32: the same on every platform and run)."""
    return zlib.crc32(key.encode()) % size


class ListPipeline(FunctionFamily):
    """``transform(xs)``: one to three steps on a list, then the list itself or a reduction of it (a sum, a count,
    the largest value); the test split holds out a fifth of the multi-step compositions (by the steps' names and
    the reduction, whatever the steps' arguments)."""

    name = "list-pipeline"

    def grid(self) -> Iterator[dict[str, Any]]:
        # every single step; a seeded share of the compositions: a cut on the steps' names (which keeps loading
        # fast), then one on names and reduction
        for length, by_names, by_key in ((1, 1, 1), (2, 1, 3), (3, 16, 4)):
            for names in itertools.permutations(_STEPS, length):
                if _share("/".join(names), by_names):
                    continue
                for reducer in _REDUCERS:
                    key = "/".join((*names, reducer))
                    if _share(key, by_key) or not _useful(names, reducer):
                        continue
                    if length == 1:  # each of its arguments
                        for step in _instances(names[0]):
                            yield {"steps": (step,), "reducer": reducer}
                    else:  # one argument per step, drawn by the composition's hash
                        choices = [_instances(name) for name in names]
                        yield {
                            "steps": tuple(c[_share(f"{key}/{i}", len(c))] for i, c in enumerate(choices)),
                            "reducer": reducer,
                        }

    def holdout(self, p: Params) -> Any:
        return (tuple(step.split(":")[0] for step in p["steps"]), p["reducer"])

    def held_out(self, key: Any) -> bool:
        names, reducer = key
        return len(names) > 1 and _share("test/" + "/".join((*names, reducer)), 5) == 0

    def points(self, p: Params) -> int:
        return len(p["steps"]) - 1

    def title(self, p: Params) -> str:
        ending = "" if p["reducer"] == "none" else f", then {p['reducer']}"
        return "List steps: " + ", then ".join(p["steps"]) + ending

    def function(self, p: Params) -> str:
        return "transform"

    def signature(self, p: Params) -> str:
        return f"def transform(xs: list[int]) -> {_REDUCERS[p['reducer']][1]}"

    def describe(self, p: Params) -> str:
        lines = []
        for n, step in enumerate(p["steps"], start=1):
            name, _, k = step.partition(":")
            text = _STEPS[name][1].replace("K", k)
            lines.append(f"{n}. {text[0].upper()}{text[1:]}.")
        return (
            "It takes a list of integers (at most 3000 of them, each between -1000 and 1000) and applies these "
            f"steps to it, in this order, then returns {_REDUCERS[p['reducer']][0]}:\n" + "\n".join(lines)
        )

    def examples(self, p: Params, rng: random.Random) -> list[tuple[Any, ...]]:
        return [(ints(rng, rng.randint(5, 8), -9, 12),), (ints(rng, 4, -3, 6),)]

    def hidden(self, p: Params, rng: random.Random) -> list[list[tuple[Any, ...]]]:
        return [
            [([],), ([0],), ([-3],), ([7, 7, 7],), ([2, -2],)],
            [(ints(rng, rng.randint(0, 15), -20, 20),) for _ in range(30)],
            [(ints(rng, 3000, -1000, 1000),)],
        ]

    def call(self, p: Params, args: tuple[Any, ...]) -> Any:
        xs = list(args[0])
        for step in p["steps"]:
            name, _, k = step.partition(":")
            xs = _STEPS[name][2](xs, int(k or 0))
        reducer = p["reducer"]
        if reducer == "none":
            return xs
        if reducer == "sum":
            return sum(xs)
        if reducer == "len":
            return len(xs)
        return max(xs, default=None)

    def program(self, p: Params) -> str:
        body = []
        for step in p["steps"]:
            name, _, k = step.partition(":")
            body += _STEPS[name][3].replace("K", k).splitlines()
        body.append(_REDUCERS[p["reducer"]][2])
        return "def transform(xs):\n    xs = list(xs)\n" + "".join(f"    {line}\n" for line in body)
