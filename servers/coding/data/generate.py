"""Build tasks.json: the hand-written tasks' statements, examples (outputs checked by hand), hidden tests,
difficulty and reference program.

    python servers/coding/data/generate.py     # from the repository root

Hidden inputs are written here (edge cases by hand, larger ones from a seeded generator);
their expected outputs come from the reference solutions in references.py beside this file,
which must also reproduce every hand-written example output, or generation stops. (The generated
tasks are made by ``servers/coding/generator.py`` when the server loads, not here.)
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from references import SOLUTIONS  # noqa: E402

from openenv_mcp.servers.coding.judge import same_output  # noqa: E402

rng = random.Random(20240611)


def ints(n: int, low: int, high: int) -> list[int]:
    return [rng.randint(low, high) for _ in range(n)]


def line(values: list[int]) -> str:
    return " ".join(map(str, values))


def grid(r: int, c: int, chars: str, weights: list[int]) -> list[str]:
    return ["".join(rng.choices(chars, weights, k=c)) for _ in range(r)]


def task(
    number: int,
    split: str,
    difficulty: str,
    title: str,
    statement: str,
    examples: list[tuple[str, str]],
    hidden: list[str],
    time_limit_s: float = 2.0,
) -> dict[str, Any]:
    return {
        "id": f"coding-{number:03d}",
        "split": split,
        "difficulty": difficulty,
        "title": title,
        "statement": statement.strip(),
        "examples": [{"input": i, "output": o} for i, o in examples],
        "hidden": [i for i, _ in examples] + hidden,
        "time_limit_s": time_limit_s,
    }


def serpentine(n: int) -> list[str]:
    """An n by n maze: every fourth row a wall with one gap, on alternate sides; S top left, E bottom right."""
    rows = []
    for i in range(n):
        if i % 4 == 2:
            gap = n - 1 if i % 8 == 2 else 0
            rows.append("".join("." if j == gap else "#" for j in range(n)))
        else:
            rows.append("." * n)
    rows[0] = "S" + rows[0][1:]
    rows[-1] = rows[-1][:-1] + "E"
    return rows


def words_text(n: int) -> str:
    vocabulary = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "sun", "sky", "It's", "RED", "blue"]
    return " ".join(rng.choice(vocabulary) + rng.choice(["", "", ",", ".", "!"]) for _ in range(n))


def random_dag(n: int, m: int) -> str:
    order = list(range(1, n + 1))
    rng.shuffle(order)
    edges = set()
    while len(edges) < m:
        a, b = sorted(rng.sample(range(n), 2))
        edges.add((order[a], order[b]))
    return f"{n} {m}\n" + "\n".join(f"{u} {v}" for u, v in sorted(edges)) + "\n"


TASKS = [
    task(
        1,
        "train",
        "easy",
        "Sum of integers",
        "The first line holds n (0 <= n <= 20000); the second line holds n integers, each with at most 30 digits "
        "and possibly negative (the line may be missing when n = 0). Print their sum.",
        [("3\n1 2 3\n", "6\n"), ("2\n-5 5\n", "0\n")],
        [
            "0\n",
            "0\n\n",
            "1\n-7\n",
            "3\n123456789012345678901234567890 1 -1\n",
            f"20000\n{line(ints(20000, -(10**9), 10**9))}\n",
        ],
    ),
    task(
        2,
        "train",
        "easy",
        "Reverse the words",
        "For every line of the input, print its words in reverse order, separated by single spaces. Words are "
        "separated by one or more spaces; a line without words gives an empty line.",
        [("hello world\n", "world hello\n"), ("  one   two three \n", "three two one\n")],
        ["single\n", "a b\n\nc d e\n", "   \n", "x  y\nz\n"],
    ),
    task(
        3,
        "train",
        "easy",
        "FizzBuzz",
        "Read n (0 <= n <= 5000). For i from 1 to n print 'FizzBuzz' if i is divisible by 15, 'Fizz' if by 3, "
        "'Buzz' if by 5, and i otherwise, one per line.",
        [("5\n", "1\n2\nFizz\n4\nBuzz\n")],
        ["0\n", "1\n", "15\n", "16\n", "5000\n"],
    ),
    task(
        4,
        "train",
        "easy",
        "Palindromes",
        "The first line holds q. Each of the next q lines holds a phrase. For each, print YES if it reads the same "
        "forwards and backwards when only letters and digits are kept and case is ignored, else NO. A phrase with "
        "no letters or digits is a palindrome.",
        [("3\nRacecar\nA man, a plan, a canal: Panama\nhello\n", "YES\nYES\nNO\n")],
        [
            "1\n\n",
            "2\n!!!\nab\n",
            "3\nNo 'x' in Nixon\n12321\n1231\n",
            "2\nWas it a car or a cat I saw?\nStep on no pets!\n",
        ],
    ),
    task(
        5,
        "train",
        "medium",
        "Balanced brackets",
        "The first line holds q. Each of the next q lines holds a string. Print YES if its brackets (), [] and {} "
        "are balanced and properly nested (other characters are ignored), else NO.",
        [("3\n([]{})\n([)]\n((\n", "YES\nNO\nNO\n")],
        [
            "1\n\n",
            "2\n)(\nabc\n",
            "3\n{[()()]}\n]\n(a[b]{c}d)e\n",
            "1\n" + "(" * 20000 + ")" * 20000 + "\n",
            "1\n" + "(" * 20000 + ")" * 19999 + "\n",
        ],
    ),
    task(
        6,
        "train",
        "medium",
        "Counting primes",
        "Read n (0 <= n <= 2000000) and print how many prime numbers are less than or equal to n.",
        [("10\n", "4\n"), ("2\n", "1\n")],
        ["0\n", "1\n", "3\n", "100\n", "2000000\n"],
    ),
    task(
        7,
        "train",
        "easy",
        "GCD and LCM",
        "The first line holds n (1 <= n <= 1000); the second holds n positive integers. Print their greatest common "
        "divisor and their least common multiple, separated by a space.",
        [("3\n4 6 8\n", "2 24\n")],
        ["1\n7\n", "2\n1 1\n", "3\n1000000007 998244353 2\n", "4\n12 18 30 42\n", f"50\n{line(ints(50, 1, 60))}\n"],
    ),
    task(
        8,
        "train",
        "easy",
        "Roman numerals to integers",
        "Each line of the input holds a valid Roman numeral between 1 and 3999 (letters I V X L C D M, subtractive "
        "notation). Print each one's value on its own line.",
        [("III\nIV\nMCMXCIV\n", "3\n4\n1994\n")],
        ["I\n", "MMMCMXCIX\n", "XL\nXC\nCD\nCM\n", "LVIII\nDCCCXC\nXIX\n"],
    ),
    task(
        9,
        "train",
        "easy",
        "Integers to Roman numerals",
        "Each line of the input holds an integer between 1 and 3999. Print each one as a Roman numeral in standard "
        "subtractive notation (4 is IV, 9 is IX, 40 is XL, 90 is XC, 400 is CD, 900 is CM).",
        [("3\n4\n1994\n", "III\nIV\nMCMXCIV\n")],
        ["1\n", "3999\n", "40\n90\n400\n900\n", "58\n2024\n444\n"],
    ),
    task(
        10,
        "train",
        "easy",
        "Run-length encoding",
        "The first line holds q. Each of the next q lines holds a string. Encode each as runs: every maximal run of "
        "one repeated character becomes that character followed by the run's length ('aaab' becomes 'a3b1'). An "
        "empty string gives an empty line.",
        [("2\naaabcc\nabc\n", "a3b1c2\na1b1c1\n")],
        ["1\n\n", "3\nzzzzzzzzzzzz\n\nx\n", "1\n11122\n", "1\n" + "ab" * 1000 + "\n", "2\n  !!\naAaA\n"],
    ),
    task(
        11,
        "train",
        "easy",
        "Transpose a matrix",
        "The first line holds r and c (1 <= r, c <= 100). Each of the next r lines holds c integers. Print the c by "
        "r transpose, one row per line, values separated by single spaces.",
        [("2 3\n1 2 3\n4 5 6\n", "1 4\n2 5\n3 6\n")],
        [
            "1 1\n42\n",
            "1 4\n1 2 3 4\n",
            "3 1\n-1\n0\n1\n",
            "100 100\n" + "".join(line(ints(100, -99, 99)) + "\n" for _ in range(100)),
        ],
    ),
    task(
        12,
        "train",
        "easy",
        "Second largest",
        "The first line holds n (1 <= n <= 20000); the second holds n integers. Print the second largest distinct "
        "value, or NONE when there are fewer than two distinct values.",
        [("5\n3 1 4 1 5\n", "4\n"), ("3\n7 7 7\n", "NONE\n")],
        ["1\n9\n", "2\n-1 -2\n", "4\n5 5 4 4\n", f"20000\n{line(ints(20000, -(10**9), 10**9))}\n"],
    ),
    task(
        13,
        "train",
        "medium",
        "Word frequencies",
        "The first line holds k. The rest of the input is text. Words are maximal runs of the letters a-z after "
        "converting the text to lower case (so \"It's\" holds the words 'it' and 's'). Print the k most frequent "
        "words, each followed by a space and its count, most frequent first and ties in alphabetical order; print "
        "all of them when there are fewer than k.",
        [("2\nthe cat and the hat\n", "the 2\nand 1\n")],
        ["3\n", "5\nOne one ONE two\n", "1\nb a\n", f"10\n{words_text(5000)}\n", "2\nit's IT'S, it.\n"],
    ),
    task(
        14,
        "train",
        "medium",
        "Merge intervals",
        "The first line holds n (0 <= n <= 20000). Each of the next n lines holds two integers a <= b, a closed "
        "interval. Merge intervals that overlap or touch (sharing an end point) and print the merged intervals in "
        "increasing order, one 'a b' per line.",
        [("3\n1 3\n2 6\n8 10\n", "1 6\n8 10\n"), ("2\n1 2\n2 3\n", "1 3\n")],
        [
            "0\n",
            "1\n5 5\n",
            "3\n5 6\n1 2\n3 4\n",
            "3\n1 10\n2 3\n4 5\n",
            "20000\n" + "".join(f"{a} {a + rng.randint(0, 500)}\n" for a in ints(20000, 0, 10**6)),
        ],
    ),
    task(
        15,
        "train",
        "hard",
        "Longest increasing subsequence",
        "The first line holds n (1 <= n <= 20000); the second holds n integers. Print the length of the longest "
        "strictly increasing subsequence (not necessarily contiguous).",
        [("8\n10 9 2 5 3 7 101 18\n", "4\n")],
        [
            "1\n5\n",
            "5\n1 1 1 1 1\n",
            "6\n6 5 4 3 2 1\n",
            "6\n1 2 3 4 5 6\n",
            f"20000\n{line(ints(20000, -(10**6), 10**6))}\n",
        ],
    ),
    task(
        16,
        "train",
        "hard",
        "Shortest path in a grid",
        "The first line holds r and c (1 <= r, c <= 200). The next r lines hold the grid: '.' open, '#' wall, 'S' "
        "the start and 'E' the end (exactly one each). Moving up, down, left or right onto a non-wall cell costs "
        "one step. Print the fewest steps from S to E, or -1 if E cannot be reached.",
        [("3 4\nS..#\n.#..\n...E\n", "5\n"), ("2 3\nS#E\n.#.\n", "-1\n")],
        [
            "1 2\nSE\n",
            "3 3\nS#.\n##.\n..E\n",
            "5 5\nS....\n####.\n.....\n.####\n....E\n",
            "200 200\n" + "\n".join(serpentine(200)) + "\n",
        ],
    ),
    task(
        17,
        "test",
        "hard",
        "Fibonacci modulo a prime",
        "Each line of the input holds n (0 <= n <= 10^18). Print F(n) modulo 1000000007, where F(0) = 0, F(1) = 1 "
        "and F(n) = F(n-1) + F(n-2).",
        [("0\n1\n10\n", "0\n1\n55\n")],
        ["2\n", "90\n", "1000000000000000000\n", "999999999999999999\n123456789\n"],
    ),
    task(
        18,
        "test",
        "medium",
        "Base conversion",
        "Each line holds x, a and b: a non-negative integer x written in base a, and a target base b (2 <= a, b <= "
        "36; digits are 0-9 then A-Z). Print x written in base b with upper-case digits and no leading zeros.",
        [("255 10 16\nFF 16 2\n", "FF\n11111111\n")],
        ["0 10 2\n", "Z 36 10\n", "1010 2 36\n", "ZZZZZZZZZZZZZZZZZZZZ 36 7\n", "000123 10 10\n"],
    ),
    task(
        19,
        "test",
        "hard",
        "0/1 knapsack",
        "The first line holds n and W (1 <= n <= 100, 0 <= W <= 10000). Each of the next n lines holds an item's "
        "weight and value (positive integers). Each item may be taken at most once. Print the largest total value "
        "whose total weight is at most W.",
        [("3 50\n10 60\n20 100\n30 120\n", "220\n")],
        [
            "1 0\n1 5\n",
            "1 5\n5 7\n",
            "2 4\n5 10\n4 3\n",
            "100 10000\n" + "".join(f"{w} {v}\n" for w, v in zip(ints(100, 1, 500), ints(100, 1, 1000), strict=True)),
        ],
    ),
    task(
        20,
        "test",
        "hard",
        "Task order",
        "The first line holds n and m: tasks 1..n and m constraints (n <= 2000, m <= 10000). Each of the next m "
        "lines holds u and v: task u must come before task v. Print the lexicographically smallest order of all "
        "n tasks that meets every constraint, separated by spaces, or IMPOSSIBLE when there is none.",
        [("4 3\n1 2\n3 2\n2 4\n", "1 3 2 4\n"), ("2 2\n1 2\n2 1\n", "IMPOSSIBLE\n")],
        ["1 0\n", "3 0\n", "3 1\n3 1\n", "3 3\n1 2\n2 3\n3 1\n", random_dag(2000, 6000)],
    ),
    task(
        21,
        "test",
        "hard",
        "Edit distance",
        "The input holds two lines (either may be empty). Print the smallest number of single-character insertions, "
        "deletions and substitutions that turn the first into the second.",
        [("kitten\nsitting\n", "3\n")],
        ["\n\n", "abc\n\n", "\nabc\n", "same\nsame\n", "intention\nexecution\n", "a" * 1000 + "\n" + "b" * 1000 + "\n"],
    ),
    task(
        22,
        "test",
        "hard",
        "Count the islands",
        "The first line holds r and c (1 <= r, c <= 300). The next r lines hold c characters each, '1' for land and "
        "'0' for water. Print the number of islands: groups of land cells connected up, down, left or right.",
        [("3 4\n1100\n0100\n0011\n", "2\n")],
        [
            "1 1\n0\n",
            "1 1\n1\n",
            "3 3\n101\n010\n101\n",
            "300 300\n" + "\n".join("1" * 300 for _ in range(300)) + "\n",
            "200 200\n" + "\n".join(grid(200, 200, "01", [1, 1])) + "\n",
        ],
    ),
    task(
        23,
        "test",
        "medium",
        "Spiral order",
        "The first line holds r and c (1 <= r, c <= 100). The next r lines hold the matrix's values. Print them in "
        "clockwise spiral order starting at the top-left corner, on one line separated by spaces.",
        [("3 3\n1 2 3\n4 5 6\n7 8 9\n", "1 2 3 6 9 8 7 4 5\n")],
        ["1 1\n5\n", "1 4\n1 2 3 4\n", "4 1\n1\n2\n3\n4\n", "3 4\n1 2 3 4\n5 6 7 8\n9 10 11 12\n", "2 2\n1 2\n3 4\n"],
    ),
    task(
        24,
        "test",
        "medium",
        "Pairs with a given sum",
        "The first line holds n and t (1 <= n <= 20000). The second holds n integers a1..an. Print how many pairs of "
        "positions i < j have ai + aj = t.",
        [("5 6\n1 5 3 3 7\n", "2\n")],
        ["1 2\n1\n", "4 0\n0 0 0 0\n", "3 10\n1 2 3\n", f"20000 0\n{line(ints(20000, -1000, 1000))}\n"],
    ),
]


def expected(task_id: str, given: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SOLUTIONS[task_id]], input=given, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise SystemExit(f"{task_id}: the reference solution failed on {given[:60]!r}: {done.stderr}")
    return done.stdout


def main() -> None:
    out = []
    for item in TASKS:
        for example in item["examples"]:
            got = expected(item["id"], example["input"])
            if not same_output(got, example["output"]):
                raise SystemExit(
                    f"{item['id']}: reference gives {got!r} for an example that says {example['output']!r}"
                )
        hidden = item.pop("hidden")
        item["tests"] = [{"input": given, "output": expected(item["id"], given)} for given in hidden]
        item["reference"] = SOLUTIONS[item["id"]].strip("\n") + "\n"
        out.append(item)
    path = Path(__file__).with_name("tasks.json")
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(out)} tasks to {path} ({path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
