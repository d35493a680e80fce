"""Families over lines of text: ciphers, pipelines of line transformations, relations between two words."""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import string
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from openenv_mcp.servers.coding.families.base import Params, ProgramFamily, code, join

__all__ = ["Cipher", "LinePipeline", "WordRelations", "text_line"]

_WORDS = (
    "apple", "river", "stone", "Garden", "window", "yellow", "morning", "silver", "forest", "candle", "harbor",
    "pencil", "Winter", "meadow", "rocket", "violin", "Orange", "bridge", "tiger", "planet", "butter", "marble",
    "ladder", "island", "rabbit", "summer", "lantern", "pepper", "Valley", "wagon", "falcon", "button", "desert",
    "engine", "glacier", "hammer", "jacket", "kettle", "lemon", "mirror", "oyster", "parrot", "quartz", "ribbon",
    "zipper", "anchor", "cactus", "dolphin", "feather", "gravel", "a", "I", "an", "to", "of", "NASA", "DNA",
)  # fmt: skip


def text_line(rng: random.Random, words: int) -> str:
    """A line of words, numbers and punctuation, sometimes with doubled spaces."""
    parts = []
    for _ in range(words):
        roll = rng.random()
        if roll < 0.12:
            part = str(rng.randint(0, 2024))
        elif roll < 0.2:
            part = rng.choice(_WORDS) + rng.choice(".,!?")
        elif roll < 0.25:
            part = rng.choice(("it's", "don't", "well-known", "e-mail", "x2", "b4", "U2"))
        else:
            part = rng.choice(_WORDS)
        parts.append(part)
    separators = [" " if rng.random() < 0.85 else "  " for _ in parts]
    return "".join(p + s for p, s in zip(parts, separators, strict=True)).rstrip(" ")


def _shift(c: str, k: int) -> str:
    if c in string.ascii_lowercase:
        return chr((ord(c) - 97 + k) % 26 + 97)
    if c in string.ascii_uppercase:
        return chr((ord(c) - 65 + k) % 26 + 65)
    return c


