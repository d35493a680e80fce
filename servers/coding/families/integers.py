"""A catalogue of small functions over integers."""

from __future__ import annotations

import functools
import itertools
import math
import random

from openenv_mcp.servers.coding.families.base import code
from openenv_mcp.servers.coding.families.catalogue import Catalogue, Op

__all__ = ["NumberFunctions"]


def _square_ish(rng: random.Random, n: int) -> int:
    """A number near a square (one below, exactly one) or any number, of about ``2n`` digits."""
    return rng.choice((rng.randint(0, 10 ** (n * 2)), rng.randint(1, 10**n) ** 2, rng.randint(2, 10**n) ** 2 - 1))


def _next_palindrome(n: int) -> int:
    """The smallest palindrome greater than n, by mirroring the left half (and raising it when too small)."""
    n += 1
    digits = str(n)
    half = digits[: (len(digits) + 1) // 2]
    candidate = int(half + half[: len(digits) // 2][::-1])
    if candidate >= n:
        return candidate
    raised = str(int(half) + 1)
    if len(raised) > len(half):  # 999 -> 1001
        return int(10 ** len(digits)) + 1
    return int(raised + raised[: len(digits) // 2][::-1])


def _happy(n: int) -> bool:
    seen = set()
    while n != 1 and n not in seen:
        seen.add(n)
        n = sum(int(d) ** 2 for d in str(n))
    return n == 1


def _collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n = 3 * n + 1 if n % 2 else n // 2
        steps += 1
    return steps


@functools.cache
def _primes(limit: int) -> list[int]:
    sieve = bytearray([1]) * limit
    sieve[0:2] = b"\0\0"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, limit, i)))
    return list(itertools.compress(range(limit), sieve))


def _nth_prime(k: int) -> int:
    """The k-th prime, from a sieve just large enough (the k-th prime is below k (ln k + ln ln k) for k >= 6)."""
    return _primes(300_000 if k > 100 else 600)[k - 1]


def _base(n: int, b: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, b)
        out = digits[r] + out
        if n == 0:
            return out


def _zeros(n: int) -> int:
    count, power = 0, 5
    while power <= n:
        count += n // power
        power *= 5
    return count


_NUMBER_OPS: dict[str, Op] = {
    "collatz": Op(
        "def collatz_steps(n: int) -> int",
        "Starting from n (1 <= n <= 10^6), replace n by n / 2 when it is even and by 3n + 1 when it is odd; it "
        "returns how many replacements it takes to reach 1 (0 for n = 1).",
        _collatz,
        code("""
            def collatz_steps(n):
                steps = 0
                while n > 1:
                    n = n // 2 if n % 2 == 0 else 3 * n + 1
                    steps += 1
                return steps
        """),
        lambda rng, n: (rng.randint(1, 10**n if n < 6 else 10**6),),
        ((1,), (2,), (27,), (837799,)),
        large=6,
    ),
    "perfect": Op(
        "def is_perfect(n: int) -> bool",
        "It returns True when n (1 <= n <= 10^8) equals the sum of its positive divisors other than itself "
        "(6 = 1 + 2 + 3), else False.",
        lambda n: n > 1 and sum(d + (n // d if d * d != n and d != 1 else 0) for d in range(1, math.isqrt(n) + 1)
                                if n % d == 0) == n,
        code("""
            def is_perfect(n):
                total = 1 if n > 1 else 0
                d = 2
                while d * d <= n:
                    if n % d == 0:
                        total += d
                        if d != n // d:
                            total += n // d
                    d += 1
                return total == n
        """),
        lambda rng, n: (rng.choice((6, 28, 496, 8128, 33550336, rng.randint(1, 10 ** min(n, 8)))),),
        ((1,), (2,), (6,), (33550336,), (33550337,)),
        points=1,
        large=10,
    ),
    "happy": Op(
        "def is_happy(n: int) -> bool",
        "Replace n (1 <= n <= 10^18) by the sum of the squares of its decimal digits, again and again; it returns "
        "True when this reaches 1, and False when it loops forever without reaching 1.",
        _happy,
        code("""
            def is_happy(n):
                seen = set()
                while n != 1:
                    if n in seen:
                        return False
                    seen.add(n)
                    total = 0
                    while n:
                        n, d = divmod(n, 10)
                        total += d * d
                    n = total
                return True
        """),
        lambda rng, n: (rng.randint(1, 10 ** min(n, 18)),),
        ((1,), (7,), (4,), (10**18,)),
        points=1,
        large=18,
    ),
    "digital-root": Op(
        "def digital_root(n: int) -> int",
        "Replace n (0 <= n <= 10^100) by the sum of its decimal digits until one digit is left; it returns that "
        "digit.",
        lambda n: 0 if n == 0 else 1 + (n - 1) % 9,
        code("""
            def digital_root(n):
                while n >= 10:
                    n = sum(int(d) for d in str(n))
                return n
        """),
        lambda rng, n: (rng.randint(0, 10 ** min(n * 5, 100)),),
        ((0,), (9,), (10,), (10**100,)),
        large=20,
    ),
    "bits": Op(
        "def count_bits(n: int) -> int",
        "It returns how many 1s n (0 <= n < 2^100) has when written in binary.",
        lambda n: bin(n).count("1"),
        code("""
            def count_bits(n):
                count = 0
                while n:
                    n &= n - 1
                    count += 1
                return count
        """),
        lambda rng, n: (rng.getrandbits(n * 5),),
        ((0,), (1,), (2**99,), (2**100 - 1,)),
        large=20,
    ),
    "next-palindrome": Op(
        "def next_palindrome(n: int) -> int",
        "It returns the smallest number greater than n (0 <= n <= 10^15) whose decimal digits read the same "
        "backwards.",
        _next_palindrome,
        code("""
            def next_palindrome(n):
                s = str(n + 1)
                k = len(s)
                left = s[:(k + 1) // 2]
                for head in (left, str(int(left) + 1)):
                    if len(head) > len(left):
                        return 10 ** k + 1
                    candidate = int(head + head[:k // 2][::-1])
                    if candidate > n:
                        return candidate
        """),
        lambda rng, n: (rng.choice((rng.randint(0, 10 ** min(n, 15)), 10 ** rng.randint(1, 15) - 1,
                                    int("1" + "9" * rng.randint(1, 14)))),),
        ((0,), (9,), (99,), (808,), (10**15,), (99999999999999,)),
        points=1,
        large=15,
    ),
    "isqrt": Op(
        "def integer_sqrt(n: int) -> int",
        "It returns the largest integer r with r * r <= n (0 <= n <= 10^40).",
        math.isqrt,
        code("""
            def integer_sqrt(n):
                lo, hi = 0, 1
                while hi * hi <= n:
                    hi *= 2
                while lo < hi - 1:
                    mid = (lo + hi) // 2
                    if mid * mid <= n:
                        lo = mid
                    else:
                        hi = mid
                return lo if n > 0 else 0
        """),
        lambda rng, n: (_square_ish(rng, n),),
        ((0,), (1,), (3,), (10**40,)),
        points=1,
        large=20,
    ),
    "nth-prime": Op(
        "def nth_prime(k: int) -> int",
        "It returns the k-th prime number (1 <= k <= 20000): nth_prime(1) is 2, nth_prime(3) is 5.",
        _nth_prime,
        code("""
            PRIMES = []

            def nth_prime(k):
                if not PRIMES:
                    limit = 250000
                    sieve = [True] * limit
                    sieve[0] = sieve[1] = False
                    for i in range(2, int(limit ** 0.5) + 1):
                        if sieve[i]:
                            sieve[i * i::i] = [False] * len(range(i * i, limit, i))
                    PRIMES.extend(i for i in range(limit) if sieve[i])
                return PRIMES[k - 1]
        """),
        lambda rng, n: (rng.randint(1, min(20000, 10 * n)),),
        ((1,), (2,), (20000,)),
        points=1,
        large=2000,
    ),
    "armstrong": Op(
        "def is_armstrong(n: int) -> bool",
        "It returns True when n (1 <= n <= 10^12) equals the sum of its decimal digits each raised to the number "
        "of digits n has (153 = 1^3 + 5^3 + 3^3), else False.",
        lambda n: sum(int(d) ** len(str(n)) for d in str(n)) == n,
        code("""
            def is_armstrong(n):
                digits = [int(d) for d in str(n)]
                return sum(d ** len(digits) for d in digits) == n
        """),
        lambda rng, n: (rng.choice((153, 370, 371, 407, 9474, 548834, rng.randint(1, 10 ** min(n, 12)))),),
        ((1,), (10,), (9926315,), (4679307774,)),
        large=12,
    ),
    "zeros": Op(
        "def factorial_zeros(n: int) -> int",
        "It returns how many zeros n! (the product 1 * 2 * ... * n; 0! = 1) ends with in decimal, for "
        "0 <= n <= 10^18.",
        _zeros,
        code("""
            def factorial_zeros(n):
                count = 0
                while n:
                    n //= 5
                    count += n
                return count
        """),
        lambda rng, n: (rng.randint(0, 10 ** min(n, 18)),),
        ((0,), (4,), (5,), (25,), (10**18,)),
        points=1,
        large=18,
    ),
    "to-base": Op(
        "def to_base(n: int, b: int) -> str",
        "It returns n (0 <= n <= 10^30) written in base b (2 <= b <= 36), with the digits 0-9 then a-z and no "
        "leading zeros ('0' for n = 0).",
        _base,
        code("""
            def to_base(n, b):
                if n == 0:
                    return '0'
                out = []
                while n > 0:
                    out.append('0123456789abcdefghijklmnopqrstuvwxyz'[n % b])
                    n //= b
                return ''.join(reversed(out))
        """),
        lambda rng, n: (rng.randint(0, 10 ** min(n * 2, 30)), rng.randint(2, 36)),
        ((0, 2), (35, 36), (36, 36), (10**30, 2)),
        large=15,
    ),
}  # fmt: skip


class NumberFunctions(Catalogue):
    """A catalogue of functions over integers; the test split holds out three of them."""

    name = "number-functions"
    TOPIC = "A number function"
    OPS = _NUMBER_OPS
    HELD_OUT = ("next-palindrome", "happy", "zeros")
