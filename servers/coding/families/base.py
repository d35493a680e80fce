"""What a family of generated coding problems declares, in its two styles: a whole program, or a function.

A family is one problem with knobs (its parameters); each point of its parameter grid is one task. For a task it
gives the prompt (statement and worked examples), the hidden tests drawn from a seed (the examples, edge cases,
random inputs and a large input), and a reference solution. Expected outputs are computed here, by the family's
own solver working on the test's data; the reference is a separate program that reads the test's text, run in the
sandbox by the reference play, so the play checks that the two agree through the one path.

A **program** task reads standard input and prints the answer. A **function** task defines a function; each
hidden test runs the submission followed by a harness that reads one call per line (its arguments as a JSON
array) and prints what the function returned, as JSON.
"""

from __future__ import annotations

import json
import random
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Mapping, Sequence
from string import Template
from textwrap import dedent
from typing import Any, ClassVar

from openenv_mcp.servers.coding.judge import TestCase

__all__ = [
    "FUNCTION_HOW",
    "PROGRAM_HOW",
    "Family",
    "FunctionFamily",
    "Params",
    "ProgramFamily",
    "code",
    "ints",
    "join",
]

Params = Mapping[str, Any]

PROGRAM_HOW = (
    "\n\nWrite a Python 3 program that reads the input from standard input and writes the answer to standard "
    "output. Try code with run_python (give it stdin to feed your program an input), then call submit_solution "
    "with the whole program: it runs on hidden tests, and your reward is the fraction it passes. "
    "Submitting ends the task. Output is compared line by line, ignoring trailing spaces."
)
FUNCTION_HOW = (
    "\n\nSubmit with submit_solution the code that defines the function (imports and helper functions are "
    "allowed; it must not read input or print). The hidden tests call it with many arguments and compare what it "
    "returns; your reward is the fraction of tests passed. Try code with run_python first (call your function "
    "there and print the result). Submitting ends the task."
)


def ints(rng: random.Random, n: int, low: int, high: int) -> list[int]:
    """``n`` integers drawn uniformly from ``low..high``."""
    return [rng.randint(low, high) for _ in range(n)]


def _examples(seed: str) -> random.Random:
    return random.Random(f"{seed}/examples")


def _hidden(seed: str) -> random.Random:
    return random.Random(f"{seed}/hidden")


def join(values: Sequence[object], separator: str = " ") -> str:
    return separator.join(map(str, values))


def code(text: str, **values: object) -> str:
    """A reference program from an indented template: ``$NAME`` is replaced by ``values[NAME]``."""
    return Template(dedent(text).strip("\n")).substitute(values) + "\n"


class Family(ABC):
    """A parameterised problem. Subclass :class:`ProgramFamily` or :class:`FunctionFamily`."""

    name: ClassVar[str]
    """A short name, part of every task id of the family."""
    time_limit_s: ClassVar[float] = 6.0
    """Seconds each hidden test may take: generous, so that a loaded machine never fails the reference."""

    @abstractmethod
    def grid(self) -> Iterator[dict[str, Any]]:
        """Every instance's parameters (values are ints, strings or tuples of them)."""

    @abstractmethod
    def holdout(self, p: Params) -> Hashable:
        """The part of the parameters the test split holds out: a knob's value, a composition."""

    @abstractmethod
    def held_out(self, key: Any) -> bool:
        """Whether instances with this :meth:`holdout` key are test tasks (never seen in train)."""

    @abstractmethod
    def points(self, p: Params) -> int:
        """Difficulty points: 0 easy, 1 medium, 2 or more hard (the README says the rule per family)."""

    @abstractmethod
    def title(self, p: Params) -> str: ...

    @abstractmethod
    def prompt(self, p: Params, seed: str) -> str:
        """The task as the agent reads it: title, statement, worked examples (drawn from ``seed``), how to answer."""

    @abstractmethod
    def tests(self, p: Params, seed: str) -> tuple[TestCase, ...]:
        """The hidden tests drawn from ``seed``: the examples again, then edge cases, random inputs, a large one."""

    @abstractmethod
    def program(self, p: Params) -> str:
        """The reference solution's source."""

    def harness(self, p: Params) -> str:
        """Code run after the submission in each test ("" for a whole program)."""
        return ""


