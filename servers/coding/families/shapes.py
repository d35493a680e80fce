"""Catalogues of functions over intervals (closed or half-open) and over matrices."""

from __future__ import annotations

import functools
import random
from typing import Any

from openenv_mcp.servers.coding.families.base import code, ints
from openenv_mcp.servers.coding.families.catalogue import Catalogue, Op

__all__ = ["IntervalFunctions", "MatrixFunctions"]

Span = list[int]


def _open(spans: list[Span], closed: bool) -> list[tuple[int, int]]:
    """As half-open ``[a, b)`` ranges of integers (a closed ``[a, b]`` is ``[a, b + 1)``)."""
    return sorted((a, b + 1) if closed else (a, b) for a, b in spans)


def _back(spans: list[tuple[int, int]], closed: bool) -> list[Span]:
    return [[a, b - 1] if closed else [a, b] for a, b in spans]


def _merged(spans: list[Span], closed: bool) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in _open(spans, closed):
        if out and (a < out[-1][1] if closed else a <= out[-1][1]):  # closed: sharing a point; half-open: touching
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _overlap(spans: list[Span], closed: bool) -> int:
    events = sorted([(a, 1) for a, _ in _open(spans, closed)] + [(b, -1) for _, b in _open(spans, closed)])
    best = depth = 0
    for _, change in events:  # an end sorts before a start at the same point
        depth += change
        best = max(best, depth)
    return best


def _gaps(spans: list[Span], lo: int, hi: int, closed: bool) -> list[Span]:
    end = hi + 1 if closed else hi
    out, at = [], lo
    for a, b in _merged(spans, closed):
        if a > at:
            out.append((at, min(a, end)))
        at = max(at, b)
        if at >= end:
            break
    if at < end:
        out.append((at, end))
    return _back([(a, b) for a, b in out if a < b], closed)


def _gap_arguments(rng: random.Random, n: int, closed: bool) -> tuple[Any, ...]:
    lo = rng.randint(0, 20)
    return _spans(rng, n, closed), lo, lo + rng.randint(1, 10 * n + 30)


def _spans(rng: random.Random, n: int, closed: bool) -> list[Span]:
    out = []
    for _ in range(n):
        a = rng.randint(0, 10 * n + 10)
        out.append([a, a + rng.randint(0 if closed else 1, 12)])
    return out


_INTERVAL_SOURCE = {
    "covered": """
        def covered(spans):
            total = 0
            end = None
            for a, b in sorted((a, b + CLOSED) for a, b in spans):
                if end is None or a > end:
                    total += b - a
                    end = b
                elif b > end:
                    total += b - end
                    end = b
            return total
    """,
    "overlap": """
        def max_overlap(spans):
            starts = sorted(a for a, _ in spans)
            ends = sorted(b + CLOSED for _, b in spans)
            best = depth = j = 0
            for a in starts:
                while j < len(ends) and ends[j] <= a:
                    j += 1
                    depth -= 1
                depth += 1
                best = max(best, depth)
            return best
    """,
    "merge": """
        def merge(spans):
            out = []
            for a, b in sorted(spans):
                if out and a <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], b)
                else:
                    out.append([a, b])
            return out
    """,
    "gaps/closed": """
        def gaps(spans, lo, hi):
            out = []
            at = lo  # the first point not known to be covered
            for a, b in sorted(spans):
                if a > at:
                    out.append([at, min(a - 1, hi)])
                at = max(at, b + 1)
            if at <= hi:
                out.append([at, hi])
            return [[a, b] for a, b in out if a <= b and a <= hi]
    """,
    "gaps/half-open": """
        def gaps(spans, lo, hi):
            out = []
            at = lo
            for a, b in sorted(spans):
                if a > at:
                    out.append([at, min(a, hi)])
                at = max(at, b)
            if at < hi:
                out.append([at, hi])
            return [[a, b] for a, b in out if a < b]
    """,
    "insert": """
        def insert(spans, new):
            out = []
            for a, b in sorted(spans + [new]):
                if out and a <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], b)
                else:
                    out.append([a, b])
            return out
    """,
}


def _covered(spans: list[Span], closed: bool) -> int:
    return sum(b - a for a, b in _merged(spans, closed))


def _merge(spans: list[Span], closed: bool) -> list[Span]:
    return _back(_merged(spans, closed), closed)


def _insert(spans: list[Span], new: Span, closed: bool) -> list[Span]:
    return _back(_merged([*spans, new], closed), closed)


