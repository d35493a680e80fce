"""A tiny environment of any size whose reference solutions can be broken on purpose: each task asks for a + b.

``sums_environment(sum_tasks(5000))`` serves five thousand tasks (for listing at size); a task's ``reference``
names how its reference solution goes wrong, so the task-set check can be shown to catch each way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_settings import BaseSettings

from openenv_mcp import Environment, Grade, Task, TaskSet, Toolbox, ToolFailed
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.models import Observation

__all__ = ["BROKEN", "SumTask", "sum_tasks", "sums_environment"]

BROKEN = ("wrong", "refused", "raises", "open", "overlong", "empty")
"""The ways a reference can be broken: a wrong answer, a refused call, an exception while making it, an episode
left open, calls after the episode ended, no calls at all."""


@dataclass(frozen=True, slots=True)
class SumTask(Task):
    a: int = 0
    b: int = 0
    reference: str = "right"


class Pad:
    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


tools: Toolbox[Pad] = Toolbox("sums")


@tools.tool()
async def add(pad: Pad, a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: One number.
        b: The other.
    """
    return a + b


@tools.tool()
async def answer(pad: Pad, value: int) -> int:
    """Give the answer; it ends the task.

    Args:
        value: The sum.
    """
    if value < 0:
        raise ToolFailed("Sums here are never negative; answer again")
    return value


async def _open(task: SumTask, seed: int, settings: object) -> Pad:
    return Pad()


async def _open_prod(settings: object) -> Pad:
    return Pad()


async def _grade(task: SumTask, pad: Pad, call: BoundCall, observation: Observation) -> Grade:
    if call.tool.name != "answer" or observation.is_error:
        return Grade()
    return Grade(reward=1.0 if call.kwargs["value"] == task.a + task.b else 0.0, done=True)


def _solve(task: SumTask) -> list[tuple[str, dict[str, Any]]]:
    total = task.a + task.b
    calls: list[tuple[str, dict[str, Any]]] = [("add", {"a": task.a, "b": task.b})]
    if task.reference == "raises":
        raise ValueError(f"no reference for {task.id}")
    if task.reference == "empty":
        return []
    extra = {
        "right": [("answer", {"value": total})],
        "wrong": [("answer", {"value": total + 1})],
        "refused": [("answer", {"value": -1}), ("answer", {"value": total})],
        "open": [],
        "overlong": [("answer", {"value": total}), ("add", {"a": 1, "b": 1})],
    }
    return calls + extra[task.reference]


class SumsSettings(BaseSettings):
    pass


def sum_tasks(count: int, *, broken: dict[int, str] | None = None, tiers: Sequence[str | None] = ()) -> list[SumTask]:
    """``count`` tasks: every fifth in ``test``, the tiers easy, medium, hard in turn (or ``tiers``), task ``i``'s
    reference broken as ``broken[i]`` says."""
    tiers = tuple(tiers) or ("easy", "medium", "hard")
    return [
        SumTask(
            id=f"sum-{i:05d}",
            split="test" if i % 5 == 0 else "train",
            prompt=f"What is {i} + {2 * i + 1}? Add them with add, then answer.",
            difficulty=tiers[i % len(tiers)],
            a=i,
            b=2 * i + 1,
            reference=(broken or {}).get(i, "right"),
        )
        for i in range(count)
    ]


def sums_environment(tasks: Sequence[SumTask]) -> Environment[Pad, SumTask]:
    """An environment serving ``tasks``."""
    return Environment(
        name="sums",
        description="Add two numbers and answer: a task set of any size for the toolkit's own tests.",
        tools=tools,
        tasks=lambda: TaskSet(tasks),
        settings=SumsSettings,
        sim_backend=_open,
        prod_backend=_open_prod,
        grade=_grade,
        solve=_solve,
        examples=(("add", {"a": 1, "b": 2}),),
    )
