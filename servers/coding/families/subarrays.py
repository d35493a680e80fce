"""Families over the contiguous parts of an array: largest sums, counts by sum, longest and shortest parts, runs."""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, ints, join

__all__ = ["Subarrays"]


class Subarrays(ProgramFamily):
    """A question about the contiguous parts of an array; the test split holds out three questions."""

    name = "subarrays"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "max-sum": "the largest sum of a non-empty contiguous part",
        "max-sum-empty": "the largest sum of a contiguous part, where the empty part (sum 0) counts",
        "circular": "the largest sum of a non-empty contiguous part when the array is a circle (a part may wrap "
        "from the end to the start, but uses each position at most once)",
        "count-sum": "how many non-empty contiguous parts have sum exactly s",
        "longest-le": "the length of the longest contiguous part with sum at most s (0 if there is none); "
        "all values are non-negative here",
        "shortest-ge": "the length of the shortest contiguous part with sum at least s (0 if there is none); "
        "all values are positive here",
        "longest-equal": "the length of the longest contiguous part whose values are all equal",
        "longest-rising": "the length of the longest contiguous part whose values strictly increase from left to right",
    }
    WITH_S = ("count-sum", "longest-le", "shortest-ge")

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            yield {"question": question, "k": 0}
        for k in (3, 5, 7, 10):
            yield {"question": "count-div", "k": k}

    def holdout(self, p: Params) -> Any:
        return (p["question"], p["k"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("circular", 0), ("count-div", 7), ("shortest-ge", 0)))

    def points(self, p: Params) -> int:
        q = p["question"]
        return 0 if q.startswith("longest-") and q != "longest-le" else 1 if q.startswith("max-sum") else 2

    def title(self, p: Params) -> str:
        suffix = f" by {p['k']}" if p["k"] else ""
        return f"Contiguous parts: {p['question']}{suffix}"

    def statement(self, p: Params) -> str:
        q = p["question"]
        if q == "count-div":
            question = f"how many non-empty contiguous parts have a sum divisible by {p['k']}"
        else:
            question = self.QUESTIONS[q]
        low = 1 if q == "shortest-ge" else 0
        first = f"n and s (1 <= n <= 50000, {low} <= s <= 10^9)" if q in self.WITH_S else "n (1 <= n <= 50000)"
        return (
            f"The first line holds {first}; the second line holds n integers between -10^4 and 10^4. Print {question}."
        )

    def _values(self, p: Params, rng: random.Random, n: int, spread: int) -> list[int]:
        q = p["question"]
        low = 1 if q == "shortest-ge" else 0 if q == "longest-le" else -spread
        if q in ("longest-equal", "longest-rising"):
            return ints(rng, n, -3, 3) if rng.random() < 0.5 else ints(rng, n, low, spread)
        return ints(rng, n, low, spread)

    def _s(self, p: Params, rng: random.Random, n: int, spread: int) -> int:
        return rng.randint(1, max(1, n * spread // 8)) if p["question"] in self.WITH_S else 0

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        values = self._values(p, rng, 8, 9)
        return [(self._s(p, rng, 8, 9) if p["question"] != "count-sum" else rng.randint(0, 9), values)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        one = [1] if p["question"] in ("shortest-ge", "longest-le") else [-5]
        return [
            (1, one),
            (8, [4, 4, 4]),
            (10**9, [3, 1, 2]),
            (self._s(p, rng, 50, 20), self._values(p, rng, 50, 20)),
            (self._s(p, rng, 50000, 10**4), self._values(p, rng, 50000, 10**4)),
            (rng.randint(1, 30), self._values(p, rng, 50000, 3)),
        ]

    def render(self, p: Params, data: Any) -> str:
        s, values = data
        head = f"{len(values)} {s}" if p["question"] in self.WITH_S else f"{len(values)}"
        return f"{head}\n{join(values)}\n"

    def solve(self, p: Params, data: Any) -> str:
        s, values = data
        return f"{_subarrays(p['question'], p['k'], s, values)}\n"

    def program(self, p: Params) -> str:
        return _subarray_program(p["question"], p["k"])


def _subarrays(question: str, k: int, s: int, a: list[int]) -> int:
    prefix = list(itertools.accumulate(a, initial=0))
    if question in ("max-sum", "max-sum-empty", "circular"):
        best, low = -math.inf, 0
        for value in prefix[1:]:
            best = max(best, value - low)
            low = min(low, value)
        if question == "max-sum-empty":
            return max(0, int(best))
        if question == "circular" and max(a) > 0:
            worst, high = math.inf, 0
            for value in prefix[1:]:
                worst = min(worst, value - high)
                high = max(high, value)
            return int(max(best, prefix[-1] - worst)) if worst < prefix[-1] else int(best)
        return int(best)
    if question in ("count-sum", "count-div"):
        seen: Counter[int] = Counter()
        total = 0
        for value in prefix:
            key = value % k if question == "count-div" else value
            total += seen[key - s] if question == "count-sum" else seen[key]
            seen[key] += 1
        return total
    if question in ("longest-le", "shortest-ge"):
        best = 0
        for end in range(1, len(prefix)):
            if question == "longest-le":  # the first start whose part fits (prefix is non-decreasing)
                start = bisect.bisect_left(prefix, prefix[end] - s, 0, end)
                best = max(best, end - start)
            else:  # the last start whose part reaches s (prefix is increasing)
                start = bisect.bisect_right(prefix, prefix[end] - s, 0, end) - 1
                if start >= 0 and (best == 0 or end - start < best):
                    best = end - start
        return best
    best = run = 1
    for previous, value in itertools.pairwise(a):
        same = value == previous if question == "longest-equal" else value > previous
        run = run + 1 if same else 1
        best = max(best, run)
    return best


def _subarray_program(question: str, k: int) -> str:
    read = "import sys\ndata = sys.stdin.read().split()\n"
    if question in Subarrays.WITH_S:
        read += "n, s = int(data[0]), int(data[1])\na = list(map(int, data[2:2 + n]))\n"
    else:
        read += "n = int(data[0])\na = list(map(int, data[1:1 + n]))\n"
    bodies = {
        "max-sum": "best = cur = a[0]\nfor v in a[1:]:\n    cur = max(v, cur + v)\n    best = max(best, cur)\n",
        "max-sum-empty": "best = cur = 0\nfor v in a:\n    cur = max(0, cur + v)\n    best = max(best, cur)\n",
        "circular": (
            "best = cur = a[0]\nworst = low = a[0]\nfor v in a[1:]:\n    cur = max(v, cur + v)\n"
            "    best = max(best, cur)\n    low = min(v, low + v)\n    worst = min(worst, low)\n"
            "total = sum(a)\nif best > 0 and worst < total:\n    best = max(best, total - worst)\n"
        ),
        "count-sum": (
            "seen = {0: 1}\nrun = best = 0\nfor v in a:\n    run += v\n    best += seen.get(run - s, 0)\n"
            "    seen[run] = seen.get(run, 0) + 1\n"
        ),
        "count-div": (
            f"seen = [0] * {k}\nseen[0] = 1\nrun = best = 0\nfor v in a:\n    run = (run + v) % {k}\n"
            "    best += seen[run]\n    seen[run] += 1\n"
        ),
        "longest-le": (
            "best = left = run = 0\nfor right, v in enumerate(a):\n    run += v\n    while run > s:\n"
            "        run -= a[left]\n        left += 1\n    best = max(best, right - left + 1)\n"
        ),
        "shortest-ge": (
            "best = left = run = 0\nfor right, v in enumerate(a):\n    run += v\n"
            "    while left < right and run - a[left] >= s:\n        run -= a[left]\n        left += 1\n"
            "    if run >= s and (best == 0 or right - left + 1 < best):\n        best = right - left + 1\n"
        ),
        "longest-equal": (
            "best = run = 1\nfor i in range(1, n):\n    run = run + 1 if a[i] == a[i - 1] else 1\n"
            "    best = max(best, run)\n"
        ),
        "longest-rising": (
            "best = run = 1\nfor i in range(1, n):\n    run = run + 1 if a[i] > a[i - 1] else 1\n"
            "    best = max(best, run)\n"
        ),
    }
    return read + bodies[question] + "print(best)\n"