def _span_arguments(rng: random.Random, n: int, closed: bool) -> tuple[Any, ...]:
    return (_spans(rng, n, closed),)


def _insert_arguments(rng: random.Random, n: int, closed: bool) -> tuple[Any, ...]:
    return _merge(_spans(rng, n, closed), closed), _spans(rng, 1, closed)[0]


def _interval_source(name: str, kind: str) -> str:
    text = _INTERVAL_SOURCE.get(name) or _INTERVAL_SOURCE[f"{name}/{kind}"]
    return code(text).replace("CLOSED", "1" if kind == "closed" else "0")


def _interval_ops() -> dict[str, Op]:
    ops = {}
    for closed in (True, False):
        kind = "closed" if closed else "half-open"
        shape = (
            "closed ranges of integers [a, b] with a <= b (covering a, a+1, ..., b)"
            if closed
            else "half-open ranges [a, b) with a < b (covering the points from a up to, not including, b)"
        )
        given = f"spans is a list of intervals [a, b] (0 <= a, b <= 10^9; at most 5000 of them), {shape}; "
        spans = functools.partial(_span_arguments, closed=closed)
        merge_rule = "share a point" if closed else "overlap or touch (one ends where the other starts)"
        ops[f"covered/{kind}"] = Op(
            "def covered(spans: list[list[int]]) -> int",
            given
            + (
                "it returns how many integers at least one of them covers."
                if closed
                else "it returns the total length of the line that at least one of them covers."
            ),
            functools.partial(_covered, closed=closed),
            _interval_source("covered", kind),
            spans,
            (([],), ([[3, 3 + (not closed)]],), ([[1, 5], [2, 3], [5, 8]],)),
            points=1,
            large=5000,
        )
        ops[f"overlap/{kind}"] = Op(
            "def max_overlap(spans: list[list[int]]) -> int",
            given + "it returns the largest number of intervals that share a point (0 for no interval).",
            functools.partial(_overlap, closed=closed),
            _interval_source("overlap", kind),
            spans,
            (([],), ([[1, 3], [3, 5]],), ([[1, 4], [2, 4], [3, 4], [4, 6]],)),
            points=1,
            large=5000,
        )
        if not closed:  # merging closed intervals is a hand-written task
            ops[f"merge/{kind}"] = Op(
                "def merge(spans: list[list[int]]) -> list[list[int]]",
                given + f"it returns the intervals merged: those that {merge_rule} become one, and the result is "
                "sorted by start.",
                functools.partial(_merge, closed=closed),
                _interval_source("merge", kind),
                spans,
                (([],), ([[1, 3], [3, 5]],), ([[5, 6], [1, 2]],)),
                points=1,
                large=2000,
            )
        ops[f"gaps/{kind}"] = Op(
            "def gaps(spans: list[list[int]], lo: int, hi: int) -> list[list[int]]",
            given + f"lo {'<=' if closed else '<'} hi. It returns the parts of the interval [lo, hi"
            f"{']' if closed else ')'} that no interval covers, as intervals of the same kind, sorted.",
            functools.partial(_gaps, closed=closed),
            _interval_source("gaps", kind),
            functools.partial(_gap_arguments, closed=closed),
            (([], 0, 5), ([[0, 5]], 0, 5), ([[2, 3], [7, 9]], 1, 8), ([[4, 6]], 5, 6)),
            points=1,
            large=2000,
        )
        ops[f"insert/{kind}"] = Op(
            "def insert(spans: list[list[int]], new: list[int]) -> list[list[int]]",
            given + f"they are sorted and no two of them {merge_rule}. It returns the list with the interval new "
            f"added, merging those that then {merge_rule}, sorted by start.",
            functools.partial(_insert, closed=closed),
            _interval_source("insert", kind),
            functools.partial(_insert_arguments, closed=closed),
            (([], [1, 2]), ([[1, 2]], [2, 4]), ([[1, 2], [6, 8]], [3, 5])),
            points=1,
            large=2000,
        )
    return ops


class IntervalFunctions(Catalogue):
    """A catalogue of functions over closed or half-open intervals; the test split holds out two of them."""

    name = "interval-functions"
    TOPIC = "Intervals"
    OPS = _interval_ops()
    HELD_OUT = ("overlap/half-open", "gaps/closed")


def _matrix(rng: random.Random, n: int, square: bool = False, top: int = 99) -> tuple[Any, ...]:
    rows = max(1, n)
    cols = rows if square else max(1, n + rng.randint(-2, 2))
    return ([ints(rng, cols, 0, top) for _ in range(rows)],)


