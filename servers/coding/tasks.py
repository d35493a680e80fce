"""The coding tasks (stdin/stdout programs with hidden tests) and their grading."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from openenv_mcp import ConfigError, Task, TaskSet
from openenv_mcp.rewards.rubrics import Criterion, Rubric, Scoring
from openenv_mcp.servers.coding.judge import DEFAULT_TIME_LIMIT_S, TestCase, TestSuite

__all__ = ["CodingTask", "grade", "load_suite", "load_tasks", "solve"]

_HOW = (
    "\n\nWrite a Python 3 program that reads the input from standard input and writes the answer to standard "
    "output. Try code with run_python (give it stdin to feed your program an input), then call submit_solution "
    "with the whole program: it runs on hidden tests, and your reward is the fraction it passes. "
    "Submitting ends the task. Output is compared line by line, ignoring trailing spaces."
)


@dataclass(frozen=True, slots=True)
class CodingTask(Task):
    """A programming problem and its hidden tests."""

    suite: TestSuite


def load_tasks() -> TaskSet:
    """The shipped tasks (``data/tasks.json``) in their train and test splits."""
    raw = json.loads(
        resources.files("openenv_mcp.servers.coding").joinpath("data/tasks.json").read_text(encoding="utf-8")
    )
    return TaskSet(_task(item) for item in raw)


def _task(item: dict[str, Any]) -> CodingTask:
    examples = "".join(
        f"\n\nExample {n}\nInput:\n{example['input'].rstrip()}\nOutput:\n{example['output'].rstrip()}"
        for n, example in enumerate(item["examples"], start=1)
    )
    return CodingTask(
        id=item["id"],
        split=item["split"],
        prompt=f"{item['title']}\n\n{item['statement']}{examples}{_HOW}",
        suite=TestSuite(_tests(item["tests"]), float(item.get("time_limit_s", DEFAULT_TIME_LIMIT_S))),
    )


def _tests(raw: list[dict[str, str]]) -> tuple[TestCase, ...]:
    return tuple(TestCase(input=test["input"], output=test["output"]) for test in raw)


_TABLE_PROGRAM = """\
import base64, hashlib, json, sys, zlib
ANSWERS = json.loads(zlib.decompress(base64.b64decode({table!r})))
sys.stdout.write(ANSWERS.get(hashlib.sha256(sys.stdin.buffer.read()).hexdigest(), ""))
"""


def solve(task: CodingTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution the task data allows: a program that answers each hidden test from a table.

    The table maps a digest of each test's input to its expected output, so the program passes every
    hidden test: it shows the environment's ceiling and that the whole path (sandbox, judge, reward)
    works, not an algorithm. The algorithmic reference programs stay out of the package on purpose
    (``tests/support/coding_solutions.py``). The program is tried once on the first test's input, as an
    agent tries an example, then submitted.
    """
    answers = {hashlib.sha256(t.input.encode("utf-8")).hexdigest(): t.output for t in task.suite.tests}
    table = base64.b64encode(zlib.compress(json.dumps(answers, sort_keys=True).encode("utf-8"), 9)).decode("ascii")
    code = _TABLE_PROGRAM.format(table=table)
    first = task.suite.tests[0].input if task.suite.tests else ""
    return [("run_python", {"code": code, "stdin": first}), ("submit_solution", {"code": code})]


def load_suite(path: Path) -> TestSuite:
    """An operator's acceptance tests: ``{"time_limit_s": 2, "tests": [{"input": ..., "output": ...}]}``."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        suite = TestSuite(_tests(raw["tests"]), float(raw.get("time_limit_s", DEFAULT_TIME_LIMIT_S)))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"CODING_TESTS_FILE {path} is not a readable test suite ({exc}); expected "
            '{"time_limit_s": 2, "tests": [{"input": "...", "output": "..."}]}'
        ) from None
    if not suite.tests:
        raise ConfigError(f"CODING_TESTS_FILE {path} holds no tests")
    return suite


def _submitted(s: Scoring) -> bool:
    result = s.observation
    return s.call.tool.name == "submit_solution" and not result.is_error and result.structured_content is not None


def _result(s: Scoring) -> dict[str, Any]:
    assert s.observation.structured_content is not None
    return s.observation.structured_content


def _ran_clean(s: Scoring) -> float:
    """The share of hidden tests that ran to an answer (right or wrong): no crash, no time limit."""
    result = _result(s)
    crashed = sum(1 for f in result["failures"] if not str(f["verdict"]).startswith("wrong answer"))
    return 1.0 - crashed / result["total"] if result["total"] else 0.0


grade = Rubric(
    Criterion("tests_passed", lambda s: float(_result(s)["score"])),
    Criterion("ran_clean", _ran_clean, weight=0.0),
    tools=("submit_solution",),
    graded=_submitted,
    done=lambda s: True,
    ndigits=None,
)
"""Reward only on ``submit_solution`` (which ends the episode): ``tests_passed``, the fraction of hidden tests
passed; ``ran_clean`` (weight 0) reports the share that neither crashed nor ran out of time."""
