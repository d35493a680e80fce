"""Families that read tokens: arithmetic expressions to evaluate, token frequencies."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, join

__all__ = ["Expressions", "TokenFrequency"]

_MOD = 1_000_000_007
_LIMIT = 10**15  # products stay below this where no modulus is taken


def _divide(a: int, b: int, rounding: str) -> int:
    if rounding == "floor":
        return a // b
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


class _Builder:
    """Random expressions with their values, computed as they are built (never by parsing the text)."""

    def __init__(self, rng: random.Random, variant: dict[str, Any]) -> None:
        self.rng = rng
        self.ops: str = variant["ops"]
        self.parens: bool = variant["parens"]
        self.rounding: str = variant["rounding"]
        self.mod: bool = variant["mod"]
        self.top = 10**9 if self.mod else 99

    def space(self) -> str:
        return " " if self.rng.random() < 0.5 else ""

    def expression(self, depth: int, terms: int) -> tuple[str, int]:
        text, value = self.term(depth)
        for _ in range(terms - 1):
            op = self.rng.choice("+-")
            part, v = self.term(depth)
            text += f"{self.space()}{op}{self.space()}{part}"
            value = value + v if op == "+" else value - v
        return text, value

    def term(self, depth: int) -> tuple[str, int]:
        text, value = self.factor(depth)
        multiplying = [op for op in self.ops if op in "*/"]
        for _ in range(self.rng.randint(0, 2) if multiplying else 0):
            op = self.rng.choice(multiplying)
            part, v = self.factor(depth)
            if op == "/" and v == 0:
                op = "*"
            if op == "*" and not self.mod and abs(value * v) >= _LIMIT:
                part, v = "1", 1
            text += f"{self.space()}{op}{self.space()}{part}"
            value = value * v if op == "*" else _divide(value, v, self.rounding)
        return text, value

    def factor(self, depth: int) -> tuple[str, int]:
        if self.parens and depth > 0 and self.rng.random() < 0.35:
            inner, value = self.expression(depth - 1, self.rng.randint(1, 3))
            return f"({self.space()}{inner}{self.space()})", value
        value = self.rng.randint(0, self.top)
        return str(value), value


class Expressions(ProgramFamily):
    """Evaluate arithmetic expressions with a given set of operators, with or without parentheses, division
    rounding down or toward zero, or modulo a prime; the test split holds out two variants."""

    name = "expressions"
    VARIANTS: ClassVar[dict[str, dict[str, Any]]] = {
        "add": {"ops": "+-", "parens": False, "rounding": "", "mod": False},
        "add-paren": {"ops": "+-", "parens": True, "rounding": "", "mod": False},
        "mul": {"ops": "+-*", "parens": False, "rounding": "", "mod": False},
        "mul-paren": {"ops": "+-*", "parens": True, "rounding": "", "mod": False},
        "div-floor": {"ops": "+-*/", "parens": True, "rounding": "floor", "mod": False},
        "div-trunc": {"ops": "+-*/", "parens": True, "rounding": "trunc", "mod": False},
        "div-trunc-flat": {"ops": "+-*/", "parens": False, "rounding": "trunc", "mod": False},
        "mod": {"ops": "+-*", "parens": True, "rounding": "", "mod": True},
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for variant in self.VARIANTS:
            yield {"variant": variant}

    def holdout(self, p: Params) -> Any:
        return p["variant"]

    def held_out(self, key: Any) -> bool:
        return bool(key in ("add-paren", "div-trunc-flat"))

    def points(self, p: Params) -> int:
        return 2 if self.VARIANTS[p["variant"]]["parens"] else 1

    def title(self, p: Params) -> str:
        return f"Evaluate expressions ({p['variant']})"

    def statement(self, p: Params) -> str:
        v = self.VARIANTS[p["variant"]]
        ops = " ".join(v["ops"])
        parts = [
            "Each line of the input (at most 100 lines, each at most 50000 characters) holds an arithmetic "
            f"expression made of non-negative integers (at most {10 if v['mod'] else 2} digits), the operators {ops}"
            + (", parentheses (nested at most 3000 deep)" if v["parens"] else "")
            + " and spaces, which may appear between any two of them. There is no unary minus."
        ]
        if "*" in v["ops"]:
            parts.append(f"{' and '.join(o for o in '*/' if o in v['ops'])} bind tighter than + and -;")
            parts.append("operators of the same rank apply from left to right.")
        else:
            parts.append("Operators apply from left to right.")
        if "/" in v["ops"]:
            direction = "down (toward minus infinity)" if v["rounding"] == "floor" else "toward zero"
            parts.append(f"/ is integer division, rounding {direction}; no division by zero occurs.")
        if v["mod"]:
            parts.append(f"Print each expression's value modulo {_MOD} (a number from 0 to {_MOD - 1}).")
        else:
            parts.append("Print each expression's value (every intermediate result stays below 10^15 in size).")
        return " ".join(parts)

    def _many(self, p: Params, rng: random.Random, count: int, depth: int, terms: int) -> list[tuple[str, int]]:
        builder = _Builder(rng, self.VARIANTS[p["variant"]])
        return [builder.expression(depth, rng.randint(1, terms)) for _ in range(count)]

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [self._many(p, rng, 3, 2, 3)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        builder = _Builder(rng, self.VARIANTS[p["variant"]])
        cases: list[Any] = [
            [("0", 0), ("7", 7), (" 12 ", 12)],
            self._many(p, rng, 100, 4, 5),
            [builder.expression(1, 4000)],
        ]
        if self.VARIANTS[p["variant"]]["parens"]:
            cases.append([_nested(rng, 3000), _nested(rng, 50)])
        return cases

    def render(self, p: Params, data: Any) -> str:
        return "".join(text + "\n" for text, _ in data)

    def solve(self, p: Params, data: Any) -> str:
        mod = self.VARIANTS[p["variant"]]["mod"]
        return "".join(f"{value % _MOD if mod else value}\n" for _, value in data)

    def program(self, p: Params) -> str:
        v = self.VARIANTS[p["variant"]]
        keep = " % M" if v["mod"] else ""
        division = "a // b" if v["rounding"] == "floor" else "abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)"
        return code(
            """
            import sys
            M = 1000000007
            RANK = {'+': 1, '-': 1, '*': 2, '/': 2}

            def apply(values, op):
                b = values.pop()
                a = values.pop()
                if op == '+':
                    values.append((a + b)$keep)
                elif op == '-':
                    values.append((a - b)$keep)
                elif op == '*':
                    values.append((a * b)$keep)
                else:
                    values.append($division)

            for line in sys.stdin.read().splitlines():
                values, ops = [], []
                i = 0
                while i < len(line):
                    c = line[i]
                    if c.isdigit():
                        j = i
                        while j < len(line) and line[j].isdigit():
                            j += 1
                        values.append(int(line[i:j]))
                        i = j
                        continue
                    if c == '(':
                        ops.append(c)
                    elif c == ')':
                        while ops[-1] != '(':
                            apply(values, ops.pop())
                        ops.pop()
                    elif c in RANK:
                        while ops and ops[-1] != '(' and RANK[ops[-1]] >= RANK[c]:
                            apply(values, ops.pop())
                        ops.append(c)
                    i += 1
                while ops:
                    apply(values, ops.pop())
                print(values[0]$keep)
            """,
            keep=keep,
            division=division,
        )


def _nested(rng: random.Random, depth: int) -> tuple[str, int]:
    """``depth`` parentheses nested in one another, each closing after one + or -: ``((3+1)-4)``."""
    value = rng.randint(0, 9)
    text = str(value)
    for _ in range(depth):
        n = rng.randint(0, 9)
        op = rng.choice("+-")
        text += f"{op}{n})"
        value = value + n if op == "+" else value - n
    return "(" * depth + text, value


def _pseudo_words(rng: random.Random, count: int) -> list[str]:
    syllables = ("ka", "lo", "mi", "ne", "ru", "ta", "so", "bi", "de", "fu", "ga", "po")
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choices(syllables, k=rng.randint(1, 4))))
    return sorted(words)


class TokenFrequency(ProgramFamily):
    """Questions about how often tokens (words or integers) occur; the test split holds out two (question, token)
    pairs."""

    name = "token-frequency"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "most": "the most frequent token (the smallest one among those tied)",
        "top-k": "the k most frequent tokens, one per line as 'token count', most frequent first and tied ones "
        "smallest first (all of them when there are fewer than k different tokens)",
        "exactly": "the different tokens that appear exactly t times, smallest first, on one line separated by "
        "spaces (an empty line when there are none)",
        "distinct": "how many different tokens there are",
        "first-repeat": "the token whose second occurrence comes first, reading from the left, or NONE when no "
        "token appears twice",
        "first-unique": "the first token, reading from the left, that appears exactly once, or NONE when there is none",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            for tokens in ("words", "integers"):
                if (question, tokens) != ("top-k", "words"):  # a hand-written task
                    yield {"question": question, "tokens": tokens}

    def holdout(self, p: Params) -> Any:
        return (p["question"], p["tokens"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("first-repeat", "integers"), ("exactly", "words")))

    def points(self, p: Params) -> int:
        return 0 if p["question"] in ("most", "distinct") else 1

    def title(self, p: Params) -> str:
        return f"Token frequencies ({p['tokens']}): {p['question']}"

    def statement(self, p: Params) -> str:
        first = {"top-k": "n and k (1 <= k <= 1000)", "exactly": "n and t (1 <= t <= 5)"}.get(p["question"], "n")
        if p["tokens"] == "words":
            tokens, order = "words of small letters a-z", "alphabetical order"
        else:
            tokens, order = "integers between -10^6 and 10^6", "numeric order"
        return (
            f"The first line holds {first}, with 1 <= n <= 50000; the second line holds n tokens, {tokens}, "
            f"separated by spaces. Smaller means earlier in {order}. Print {self.QUESTIONS[p['question']]}."
        )

    def _tokens(self, p: Params, rng: random.Random, n: int, pool: int) -> list[str]:
        if p["tokens"] == "words":
            choices = _pseudo_words(rng, pool)
        else:
            choices = [str(v) for v in rng.sample(range(-(10**6), 10**6 + 1), pool)]
        return rng.choices(choices, k=n)

    def _extra(self, p: Params, rng: random.Random) -> int:
        return rng.randint(1, 4) if p["question"] == "top-k" else rng.randint(1, 3)

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [(self._extra(p, rng), self._tokens(p, rng, 9, 5))]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        one = "x" if p["tokens"] == "words" else "-5"
        two = ("b", "a") if p["tokens"] == "words" else ("10", "9")
        return [
            (1, [one]),
            (2, [two[0], two[1], two[1], two[0]]),
            (3, [two[0], two[1]]),
            (self._extra(p, rng), self._tokens(p, rng, 300, 40)),
            (1000 if p["question"] == "top-k" else rng.randint(1, 5), self._tokens(p, rng, 50000, 3000)),
            (2, self._tokens(p, rng, 3000, 3000)),
        ]

    def render(self, p: Params, data: Any) -> str:
        extra, tokens = data
        head = f"{len(tokens)} {extra}" if p["question"] in ("top-k", "exactly") else str(len(tokens))
        return f"{head}\n{join(tokens)}\n"

    def solve(self, p: Params, data: Any) -> str:
        extra, tokens = data
        words = p["tokens"] == "words"

        def key(token: str) -> tuple[int, str]:
            return (0, token) if words else (int(token), "")

        counts: Counter[str] = Counter(tokens)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], key(item[0])))
        question = p["question"]
        if question == "most":
            return f"{ranked[0][0]}\n"
        if question == "top-k":
            return "".join(f"{token} {count}\n" for token, count in ranked[:extra])
        if question == "exactly":
            chosen = sorted((t for t, c in counts.items() if c == extra), key=key)
            return join(chosen) + "\n"
        if question == "distinct":
            return f"{len(counts)}\n"
        if question == "first-unique":
            return f"{next((t for t in tokens if counts[t] == 1), 'NONE')}\n"
        seen: set[str] = set()
        for token in tokens:
            if token in seen:
                return f"{token}\n"
            seen.add(token)
        return "NONE\n"

    def program(self, p: Params) -> str:
        convert = "str" if p["tokens"] == "words" else "int"
        bodies = {
            "most": "best = min(counts, key=lambda t: (-counts[t], t))\nprint(best)",
            "top-k": "order = sorted(counts, key=lambda t: (-counts[t], t))\nfor t in order[:extra]:\n"
            "    print(t, counts[t])",
            "exactly": "print(' '.join(map(str, sorted(t for t in counts if counts[t] == extra))))",
            "distinct": "print(len(counts))",
            "first-repeat": "seen = set()\nfound = 'NONE'\nfor t in tokens:\n    if t in seen:\n        found = t\n"
            "        break\n    seen.add(t)\nprint(found)",
            "first-unique": "print(next((t for t in tokens if counts[t] == 1), 'NONE'))",
        }
        if p["question"] in ("top-k", "exactly"):
            read = f"n, extra = int(data[0]), int(data[1])\ntokens = [{convert}(t) for t in data[2:2 + n]]"
        else:
            read = f"n = int(data[0])\ntokens = [{convert}(t) for t in data[1:1 + n]]"
        return code(
            """
            import sys
            data = sys.stdin.read().split()
            $read
            counts = {}
            for t in tokens:
                counts[t] = counts.get(t, 0) + 1
            $body
            """,
            read=read,
            body=bodies[p["question"]],
        )
