"""Families solved by dynamic programming: coin systems, paths through a grid, subsequences and alignments."""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, ints, join

__all__ = ["Alignment", "Coins", "GridPaths"]

_MOD = 1_000_000_007


class Coins(ProgramFamily):
    """Questions about making amounts from a fixed set of coin values; the test split holds out three (coins,
    question) pairs."""

    name = "coins"
    SETS = ((1, 5, 10, 25), (1, 3, 4), (2, 5, 7), (3, 7, 13, 29))
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "fewest": "the fewest coins that add up to it, or -1 if no coins do",
        "ways": "in how many ways coins can add up to it, modulo 1000000007, where the order of the coins does not "
        "matter (1 way for 0)",
        "sequences": "how many sequences of coins add up to it, modulo 1000000007, where the order matters (1 for 0)",
        "possible": "YES if some coins add up to it, else NO (0 takes no coins: YES)",
    }
    PROGRAMS: ClassVar[dict[str, Any]] = {
        "fewest": "best = [0] + [INF] * top\nfor a in range(1, top + 1):\n    for c in COINS:\n"
        "        if c <= a and best[a - c] + 1 < best[a]:\n            best[a] = best[a - c] + 1\n"
        "print('\\n'.join(str(best[a] if best[a] < INF else -1) for a in amounts))",
        "ways": "ways = [1] + [0] * top\nfor c in COINS:\n    for a in range(c, top + 1):\n"
        "        ways[a] = (ways[a] + ways[a - c]) % M\nprint('\\n'.join(str(ways[a]) for a in amounts))",
        "sequences": "ways = [1] + [0] * top\nfor a in range(1, top + 1):\n"
        "    ways[a] = sum(ways[a - c] for c in COINS if c <= a) % M\nprint('\\n'.join(str(ways[a]) for a in amounts))",
        "possible": "can = [True] + [False] * top\nfor a in range(1, top + 1):\n"
        "    can[a] = any(c <= a and can[a - c] for c in COINS)\n"
        "print('\\n'.join('YES' if can[a] else 'NO' for a in amounts))",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for coins in self.SETS:
            for question in self.QUESTIONS:
                yield {"coins": coins, "question": question}

    def holdout(self, p: Params) -> Any:
        return (p["coins"], p["question"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (((1, 3, 4), "sequences"), ((2, 5, 7), "fewest"), ((3, 7, 13, 29), "ways")))

    def points(self, p: Params) -> int:
        return 2

    def title(self, p: Params) -> str:
        return f"Coins {', '.join(map(str, p['coins']))}: {p['question']}"

    def statement(self, p: Params) -> str:
        coins = ", ".join(map(str, p["coins"]))
        return (
            f"Coins come in the values {coins}, as many of each as needed. The first line holds q (1 <= q <= 1000); "
            f"each of the next q lines holds an amount a (0 <= a <= 50000). For each amount print "
            f"{self.QUESTIONS[p['question']]}."
        )

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [sorted(rng.sample(range(0, 16), 4))]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        return [[0], [1, 2], list(range(0, 40)), [50000, *ints(rng, 999, 0, 50000)]]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n{join(data, chr(10))}\n"

    def solve(self, p: Params, data: Any) -> str:
        coins, top, question = p["coins"], max(data), p["question"]
        if question == "sequences":
            table = [1] + [0] * top
            for a in range(1, top + 1):
                table[a] = sum(table[a - c] for c in coins if c <= a) % _MOD
            return join([table[a] for a in data], "\n") + "\n"
        never = top + 1  # more coins than any amount up to top can need
        counts = [1] + [0] * top  # combinations, coin value by coin value
        fewest = [0] + [never] * top
        for c in coins:
            for a in range(c, top + 1):
                counts[a] = (counts[a] + counts[a - c]) % _MOD
                fewest[a] = min(fewest[a], fewest[a - c] + 1)
        if question == "ways":
            return join([counts[a] for a in data], "\n") + "\n"
        if question == "fewest":
            return join([-1 if fewest[a] >= never else fewest[a] for a in data], "\n") + "\n"
        return join(["NO" if fewest[a] >= never else "YES" for a in data], "\n") + "\n"

    def program(self, p: Params) -> str:
        return code(
            """
            import sys
            COINS = $coins
            M = 1000000007
            INF = float('inf')
            data = sys.stdin.read().split()
            amounts = [int(x) for x in data[1:1 + int(data[0])]]
            top = max(amounts)
            $body
            """,
            coins=list(p["coins"]),
            body=self.PROGRAMS[p["question"]],
        )


class GridPaths(ProgramFamily):
    """Monotone paths through a grid: how many avoid the walls, or the least or greatest sum; moves right and down,
    or also diagonally; the test split holds out one pair."""

    name = "grid-paths"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "count": "how many paths lead from the top-left cell to the bottom-right cell without entering a wall, "
        "modulo 1000000007 (0 if either of them is a wall)",
        "min-sum": "the smallest sum of the numbers on a path from the top-left cell to the bottom-right cell "
        "(both included)",
        "max-sum": "the largest sum of the numbers on a path from the top-left cell to the bottom-right cell "
        "(both included)",
    }
    MOVES: ClassVar[dict[str, Any]] = {
        "rd": "one cell right or one cell down",
        "rdd": "one cell right, one cell down, or one cell diagonally "
             "down and to the right"}  # fmt: skip

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            for moves in self.MOVES:
                yield {"question": question, "moves": moves}

    def holdout(self, p: Params) -> Any:
        return (p["question"], p["moves"])

    def held_out(self, key: Any) -> bool:
        return bool(key == ("max-sum", "rdd"))

    def points(self, p: Params) -> int:
        return 2

    def title(self, p: Params) -> str:
        return f"Grid paths ({p['moves']}): {p['question']}"

    def statement(self, p: Params) -> str:
        if p["question"] == "count":
            cells = "c characters: '.' open, '#' wall"
        else:
            cells = "c integers from 0 to 99, separated by spaces"
        return (
            f"The first line holds r and c (1 <= r, c <= 200); each of the next r lines holds {cells}. A path moves "
            f"{self.MOVES[p['moves']]} at each step. Print {self.QUESTIONS[p['question']]}."
        )

    def _grid(self, p: Params, rng: random.Random, r: int, c: int) -> list[list[Any]]:
        if p["question"] == "count":
            return [["#" if rng.random() < 0.15 else "." for _ in range(c)] for _ in range(r)]
        return [ints(rng, c, 0, 99) for _ in range(r)]

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._grid(p, rng, 3, 4)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        single = [["."]] if p["question"] == "count" else [[7]]
        blocked = [[".", "#"], ["#", "."]] if p["question"] == "count" else [[1, 9], [9, 1]]
        return [single, blocked, self._grid(p, rng, 1, 30), self._grid(p, rng, 12, 9), self._grid(p, rng, 200, 200)]

    def render(self, p: Params, data: Any) -> str:
        separator = "" if p["question"] == "count" else " "
        return f"{len(data)} {len(data[0])}\n" + "".join(join(row, separator) + "\n" for row in data)

    def solve(self, p: Params, data: Any) -> str:
        rows, cols = len(data), len(data[0])
        steps = [(1, 0), (0, 1)] + ([(1, 1)] if p["moves"] == "rdd" else [])
        question = p["question"]
        table: dict[tuple[int, int], int] = {}
        for i in range(rows):  # pull from the cells a step back
            for j in range(cols):
                if question == "count":
                    if data[i][j] == "#":
                        table[i, j] = 0
                        continue
                    came = [table[i - a, j - b] for a, b in steps if i - a >= 0 and j - b >= 0]
                    table[i, j] = 1 if (i, j) == (0, 0) else sum(came) % _MOD
                else:
                    came = [table[i - a, j - b] for a, b in steps if i - a >= 0 and j - b >= 0]
                    pick = min if question == "min-sum" else max
                    table[i, j] = data[i][j] + (pick(came) if came else 0)
        return f"{table[rows - 1, cols - 1]}\n"

    def program(self, p: Params) -> str:
        diagonal = p["moves"] == "rdd"
        if p["question"] == "count":
            body = (
                "grid = lines[2:2 + r]\nways = [[0] * (c + 1) for _ in range(r + 1)]\nfor i in range(r):\n"
                "    for j in range(c):\n        if grid[i][j] == '#':\n            continue\n"
                "        if i == 0 and j == 0:\n            ways[1][1] = 1\n            continue\n"
                "        ways[i + 1][j + 1] = (ways[i][j + 1] + ways[i + 1][j]"
                f"{' + ways[i][j]' if diagonal else ''}) % M\n"
                "print(ways[r][c])"
            )
        else:
            pick = "min" if p["question"] == "min-sum" else "max"
            body = (
                "values = [list(map(int, lines[2 + i * c:2 + (i + 1) * c])) for i in range(r)]\n"
                "best = [[None] * c for _ in range(r)]\nfor i in range(r):\n    for j in range(c):\n"
                "        options = []\n        if i > 0:\n            options.append(best[i - 1][j])\n"
                "        if j > 0:\n            options.append(best[i][j - 1])\n"
                + ("        if i > 0 and j > 0:\n            options.append(best[i - 1][j - 1])\n" if diagonal else "")
                + f"        best[i][j] = values[i][j] + ({pick}(options) if options else 0)\nprint(best[r - 1][c - 1])"
            )
        return (
            "import sys\nM = 1000000007\nlines = sys.stdin.read().split()\nr, c = int(lines[0]), int(lines[1])\n"
            + body
            + "\n"
        )


def _subsequence_length(values: list[int], compare: str) -> int:
    """Longest subsequence whose neighbours all satisfy ``compare`` (patience sorting on transformed values)."""
    tails: list[int] = []
    for v in values:
        key = -v if compare in ("decreasing", "non-increasing") else v
        place = bisect.bisect_left if compare in ("increasing", "decreasing") else bisect.bisect_right
        i = place(tails, key)
        tails[i : i + 1] = [key]
    return len(tails)


def _edit(a: str, b: str, insert: int, delete: int, substitute: int) -> int:
    previous = [j * insert for j in range(len(b) + 1)]
    for i, x in enumerate(a, start=1):
        current = [i * delete]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + delete, current[j - 1] + insert, previous[j - 1] + (x != y) * substitute))
        previous = current
    return previous[-1]


