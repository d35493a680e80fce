"""An environment with bugs, for the tests of what a server does when an environment's own code raises.

Its sim backend cannot open on seed 13 (``KeyError``) nor be copied on seed 7 (its fork fast path raises
``OSError``); its one tool, ``poke``, raises ``ZeroDivisionError`` when asked to (``crash=True``) and
``RuntimeError`` on every call of an episode whose seed is in ``BROKEN_SEEDS`` (a test may add one, to break
a replay). Other calls earn 0.5.
"""

from __future__ import annotations

from typing import Any

from pydantic_settings import BaseSettings

from openenv_mcp import BoundCall, Environment, Grade, Observation, Task, TaskSet, Toolbox

BROKEN_SEEDS = {2}


class BuggyBackend:
    def __init__(self, seed: int) -> None:
        self.seed = seed

    @classmethod
    async def open(cls, task: Task, seed: int, settings: Any) -> BuggyBackend:
        if seed == 13:
            raise KeyError("seed 13")
        return cls(seed)

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


tools: Toolbox[BuggyBackend] = Toolbox("buggy")


@tools.tool
async def poke(backend: BuggyBackend, crash: bool = False) -> str:
    """Poke the backend; with crash, the tool has a bug."""
    if crash:
        raise ZeroDivisionError("division by zero")
    if backend.seed in BROKEN_SEEDS:
        raise RuntimeError(f"the backend of seed {backend.seed} is broken")
    return "ok"


async def _grade(task: Task, backend: BuggyBackend, call: BoundCall, observation: Observation) -> Grade:
    return Grade(reward=0.5, done=False)


async def _fork(backend: BuggyBackend) -> BuggyBackend:
    if backend.seed == 7:
        raise OSError("no space left on device")
    return BuggyBackend(backend.seed)


async def _prod(settings: Any) -> BuggyBackend:
    return BuggyBackend(0)


buggy: Environment[BuggyBackend, Task] = Environment(
    name="buggy",
    description="A tool and a sim backend with bugs.",
    tools=tools,
    tasks=lambda: TaskSet([Task(id="poke", split="train", prompt="Poke it twice.")]),
    settings=BaseSettings,
    sim_backend=BuggyBackend.open,
    prod_backend=_prod,
    grade=_grade,
    sim_fork=_fork,
    examples=(("poke", {}), ("poke", {})),
)
