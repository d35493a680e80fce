"""Families over records and commands: sorting records, a ledger of accounts, containers driven by commands."""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, join

__all__ = ["Containers", "Ledger", "SortRecords"]

_NAMES = (
    "ada", "bruno", "chen", "dana", "emil", "farah", "goran", "hana", "ivo", "juno", "kai", "lena", "mira", "nils",
    "omar", "pia", "quinn", "rosa", "sven", "tara", "ugo", "vera", "wim", "xia", "yusuf", "zoe", "al", "bea",
)  # fmt: skip
_CITIES = ("oslo", "lima", "rome", "kyiv", "pune", "doha", "bern", "graz", "nice", "riga")


class SortRecords(ProgramFamily):
    """Sort records by a key and a tie-break, print all names or the first k; the test split holds out three
    (key, tie-break) pairs."""

    name = "sort-records"
    KEYS: ClassVar[dict[str, Any]] = {
        "score-desc": ("higher score first", "-r[3]"),
        "score-asc": ("lower score first", "r[3]"),
        "age-asc": ("younger first (smaller age)", "r[2]"),
        "name-length": ("shorter name first", "len(r[0])"),
        "city": ("city in alphabetical order", "r[1]"),
    }
    TIES: ClassVar[dict[str, Any]] = {
        "name": ("by name in alphabetical order", "r[0]"),
        "input": ("in the order they appear in the input", None),
        "score-desc": ("higher score first", "-r[3]"),
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for key in self.KEYS:
            for tie in self.TIES:
                if key.startswith("score") and tie == "score-desc":
                    continue
                for output in ("names", "first-k"):
                    yield {"key": key, "tie": tie, "output": output}

    def holdout(self, p: Params) -> Any:
        return (p["key"], p["tie"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("age-asc", "input"), ("city", "score-desc"), ("score-asc", "name")))

    def points(self, p: Params) -> int:
        return 1

    def title(self, p: Params) -> str:
        return f"Sort records by {p['key']}, ties by {p['tie']} ({p['output']})"

    def statement(self, p: Params) -> str:
        first = "n and k (1 <= k <= n <= 5000)" if p["output"] == "first-k" else "n (1 <= n <= 5000)"
        what = (
            "the first k records in that order, one per line as 'name score'"
            if p["output"] == "first-k"
            else "the names in that order, one per line"
        )
        return (
            f"The first line holds {first}. Each of the next n lines holds a record: a name, a city (both small "
            "letters), an age and a score (integers from 0 to 100), separated by spaces; names may repeat. Order "
            f"the records {self.KEYS[p['key']][0]}; records equal in that are ordered {self.TIES[p['tie']][0]}, "
            f"and records equal in both keep the order of the input. Print {what}."
        )

    def _records(self, rng: random.Random, n: int, spread: int) -> list[tuple[str, str, int, int]]:
        return [
            (rng.choice(_NAMES), rng.choice(_CITIES), rng.randint(18, 18 + spread), rng.randint(0, spread))
            for _ in range(n)
        ]

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [(3, self._records(rng, 5, 6))]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        same = ("ada", "oslo", 30, 50)
        return [
            (1, [same]),
            (2, [same, ("al", "oslo", 30, 50), same, ("zoe", "lima", 30, 50)]),
            (5, self._records(rng, 40, 3)),
            (10, self._records(rng, 200, 100)),
            (100, self._records(rng, 5000, 82)),
        ]

    def render(self, p: Params, data: Any) -> str:
        k, records = data
        head = f"{len(records)} {k}" if p["output"] == "first-k" else f"{len(records)}"
        return head + "\n" + "".join(f"{n} {c} {a} {s}\n" for n, c, a, s in records)

    def solve(self, p: Params, data: Any) -> str:
        k, records = data
        ordered = list(records)  # stable sorts, least significant key first
        tie = p["tie"]
        if tie == "name":
            ordered.sort(key=lambda r: r[0])
        elif tie == "score-desc":
            ordered.sort(key=lambda r: r[3], reverse=True)
        key = p["key"]
        index = {"score-desc": 3, "score-asc": 3, "age-asc": 2, "city": 1}.get(key)
        if key == "name-length":
            ordered.sort(key=lambda r: len(r[0]))
        else:
            assert index is not None
            ordered.sort(key=lambda r: r[index], reverse=key == "score-desc")
        if p["output"] == "first-k":
            return "".join(f"{r[0]} {r[3]}\n" for r in ordered[:k])
        return "".join(f"{r[0]}\n" for r in ordered)

    def program(self, p: Params) -> str:
        parts = [self.KEYS[p["key"]][1]]
        tie = self.TIES[p["tie"]][1]
        if tie is not None:
            parts.append(tie)
        parts.append("i")
        if p["output"] == "first-k":
            head, show = (
                "n, k = int(first[0]), int(first[1])",
                "for i in order[:k]:\n    print(records[i][0], records[i][3])",
            )
        else:
            head, show = "n = int(first[0])", "for i in order:\n    print(records[i][0])"
        return code(
            """
            import sys
            lines = sys.stdin.read().split("\\n")
            first = lines[0].split()
            $head
            records = []
            for line in lines[1:1 + n]:
                name, city, age, score = line.split()
                records.append((name, city, int(age), int(score)))

            def key(i):
                r = records[i]
                return ($parts,)

            order = sorted(range(len(records)), key=key)
            $show
            """,
            head=head,
            show=show,
            parts=", ".join(parts),
        )


class Ledger(ProgramFamily):
    """Accounts driven by commands, with an overdraft rule (none, a limit, a fee); the test split holds out two
    (rule, order) pairs."""

    name = "ledger"
    RULES: ClassVar[dict[str, Any]] = {
        "none": "a withdrawal or transfer that would take the balance below 0 is rejected",
        "limit:50": "a balance may go down to -50, not lower: a withdrawal or transfer that would take it lower is "
        "rejected",
        "limit:100": "a balance may go down to -100, not lower: a withdrawal or transfer that would take it lower is "
        "rejected",
        "fee:1": "every accepted withdrawal or transfer also takes a fee of 1 from the account paying; one that would "
        "take its balance (fee included) below 0 is rejected",
        "fee:5": "every accepted withdrawal or transfer also takes a fee of 5 from the account paying; one that would "
        "take its balance (fee included) below 0 is rejected",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for rule in self.RULES:
            for order in ("name", "balance"):
                yield {"rule": rule, "order": order}

    def holdout(self, p: Params) -> Any:
        return (p["rule"], p["order"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("limit:100", "balance"), ("fee:1", "name")))

    def points(self, p: Params) -> int:
        return 1

    def title(self, p: Params) -> str:
        return f"A ledger ({p['rule']}, listed by {p['order']})"

    def statement(self, p: Params) -> str:
        order = "by name" if p["order"] == "name" else "by balance, largest first (equal balances by name)"
        return (
            "The first line holds q (1 <= q <= 5000). Each of the next q lines is a command: 'open NAME' opens an "
            "account with balance 0 (if it is not open yet), 'deposit NAME AMOUNT', 'withdraw NAME AMOUNT' and "
            "'transfer FROM TO AMOUNT' (amounts are positive integers). Print OK or REJECTED for every command but "
            f"'open'. A command naming an account that was never opened is rejected, and {self.RULES[p['rule']]}. "
            f"After the commands, print every open account as 'NAME BALANCE', one per line, {order}."
        )

    def _commands(self, rng: random.Random, q: int, people: int) -> list[tuple[Any, ...]]:
        names = rng.sample(_NAMES, people)
        commands: list[tuple[Any, ...]] = [("open", name) for name in names[: max(1, people - 1)]]
        while len(commands) < q:
            roll = rng.random()
            amount = rng.randint(1, 120)
            if roll < 0.1:
                commands.append(("open", rng.choice(names)))
            elif roll < 0.4:
                commands.append(("deposit", rng.choice(names), amount))
            elif roll < 0.75:
                commands.append(("withdraw", rng.choice(names), amount))
            else:
                commands.append(("transfer", rng.choice(names), rng.choice(names), amount))
        return commands

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._commands(rng, 8, 3)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        return [
            [("open", "ada")],
            [("deposit", "ada", 5), ("open", "ada"), ("withdraw", "ada", 1), ("transfer", "ada", "ada", 1)],
            [("open", "bea"), ("open", "al"), ("deposit", "al", 10), ("transfer", "al", "bea", 10),
             ("withdraw", "bea", 50), ("withdraw", "al", 1)],
            self._commands(rng, 60, 4),
            self._commands(rng, 5000, 20),
        ]  # fmt: skip

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n" + "".join(join(command) + "\n" for command in data)

    def solve(self, p: Params, data: Any) -> str:
        kind, _, size = p["rule"].partition(":")
        floor = -int(size) if kind == "limit" else 0
        fee = int(size) if kind == "fee" else 0
        balances: dict[str, int] = {}
        out = []
        for command in data:
            if command[0] == "open":
                balances.setdefault(command[1], 0)
                continue
            names, amount = command[1:-1], command[-1]
            if any(name not in balances for name in names):
                out.append("REJECTED")
            elif command[0] == "deposit":
                balances[names[0]] += amount
                out.append("OK")
            elif balances[names[0]] - amount - fee < floor:
                out.append("REJECTED")
            else:
                balances[names[0]] -= amount + fee
                if command[0] == "transfer":
                    balances[names[1]] += amount
                out.append("OK")
        if p["order"] == "name":
            listing = sorted(balances.items())
        else:
            listing = sorted(balances.items(), key=lambda item: (-item[1], item[0]))
        out += [f"{name} {balance}" for name, balance in listing]
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        kind, _, size = p["rule"].partition(":")
        order = "sorted(balance)" if p["order"] == "name" else "sorted(balance, key=lambda n: (-balance[n], n))"
        return code(
            """
            import sys
            FLOOR = $floor
            FEE = $fee
            lines = sys.stdin.read().split("\\n")
            balance = {}
            for line in lines[1:1 + int(lines[0])]:
                words = line.split()
                if words[0] == "open":
                    if words[1] not in balance:
                        balance[words[1]] = 0
                    continue
                accounts, amount = words[1:-1], int(words[-1])
                if not all(a in balance for a in accounts):
                    print("REJECTED")
                elif words[0] == "deposit":
                    balance[accounts[0]] += amount
                    print("OK")
                elif balance[accounts[0]] - amount - FEE < FLOOR:
                    print("REJECTED")
                else:
                    balance[accounts[0]] -= amount + FEE
                    if words[0] == "transfer":
                        balance[accounts[1]] += amount
                    print("OK")
            for name in $order:
                print(name, balance[name])
            """,
            floor=-int(size) if kind == "limit" else 0,
            fee=int(size) if kind == "fee" else 0,
            order=order,
        )


class Containers(ProgramFamily):
    """A stack, queue, deque or heap driven by commands, with one more query (size, sum, smallest, largest); the
    test split holds out four (container, query) pairs."""

    name = "containers"
    KINDS: ClassVar[dict[str, Any]] = {
        "stack": ("a stack", "'pop' removes the value pushed last"),
        "queue": ("a queue", "'pop' removes the value pushed first"),
        "deque": ("a double-ended queue", "'push' adds at the back, 'push_front' at the front; 'pop' removes from "
                  "the front and 'pop_back' from the back"),
        "min-heap": ("a priority queue", "'pop' removes the smallest value (one copy, if it is there more than once)"),
        "max-heap": ("a priority queue", "'pop' removes the largest value (one copy, if it is there more than once)"),
    }  # fmt: skip
    EXTRAS: ClassVar[dict[str, Any]] = {
        "none": "",
        "size": " and 'size' prints how many values it holds",
        "sum": " and 'sum' prints the sum of its values (0 when empty)",
        "min": " and 'min' prints its smallest value (EMPTY when empty)",
        "max": " and 'max' prints its largest value (EMPTY when empty)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for kind in self.KINDS:
            for extra in self.EXTRAS:
                yield {"kind": kind, "extra": extra}

    def holdout(self, p: Params) -> Any:
        return (p["kind"], p["extra"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("queue", "max"), ("max-heap", "sum"), ("deque", "size"), ("stack", "min")))

    def points(self, p: Params) -> int:
        kind, extra = p["kind"], p["extra"]
        if extra in ("min", "max") and (kind, extra) not in (("min-heap", "min"), ("max-heap", "max")):
            return 2
        return 1 if kind.endswith("heap") or kind == "deque" or extra == "sum" else 0

    def title(self, p: Params) -> str:
        return (
            f"Commands on {self.KINDS[p['kind']][0]} ({p['kind']}){'' if p['extra'] == 'none' else ', ' + p['extra']}"
        )

    def _verbs(self, p: Params) -> list[str]:
        verbs = ["push", "pop", "peek"]
        if p["kind"] == "deque":
            verbs += ["push_front", "pop_back"]
        if p["extra"] != "none":
            verbs.append(p["extra"])
        return verbs

    def statement(self, p: Params) -> str:
        kind, rule = self.KINDS[p["kind"]]
        return (
            f"Simulate {kind}, empty at first. The first line holds q (1 <= q <= 8000); each of the next q lines is "
            f"a command: 'push X' adds the integer X (|X| <= 10^9); {rule}, and prints the value it removed; 'peek' "
            f"prints the value 'pop' would remove, without removing it{self.EXTRAS[p['extra']]}. 'pop'"
            f"{', pop_back' if p['kind'] == 'deque' else ''} and 'peek' print EMPTY when there is nothing to remove."
        )

    def _commands(self, p: Params, rng: random.Random, q: int, spread: int) -> list[tuple[str, ...]]:
        verbs = self._verbs(p)
        weights = [5 if verb.startswith("push") else 2 for verb in verbs]
        out: list[tuple[str, ...]] = []
        for verb in rng.choices(verbs, weights, k=q):
            out.append((verb, str(rng.randint(-spread, spread))) if verb.startswith("push") else (verb,))
        return out

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._commands(p, rng, 9, 9)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        verbs = self._verbs(p)
        return [
            [(verb,) for verb in verbs if not verb.startswith("push")],
            [("push", "5"), ("push", "5"), *[(verb,) for verb in verbs if not verb.startswith("push")] * 3],
            self._commands(p, rng, 80, 20),
            self._commands(p, rng, 8000, 10**9),
        ]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n" + "".join(join(command) + "\n" for command in data)

    def solve(self, p: Params, data: Any) -> str:
        kind = p["kind"]
        items: deque[int] = deque()
        heap: list[int] = []  # a max-heap keeps its values negated
        sign = -1 if kind == "max-heap" else 1
        out: list[object] = []
        for verb, *rest in data:
            stored = heap if kind.endswith("heap") else items
            if verb == "push":
                value = int(rest[0])
                if kind.endswith("heap"):
                    heapq.heappush(heap, sign * value)
                else:
                    items.append(value)
            elif verb == "push_front":
                items.appendleft(int(rest[0]))
            elif verb == "size":
                out.append(len(stored))
            elif verb == "sum":
                out.append(sign * sum(stored))
            elif not stored:
                out.append("EMPTY")
            elif verb in ("min", "max"):
                low, high = sorted((sign * min(stored), sign * max(stored)))
                out.append(low if verb == "min" else high)
            elif kind.endswith("heap"):
                out.append(sign * (heapq.heappop(heap) if verb == "pop" else heap[0]))
            elif verb == "pop_back" or (kind == "stack" and verb == "pop"):
                out.append(items.pop())
            elif verb == "pop":
                out.append(items.popleft())
            else:
                out.append(items[-1] if kind == "stack" else items[0])
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        return _container_program(p["kind"], p["extra"])


def _container_program(kind: str, extra: str) -> str:
    """A reference that keeps what each query needs as it goes (a running sum, sorted multiset by counts)."""
    lines = ["import sys, heapq", "from collections import deque", "items = deque()", "heap = []", "total = 0"]
    lines += ["counts = {}", "lazy = []", "out = []", "data = sys.stdin.read().split('\\n')"]
    lines += ["for line in data[1:1 + int(data[0])]:", "    words = line.split()", "    verb = words[0]"]
    lines += ["    if verb in ('push', 'push_front'):", "        x = int(words[1])", "        total += x"]
    if extra in ("min", "max"):
        lines += [
            "        counts[x] = counts.get(x, 0) + 1",
            f"        heapq.heappush(lazy, {'x' if extra == 'min' else '-x'})",
        ]
    if kind == "min-heap":
        lines += ["        heapq.heappush(heap, x)"]
    elif kind == "max-heap":
        lines += ["        heapq.heappush(heap, -x)"]
    else:
        lines += ["        items.appendleft(x) if verb == 'push_front' else items.append(x)"]
    size = "len(heap)" if kind.endswith("heap") else "len(items)"
    lines += [
        "    elif verb in ('pop', 'peek', 'pop_back'):",
        f"        if {size} == 0:",
        "            out.append('EMPTY')",
    ]
    lines += ["            continue"]
    if kind.endswith("heap"):
        sign = "" if kind == "min-heap" else "-"
        lines += [f"        x = {sign}(heapq.heappop(heap) if verb == 'pop' else heap[0])"]
    else:
        take = {"stack": ("items.pop()", "items[-1]"), "queue": ("items.popleft()", "items[0]")}
        pop, peek = take.get(kind, ("items.popleft()", "items[0]"))
        lines += [f"        x = items.pop() if verb == 'pop_back' else {pop} if verb == 'pop' else {peek}"]
    lines += ["        out.append(x)", "        if verb != 'peek':", "            total -= x"]
    if extra in ("min", "max"):
        lines += ["            counts[x] -= 1"]
    lines += [
        "    elif verb == 'size':",
        f"        out.append({size})",
        "    elif verb == 'sum':",
        "        out.append(total)",
    ]
    if extra in ("min", "max"):
        key = "lazy[0]" if extra == "min" else "-lazy[0]"
        lines += ["    else:", f"        while lazy and counts[{key}] == 0:", "            heapq.heappop(lazy)"]
        lines += [f"        out.append({key} if lazy else 'EMPTY')"]
    lines += ["print('\\n'.join(map(str, out)))"]
    return "\n".join(lines) + "\n"