def _symmetric(rng: random.Random, n: int) -> tuple[Any, ...]:
    (m,) = _matrix(rng, n, square=True, top=5)
    if rng.random() < 0.6:
        for i in range(len(m)):
            for j in range(i):
                m[i][j] = m[j][i]
    return (m,)


def _neighbours(m: list[list[int]], i: int, j: int) -> list[int]:
    return [
        m[x][y] for x, y in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)) if 0 <= x < len(m) and 0 <= y < len(m[0])
    ]


def _life(m: list[list[int]]) -> list[list[int]]:
    rows, cols = len(m), len(m[0])
    out = []
    for i in range(rows):
        row = []
        for j in range(cols):
            around = sum(m[x][y] for x in range(i - 1, i + 2) for y in range(j - 1, j + 2)
                         if 0 <= x < rows and 0 <= y < cols and (x, y) != (i, j))  # fmt: skip
            row.append(1 if around == 3 or (around == 2 and m[i][j]) else 0)
        out.append(row)
    return out


def _saddles(m: list[list[int]]) -> list[list[int]]:
    lows = list(map(min, m))
    highs = list(map(max, zip(*m, strict=True)))
    return [[i, j] for i, row in enumerate(m) for j, v in enumerate(row) if v == lows[i] == highs[j]]


_MATRIX = "m is a matrix: a non-empty list of rows, each a non-empty list of integers, all rows of one length "
_SQUARE = "m is a square matrix: a non-empty list of n rows, each a list of n integers "

