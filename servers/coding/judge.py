"""The judge: runs a solution on hidden tests, one sandboxed process per test, and summarises.

Only each test's input enters the sandbox; expected outputs stay in the server, and the
summary an agent sees names each failed test's number and verdict, never its data.
Outputs are compared line by line, ignoring trailing spaces and trailing blank lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openenv_mcp.servers.coding.models import Failure, SubmitResult
from openenv_mcp.servers.coding.sandbox import RunOutcome, Sandbox, Workspace

__all__ = ["DEFAULT_TIME_LIMIT_S", "TestCase", "TestSuite", "judge", "same_output", "verdict"]

DEFAULT_TIME_LIMIT_S = 2.0

_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


@dataclass(frozen=True, slots=True)
class TestCase:
    """One hidden test: what goes to stdin, and what stdout must be."""

    input: str
    output: str


@dataclass(frozen=True, slots=True)
class TestSuite:
    """Hidden tests and the time each may take: a task's, or the operator's acceptance tests in prod.

    ``harness``: code run after the submitted program in each test (a function task's: it reads the calls from
    stdin and prints what the function returns); empty for a whole program.
    """

    tests: tuple[TestCase, ...]
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    harness: str = ""


async def judge(
    sandbox: Sandbox,
    home: Workspace,
    code: str,
    suite: TestSuite,
    *,
    hash_seed: int | None,
    entropy: str | None = None,
) -> SubmitResult:
    """Run ``code`` once per test, each in a fresh directory as ``home``'s account, in its control group.

    ``entropy``: seed the runs (test ``n`` draws its stream from ``{entropy}/test-{n}``).
    """
    failures = []
    tests = suite.tests
    program = code + suite.harness
    for number, test in enumerate(tests, start=1):
        async with sandbox.scratch_workspace(home) as workspace:
            outcome = await sandbox.run(
                workspace,
                program,
                stdin=test.input,
                timeout_s=suite.time_limit_s,
                hash_seed=hash_seed,
                entropy=None if entropy is None else f"{entropy}/test-{number}",
            )
        found = verdict(outcome, test.output)
        if found != "passed":
            failures.append(Failure(test=number, verdict=found))
    total = len(tests)
    passed = total - len(failures)
    score = round(passed / total, 4) if total else 0.0
    return SubmitResult(
        passed=passed,
        total=total,
        score=score,
        failures=failures,
        message=f"{passed} of {total} hidden tests passed",
    )


def verdict(outcome: RunOutcome, expected: str) -> str:
    """``passed``, or a short reason that reveals nothing of the test's data."""
    if outcome.timed_out:
        return "time limit exceeded"
    if outcome.truncated:
        return "output limit exceeded"
    if outcome.exit_code != 0:
        return f"runtime error: {_exception(outcome.stderr) or f'exit status {outcome.exit_code}'}"
    return "passed" if same_output(outcome.stdout, expected) else "wrong answer"


def same_output(actual: str, expected: str) -> bool:
    return _lines(actual) == _lines(expected)


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _exception(stderr: str) -> str | None:
    """The exception's name from a traceback (not its message, which may quote the input)."""
    if "Traceback (most recent call last)" not in stderr:
        return None
    for line in reversed(stderr.strip().splitlines()):
        if not line.startswith(" ") and (match := _EXCEPTION.match(line)):
            return match.group(1)
    return None
