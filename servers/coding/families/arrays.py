"""Families over arrays of integers: sliding windows, range queries, counting pairs."""

from __future__ import annotations

import bisect
import itertools
import operator
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, ints, join

__all__ = ["Pairs", "RangeQueries", "Windows"]


class Windows(ProgramFamily):
    """A statistic of every window of k consecutive values, k fixed in the statement or given in the input; the
    test split holds out one window size."""

    name = "windows"
    OPS: ClassVar[dict[str, Any]] = {
        "sum": "sum",
        "max": "largest value",
        "min": "smallest value",
        "distinct": "number of distinct values",
        "range": "largest value minus its smallest value",
    }
    SOLVE: ClassVar[dict[str, Any]] = {
        "sum": sum,
        "max": max,
        "min": min,
        "distinct": lambda w: len(set(w)),
        "range": lambda w: max(w) - min(w),
    }
    BODY: ClassVar[dict[str, Any]] = {
        "sum": """
            total = sum(a[:k])
            out = [total]
            for i in range(k, n):
                total += a[i] - a[i - k]
                out.append(total)
        """,
        "distinct": """
            counts = {}
            for v in a[:k]:
                counts[v] = counts.get(v, 0) + 1
            out = [len(counts)]
            for i in range(k, n):
                counts[a[i]] = counts.get(a[i], 0) + 1
                old = a[i - k]
                counts[old] -= 1
                if counts[old] == 0:
                    del counts[old]
                out.append(len(counts))
        """,
        "extremes": """
            from collections import deque
            def extremes(better):
                window, found = deque(), []
                for i, v in enumerate(a):
                    while window and not better(a[window[-1]], v):
                        window.pop()
                    window.append(i)
                    if window[0] <= i - k:
                        window.popleft()
                    if i >= k - 1:
                        found.append(a[window[0]])
                return found
            highs = extremes(lambda old, new: old > new)
            lows = extremes(lambda old, new: old < new)
        """,
    }
    PICK: ClassVar[dict[str, Any]] = {
        "max": "out = highs",
        "min": "out = lows",
        "range": "out = [h - l for h, l in zip(highs, lows)]",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for op in self.OPS:
            for k in (2, 3, 4, 6, 10, 0):  # 0: k is given in the input
                yield {"op": op, "k": k}

    def holdout(self, p: Params) -> Any:
        return p["k"]

    def held_out(self, key: Any) -> bool:
        return bool(key == 4)

    def points(self, p: Params) -> int:
        return int(p["k"] == 0) + int(p["op"] in ("distinct", "range"))

    def title(self, p: Params) -> str:
        size = f"{p['k']}" if p["k"] else "k"
        return f"Sliding windows of {size}: {self.OPS[p['op']]}"

    def statement(self, p: Params) -> str:
        k = p["k"]
        first = (
            f"The first line holds n ({k} <= n <= 8000)" if k else "The first line holds n and k (1 <= k <= n <= 8000)"
        )
        return (
            f"{first}; the second line holds n integers between -999 and 999. For every window of "
            f"{k or 'k'} consecutive values, from the one starting at the first value to the one ending at the "
            f"last, print its {self.OPS[p['op']]}: all on one line, separated by spaces."
        )

    def _k(self, p: Params, rng: random.Random, n: int) -> int:
        return p["k"] or rng.randint(1, n)

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        k = p["k"] or 3
        return [(k, ints(rng, k + 4, -9, 20))]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        k = p["k"]
        small = k or 2
        return [
            (small, ints(rng, small, -5, 5)),
            (small, [7] * (small + 3)),
            (k or 1, ints(rng, 12, -999, 999)),
            (self._k(p, rng, 60), ints(rng, 60, -50, 50)),
            (k or 4000, ints(rng, 8000, -999, 999)),
        ]

    def render(self, p: Params, data: Any) -> str:
        k, values = data
        head = f"{len(values)}" if p["k"] else f"{len(values)} {k}"
        return f"{head}\n{join(values)}\n"

    def solve(self, p: Params, data: Any) -> str:
        k, values = data
        statistic = self.SOLVE[p["op"]]
        return join([statistic(values[i : i + k]) for i in range(len(values) - k + 1)]) + "\n"

    def program(self, p: Params) -> str:
        op = p["op"]
        body = _dedent(self.BODY["extremes"]) + "\n" + self.PICK[op] if op in self.PICK else _dedent(self.BODY[op])
        head = (
            "n = int(data[0])\nk = $k\na = list(map(int, data[1:1 + n]))"
            if p["k"]
            else ("n, k = int(data[0]), int(data[1])\na = list(map(int, data[2:2 + n]))")
        )
        return code(
            "import sys\ndata = sys.stdin.read().split()\n" + head + "\n$body\nprint(' '.join(map(str, out)))",
            k=p["k"],
            body=_dedent(body),
        )


def _dedent(text: str) -> str:
    from textwrap import dedent

    return dedent(text).strip("\n")


class RangeQueries(ProgramFamily):
    """An aggregate over each queried range, with 1-based inclusive or 0-based half-open bounds; the test split
    holds out two (aggregate, bounds) pairs."""

    name = "range-queries"
    OPS: ClassVar[dict[str, Any]] = {
        "sum": "the sum of",
        "xor": "the bitwise XOR of",
        "evens": "how many even numbers are among",
        "min": "the smallest of",
        "max": "the largest of",
    }
    BOUNDS: ClassVar[dict[str, Any]] = {
        "inclusive": "l and r (1 <= l <= r <= n): the values at positions l to r, counted from 1, both included",
        "halfopen": "l and r (0 <= l < r <= n): the values at positions l, l+1, ..., r-1, counted from 0",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for op in self.OPS:
            for bounds in self.BOUNDS:
                yield {"op": op, "bounds": bounds}

    def holdout(self, p: Params) -> Any:
        return (p["op"], p["bounds"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("xor", "halfopen"), ("max", "inclusive")))

    def points(self, p: Params) -> int:
        return 2 if p["op"] in ("min", "max") else 1

    def title(self, p: Params) -> str:
        return (
            f"Range queries: {p['op']} ({'1-based, inclusive' if p['bounds'] == 'inclusive' else '0-based, half-open'})"
        )

    def statement(self, p: Params) -> str:
        values = "between 0 and 1000" if p["op"] == "xor" else "between -1000 and 1000"
        return (
            f"The first line holds n and q (1 <= n <= 20000, 1 <= q <= 4000); the second line holds n integers "
            f"{values}. Each of the next q lines holds a query: two integers {self.BOUNDS[p['bounds']]}. For each "
            f"query print {self.OPS[p['op']]} those values."
        )

    def _case(self, p: Params, rng: random.Random, n: int, q: int, spread: int) -> Any:
        low = 0 if p["op"] == "xor" else -spread
        values = ints(rng, n, low, spread)
        queries = []
        for _ in range(q):
            a, b = sorted((rng.randint(0, n - 1), rng.randint(0, n - 1)))
            queries.append((a, b + 1))  # half-open, 0-based
        return values, queries

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._case(p, rng, 6, 3, 9)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        return [
            ([5], [(0, 1)]),
            ([0, 0, 0], [(0, 3), (1, 2)]),
            self._case(p, rng, 40, 30, 1000),
            (ints(rng, 20000, 0 if p["op"] == "xor" else -1000, 1000), [(0, 20000)]),
            self._case(p, rng, 20000, 4000, 1000),
        ]

    def render(self, p: Params, data: Any) -> str:
        values, queries = data
        shift = 1 if p["bounds"] == "inclusive" else 0
        lines = [f"{lo + shift} {hi}" for lo, hi in queries]
        return f"{len(values)} {len(queries)}\n{join(values)}\n" + "\n".join(lines) + "\n"

    def solve(self, p: Params, data: Any) -> str:
        values, queries = data
        op = p["op"]
        if op in ("min", "max"):
            pick = min if op == "min" else max
            levels = [values]
            while 2 ** len(levels) <= len(values):
                width, last = 2 ** (len(levels) - 1), levels[-1]
                levels.append([pick(last[i], last[i + width]) for i in range(len(last) - width)])
            out = []
            for lo, hi in queries:
                height = (hi - lo).bit_length() - 1
                out.append(pick(levels[height][lo], levels[height][hi - 2**height]))
            return join(out, "\n") + "\n"
        mapped = [1 - (v & 1) for v in values] if op == "evens" else values
        prefix = list(itertools.accumulate(mapped, operator.xor if op == "xor" else operator.add, initial=0))
        out = [prefix[hi] ^ prefix[lo] if op == "xor" else prefix[hi] - prefix[lo] for lo, hi in queries]
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        read = (
            "import sys\ndata = sys.stdin.read().split()\nn, q = int(data[0]), int(data[1])\n"
            "a = list(map(int, data[2:2 + n]))\nqs = list(map(int, data[2 + n:2 + n + 2 * q]))\n"
        )
        shift = "l - 1" if p["bounds"] == "inclusive" else "l"
        if p["op"] in ("min", "max"):
            body = f"""
                table = [a]
                width = 1
                while 2 * width <= n:
                    last = table[-1]
                    table.append(list(map({p["op"]}, last, last[width:])))
                    width *= 2
                out = []
                for i in range(q):
                    l, r = qs[2 * i], qs[2 * i + 1]
                    lo = {shift}
                    level = (r - lo).bit_length() - 1
                    row = table[level]
                    out.append({p["op"]}(row[lo], row[r - (1 << level)]))
            """
        else:
            combine = {"sum": "prefix[-1] + v", "xor": "prefix[-1] ^ v", "evens": "prefix[-1] + (v % 2 == 0)"}
            undo = "prefix[r] ^ prefix[lo]" if p["op"] == "xor" else "prefix[r] - prefix[lo]"
            body = f"""
                prefix = [0]
                for v in a:
                    prefix.append({combine[p["op"]]})
                out = []
                for i in range(q):
                    l, r = qs[2 * i], qs[2 * i + 1]
                    lo = {shift}
                    out.append({undo})
            """
        return read + _dedent(body) + "\nprint('\\n'.join(map(str, out)))\n"


class Pairs(ProgramFamily):
    """Count pairs (of positions, or of distinct values) that meet a relation with t; the test split holds out two
    (relation, counting) pairs."""

    name = "pairs"
    RELATIONS: ClassVar[dict[str, Any]] = {
        "sum-eq": "x + y = t",
        "sum-lt": "x + y < t",
        "diff-eq": "|x - y| = t",
        "diff-le": "|x - y| <= t",
        "xor-eq": "x XOR y = t (bitwise exclusive or)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for relation in self.RELATIONS:
            for counting in ("positions", "values"):
                if (relation, counting) != ("sum-eq", "positions"):  # a hand-written test task
                    yield {"relation": relation, "counting": counting}

    def holdout(self, p: Params) -> Any:
        return (p["relation"], p["counting"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("diff-le", "values"), ("xor-eq", "positions")))

    def points(self, p: Params) -> int:
        return 2 if p["relation"] in ("sum-lt", "diff-le") else 1

    def title(self, p: Params) -> str:
        return f"Pairs with {self.RELATIONS[p['relation']].split(' (')[0]}, counted by {p['counting']}"

    def statement(self, p: Params) -> str:
        relation = p["relation"]
        if relation == "xor-eq":
            bounds, values = "0 <= t < 2^31", "between 0 and 2^30"
        else:
            bounds = "-2*10^9 <= t <= 2*10^9" if relation == "sum-lt" else "0 <= t <= 2*10^9"
            values = "between -10^9 and 10^9"
        if p["counting"] == "positions":
            what = "how many pairs of positions i < j have x = a_i and y = a_j with"
        else:
            what = "how many pairs of two different values x < y, both present in the list, have"
        return (
            f"The first line holds n and t (1 <= n <= 50000, {bounds}); the second line holds n integers "
            f"a_1 .. a_n {values}. Print {what} {self.RELATIONS[relation]}."
        )

    def _values(self, p: Params, rng: random.Random, n: int, spread: int) -> list[int]:
        low = 0 if p["relation"] == "xor-eq" else -spread
        return ints(rng, n, low, spread)

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        values = self._values(p, rng, 7, 6)
        return [(rng.randint(0 if p["relation"] != "sum-lt" else -3, 6), values)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        big = 2**30 if p["relation"] == "xor-eq" else 10**9
        return [
            (5, [5]),
            (0, [3, 3, 3, 3]),
            (2, [1, 3, 1, 3, 2]),
            (rng.randint(0, 30), self._values(p, rng, 80, 20)),
            (rng.randint(0, 1000), self._values(p, rng, 50000, 1000)),
            (rng.randint(0, big), self._values(p, rng, 50000, big)),
        ]

    def render(self, p: Params, data: Any) -> str:
        t, values = data
        return f"{len(values)} {t}\n{join(values)}\n"

    def solve(self, p: Params, data: Any) -> str:
        t, values = data
        relation = p["relation"]
        if p["counting"] == "values":
            items = sorted(set(values))
            counts = Counter(items)
        else:
            items = sorted(values)
            counts = Counter(values)
        if relation in ("sum-lt", "diff-le"):
            total = 0
            for i, x in enumerate(items):  # partners after i in sorted order
                if relation == "sum-lt":
                    total += max(0, bisect.bisect_left(items, t - x, i + 1) - (i + 1))
                else:
                    total += bisect.bisect_right(items, x + t, i + 1) - (i + 1)
            return f"{total}\n"
        total = 0
        for x, c in counts.items():
            y = t - x if relation == "sum-eq" else x + t if relation == "diff-eq" else x ^ t
            if y == x:
                total += c * (c - 1)  # ordered pairs here, halved below
            elif relation == "diff-eq":
                total += 2 * c * counts.get(y, 0)
            else:
                total += c * counts.get(y, 0)
        return f"{total // 2}\n"

    def program(self, p: Params) -> str:
        read = "import sys\ndata = sys.stdin.read().split()\nn, t = int(data[0]), int(data[1])\n"
        if p["counting"] == "values":
            read += "a = sorted(set(map(int, data[2:2 + n])))\nn = len(a)\n"
        else:
            read += "a = sorted(map(int, data[2:2 + n]))\n"
        bodies = {
            "sum-lt": """
                total, j = 0, n - 1
                for i in range(n):
                    while j > i and a[i] + a[j] >= t:
                        j -= 1
                    if j <= i:
                        break
                    total += j - i
            """,
            "diff-le": """
                total, j = 0, 0
                for i in range(n):
                    while a[i] - a[j] > t:
                        j += 1
                    total += i - j
            """,
        }
        partner = {"sum-eq": "t - x", "diff-eq": "x + t", "xor-eq": "x ^ t"}
        if p["relation"] in bodies:
            body = bodies[p["relation"]]
        else:
            body = f"""
                seen = {{}}
                total = 0
                for x in a:
                    total += seen.get({partner[p["relation"]]}, 0)
                    {"total += seen.get(x - t, 0) if t else 0" if p["relation"] == "diff-eq" else ""}
                    seen[x] = seen.get(x, 0) + 1
            """
        return read + _dedent(body) + "\nprint(total)\n"
