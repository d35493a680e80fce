"""Families over strings of letters and brackets: longest substrings of a kind, bracket questions."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, join

__all__ = ["Brackets", "LongestSubstring"]


def _window(s: str, fits: Any) -> tuple[int, int]:
    """The leftmost longest substring whose letter counts ``fits`` accepts (shrinking keeps it valid)."""
    counts: Counter[str] = Counter()
    best = (0, 0)
    left = 0
    for right, c in enumerate(s):
        counts[c] += 1
        while not fits(counts):
            counts[s[left]] -= 1
            if not counts[s[left]]:
                del counts[s[left]]
            left += 1
        if right + 1 - left > best[1] - best[0]:
            best = (left, right + 1)
    return best


def _longest(kind: str, s: str) -> tuple[int, int]:
    if kind == "unique":
        return _window(s, lambda counts: max(counts.values()) <= 1)
    if kind.startswith("distinct-"):
        limit = int(kind[-1])
        return _window(s, lambda counts: len(counts) <= limit)
    if kind == "palindrome":
        best = (0, 1)
        for center in range(2 * len(s) - 1):
            lo, hi = center // 2, (center + 1) // 2
            while lo >= 0 and hi < len(s) and s[lo] == s[hi]:
                lo, hi = lo - 1, hi + 1
            if hi - lo - 1 > best[1] - best[0] or (hi - lo - 1 == best[1] - best[0] and lo + 1 < best[0]):
                best = (lo + 1, hi)
        return best
    best, start = (0, 1), 0
    for i in range(1, len(s) + 1):
        if i == len(s) or (s[i] != s[i - 1]) == (kind == "one-char"):
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = i
    return best


class LongestSubstring(ProgramFamily):
    """The longest substring of a kind, by length or as itself (the leftmost); the test split holds out three
    (kind, answer) pairs."""

    name = "longest-substring"
    KINDS: ClassVar[dict[str, Any]] = {
        "unique": "in which no letter appears twice",
        "distinct-2": "that holds at most 2 different letters",
        "distinct-3": "that holds at most 3 different letters",
        "one-char": "made of one letter repeated",
        "palindrome": "that reads the same backwards (a palindrome)",
        "no-adjacent": "in which no two neighbouring letters are equal",
    }
    ALPHABETS: ClassVar[dict[str, Any]] = {
        "unique": 12,
        "distinct-2": 4,
        "distinct-3": 5,
        "one-char": 3,
        "palindrome": 2,
        "no-adjacent": 3,
    }
    PROGRAMS: ClassVar[dict[str, Any]] = {
        "unique": "last = {}\nleft = 0\nfor right, c in enumerate(s):\n    if last.get(c, -1) >= left:\n"
        "        left = last[c] + 1\n    last[c] = right\n    if right + 1 - left > best_len:\n"
        "        best_start, best_len = left, right + 1 - left",
        "distinct": "counts = {}\nleft = 0\nfor right, c in enumerate(s):\n    counts[c] = counts.get(c, 0) + 1\n"
        "    while len(counts) > LIMIT:\n        counts[s[left]] -= 1\n        if counts[s[left]] == 0:\n"
        "            del counts[s[left]]\n        left += 1\n    if right + 1 - left > best_len:\n"
        "        best_start, best_len = left, right + 1 - left",
        "palindrome": "for center in range(len(s)):\n    for lo, hi in ((center, center), (center, center + 1)):\n"
        "        while lo >= 0 and hi < len(s) and s[lo] == s[hi]:\n            lo -= 1\n            hi += 1\n"
        "        size = hi - lo - 1\n        if size > best_len or (size == best_len and lo + 1 < best_start):\n"
        "            best_start, best_len = lo + 1, size",
        "runs": "start = 0\nfor i in range(1, len(s) + 1):\n    if i == len(s) or SPLIT:\n"
        "        if i - start > best_len:\n            best_start, best_len = start, i - start\n        start = i",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for kind in self.KINDS:
            for answer in ("length", "substring"):
                yield {"kind": kind, "answer": answer}

    def holdout(self, p: Params) -> Any:
        return (p["kind"], p["answer"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("distinct-3", "substring"), ("palindrome", "length"), ("no-adjacent", "length")))

    def points(self, p: Params) -> int:
        return 0 if p["kind"] in ("one-char", "no-adjacent") else 2

    def title(self, p: Params) -> str:
        return f"Longest substring ({p['kind']}): its {p['answer']}"

    def statement(self, p: Params) -> str:
        size = 500 if p["kind"] == "palindrome" else 20000
        what = "its length" if p["answer"] == "length" else "it (the one that starts first, if several are longest)"
        return (
            "The first line holds q (1 <= q <= 10); each of the next q lines holds a string of 1 to "
            f"{size} small letters a-z. For each string, consider its longest substring (a run of consecutive "
            f"characters) {self.KINDS[p['kind']]}, and print {what}."
        )

    def _string(self, p: Params, rng: random.Random, n: int) -> str:
        letters = "abcdefghijklmnopqrstuvwxyz"[: self.ALPHABETS[p["kind"]]]
        if p["kind"] == "one-char":
            return "".join(c * rng.randint(1, 4) for c in rng.choices(letters, k=n))[:n]
        return "".join(rng.choices(letters, k=n))

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[self._string(p, rng, 10), self._string(p, rng, 7)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        size = 500 if p["kind"] == "palindrome" else 20000
        return [
            ["a"],
            ["aaaa", "abab", "abcabcbb"],
            [self._string(p, rng, rng.randint(1, 40)) for _ in range(10)],
            ["ab" * (size // 2), "z" * size],
            [self._string(p, rng, size)],
        ]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n" + "".join(s + "\n" for s in data)

    def solve(self, p: Params, data: Any) -> str:
        out = []
        for s in data:
            start, end = _longest(p["kind"], s)
            out.append(str(end - start) if p["answer"] == "length" else s[start:end])
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        kind = p["kind"]
        if kind.startswith("distinct-"):
            body = self.PROGRAMS["distinct"].replace("LIMIT", kind[-1])
        elif kind in ("one-char", "no-adjacent"):
            split = "s[i] != s[i - 1]" if kind == "one-char" else "s[i] == s[i - 1]"
            body = self.PROGRAMS["runs"].replace("SPLIT", split)
        else:
            body = self.PROGRAMS[kind]
        indented = "\n".join("    " + line for line in body.splitlines())
        answer = "best_len" if p["answer"] == "length" else "s[best_start:best_start + best_len]"
        return (
            "import sys\nlines = sys.stdin.read().split()\nfor s in lines[1:1 + int(lines[0])]:\n"
            f"    best_start, best_len = 0, 1\n{indented}\n    print({answer})\n"
        )


class Brackets(ProgramFamily):
    """Questions about strings of brackets of one to four kinds; the test split holds out two (kinds, question)
    pairs."""

    name = "brackets"
    SETS = ("()", "()[]", "()[]{}", "()[]{}<>")
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "balanced": "YES if it is balanced, else NO",
        "depth": "its greatest nesting depth if it is balanced ('(())()' has depth 2, an empty line 0), else -1",
        "insertions": "the fewest brackets that must be inserted (anywhere) to make it balanced",
        "longest": "the length of its longest substring that is balanced (0 if none)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for kinds in self.SETS:
            for question in ("balanced", "depth"):
                if (kinds, question) != ("()[]{}", "balanced"):  # close to a hand-written task
                    yield {"kinds": kinds, "question": question}
        for question in ("insertions", "longest"):
            yield {"kinds": "()", "question": question}

    def holdout(self, p: Params) -> Any:
        return (p["kinds"], p["question"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("()[]{}<>", "depth"), ("()", "longest")))

    def points(self, p: Params) -> int:
        return 2 if p["question"] == "longest" else 1

    def title(self, p: Params) -> str:
        return f"Brackets {p['kinds']}: {p['question']}"

    def statement(self, p: Params) -> str:
        pairs = ", ".join(p["kinds"][i : i + 2] for i in range(0, len(p["kinds"]), 2))
        return (
            f"The first line holds q (1 <= q <= 1000). Each of the next q lines holds a string made only of the "
            f"brackets {p['kinds']} (possibly empty; at most 200000 characters in all). A string is balanced when "
            f"every bracket is closed by a bracket of its own kind ({pairs}) and brackets close in the reverse order "
            f"they opened. For each string print {self.QUESTIONS[p['question']]}."
        )

    def _string(self, p: Params, rng: random.Random, pairs: int) -> str:
        kinds = p["kinds"]
        out: list[str] = []
        stack: list[str] = []
        for _ in range(2 * pairs):
            if stack and (rng.random() < 0.5 or len(stack) >= pairs):
                out.append(stack.pop())
            else:
                i = rng.randrange(0, len(kinds), 2)
                out.append(kinds[i])
                stack.append(kinds[i + 1])
        out += reversed(stack)
        if out and rng.random() < 0.5:  # break it somewhere
            i = rng.randrange(len(out))
            out[i] = rng.choice(kinds)
        return "".join(out)

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[self._string(p, rng, rng.randint(2, 4)) for _ in range(3)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        o, c = p["kinds"][-2:]
        return [
            [""],
            [o, c, c + o, o + o + c],
            [self._string(p, rng, rng.randint(1, 12)) for _ in range(100)],
            [o * 50000 + c * 50000, o * 40000 + c * 39999],
            [self._string(p, rng, 500) for _ in range(100)],
        ]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n" + "".join(s + "\n" for s in data)

    def solve(self, p: Params, data: Any) -> str:
        return join([self._answer(p, s) for s in data], "\n") + "\n"

    def _answer(self, p: Params, s: str) -> object:
        closing = {p["kinds"][i + 1]: p["kinds"][i] for i in range(0, len(p["kinds"]), 2)}
        stack: list[int] = [-1]  # indices of unmatched brackets, below them a floor
        depth = deepest = 0
        balanced = True
        best = 0
        for i, c in enumerate(s):
            if c in closing:
                depth -= 1
                if len(stack) > 1 and s[stack[-1]] == closing[c]:
                    stack.pop()
                    best = max(best, i - stack[-1])
                else:
                    balanced = False
                    stack.append(i)
            else:
                depth += 1
                deepest = max(deepest, depth)
                stack.append(i)
        balanced = balanced and len(stack) == 1
        question = p["question"]
        if question == "balanced":
            return "YES" if balanced else "NO"
        if question == "depth":
            return deepest if balanced else -1
        if question == "longest":
            return best
        opened = needed = 0
        for c in s:
            if c == "(":
                opened += 1
            elif opened:
                opened -= 1
            else:
                needed += 1
        return needed + opened

    def program(self, p: Params) -> str:
        question = p["question"]
        if question in ("balanced", "depth"):
            body = (
                "stack = []\nok = True\ndeepest = 0\nfor c in s:\n    if c in OPEN:\n        stack.append(c)\n"
                "        deepest = max(deepest, len(stack))\n    elif not stack or stack.pop() != MATCH[c]:\n"
                "        ok = False\n        break\nok = ok and not stack\n"
            )
            body += 'print("YES" if ok else "NO")' if question == "balanced" else "print(deepest if ok else -1)"
        elif question == "insertions":
            body = (
                "opened = needed = 0\nfor c in s:\n    if c == '(':\n        opened += 1\n    elif opened:\n"
                "        opened -= 1\n    else:\n        needed += 1\nprint(needed + opened)"
            )
        else:
            body = (
                "best = 0\nfor text, o in ((s, '('), (s[::-1], ')')):\n    left = right = 0\n    for c in text:\n"
                "        if c == o:\n            left += 1\n        else:\n            right += 1\n"
                "        if left == right:\n            best = max(best, 2 * right)\n        elif right > left:\n"
                "            left = right = 0\nprint(best)"
            )
        indented = "\n".join("    " + line for line in body.splitlines())
        kinds = p["kinds"]
        return code(
            """
            import sys
            OPEN = "$opening"
            MATCH = $match
            lines = sys.stdin.read().split("\\n")
            for s in lines[1:1 + int(lines[0])]:
            $body
            """,
            opening=kinds[0::2],
            match=repr({kinds[i + 1]: kinds[i] for i in range(0, len(kinds), 2)}),
            body=indented,
        )