_MATRIX_OPS: dict[str, Op] = {
    "clockwise": Op(
        "def rotate_clockwise(m: list[list[int]]) -> list[list[int]]",
        _MATRIX + "(at most 100 by 100); it returns m turned a quarter turn clockwise (its first column, read "
        "upwards, becomes the first row).",
        lambda m: [list(row) for row in zip(*m[::-1], strict=True)],
        code("""
            def rotate_clockwise(m):
                rows, cols = len(m), len(m[0])
                return [[m[rows - 1 - i][j] for i in range(rows)] for j in range(cols)]
        """),
        _matrix,
        (([[1]],), ([[1, 2, 3]],), ([[1], [2]],)),
        large=90,
    ),
    "counterclockwise": Op(
        "def rotate_counterclockwise(m: list[list[int]]) -> list[list[int]]",
        _MATRIX + "(at most 100 by 100); it returns m turned a quarter turn counterclockwise (its last column, "
        "read downwards, becomes the first row).",
        lambda m: [list(row) for row in zip(*m, strict=True)][::-1],
        code("""
            def rotate_counterclockwise(m):
                rows, cols = len(m), len(m[0])
                return [[m[i][cols - 1 - j] for i in range(rows)] for j in range(cols)]
        """),
        _matrix,
        (([[1]],), ([[1, 2, 3]],), ([[1], [2]],)),
        large=90,
    ),
    "mirror": Op(
        "def mirror(m: list[list[int]]) -> list[list[int]]",
        _MATRIX + "(at most 100 by 100); it returns m mirrored left to right (every row reversed).",
        lambda m: [row[::-1] for row in m],
        code("""
            def mirror(m):
                return [list(reversed(row)) for row in m]
        """),
        _matrix,
        (([[1]],), ([[1, 2, 3]],)),
        large=90,
    ),
    "diagonals": Op(
        "def diagonal_sums(m: list[list[int]]) -> list[int]",
        _SQUARE + "(n <= 300); it returns [the sum of the main diagonal (top left to bottom right), the sum of the "
        "other diagonal (top right to bottom left)].",
        lambda m: [sum(m[i][i] for i in range(len(m))), sum(m[i][-1 - i] for i in range(len(m)))],
        code("""
            def diagonal_sums(m):
                n = len(m)
                main = other = 0
                for i in range(n):
                    main += m[i][i]
                    other += m[i][n - 1 - i]
                return [main, other]
        """),
        lambda rng, n: _matrix(rng, n, square=True),
        (([[5]],), ([[1, 2], [3, 4]],)),
        large=300,
    ),
    "row-maxima": Op(
        "def row_maxima(m: list[list[int]]) -> list[int]",
        _MATRIX + "(at most 300 by 300); it returns the largest value of each row, in order.",
        lambda m: list(map(max, m)),
        code("""
            def row_maxima(m):
                out = []
                for row in m:
                    best = row[0]
                    for v in row:
                        if v > best:
                            best = v
                    out.append(best)
                return out
        """),
        _matrix,
        (([[5]],), ([[1, 1], [0, 2]],)),
        large=300,
    ),
    "column-sums": Op(
        "def column_sums(m: list[list[int]]) -> list[int]",
        _MATRIX + "(at most 300 by 300); it returns the sum of each column, from the first column to the last.",
        lambda m: [sum(column) for column in zip(*m, strict=True)],
        code("""
            def column_sums(m):
                sums = [0] * len(m[0])
                for row in m:
                    for j, v in enumerate(row):
                        sums[j] += v
                return sums
        """),
        _matrix,
        (([[5]],), ([[1, 2, 3]],), ([[1], [2]],)),
        large=300,
    ),
    "symmetric": Op(
        "def is_symmetric(m: list[list[int]]) -> bool",
        _SQUARE + "(n <= 300); it returns True when m equals its mirror image across the main diagonal (m[i][j] == "
        "m[j][i] for every i and j), else False.",
        lambda m: all(row == list(column) for row, column in zip(m, zip(*m, strict=True), strict=True)),
        code("""
            def is_symmetric(m):
                n = len(m)
                return all(m[i][j] == m[j][i] for i in range(n) for j in range(i))
        """),
        _symmetric,
        (([[5]],), ([[1, 2], [2, 1]],), ([[1, 2], [3, 1]],)),
        large=300,
    ),
    "neighbours": Op(
        "def neighbour_sums(m: list[list[int]]) -> list[list[int]]",
        _MATRIX + "(at most 90 by 90); it returns a matrix of the same shape whose value at row i, column j is the "
        "sum of m's values just above, below, left and right of (i, j) (those inside m).",
        lambda m: [[sum(_neighbours(m, i, j)) for j in range(len(m[0]))] for i in range(len(m))],
        code("""
            def neighbour_sums(m):
                rows, cols = len(m), len(m[0])
                out = [[0] * cols for _ in range(rows)]
                for i in range(rows):
                    for j in range(cols):
                        for x, y in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)):
                            if 0 <= x < rows and 0 <= y < cols:
                                out[i][j] += m[x][y]
                return out
        """),
        _matrix,
        (([[5]],), ([[1, 2, 3]],), ([[1], [2]],)),
        points=1,
        large=90,
    ),
    "life": Op(
        "def life_step(m: list[list[int]]) -> list[list[int]]",
        _MATRIX + "of 0s and 1s (at most 90 by 90): dead and live cells. It returns the next generation of Conway's "
        "Game of Life: a live cell with 2 or 3 live neighbours (of its 8, those inside m) stays alive, a dead cell "
        "with exactly 3 becomes alive, every other cell is dead.",
        _life,
        code("""
            def life_step(m):
                rows, cols = len(m), len(m[0])
                out = []
                for i in range(rows):
                    row = []
                    for j in range(cols):
                        live = 0
                        for di in (-1, 0, 1):
                            for dj in (-1, 0, 1):
                                x, y = i + di, j + dj
                                if (di or dj) and 0 <= x < rows and 0 <= y < cols:
                                    live += m[x][y]
                        row.append(1 if live == 3 or (live == 2 and m[i][j] == 1) else 0)
                    out.append(row)
                return out
        """),
        lambda rng, n: _matrix(rng, n, top=1),
        (([[1]],), ([[1, 1], [1, 1]],), ([[0, 1, 0], [0, 1, 0], [0, 1, 0]],)),
        points=1,
        large=90,
    ),
    "saddle": Op(
        "def saddle_points(m: list[list[int]]) -> list[list[int]]",
        _MATRIX + "(at most 300 by 300); it returns the positions [i, j] (row, column, from 0) whose value is the "
        "smallest of its row and the largest of its column (ties count), sorted.",
        _saddles,
        code("""
            def saddle_points(m):
                lows = [min(row) for row in m]
                highs = [max(column) for column in zip(*m)]
                return [[i, j] for i in range(len(m)) for j in range(len(m[0]))
                        if m[i][j] == lows[i] and m[i][j] == highs[j]]
        """),
        lambda rng, n: _matrix(rng, n, top=4),
        (([[5]],), ([[1, 1], [1, 1]],), ([[3, 1], [2, 0]],)),
        points=1,
        large=300,
    ),
}  # fmt: skip


class MatrixFunctions(Catalogue):
    """A catalogue of functions over matrices; the test split holds out two of them."""

    name = "matrix-functions"
    TOPIC = "A matrix function"
    OPS = _MATRIX_OPS
    HELD_OUT = ("counterclockwise", "life")
