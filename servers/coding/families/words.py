"""Catalogues of small functions over strings and over integers."""

from __future__ import annotations

import functools
import itertools
import math
import random
import re
import string
from collections import Counter
from typing import Any

from openenv_mcp.servers.coding.families.base import code
from openenv_mcp.servers.coding.families.catalogue import Catalogue, Op

__all__ = ["NumberFunctions", "StringFunctions"]


def _text(rng: random.Random, size: int, letters: str = "abcdeiouxyz ") -> str:
    return "".join(rng.choice(letters) for _ in range(size))


def _words(rng: random.Random, size: int) -> str:
    return " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 7))) for _ in range(size))


def _compress(s: str) -> str:
    return "".join(k + (str(n) if (n := len(list(g))) > 1 else "") for k, g in itertools.groupby(s))


def _collapse(s: str) -> str:
    kept: list[str] = []
    for c in s:
        if kept and kept[-1] == c:
            kept.pop()
        else:
            kept.append(c)
    return "".join(kept)


def _reverse_vowels(s: str) -> str:
    vowels = [c for c in s if c in "aeiouAEIOU"]
    return "".join(vowels.pop() if c in "aeiouAEIOU" else c for c in s)


def _camel(s: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), s)


def _square_ish(rng: random.Random, n: int) -> int:
    """A number near a square (one below, exactly one) or any number, of about ``2n`` digits."""
    return rng.choice((rng.randint(0, 10 ** (n * 2)), rng.randint(1, 10**n) ** 2, rng.randint(2, 10**n) ** 2 - 1))


def _runs(rng: random.Random, size: int) -> tuple[Any, ...]:
    return ("".join(c * rng.randint(1, 12) for c in rng.choices("abcxyz", k=max(1, size))),)


