"""A catalogue of small functions over strings."""

from __future__ import annotations

import itertools
import random
import re
import string
from collections import Counter
from typing import Any

from openenv_mcp.servers.coding.families.base import code
from openenv_mcp.servers.coding.families.catalogue import Catalogue, Op

__all__ = ["StringFunctions"]


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
