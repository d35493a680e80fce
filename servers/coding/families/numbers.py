"""Families about numbers: digits in a base, a filtered aggregate, a linear recurrence, divisor functions."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, ints, join

__all__ = ["Digits", "DivisorQueries", "FilterAggregate", "Recurrence"]


def _digits(x: int, base: int) -> list[int]:
    """``x``'s digits in ``base``, most significant first (0 has the one digit 0)."""
    out = [x % base]
    while x >= base:
        x //= base
        out.append(x % base)
    return out[::-1]


class Digits(ProgramFamily):
    """One question about each number's digits in a base; the test split holds out two bases."""

    name = "digits"
    OPS: ClassVar[dict[str, Any]] = {
        "sum": "the sum of its digits in base $B (as a decimal number)",
        "count": "how many digits it has in base $B (0 has one digit)",
        "max": "its largest digit in base $B (as a decimal number)",
        "zeros": "how many of its digits in base $B are 0",
        "palindrome": "YES if its digits in base $B read the same backwards as forwards, else NO",
        "reverse": "the number whose base-$B digits are its base-$B digits in reverse order, in decimal "
        "(zeros that come first after reversing are dropped)",
    }
    ANSWER: ClassVar[dict[str, Any]] = {
        "sum": "print(sum(digits))",
        "count": "print(len(digits))",
        "max": "print(max(digits))",
        "zeros": "print(digits.count(0))",
        "palindrome": 'print("YES" if digits == digits[::-1] else "NO")',
        "reverse": "value = 0\n    for d in digits:\n        value = value * B + d\n    print(value)",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for op in self.OPS:
            for base in range(2, 17):
                yield {"op": op, "base": base}

    def holdout(self, p: Params) -> Any:
        return p["base"]

    def held_out(self, key: Any) -> bool:
        return bool(key in (7, 12))

    def points(self, p: Params) -> int:
        return 1 if p["op"] in ("palindrome", "reverse") else 0

    def title(self, p: Params) -> str:
        return f"Digits in base {p['base']}: {p['op']}"

    def statement(self, p: Params) -> str:
        question = self.OPS[p["op"]].replace("$B", str(p["base"]))
        return (
            "Each line of the input holds a non-negative integer x, written in decimal (0 <= x < 10^18; at most "
            f"3000 lines). For each line print {question}."
        )

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[rng.randint(0, 300) for _ in range(3)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        b = p["base"]
        powers = [b**k for k in range(1, 60) if b**k < 10**18]
        return [
            [0],
            [1, b - 1, b, b + 1],
            powers[-3:] + [x - 1 for x in powers[-3:]] + [10**18 - 1],
            ints(rng, 40, 0, 10**6) + ints(rng, 40, 0, 10**18 - 1),
            ints(rng, 2500, 0, 10**18 - 1),
        ]

    def render(self, p: Params, data: Any) -> str:
        return join(data, "\n") + "\n"

    def solve(self, p: Params, data: Any) -> str:
        out: list[object] = []
        for x in data:
            digits = _digits(x, p["base"])
            op = p["op"]
            if op == "sum":
                out.append(sum(digits))
            elif op == "count":
                out.append(len(digits))
            elif op == "max":
                out.append(max(digits))
            elif op == "zeros":
                out.append(digits.count(0))
            elif op == "palindrome":
                out.append("YES" if digits == digits[::-1] else "NO")
            else:  # reversed, the most significant digit is worth 1
                out.append(sum(d * p["base"] ** i for i, d in enumerate(digits)))
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        return code(
            """
            import sys
            B = $base
            for token in sys.stdin.read().split():
                x = int(token)
                digits = []
                while True:
                    digits.append(x % B)
                    x //= B
                    if x == 0:
                        break
                $answer
            """,
            base=p["base"],
            answer=self.ANSWER[p["op"]],
        )


class FilterAggregate(ProgramFamily):
    """An aggregate of the values with a given remainder; the test split holds out two moduli."""

    name = "remainder-aggregate"
    AGGREGATES: ClassVar[dict[str, Any]] = {
        "count": ("Print how many there are.", "print(len(kept))"),
        "sum": ("Print their sum (0 when there are none).", "print(sum(kept))"),
        "max": ("Print the largest of them, or NONE when there are none.", 'print(max(kept) if kept else "NONE")'),
        "min": ("Print the smallest of them, or NONE when there are none.", 'print(min(kept) if kept else "NONE")'),
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for aggregate in self.AGGREGATES:
            for m in range(2, 13):
                for r in sorted({0, 1, m - 1}):
                    yield {"aggregate": aggregate, "m": m, "r": r}

    def holdout(self, p: Params) -> Any:
        return p["m"]

    def held_out(self, key: Any) -> bool:
        return bool(key in (7, 11))

    def points(self, p: Params) -> int:
        return 0

    def title(self, p: Params) -> str:
        return f"Values that leave {p['r']} modulo {p['m']}: {p['aggregate']}"

    def statement(self, p: Params) -> str:
        m, r = p["m"], p["r"]
        return (
            "The first line holds n (0 <= n <= 50000); the second line holds n integers between -10^9 and 10^9 "
            f"(it may be missing when n = 0). Consider the values that leave the remainder {r} when divided by {m}. "
            f"The remainder is always between 0 and {m - 1}, for negative values too (-1 leaves {m - 1}). "
            + str(self.AGGREGATES[p["aggregate"]][0])
        )

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [ints(rng, 8, -20, 40)]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        m, r = p["m"], p["r"]
        return [
            [],
            [r],
            [r + 1 if r + 1 < m else r - 1],
            [r - m * k for k in range(1, 6)],
            ints(rng, 60, -100, 100),
            ints(rng, 50000, -(10**9), 10**9),
        ]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n{join(data)}\n" if data else "0\n"

    def solve(self, p: Params, data: Any) -> str:
        kept = [v for v in data if (v - p["r"]) % p["m"] == 0]
        aggregate = p["aggregate"]
        if aggregate == "count":
            return f"{len(kept)}\n"
        if aggregate == "sum":
            return f"{sum(kept)}\n"
        if not kept:
            return "NONE\n"
        return f"{max(kept) if aggregate == 'max' else min(kept)}\n"

    def program(self, p: Params) -> str:
        return code(
            """
            import sys
            data = sys.stdin.read().split()
            n = int(data[0])
            kept = [v for v in map(int, data[1:1 + n]) if v % $m == $r]
            $answer
            """,
            m=p["m"],
            r=p["r"],
            answer=self.AGGREGATES[p["aggregate"]][1],
        )


_MODULI = (1_000_000_007, 998_244_353)


def _term(c: int, n: str) -> str:
    return f"a({n})" if c == 1 else f"{c}*a({n})"


class Recurrence(ProgramFamily):
    """Terms of a second-order linear recurrence modulo a prime, for n up to 10^5 (a table) or 10^18 (matrix
    powers); the test split holds out two coefficient pairs."""

    name = "recurrence"
    SIZES: ClassVar[dict[str, Any]] = {"table": (5000, 100_000), "huge": (300, 10**18)}

    def grid(self) -> Iterator[dict[str, Any]]:
        for c1 in (1, 2, 3):
            for c2 in (1, 2, 3):
                for a0, a1 in ((0, 1), (1, 1), (2, 1)):
                    if (c1, c2, a0, a1) == (1, 1, 0, 1):
                        continue  # Fibonacci numbers modulo a prime: a hand-written test task
                    for mod in _MODULI:
                        for size in self.SIZES:
                            yield {"c1": c1, "c2": c2, "a0": a0, "a1": a1, "mod": mod, "size": size}

    def holdout(self, p: Params) -> Any:
        return (p["c1"], p["c2"])

    def held_out(self, key: Any) -> bool:
        return bool(key in ((2, 3), (3, 2)))

    def points(self, p: Params) -> int:
        return 2 if p["size"] == "huge" else 1

    def title(self, p: Params) -> str:
        return f"A linear recurrence modulo {p['mod']} ({'n up to 10^18' if p['size'] == 'huge' else 'many queries'})"

    def statement(self, p: Params) -> str:
        q, n = self.SIZES[p["size"]]
        return (
            f"A sequence is defined by a(0) = {p['a0']}, a(1) = {p['a1']} and a(n) = {_term(p['c1'], 'n-1')} + "
            f"{_term(p['c2'], 'n-2')} for n >= 2. The first line holds q (1 <= q <= {q}); each of the next q lines "
            f"holds n (0 <= n <= {'10^18' if p['size'] == 'huge' else n}). For each, print a(n) modulo {p['mod']}."
        )

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[0, *sorted(rng.sample(range(2, 16), 3))]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        q, top = self.SIZES[p["size"]]
        cases: list[Any] = [[1], [2, 2], ints(rng, 50, 0, 300)]
        if p["size"] == "huge":
            return [*cases, [10**18, 10**18 - 1, 2**59], [10**18, *ints(rng, q - 1, 0, 10**18)]]
        return [*cases, [top, *ints(rng, q - 1, 0, top)]]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n{join(data, chr(10))}\n"

    def solve(self, p: Params, data: Any) -> str:
        mod = p["mod"]
        step = ((p["c1"], p["c2"]), (1, 0))

        def power(n: int) -> tuple[tuple[int, int], tuple[int, int]]:
            if n == 0:
                return ((1, 0), (0, 1))
            half = power(n // 2)
            result = _times(half, half, mod)
            return _times(result, step, mod) if n % 2 else result

        out = []
        for n in data:
            if n == 0:
                out.append(p["a0"] % mod)
            else:
                row = power(n - 1)[0]
                out.append((row[0] * p["a1"] + row[1] * p["a0"]) % mod)
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        values = {"c1": p["c1"], "c2": p["c2"], "a0": p["a0"], "a1": p["a1"], "mod": p["mod"]}
        if p["size"] == "table":
            return code(
                """
                import sys
                data = sys.stdin.read().split()
                ns = [int(x) for x in data[1:1 + int(data[0])]]
                M = $mod
                a = [$a0 % M, $a1 % M]
                for i in range(2, max(ns) + 1):
                    a.append(($c1 * a[i - 1] + $c2 * a[i - 2]) % M)
                print("\\n".join(str(a[n]) for n in ns))
                """,
                **values,
            )
        return code(
            """
            import sys
            M = $mod

            def mul(x, y):
                return [[(x[i][0] * y[0][j] + x[i][1] * y[1][j]) % M for j in range(2)] for i in range(2)]

            def power(n):
                result, base = [[1, 0], [0, 1]], [[$c1, $c2], [1, 0]]
                while n:
                    if n & 1:
                        result = mul(result, base)
                    base = mul(base, base)
                    n >>= 1
                return result

            data = sys.stdin.read().split()
            out = []
            for token in data[1:1 + int(data[0])]:
                n = int(token)
                if n == 0:
                    out.append($a0 % M)
                else:
                    m = power(n - 1)
                    out.append((m[0][0] * $a1 + m[0][1] * $a0) % M)
            print("\\n".join(map(str, out)))
            """,
            **values,
        )


def _times(
    x: tuple[tuple[int, int], tuple[int, int]], y: tuple[tuple[int, int], tuple[int, int]], mod: int
) -> tuple[tuple[int, int], tuple[int, int]]:
    (a, b), (c, d) = x
    (e, f), (g, h) = y
    return ((a * e + b * g) % mod, (a * f + b * h) % mod), ((c * e + d * g) % mod, (c * f + d * h) % mod)


def _primes(limit: int) -> list[int]:
    sieve = bytearray([1]) * (limit + 1)
    sieve[0:2] = b"\0\0"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, limit + 1, i)))
    return [i for i in range(limit + 1) if sieve[i]]


@functools.cache
def _small_primes() -> list[int]:
    """Enough primes to factor any x <= 10^9 (made on first use, not at import)."""
    return _primes(31623)


def _factor(x: int) -> dict[int, int]:
    found: dict[int, int] = {}
    for prime in _small_primes():
        if prime * prime > x:
            break
        while x % prime == 0:
            found[prime] = found.get(prime, 0) + 1
            x //= prime
    if x > 1:
        found[x] = found.get(x, 0) + 1
    return found


class DivisorQueries(ProgramFamily):
    """A divisor function of each query, for small x or x up to 10^9; the test split holds out three (question,
    size) pairs."""

    name = "divisor-queries"
    QUESTIONS: ClassVar[dict[str, Any]] = {
        "prime": "YES if x is a prime number, else NO (1 is not prime)",
        "divisors": "how many positive divisors x has",
        "sigma": "the sum of the positive divisors of x",
        "omega": "how many distinct prime numbers divide x (0 for x = 1)",
        "lpf": "the largest prime number that divides x (1 for x = 1)",
        "phi": "how many integers k with 1 <= k <= x have no common divisor with x greater than 1",
    }
    ANSWERS: ClassVar[dict[str, Any]] = {
        "prime": 'out.append("YES" if x > 1 and f == {x: 1} else "NO")',
        "divisors": "count = 1\n    for e in f.values():\n        count *= e + 1\n    out.append(str(count))",
        "sigma": "total = 1\n    for p, e in f.items():\n        total *= (p ** (e + 1) - 1) // (p - 1)\n"
        "    out.append(str(total))",
        "omega": "out.append(str(len(f)))",
        "lpf": "out.append(str(max(f) if f else 1))",
        "phi": "r = x\n    for p in f:\n        r = r // p * (p - 1)\n    out.append(str(r))",
    }
    SIZES: ClassVar[dict[str, Any]] = {"small": (1000, 10_000), "large": (50, 10**9)}

    def grid(self) -> Iterator[dict[str, Any]]:
        for question in self.QUESTIONS:
            for size in self.SIZES:
                yield {"question": question, "size": size}

    def holdout(self, p: Params) -> Any:
        return (p["question"], p["size"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("phi", "large"), ("omega", "small"), ("sigma", "large")))

    def points(self, p: Params) -> int:
        return 1 if p["size"] == "large" else 0

    def title(self, p: Params) -> str:
        return f"Divisor queries: {p['question']} (x up to {'10^9' if p['size'] == 'large' else '10^4'})"

    def statement(self, p: Params) -> str:
        q, top = self.SIZES[p["size"]]
        return (
            f"The first line holds q (1 <= q <= {q}); each of the next q lines holds an integer x "
            f"(1 <= x <= {'10^9' if top == 10**9 else top}). For each, print {self.QUESTIONS[p['question']]}."
        )

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[1, *rng.sample(range(2, 60), 4)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        q, top = self.SIZES[p["size"]]
        primes = [x for x in range(top, top - 200, -1) if _factor(x) == {x: 1}][:3]
        edge = [2, 4, 9973, 5040, 8192] if top < 10**9 else [999_999_937, 31607 * 31627, 735_134_400, 2**29]
        big_primes: list[int] = []
        while len(big_primes) < q // 4:
            x = rng.randint(top // 2, top)
            if _factor(x) == {x: 1}:
                big_primes.append(x)
        return [[1], edge + primes, ints(rng, 40, 1, 1000), [*big_primes, *ints(rng, q - len(big_primes), 1, top)]]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n{join(data, chr(10))}\n"

    def solve(self, p: Params, data: Any) -> str:
        return join([self._answer(p["question"], x) for x in data], "\n") + "\n"

    @staticmethod
    def _answer(question: str, x: int) -> object:
        factors = _factor(x)
        if question == "prime":
            return "YES" if x > 1 and len(factors) == 1 and factors.get(x) == 1 else "NO"
        if question == "omega":
            return len(factors)
        if question == "lpf":
            return max(factors, default=1)
        if question == "phi":
            r = x
            for prime in factors:
                r -= r // prime
            return r
        divisors = [1]
        for prime, exponent in factors.items():
            divisors = [d * prime**k for d in divisors for k in range(exponent + 1)]
        return len(divisors) if question == "divisors" else sum(divisors)

    def program(self, p: Params) -> str:
        return code(
            """
            import sys

            def factor(x):
                f = {}
                d = 2
                while d * d <= x:
                    while x % d == 0:
                        f[d] = f.get(d, 0) + 1
                        x //= d
                    d += 1 if d == 2 else 2
                if x > 1:
                    f[x] = f.get(x, 0) + 1
                return f

            data = sys.stdin.read().split()
            out = []
            for token in data[1:1 + int(data[0])]:
                x = int(token)
                f = factor(x)
                $answer
            print("\\n".join(out))
            """,
            answer=self.ANSWERS[p["question"]],
        )