class ProgramFamily(Family):
    """A problem whose solution is a whole program: input on stdin, the answer on stdout.

    Test data is whatever the family likes (a list, a tuple...): :meth:`render` writes it as the input text and
    :meth:`solve` computes the expected output from the data itself.
    """

    @abstractmethod
    def statement(self, p: Params) -> str: ...

    @abstractmethod
    def examples(self, p: Params, rng: random.Random) -> list[Any]:
        """One or two small inputs' data, shown in the prompt (and the first hidden tests)."""

    @abstractmethod
    def hidden(self, p: Params, rng: random.Random) -> list[Any]:
        """The other hidden tests' data: edge cases, random, large."""

    @abstractmethod
    def render(self, p: Params, data: Any) -> str:
        """The input text of a test."""

    @abstractmethod
    def solve(self, p: Params, data: Any) -> str:
        """The expected output of a test (ending with a newline)."""

    def prompt(self, p: Params, seed: str) -> str:
        shown = "".join(
            f"\n\nExample {n}\nInput:\n{self.render(p, data).rstrip()}\nOutput:\n{self.solve(p, data).rstrip()}"
            for n, data in enumerate(self.examples(p, _examples(seed)), start=1)
        )
        return f"{self.title(p)}\n\n{self.statement(p)}{shown}{PROGRAM_HOW}"

    def tests(self, p: Params, seed: str) -> tuple[TestCase, ...]:
        cases = [*self.examples(p, _examples(seed)), *self.hidden(p, _hidden(seed))]
        return tuple(TestCase(input=self.render(p, data), output=self.solve(p, data)) for data in cases)


class FunctionFamily(Family):
    """A problem whose solution is a function; a test is a group of calls, one per line of its input."""

    @abstractmethod
    def function(self, p: Params) -> str:
        """The function's name."""

    @abstractmethod
    def signature(self, p: Params) -> str:
        """``def name(arguments) -> result`` as the prompt shows it."""

    @abstractmethod
    def describe(self, p: Params) -> str:
        """What the function returns, a sentence or a few."""

    @abstractmethod
    def examples(self, p: Params, rng: random.Random) -> list[tuple[Any, ...]]:
        """A few calls' arguments, shown in the prompt (and the first hidden test)."""

    @abstractmethod
    def hidden(self, p: Params, rng: random.Random) -> list[list[tuple[Any, ...]]]:
        """The other hidden tests, each a group of calls: edge cases, random, large."""

    @abstractmethod
    def call(self, p: Params, args: tuple[Any, ...]) -> Any:
        """What the function must return for ``args`` (JSON-able: ints, strings, booleans, lists, dicts)."""

    def prompt(self, p: Params, seed: str) -> str:
        name = self.function(p)
        shown = "".join(
            f"\n\nExample {n}\n>>> {name}({', '.join(map(repr, args))})\n{self.call(p, args)!r}"
            for n, args in enumerate(self.examples(p, _examples(seed)), start=1)
        )
        head = f"{self.title(p)}\n\nWrite a Python function\n\n    {self.signature(p)}\n\n{self.describe(p)}"
        return f"{head}{shown}{FUNCTION_HOW}"

    def tests(self, p: Params, seed: str) -> tuple[TestCase, ...]:
        groups = [self.examples(p, _examples(seed)), *self.hidden(p, _hidden(seed))]
        return tuple(
            TestCase(
                input="".join(json.dumps(list(args)) + "\n" for args in group),
                output="".join(json.dumps(self.call(p, args), sort_keys=True) + "\n" for args in group),
            )
            for group in groups
        )

    def harness(self, p: Params) -> str:
        return (
            "\n\nimport json as _openenv_json, sys as _openenv_sys\n"
            "for _openenv_line in _openenv_sys.stdin.read().splitlines():\n"
            f"    _openenv_result = {self.function(p)}(*_openenv_json.loads(_openenv_line))\n"
            "    print(_openenv_json.dumps(_openenv_result, sort_keys=True))\n"
        )
