"""Families over graphs: components, weighted shortest paths, dependencies between tasks."""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, join

__all__ = ["Components", "Dependencies", "ShortestPaths"]


class Components(ProgramFamily):
    """Questions about the connected components of an undirected graph, vertices numbered from 0 or 1; the test
    split holds out two (question, numbering) pairs."""

    name = "components"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "count": "how many connected components the graph has",
        "largest": "how many vertices the largest connected component has",
        "isolated": "how many vertices have no edge",
        "tree": "YES if the graph is a tree (connected, with no cycle), else NO",
        "bipartite": "YES if the vertices can be coloured with two colours so that every edge joins two colours, "
        "else NO",
        "cycle": "YES if the graph has a cycle, else NO",
    }
    ANSWERS: ClassVar[dict[str, Any]] = {
        "count": "print(components)",
        "largest": "print(max(sizes))",
        "isolated": "print(sum(1 for v in range(n) if not adjacent[v]))",
        "tree": "print('YES' if components == 1 and m == n - 1 else 'NO')",
        "bipartite": "print('YES' if two_coloured else 'NO')",
        "cycle": "print('YES' if m > n - components else 'NO')",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            for first in (0, 1):
                yield {"question": question, "first": first}

    def holdout(self, p: Params) -> Any:
        return (p["question"], p["first"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("bipartite", 0), ("largest", 1)))

    def points(self, p: Params) -> int:
        return 0 if p["question"] == "isolated" else 2

    def title(self, p: Params) -> str:
        return f"Graph components: {p['question']} (vertices from {p['first']})"

    def statement(self, p: Params) -> str:
        first = p["first"]
        return (
            f"The first line holds n and m (1 <= n <= 20000, 0 <= m <= 20000): an undirected graph with vertices "
            f"numbered {first} to n{'' if first else ' - 1'}. Each of the next m lines holds an edge: two different "
            f"vertices u and v. No edge appears twice. Print {self.QUESTIONS[p['question']]}."
        )

    def _graph(self, rng: random.Random, n: int, m: int) -> tuple[int, list[tuple[int, int]]]:
        edges: set[tuple[int, int]] = set()
        m = min(m, n * (n - 1) // 2)
        while len(edges) < m:
            u, v = rng.sample(range(n), 2)
            edges.add((min(u, v), max(u, v)))
        return n, sorted(edges, key=lambda e: rng.random())

    def _forest(self, rng: random.Random, n: int, trees: int) -> tuple[int, list[tuple[int, int]]]:
        order = list(range(n))
        rng.shuffle(order)
        edges = [(order[rng.randrange(i)], order[i]) for i in range(trees, n)]
        return n, edges

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._graph(rng, 6, 5)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        path = [(i, i + 1) for i in range(19999)]
        return [
            (1, []),
            (2, [(0, 1)]),
            (4, [(0, 1), (1, 2), (2, 0)]),
            (4, [(0, 1), (1, 2), (2, 3), (3, 0)]),
            self._forest(rng, 30, 1),
            self._forest(rng, 40, 3),
            self._graph(rng, 30, 25),
            (20000, path),
            self._forest(rng, 20000, 1),
            self._graph(rng, 20000, 20000),
        ]

    def render(self, p: Params, data: Any) -> str:
        n, edges = data
        shift = p["first"]
        return f"{n} {len(edges)}\n" + "".join(f"{u + shift} {v + shift}\n" for u, v in edges)

    def solve(self, p: Params, data: Any) -> str:
        n, edges = data
        parent = list(range(n))
        parity = [0] * n  # parity to the parent: a two-colouring as long as it holds
        size = [1] * n
        coloured = True

        def find(v: int) -> tuple[int, int]:
            flip = 0
            while parent[v] != v:
                flip ^= parity[v]
                v = parent[v]
            return v, flip

        for u, v in edges:
            (ru, pu), (rv, pv) = find(u), find(v)
            if ru == rv:
                coloured = coloured and pu != pv
                continue
            if size[ru] > size[rv]:  # the smaller tree goes under the larger: finds stay short
                ru, rv = rv, ru
            parent[ru], parity[ru] = rv, pu ^ pv ^ 1
            size[rv] += size[ru]
        roots = [find(v)[0] for v in range(n)]
        sizes: dict[int, int] = {}
        for root in roots:
            sizes[root] = sizes.get(root, 0) + 1
        touched = {v for edge in edges for v in edge}
        question = p["question"]
        answers = {
            "count": len(sizes),
            "largest": max(sizes.values()),
            "isolated": n - len(touched),
            "tree": "YES" if len(sizes) == 1 and len(edges) == n - 1 else "NO",
            "bipartite": "YES" if coloured else "NO",
            "cycle": "YES" if len(edges) > n - len(sizes) else "NO",
        }
        return f"{answers[question]}\n"

    def program(self, p: Params) -> str:
        return code(
            """
            import sys
            from collections import deque
            data = sys.stdin.buffer.read().split()
            n, m = int(data[0]), int(data[1])
            adjacent = [[] for _ in range(n)]
            for i in range(m):
                u, v = int(data[2 + 2 * i]) - $first, int(data[3 + 2 * i]) - $first
                adjacent[u].append(v)
                adjacent[v].append(u)
            colour = [-1] * n
            sizes = []
            two_coloured = True
            for s in range(n):
                if colour[s] != -1:
                    continue
                colour[s] = 0
                queue = deque([s])
                size = 0
                while queue:
                    u = queue.popleft()
                    size += 1
                    for v in adjacent[u]:
                        if colour[v] == -1:
                            colour[v] = 1 - colour[u]
                            queue.append(v)
                        elif colour[v] == colour[u]:
                            two_coloured = False
                sizes.append(size)
            components = len(sizes)
            $answer
            """,
            first=p["first"],
            answer=self.ANSWERS[p["question"]],
        )


class ShortestPaths(ProgramFamily):
    """Dijkstra on a weighted graph, directed or not: one distance, all distances, or how many shortest paths; the
    test split holds out one pair."""

    name = "shortest-paths"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "target": "the length of a shortest path from vertex 1 to vertex n, or -1 if there is none",
        "all": "the length of a shortest path from vertex 1 to each vertex 1, 2, ..., n (-1 where there is none), "
        "on one line separated by spaces",
        "count": "how many different shortest paths lead from vertex 1 to vertex n, modulo 1000000007 (0 if none; "
        "paths that use different edges are different, even parallel edges between the same two vertices)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            for directed in (0, 1):
                yield {"question": question, "directed": directed}

    def holdout(self, p: Params) -> Any:
        return (p["question"], p["directed"])

    def held_out(self, key: Any) -> bool:
        return bool(key == ("count", 1))

    def points(self, p: Params) -> int:
        return 2

    def title(self, p: Params) -> str:
        return f"Shortest paths ({'directed' if p['directed'] else 'undirected'}): {p['question']}"

    def statement(self, p: Params) -> str:
        edge = "an edge from u to v (one way)" if p["directed"] else "an edge between u and v (both ways)"
        return (
            "The first line holds n and m (2 <= n <= 3000, 0 <= m <= 12000). Each of the next m lines holds u, v "
            f"and w: {edge} of length w (1 <= w <= 1000; vertices are numbered 1 to n, and two vertices may be "
            f"joined by several edges). Print {self.QUESTIONS[p['question']]}."
        )

    def _graph(self, rng: random.Random, n: int, m: int, top: int) -> tuple[int, list[tuple[int, int, int]]]:
        return n, [(rng.randint(1, n), rng.randint(1, n), rng.randint(1, top)) for _ in range(m)]

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._graph(rng, 4, 5, 9)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        return [
            (2, []),
            (3, [(1, 2, 5), (2, 3, 5), (1, 3, 10), (3, 1, 1)]),
            (4, [(1, 2, 1), (1, 3, 1), (2, 4, 1), (3, 4, 1), (4, 1, 3)]),
            self._graph(rng, 30, 60, 3),
            self._graph(rng, 3000, 12000, 1000),
            self._graph(rng, 3000, 12000, 2),
        ]

    def render(self, p: Params, data: Any) -> str:
        n, edges = data
        return f"{n} {len(edges)}\n" + "".join(f"{u} {v} {w}\n" for u, v, w in edges)

    def solve(self, p: Params, data: Any) -> str:
        n, edges = data
        out: list[list[tuple[int, int]]] = [[] for _ in range(n + 1)]
        for u, v, w in edges:
            out[u].append((v, w))
            if not p["directed"]:
                out[v].append((u, w))
        dist: dict[int, int] = {}
        ways = {1: 1}
        frontier = [(0, 1)]
        while frontier:
            d, u = heapq.heappop(frontier)
            if u in dist:
                continue
            dist[u] = d
            for v, w in out[u]:
                if v in dist:
                    continue
                heapq.heappush(frontier, (d + w, v))
        for d, u in sorted((d, u) for u, d in dist.items()):  # paths counted in order of distance
            for v, w in out[u]:
                if dist.get(v) == d + w:
                    ways[v] = (ways.get(v, 0) + ways.get(u, 0)) % 1_000_000_007
        question = p["question"]
        if question == "target":
            return f"{dist.get(n, -1)}\n"
        if question == "count":
            return f"{ways.get(n, 0) if n in dist else 0}\n"
        return join([dist.get(v, -1) for v in range(1, n + 1)]) + "\n"

    def program(self, p: Params) -> str:
        answers = {
            "target": "print(dist[n] if dist[n] < INF else -1)",
            "all": "print(' '.join(str(d if d < INF else -1) for d in dist[1:]))",
            "count": "print(ways[n] if dist[n] < INF else 0)",
        }
        return code(
            """
            import sys, heapq
            data = sys.stdin.buffer.read().split()
            n, m = int(data[0]), int(data[1])
            graph = [[] for _ in range(n + 1)]
            for i in range(m):
                u, v, w = int(data[2 + 3 * i]), int(data[3 + 3 * i]), int(data[4 + 3 * i])
                graph[u].append((v, w))
                if not $directed:
                    graph[v].append((u, w))
            INF = float('inf')
            dist = [INF] * (n + 1)
            ways = [0] * (n + 1)
            dist[1], ways[1] = 0, 1
            heap = [(0, 1)]
            done = [False] * (n + 1)
            while heap:
                d, u = heapq.heappop(heap)
                if done[u]:
                    continue
                done[u] = True
                for v, w in graph[u]:
                    if d + w < dist[v]:
                        dist[v], ways[v] = d + w, ways[u]
                        heapq.heappush(heap, (d + w, v))
                    elif d + w == dist[v]:
                        ways[v] = (ways[v] + ways[u]) % 1000000007
            $answer
            """,
            directed=p["directed"],
            answer=answers[p["question"]],
        )


class Dependencies(ProgramFamily):
    """Tasks with prerequisites: a cycle, the fewest rounds, what depends on task 1, the tasks free to start; the
    test split holds out one question."""

    name = "dependencies"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "cycle": "YES if the constraints are impossible to meet (they contain a cycle), else NO",
        "rounds": "the fewest rounds needed to do all tasks, when a round may do any tasks whose prerequisites were "
        "all done in earlier rounds; -1 if that is impossible (a cycle)",
        "dependents": "how many tasks need task 1 done first, directly or through other tasks",
        "free": "how many tasks have no prerequisite (can be done first)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            yield {"question": question}

    def holdout(self, p: Params) -> Any:
        return p["question"]

    def held_out(self, key: Any) -> bool:
        return bool(key == "rounds")

    def points(self, p: Params) -> int:
        return 0 if p["question"] == "free" else 2

    def title(self, p: Params) -> str:
        return f"Dependencies: {p['question']}"

    def statement(self, p: Params) -> str:
        return (
            "The first line holds n and m (1 <= n <= 20000, 0 <= m <= 20000): tasks numbered 1 to n and m "
            "constraints. Each of the next m lines holds u and v (u != v): task u must be done before task v. Print "
            f"{self.QUESTIONS[p['question']]}."
        )

    def _dag(self, rng: random.Random, n: int, m: int, cyclic: bool) -> tuple[int, list[tuple[int, int]]]:
        order = list(range(1, n + 1))
        rng.shuffle(order)
        edges: set[tuple[int, int]] = set()
        m = min(m, n * (n - 1) // 2)
        while len(edges) < m:
            a, b = sorted(rng.sample(range(n), 2))
            edges.add((order[a], order[b]))
        if cyclic and n > 1:
            edges.add((order[-1], order[0]))
        return n, sorted(edges, key=lambda e: rng.random())

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._dag(rng, 5, 4, False)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        chain = [(i, i + 1) for i in range(1, 20000)]
        return [
            (1, []),
            (2, [(1, 2), (2, 1)]),
            (3, [(2, 3)]),
            self._dag(rng, 20, 30, False),
            self._dag(rng, 20, 30, True),
            (20000, chain),
            self._dag(rng, 20000, 20000, False),
            self._dag(rng, 20000, 20000, rng.random() < 0.5),
        ]

    def render(self, p: Params, data: Any) -> str:
        n, edges = data
        return f"{n} {len(edges)}\n" + "".join(f"{u} {v}\n" for u, v in edges)

    def solve(self, p: Params, data: Any) -> str:
        n, edges = data
        after: dict[int, list[int]] = {v: [] for v in range(1, n + 1)}
        needs = dict.fromkeys(range(1, n + 1), 0)
        for u, v in edges:
            after[u].append(v)
            needs[v] += 1
        question = p["question"]
        if question == "free":
            return f"{sum(1 for v in range(1, n + 1) if not needs[v])}\n"
        if question == "dependents":
            seen, stack = {1}, [1]
            while stack:
                for v in after[stack.pop()]:
                    if v not in seen:
                        seen.add(v)
                        stack.append(v)
            return f"{len(seen) - 1}\n"
        rounds, layer, done = 0, [v for v in range(1, n + 1) if not needs[v]], 0
        while layer:
            rounds += 1
            done += len(layer)
            following = []
            for u in layer:
                for v in after[u]:
                    needs[v] -= 1
                    if not needs[v]:
                        following.append(v)
            layer = following
        if question == "cycle":
            return "YES\n" if done < n else "NO\n"
        return f"{rounds if done == n else -1}\n"

    def program(self, p: Params) -> str:
        answers = {
            "cycle": "print('YES' if len(order) < n else 'NO')",
            "rounds": "print(max(level[1:]) if len(order) == n else -1)",
            "dependents": "seen = [False] * (n + 1)\nseen[1] = True\nstack = [1]\ncount = 0\nwhile stack:\n"
            "    for v in graph[stack.pop()]:\n        if not seen[v]:\n            seen[v] = True\n"
            "            count += 1\n            stack.append(v)\nprint(count)",
            "free": "print(sum(1 for v in range(1, n + 1) if indegree[v] == 0))",
        }
        return code(
            """
            import sys
            from collections import deque
            data = sys.stdin.buffer.read().split()
            n, m = int(data[0]), int(data[1])
            graph = [[] for _ in range(n + 1)]
            indegree = [0] * (n + 1)
            for i in range(m):
                u, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
                graph[u].append(v)
                indegree[v] += 1
            remaining = indegree[:]
            level = [1] * (n + 1)
            queue = deque(v for v in range(1, n + 1) if remaining[v] == 0)
            order = []
            while queue:
                u = queue.popleft()
                order.append(u)
                for v in graph[u]:
                    level[v] = max(level[v], level[u] + 1)
                    remaining[v] -= 1
                    if remaining[v] == 0:
                        queue.append(v)
            $answer
            """,
            answer=answers[p["question"]],
        )