def _lcs(a: str, b: str) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


class Alignment(ProgramFamily):
    """Subsequences and alignments: monotone subsequences of numbers, common and palindromic subsequences of
    strings, edit distances with weights; the test split holds out two kinds."""

    name = "alignment"
    KINDS: ClassVar[dict[str, Any]] = {
        "decreasing": "the length of the longest strictly decreasing subsequence of the numbers",
        "non-decreasing": "the length of the longest non-decreasing subsequence of the numbers",
        "non-increasing": "the length of the longest non-increasing subsequence of the numbers",
        "lcs": "the length of the longest common subsequence of the two strings",
        "palindrome": "the length of the longest subsequence of the first string that reads the same backwards",
        "edit": "the least total cost of turning the first string into the second, where inserting a character costs "
        "$insert, deleting one costs $delete and replacing one by another costs $substitute",
    }
    WEIGHTS = ((1, 1, 2), (2, 1, 1), (1, 2, 1), (3, 2, 4))

    def grid(self) -> Iterator[dict[str, Any]]:
        for kind in self.KINDS:
            for weights in self.WEIGHTS if kind == "edit" else ((0, 0, 0),):
                yield {"kind": kind, "weights": weights}

    def holdout(self, p: Params) -> Any:
        return (p["kind"], p["weights"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("non-increasing", (0, 0, 0)), ("edit", (2, 1, 1))))

    def points(self, p: Params) -> int:
        return 2

    def title(self, p: Params) -> str:
        weights = f" (costs {'/'.join(map(str, p['weights']))})" if p["kind"] == "edit" else ""
        return f"Subsequences: {p['kind']}{weights}"

    def _numbers(self, p: Params) -> bool:
        return p["kind"] in ("decreasing", "non-decreasing", "non-increasing")

    def statement(self, p: Params) -> str:
        insert, delete, substitute = p["weights"]
        question = self.KINDS[p["kind"]].replace("$insert", str(insert)).replace("$delete", str(delete))
        question = question.replace("$substitute", str(substitute))
        if self._numbers(p):
            given = "The first line holds n (1 <= n <= 50000); the second line holds n integers between -10^9 and 10^9."
        else:
            given = "The input holds two lines, each a string of 0 to 400 small letters (either may be empty)."
        return f"{given} Print {question}."

    def _data(self, p: Params, rng: random.Random, size: int) -> Any:
        if self._numbers(p):
            return ints(rng, size, -10, 10) if rng.random() < 0.5 else ints(rng, size, -(10**9), 10**9)
        letters = "abc" if rng.random() < 0.5 else "abcdefghij"
        return ("".join(rng.choices(letters, k=rng.randint(0, size))), "".join(rng.choices(letters, k=size)))

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._data(p, rng, 8)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        if self._numbers(p):
            return [[5], [3, 3, 3], [1, 2, 3, 4], [4, 3, 2, 1], self._data(p, rng, 60), self._data(p, rng, 50000)]
        return [("", ""), ("abc", ""), ("", "abc"), ("abc", "abc"), self._data(p, rng, 30), self._data(p, rng, 400)]

    def render(self, p: Params, data: Any) -> str:
        if self._numbers(p):
            return f"{len(data)}\n{join(data)}\n"
        return f"{data[0]}\n{data[1]}\n"

    def solve(self, p: Params, data: Any) -> str:
        kind = p["kind"]
        if self._numbers(p):
            return f"{_subsequence_length(data, kind)}\n"
        a, b = data
        if kind == "lcs":
            return f"{_lcs(a, b)}\n"
        if kind == "palindrome":
            return f"{_lcs(a, a[::-1])}\n"
        return f"{_edit(a, b, *p['weights'])}\n"

    def program(self, p: Params) -> str:
        kind = p["kind"]
        if self._numbers(p):
            flip = "-" if kind != "non-decreasing" else ""
            strict = kind == "decreasing"
            return code(
                """
                import sys
                data = sys.stdin.read().split()
                values = [$flip int(x) for x in data[1:1 + int(data[0])]]
                tails = []
                for v in values:
                    lo, hi = 0, len(tails)
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if tails[mid] $compare v:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo == len(tails):
                        tails.append(v)
                    else:
                        tails[lo] = v
                print(len(tails))
                """,
                flip=flip,
                compare="<" if strict else "<=",
            )
        read = (
            'import sys\nlines = sys.stdin.read().split("\\n")\na = lines[0]\nb = lines[1] if len(lines) > 1 else ""\n'
        )
        if kind == "palindrome":
            read += "b = a[::-1]\n"
        if kind in ("lcs", "palindrome"):
            cell = (
                "table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] "
                "else max(table[i - 1][j], table[i][j - 1])"
            )
            edges = "table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]"
        else:
            insert, delete, substitute = p["weights"]
            edges = (
                "table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]\n"
                f"for i in range(len(a) + 1):\n    table[i][0] = i * {delete}\n"
                f"for j in range(len(b) + 1):\n    table[0][j] = j * {insert}"
            )
            cell = (
                f"table[i][j] = min(table[i - 1][j] + {delete}, table[i][j - 1] + {insert}, "
                f"table[i - 1][j - 1] + (0 if a[i - 1] == b[j - 1] else {substitute}))"
            )
        return (
            read + edges + "\nfor i in range(1, len(a) + 1):\n    for j in range(1, len(b) + 1):\n"
            f"        {cell}\nprint(table[len(a)][len(b)])\n"
        )
