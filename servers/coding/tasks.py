"""The coding tasks (programs and functions with hidden tests), their reference solutions and their grading.

The hand-written tasks come from ``data/tasks.json``; the generated ones from :mod:`generator
<openenv_mcp.servers.coding.generator>`, made when the tasks load.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from openenv_mcp import ConfigError, TaskSet
from openenv_mcp.rewards.rubrics import Criterion, Rubric, Scoring
from openenv_mcp.servers.coding.families.base import PROGRAM_HOW
from openenv_mcp.servers.coding.generator import generate
from openenv_mcp.servers.coding.judge import DEFAULT_TIME_LIMIT_S, TestCase, TestSuite
from openenv_mcp.servers.coding.problem import CodingTask, Written

__all__ = ["CodingTask", "grade", "load_suite", "load_tasks", "solve"]


def load_tasks() -> TaskSet:
    """The hand-written tasks (``data/tasks.json``) and the generated ones, in their train and test splits."""
    raw = json.loads(
        resources.files("openenv_mcp.servers.coding").joinpath("data/tasks.json").read_text(encoding="utf-8")
    )
    return TaskSet([*(_task(item) for item in raw), *generate()])


def _task(item: dict[str, Any]) -> CodingTask:
    examples = "".join(
        f"\n\nExample {n}\nInput:\n{example['input'].rstrip()}\nOutput:\n{example['output'].rstrip()}"
        for n, example in enumerate(item["examples"], start=1)
    )
    suite = TestSuite(_tests(item["tests"]), float(item.get("time_limit_s", DEFAULT_TIME_LIMIT_S)))
    return CodingTask(
        id=item["id"],
        split=item["split"],
        prompt=f"{item['title']}\n\n{item['statement']}{examples}{PROGRAM_HOW}",
        problem=Written(suite, item["reference"]),
        difficulty=item["difficulty"],
    )


def _tests(raw: list[dict[str, str]]) -> tuple[TestCase, ...]:
    return tuple(TestCase(input=test["input"], output=test["output"]) for test in raw)


def solve(task: CodingTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution: the task's reference program, tried once on the first hidden test's input (as an
    agent tries an example; a function task's harness calls the function there), then submitted."""
    suite = task.suite
    program = task.problem.reference()
    first = suite.tests[0].input if suite.tests else ""
    return [("run_python", {"code": program + suite.harness, "stdin": first}), ("submit_solution", {"code": program})]


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