class Cipher(ProgramFamily):
    """Caesar and Vigenère ciphers, encoding or decoding; the test split holds out two shifts and a key."""

    name = "cipher"
    SHIFTS = (1, 3, 5, 7, 11, 13, 17, 19, 23, 25)
    KEYS = ("lemon", "key", "abc", "crypto", "zebra", "python", "moon")

    def grid(self) -> Iterator[dict[str, Any]]:
        for direction in ("encode", "decode"):
            for shift in self.SHIFTS:
                yield {"kind": "caesar", "key": str(shift), "direction": direction}
            for key in self.KEYS:
                yield {"kind": "vigenere", "key": key, "direction": direction}

    def holdout(self, p: Params) -> Any:
        return p["key"]

    def held_out(self, key: Any) -> bool:
        return bool(key in ("7", "19", "moon"))

    def points(self, p: Params) -> int:
        return 1 if p["kind"] == "vigenere" else 0

    def title(self, p: Params) -> str:
        cipher = f"Caesar shift {p['key']}" if p["kind"] == "caesar" else f"Vigenère key '{p['key']}'"
        return f"{p['direction'].capitalize()} with a {cipher}"

    def statement(self, p: Params) -> str:
        if p["kind"] == "caesar":
            rule = (
                f"shifting every letter {p['key']} places forward in the alphabet, wrapping around from z to a "
                f"(with a shift of 3, 'x' becomes 'a')"
            )
        else:
            key = p["key"]
            rule = (
                f"the Vigenère cipher with the key '{key}': the i-th letter of a line (counting letters only, from "
                f"0) is shifted forward in the alphabet, wrapping from z to a, by the alphabet position of letter "
                f"i mod {len(key)} of the key (a = 0, b = 1, ..., z = 25)"
            )
        rule += "; upper-case letters stay upper-case, and every other character is left as it is"
        if p["direction"] == "encode":
            return f"Each line of the input is a message. Print each line encoded by {rule}."
        return f"Each line of the input is a message that was encoded by {rule}. Print each line decoded."

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[self._code(p, text_line(rng, 4), encode=True) if p["direction"] == "decode" else text_line(rng, 4)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        raw = [
            [""],
            ["xyz XYZ abc, 123!"],
            ["   ", "Zz"],
            [text_line(rng, rng.randint(1, 9)) for _ in range(30)],
            [text_line(rng, 5) for _ in range(1200)],
        ]
        if p["direction"] == "decode":
            return [[self._code(p, line, encode=True) for line in lines] for lines in raw]
        return raw

    def _code(self, p: Params, line: str, *, encode: bool) -> str:
        sign = 1 if encode else -1
        if p["kind"] == "caesar":
            return "".join(_shift(c, sign * int(p["key"])) for c in line)
        shifts = itertools.cycle(ord(c) - 97 for c in p["key"])
        return "".join(_shift(c, sign * next(shifts)) if c.isalpha() else c for c in line)

    def render(self, p: Params, data: Any) -> str:
        return join(data, "\n") + "\n"

    def solve(self, p: Params, data: Any) -> str:
        return join([self._code(p, line, encode=p["direction"] == "encode") for line in data], "\n") + "\n"

    def program(self, p: Params) -> str:
        sign = "" if p["direction"] == "encode" else "-"
        if p["kind"] == "caesar":
            pick = f"k = {sign}{p['key']}"
            advance = ""
        else:
            pick = f"k = {sign}(ord(KEY[used % len(KEY)]) - ord('a'))"
            advance = "used += 1"
        return code(
            """
            import sys
            KEY = "$key"
            for line in sys.stdin.read().splitlines():
                out = []
                used = 0
                for c in line:
                    if c.isalpha() and c.isascii():
                        $pick
                        base = ord('a') if c.islower() else ord('A')
                        out.append(chr((ord(c) - base + k) % 26 + base))
                        $advance
                    else:
                        out.append(c)
                print("".join(out))
            """,
            key=p["key"],
            pick=pick,
            advance=advance,
        )


def _dedupe(line: str) -> str:
    return " ".join(dict.fromkeys(line.split()))


def _title(line: str) -> str:
    return re.sub(r"[^ ]+", lambda m: m.group(0)[0].upper() + m.group(0)[1:].lower(), line)


# name -> (step as the statement says it, what it does, the reference program's line)
_STEPS: dict[str, tuple[str, Callable[[str], str], str]] = {
    "upper": ("turn every letter into a capital letter", str.upper, "line = line.upper()"),
    "lower": ("turn every letter into a small letter", str.lower, "line = line.lower()"),
    "swapcase": ("swap the case of every letter (capital to small, small to capital)", str.swapcase,
                 "line = line.swapcase()"),
    "title": ("make every word start with a capital letter and the rest of the word small letters", _title,
              "line = ' '.join(w[:1].upper() + w[1:].lower() for w in line.split(' '))"),
    "reverse": ("reverse the whole line, character by character", lambda s: s[::-1], "line = line[::-1]"),
    "reverse-words": ("put the words in reverse order, separated by single spaces",
                      lambda s: " ".join(s.split()[::-1]), "line = ' '.join(reversed(line.split()))"),
    "mirror-words": ("reverse every word in place, leaving the spaces where they are",
                     lambda s: re.sub(r"[^ ]+", lambda m: m.group(0)[::-1], s),
                     "line = ' '.join(w[::-1] for w in line.split(' '))"),
    "sort-words": ("sort the words by character codes (so 'B' comes before 'a'), separated by single spaces",
                   lambda s: " ".join(sorted(s.split())), "line = ' '.join(sorted(line.split()))"),
    "no-vowels": ("remove every vowel (a, e, i, o, u, in either case)", lambda s: re.sub("[aeiouAEIOU]", "", s),
                  "line = ''.join(c for c in line if c.lower() not in 'aeiou')"),
    "squeeze": ("replace every run of one character repeated (such as 'aaa') by one copy of it ('aaab  c' becomes "
                "'ab c')",
                lambda s: "".join(k for k, _ in itertools.groupby(s)),
                "line = ''.join(c for i, c in enumerate(line) if i == 0 or line[i - 1] != c)"),
    "no-digits": ("remove every digit", lambda s: re.sub("[0-9]", "", s),
                  "line = ''.join(c for c in line if not c.isdigit())"),
    "dedupe-words": ("keep only the first occurrence of each word (exact match, case counts), separated by single "
                     "spaces", _dedupe,
                     "seen = []\nfor w in line.split():\n    if w not in seen:\n        seen.append(w)\n"
                     "line = ' '.join(seen)"),
}  # fmt: skip
_CASE = ("upper", "lower", "swapcase", "title")


def _pipelines() -> Iterator[tuple[str, ...]]:
    names = list(_STEPS)
    for length in (1, 2, 3):
        chosen = []
        for steps in itertools.permutations(names, length):
            if sum(step in _CASE for step in steps) > 1:
                continue  # one case change is enough: a second one undoes or overrides it
            if any(a == "reverse-words" and b == "sort-words" for a, b in itertools.pairwise(steps)):
                continue  # sorting forgets the order it was given
            chosen.append(steps)
        if length == 3:  # a seeded sixth of the triples, by a hash of their names
            chosen = [steps for steps in chosen if _bucket(steps, 6) == 0]
        yield from chosen


def _bucket(steps: tuple[str, ...], size: int) -> int:
    return int(hashlib.sha256("/".join(steps).encode()).hexdigest(), 16) % size


class LinePipeline(ProgramFamily):
    """One to three transformations applied to every line, in order; the test split holds out a fifth of the
    two- and three-step compositions (every single step is in train)."""

    name = "line-pipeline"

    def grid(self) -> Iterator[dict[str, Any]]:
        for steps in _pipelines():
            yield {"steps": steps}

    def holdout(self, p: Params) -> Any:
        return p["steps"]

    def held_out(self, key: Any) -> bool:
        return bool(len(key) > 1 and _bucket(key, 5) == 1)

    def points(self, p: Params) -> int:
        return len(p["steps"]) - 1

    def title(self, p: Params) -> str:
        return "Transform each line: " + ", then ".join(p["steps"])

    def statement(self, p: Params) -> str:
        steps = "".join(f"\n{n}. {_STEPS[step][0].capitalize()}." for n, step in enumerate(p["steps"], start=1))
        return (
            "Each line of the input is a line of text: letters, digits, spaces and punctuation (a line may be empty "
            "or hold only spaces). A word is a run of characters other than spaces. Transform every line by these "
            f"steps, in this order, and print the result (one output line per input line):{steps}"
        )

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[text_line(rng, rng.randint(3, 6)) for _ in range(2)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        return [
            [""],
            ["   ", "a", "Aa  aA  aa"],
            ["the  the cat CAT 1000 1000", "xX  Xx  xx  Banana  banana!!"],
            [text_line(rng, rng.randint(1, 12)) for _ in range(40)],
            [text_line(rng, 6) for _ in range(1000)],
        ]

    def render(self, p: Params, data: Any) -> str:
        return join(data, "\n") + "\n"

    def solve(self, p: Params, data: Any) -> str:
        out = []
        for line in data:
            for step in p["steps"]:
                line = _STEPS[step][1](line)
            out.append(line)
        return join(out, "\n") + "\n"

    def program(self, p: Params) -> str:
        body = "\n".join(_STEPS[step][2] for step in p["steps"])
        indented = "\n".join("    " + line for line in body.splitlines())
        return f"import sys\nfor line in sys.stdin.read().splitlines():\n{indented}\n    print(line)\n"


def _isomorphic(a: str, b: str) -> bool:
    return len(a) == len(b) and len(set(a)) == len(set(b)) == len(set(zip(a, b, strict=True)))


def _one_edit(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _subsequence(a: str, b: str) -> bool:
    rest = iter(b)
    return all(c in rest for c in a)


_RELATIONS: dict[str, tuple[str, Callable[[str, str], bool]]] = {
    "anagram": ("the second word is an anagram of the first (the same letters, each as often, in any order)",
                lambda a, b: sorted(a) == sorted(b)),
    "rotation": ("the second word is a rotation of the first (moving some letters from its start to its end; "
                 "a word is a rotation of itself)", lambda a, b: len(a) == len(b) and b in a + a),
    "subsequence": ("the first word is a subsequence of the second (the second with some letters deleted, "
                    "possibly none, gives the first)", _subsequence),
    "one-edit": ("the two words differ by exactly one edit: inserting, deleting or replacing one letter",
                 _one_edit),
    "same-letters": ("the two words use the same set of letters (how often does not matter)",
                     lambda a, b: set(a) == set(b)),
    "isomorphic": ("replacing letters of the first word, the same letter always by the same letter and different "
                   "letters by different letters, can give the second", _isomorphic),
}  # fmt: skip


class WordRelations(ProgramFamily):
    """YES/NO: does a relation hold between two words, with or without regard to case; the test split holds out
    two (relation, case) pairs."""

    name = "word-relations"
    PROGRAMS: ClassVar[dict[str, Any]] = {
        "anagram": "ok = sorted(a) == sorted(b)",
        "rotation": "ok = len(a) == len(b) and b in a + a",
        "subsequence": "i = 0\n    for c in b:\n        if i < len(a) and a[i] == c:\n            i += 1\n"
        "    ok = i == len(a)",
        "one-edit": "ok = False\n    if len(a) == len(b):\n        ok = sum(x != y for x, y in zip(a, b)) == 1\n"
        "    elif abs(len(a) - len(b)) == 1:\n        s, t = (a, b) if len(a) < len(b) else (b, a)\n"
        "        i = 0\n        while i < len(s) and s[i] == t[i]:\n            i += 1\n"
        "        ok = s[i:] == t[i + 1:]",
        "same-letters": "ok = set(a) == set(b)",
        "isomorphic": "ok = len(a) == len(b)\n    forward, backward = {}, {}\n    for x, y in zip(a, b):\n"
        "        if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:\n            ok = False",
    }

    def grid(self) -> Iterator[dict[str, Any]]:
        for relation in _RELATIONS:
            for case in ("sensitive", "insensitive"):
                yield {"relation": relation, "case": case}

    def holdout(self, p: Params) -> Any:
        return (p["relation"], p["case"])

    def held_out(self, key: Any) -> bool:
        return bool(key in (("rotation", "insensitive"), ("isomorphic", "sensitive")))

    def points(self, p: Params) -> int:
        return 0 if p["relation"] in ("anagram", "same-letters") else 1

    def title(self, p: Params) -> str:
        return f"Word pairs: {p['relation']} (case-{p['case']})"

    def statement(self, p: Params) -> str:
        case = (
            "Capital and small letters are different letters."
            if p["case"] == "sensitive"
            else "Ignore case: compare the words as if every letter were small."
        )
        return (
            "The first line holds q (1 <= q <= 3000). Each of the next q lines holds two words of English letters "
            "(1 to 200 letters each), separated by a space. For each line print YES if "
            f"{_RELATIONS[p['relation']][0]}, "
            f"else NO. {case}"
        )

    def _pair(self, p: Params, rng: random.Random, size: int) -> tuple[str, str]:
        a = "".join(rng.choice("abcdeABC" if rng.random() < 0.3 else "abcdefgh") for _ in range(rng.randint(1, size)))
        roll = rng.random()
        if roll < 0.15:
            return a, "".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, size)))
        b = _related(p["relation"], a, rng)
        if roll < 0.45:  # a near miss: one letter changed
            i = rng.randrange(len(b))
            b = b[:i] + rng.choice("abcdefghAB") + b[i + 1 :]
        if roll > 0.8:
            b = "".join(c.swapcase() if rng.random() < 0.3 else c for c in b)
        return a, b

    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        return [[self._pair(p, rng, 6) for _ in range(4)]]

    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        return [
            [("a", "a"), ("a", "A"), ("ab", "ba")],
            [("abc", "abcd"), ("Abc", "aBC"), ("aab", "abb"), ("abca", "dbcd")],
            [self._pair(p, rng, 10) for _ in range(60)],
            [self._pair(p, rng, 60) for _ in range(3000)],
        ]

    def render(self, p: Params, data: Any) -> str:
        return f"{len(data)}\n" + "".join(f"{a} {b}\n" for a, b in data)

    def solve(self, p: Params, data: Any) -> str:
        holds = _RELATIONS[p["relation"]][1]
        if p["case"] == "insensitive":
            data = [(a.lower(), b.lower()) for a, b in data]
        return "".join("YES\n" if holds(a, b) else "NO\n" for a, b in data)

    def program(self, p: Params) -> str:
        fold = ".lower()" if p["case"] == "insensitive" else ""
        return code(
            """
            import sys
            lines = sys.stdin.read().split("\\n")
            for line in lines[1:1 + int(lines[0])]:
                a, b = line.split()
                a, b = a$fold, b$fold
                $check
                print("YES" if ok else "NO")
            """,
            fold=fold,
            check=self.PROGRAMS[p["relation"]],
        )


def _related(relation: str, a: str, rng: random.Random) -> str:
    """A word that bears ``relation`` to ``a`` (before any near miss is made of it)."""
    letters = list(a)
    if relation in ("anagram", "same-letters"):
        rng.shuffle(letters)
        if relation == "same-letters":
            letters += rng.choices(letters, k=rng.randint(0, 3))
        return "".join(letters)
    if relation == "rotation":
        cut = rng.randrange(len(a))
        return a[cut:] + a[:cut]
    if relation == "subsequence":
        return "".join(c + "".join(rng.choices("abcdefgh", k=rng.randint(0, 2))) for c in a)
    if relation == "one-edit":
        i = rng.randrange(len(a) + 1)
        kind = rng.choice(("insert", "delete", "replace")) if len(a) > 1 else "insert"
        if kind == "insert":
            return a[:i] + rng.choice("abcdefgh") + a[i:]
        i = min(i, len(a) - 1)
        return a[:i] + (rng.choice("abcdefgh") if kind == "replace" else "") + a[i + 1 :]
    mapping = dict(zip(sorted(set(a)), rng.sample(string.ascii_letters, len(set(a))), strict=True))
    return "".join(mapping[c] for c in a)
