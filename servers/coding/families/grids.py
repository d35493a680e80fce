"""Breadth-first search on a grid with walls: moving a step, like a king or a knight, or breaking walls."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code

__all__ = ["GridSearch"]

_MOVES = {
    "4": ((1, 0), (-1, 0), (0, 1), (0, -1)),
    "8": ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)),
    "knight": ((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)),
}
_MOVE_TEXT = {
    "4": "one step up, down, left or right",
    "8": "one step to any of the 8 neighbouring cells (diagonals too)",
    "knight": "a chess knight's jump (two cells in one direction and one in the other; only the cell landed on "
    "must be open)",
}


class GridSearch(ProgramFamily):
    """Breadth-first search on a grid with walls, moving like a king, a rook's step or a knight, or breaking up to
    k walls; the test split holds out two (moves, question) pairs."""

    name = "grid-search"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "distance": "the fewest moves from S to E, or -1 if E cannot be reached",
        "reachable": "how many cells can be reached from S (S included)",
        "farthest": "the largest number of moves needed to reach a reachable cell from S (by its fewest moves)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for moves in _MOVES:
            for question in self.QUESTIONS:
                if (moves, question) != ("4", "distance"):  # a hand-written task
                    yield {"moves": moves, "question": question, "breaks": 0}
        for breaks in (1, 2):
            yield {"moves": "4", "question": "distance", "breaks": breaks}

    def holdout(self, p: Params) -> Any:
        return (p["moves"], p["question"], p["breaks"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("knight", "farthest", 0), ("8", "reachable", 0)))

    def points(self, p: Params) -> int:
        return 2

    def title(self, p: Params) -> str:
        extra = f", breaking up to {p['breaks']} walls" if p["breaks"] else ""
        return f"Grid search ({p['moves']} moves{extra}): {p['question']}"

    def statement(self, p: Params) -> str:
        cells = "'S' the start and 'E' the end (one of each)" if p["question"] == "distance" else "'S' the start"
        rule = _MOVE_TEXT[p["moves"]]
        if p["breaks"]:
            rule += f"; a move may enter a wall cell, but at most {p['breaks']} wall cells may be entered in all"
        else:
            rule += "; a move may never enter a wall"
        return (
            f"The first line holds r and c (1 <= r, c <= 100). The next r lines hold the grid: '.' open, '#' wall, "
            f"{cells}. A move is {rule}, and must stay inside the grid. Print {self.QUESTIONS[p['question']]}."
        )

    def _grid(self, p: Params, rng: random.Random, r: int, c: int, walls: float) -> list[str]:
        cells = [["#" if rng.random() < walls else "." for _ in range(c)] for _ in range(r)]
        spots = rng.sample([(i, j) for i in range(r) for j in range(c)], 2 if r * c > 1 else 1)
        cells[spots[0][0]][spots[0][1]] = "S"
        if p["question"] == "distance" and len(spots) > 1:
            cells[spots[1][0]][spots[1][1]] = "E"
        return ["".join(row) for row in cells]

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._grid(p, rng, 4, 5, 0.3)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        one = ["S"] if p["question"] != "distance" else ["SE"]
        walled = ["S#E"] if p["question"] == "distance" else ["S#."]
        return [
            one,
            walled,
            self._grid(p, rng, 8, 8, 0.35),
            self._grid(p, rng, 30, 40, 0.25),
            self._grid(p, rng, 100, 100, 0.3),
            self._grid(p, rng, 100, 100, 0.05),
        ]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)} {len(data[0])}\n" + "".join(row + "\n" for row in data)

    def solve(self, p: Params, data: Any) -> str:
        rows, cols = len(data), len(data[0])
        start = next((i, j) for i in range(rows) for j in range(cols) if data[i][j] == "S")
        seen = {(start, 0): 0}  # (cell, walls broken) -> moves
        layer = [(start, 0)]
        moves = 0
        while layer:
            moves += 1
            following = []
            for (i, j), broken in layer:
                for di, dj in _MOVES[p["moves"]]:
                    x, y = i + di, j + dj
                    if not (0 <= x < rows and 0 <= y < cols):
                        continue
                    spent = broken + (data[x][y] == "#")
                    if spent > p["breaks"] or ((x, y), spent) in seen:
                        continue
                    seen[((x, y), spent)] = moves
                    following.append(((x, y), spent))
            layer = following
        best: dict[tuple[int, int], int] = {}
        for (cell, _), d in seen.items():
            best[cell] = min(d, best.get(cell, d))
        question = p["question"]
        if question == "reachable":
            return f"{len(best)}\n"
        if question == "farthest":
            return f"{max(best.values())}\n"
        end = next(((i, j) for i in range(rows) for j in range(cols) if data[i][j] == "E"), None)
        return f"{best.get(end, -1) if end is not None else -1}\n"

    def program(self, p: Params) -> str:
        answer = {
            "distance": "print(dist[ei][ej] if dist[ei][ej] <= K_LIMIT else -1)",
            "reachable": "print(sum(1 for row in dist for d in row if d <= K_LIMIT))",
            "farthest": "print(max(d for row in dist for d in row if d <= K_LIMIT))",
        }[p["question"]].replace("K_LIMIT", "10 ** 9")
        return code(
            """
            import sys
            from collections import deque
            lines = sys.stdin.read().split()
            r, c = int(lines[0]), int(lines[1])
            grid = lines[2:2 + r]
            MOVES = $moves
            BREAKS = $breaks
            INF = 10 ** 18
            best = [[[INF] * (BREAKS + 1) for _ in range(c)] for _ in range(r)]
            for i in range(r):
                for j in range(c):
                    if grid[i][j] == 'S':
                        si, sj = i, j
                    if grid[i][j] == 'E':
                        ei, ej = i, j
            best[si][sj][0] = 0
            queue = deque([(si, sj, 0)])
            while queue:
                i, j, k = queue.popleft()
                d = best[i][j][k]
                for di, dj in MOVES:
                    x, y = i + di, j + dj
                    if 0 <= x < r and 0 <= y < c:
                        nk = k + (grid[x][y] == '#')
                        if nk <= BREAKS and best[x][y][nk] == INF:
                            best[x][y][nk] = d + 1
                            queue.append((x, y, nk))
            dist = [[min(cell) for cell in row] for row in best]
            $answer
            """,
            moves=repr(_MOVES[p["moves"]]),
            breaks=p["breaks"],
            answer=answer,
        )
