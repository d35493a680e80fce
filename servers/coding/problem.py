"""A coding task: a problem statement, its hidden tests and its reference program.

The hidden tests of a generated problem are built when an episode first needs them (they can hold large inputs),
never kept for every task; a hand-written one carries them from ``data/tasks.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from openenv_mcp import Task
from openenv_mcp.servers.coding.judge import TestSuite

__all__ = ["CodingTask", "Problem", "Written"]


class Problem(Protocol):
    """What grading and the reference play need of a problem."""

    def suite(self) -> TestSuite:
        """The hidden tests (inputs and expected outputs), the time each may take, and the harness."""
        ...

    def reference(self) -> str:
        """The reference solution: a real program (or function) that passes every hidden test."""
        ...


@dataclass(frozen=True, slots=True)
class Written:
    """A hand-written problem: its tests and its reference program, as ``data/tasks.json`` holds them."""

    tests: TestSuite
    program: str

    def suite(self) -> TestSuite:
        return self.tests

    def reference(self) -> str:
        return self.program


@dataclass(frozen=True, slots=True)
class CodingTask(Task):
    """A programming problem and its hidden tests."""

    problem: Problem

    @property
    def suite(self) -> TestSuite:
        """The hidden tests (built on first use for a generated problem, then cached for a while)."""
        return self.problem.suite()