_STRING_OPS: dict[str, Op] = {
    "pangram": Op(
        "def is_pangram(s: str) -> bool",
        "It returns True when every letter from a to z appears in s (in either case), else False.",
        lambda s: set(string.ascii_lowercase) <= set(s.lower()),
        code("""
            def is_pangram(s):
                return all(c in s.lower() for c in 'abcdefghijklmnopqrstuvwxyz')
        """),
        lambda rng, n: (_text(rng, n * 5, string.ascii_letters + " .") if rng.random() < 0.5
                        else "The quick brown fox jumps over the lazy dog" + _text(rng, n),),
        (("",), ("abcdefghijklmnopqrstuvwxyz",), ("ABCDEFGHIJKLMNOPQRSTUVWXY",)),
        large=10000,
    ),
    "vowels": Op(
        "def count_vowels(s: str) -> int",
        "It returns how many characters of s are vowels: a, e, i, o or u, in either case.",
        lambda s: len(re.findall("[aeiou]", s, re.IGNORECASE)),
        code("""
            def count_vowels(s):
                return sum(1 for c in s if c in 'aeiouAEIOU')
        """),
        lambda rng, n: (_text(rng, n * 3, "aEbIcOdUxy "),),
        (("",), ("AEIOUaeiou",), ("rhythm",)),
        large=10000,
    ),
    "camel": Op(
        "def snake_to_camel(s: str) -> str",
        "s is made of words of small letters joined by single underscores ('big_red_box'); it returns the words "
        "joined with every word after the first starting with a capital letter ('bigRedBox').",
        _camel,
        code("""
            def snake_to_camel(s):
                words = s.split('_')
                return words[0] + ''.join(w.capitalize() for w in words[1:])
        """),
        lambda rng, n: ("_".join(_words(rng, max(1, n // 2)).split()),),
        (("word",), ("a_b_c",), ("x",)),
        points=1,
        large=4000,
    ),
    "snake": Op(
        "def camel_to_snake(s: str) -> str",
        "s is a name in camel case: small letters, with a capital letter starting each word after the first "
        "('bigRedBox'); it returns the words in small letters joined by single underscores ('big_red_box').",
        lambda s: re.sub("([A-Z])", lambda m: "_" + m.group(1).lower(), s),
        code("""
            def camel_to_snake(s):
                out = []
                for c in s:
                    if c.isupper():
                        out.append('_')
                    out.append(c.lower())
                return ''.join(out)
        """),
        lambda rng, n: (_camel("_".join(_words(rng, max(1, n // 2)).split())),),
        (("word",), ("aBC",), ("x",)),
        points=1,
        large=4000,
    ),
    "compress": Op(
        "def compress(s: str) -> str",
        "It returns s with every run of a repeated character written as the character followed by the run's "
        "length, and single characters left alone ('aaabcc' gives 'a3bc2'). s holds small letters only.",
        _compress,
        code("""
            def compress(s):
                out = []
                i = 0
                while i < len(s):
                    j = i
                    while j < len(s) and s[j] == s[i]:
                        j += 1
                    out.append(s[i] + (str(j - i) if j - i > 1 else ''))
                    i = j
                return ''.join(out)
        """),
        _runs,
        (("",), ("a",), ("aaaaaaaaaaaa",), ("abab",)),
        points=1,
        large=3000,
    ),
    "expand": Op(
        "def expand(s: str) -> str",
        "s is a string compressed by writing each run of a repeated small letter as the letter followed by the "
        "run's length, single letters alone ('a3bc2'); it returns the original string ('aaabcc').",
        lambda s: "".join(c * int(n or 1) for c, n in re.findall(r"([a-z])(\d*)", s)),
        code("""
            def expand(s):
                out = []
                i = 0
                while i < len(s):
                    letter = s[i]
                    i += 1
                    j = i
                    while j < len(s) and s[j].isdigit():
                        j += 1
                    out.append(letter * (int(s[i:j]) if j > i else 1))
                    i = j
                return ''.join(out)
        """),
        lambda rng, n: (_compress(_runs(rng, n)[0]),),
        (("",), ("a",), ("a12",), ("ab2c",)),
        points=1,
        large=3000,
    ),
    "longest": Op(
        "def longest_word(s: str) -> str",
        "A word is a run of letters; it returns the longest word of s (the first one if several are longest), "
        "or '' when s has no letter.",
        lambda s: max(re.findall("[A-Za-z]+", s), key=len, default=""),
        code("""
            def longest_word(s):
                best = current = ''
                for c in s + ' ':
                    if c.isalpha():
                        current += c
                    else:
                        if len(current) > len(best):
                            best = current
                        current = ''
                return best
        """),
        lambda rng, n: (_words(rng, n) + rng.choice(("", ".", "!")),),
        (("",), ("...",), ("ab,cd ef",)),
        large=3000,
    ),
    "isogram": Op(
        "def is_isogram(s: str) -> bool",
        "It returns True when no letter appears twice in s, ignoring case and every character that is not a "
        "letter, else False.",
        lambda s: (letters := [c for c in s.lower() if c.isalpha()]) == list(dict.fromkeys(letters)),
        code("""
            def is_isogram(s):
                seen = set()
                for c in s.lower():
                    if c.isalpha():
                        if c in seen:
                            return False
                        seen.add(c)
                return True
        """),
        lambda rng, n: ("".join(rng.sample(string.ascii_letters[:26], min(26, n))) + rng.choice(("", "-", "A", "z")),),
        (("",), ("Aa",), ("six-year-old",), ("background",)),
        large=26,
    ),
    "acronym": Op(
        "def acronym(s: str) -> str",
        "Words are separated by spaces or hyphens (one or more); it returns the first letter of each word, in "
        "capitals ('portable network-graphics' gives 'PNG').",
        lambda s: "".join(w[0].upper() for w in re.split("[ -]+", s) if w),
        code("""
            def acronym(s):
                return ''.join(word[0].upper() for word in s.replace('-', ' ').split())
        """),
        lambda rng, n: (re.sub(" ", lambda _m: rng.choice((" ", "-", "  ", " - ")), _words(rng, n)),),
        (("",), ("a",), ("--x--y",)),
        large=5000,
    ),
    "reverse-vowels": Op(
        "def reverse_vowels(s: str) -> str",
        "It returns s with its vowels (a, e, i, o, u in either case) in reverse order, every other character "
        "staying where it is ('hello' gives 'holle').",
        _reverse_vowels,
        code("""
            def reverse_vowels(s):
                chars = list(s)
                i, j = 0, len(chars) - 1
                while i < j:
                    if chars[i] not in 'aeiouAEIOU':
                        i += 1
                    elif chars[j] not in 'aeiouAEIOU':
                        j -= 1
                    else:
                        chars[i], chars[j] = chars[j], chars[i]
                        i += 1
                        j -= 1
                return ''.join(chars)
        """),
        lambda rng, n: (_text(rng, n * 3, "aEbIcOdUxy "),),
        (("",), ("a",), ("bcd",), ("Aa",)),
        large=10000,
    ),
    "most-common": Op(
        "def most_common_char(s: str) -> str",
        "s is not empty; it returns the character that appears most often in s (of those tied, the one that "
        "appears first).",
        lambda s: max(dict.fromkeys(s), key=Counter(s).__getitem__),
        code("""
            def most_common_char(s):
                counts = {}
                for c in s:
                    counts[c] = counts.get(c, 0) + 1
                best = s[0]
                for c in s:
                    if counts[c] > counts[best]:
                        best = c
                return best
        """),
        lambda rng, n: (_text(rng, max(1, n * 3)),),
        (("a",), ("ab",), ("abb",), ("  x",)),
        large=10000,
    ),
    "collapse": Op(
        "def collapse_pairs(s: str) -> str",
        "It removes two equal neighbouring characters from s, again and again while there are any, and returns "
        "what is left ('abbaca' gives 'ca').",
        _collapse,
        code("""
            def collapse_pairs(s):
                while True:
                    for i in range(len(s) - 1):
                        if s[i] == s[i + 1]:
                            break
                    else:
                        return s
                    stack = []
                    for c in s:
                        if stack and stack[-1] == c:
                            stack.pop()
                        else:
                            stack.append(c)
                    s = ''.join(stack)
        """),
        lambda rng, n: (_text(rng, n * 3, "ab"),),
        (("",), ("aa",), ("abba",), ("abc",)),
        points=1,
        large=10000,
    ),
    "lengths": Op(
        "def word_lengths(s: str) -> list[int]",
        "Words are separated by one or more spaces; it returns the length of every word of s, in order.",
        lambda s: [len(w) for w in s.split()],
        code("""
            def word_lengths(s):
                return list(map(len, s.split()))
        """),
        lambda rng, n: ("  ".join(_words(rng, n).split(" ")) if rng.random() < 0.3 else _words(rng, n),),
        (("",), ("   ",), ("a",)),
        large=3000,
    ),
}  # fmt: skip


class StringFunctions(Catalogue):
    """A catalogue of functions over strings; the test split holds out three of them."""

    name = "string-functions"
    TOPIC = "A string function"
    OPS = _STRING_OPS
    HELD_OUT = ("reverse-vowels", "acronym", "expand")


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
