"""What rebuilds an open sim episode on another replica: its journal (task, seed, the steps applied) and the replay.

A sim episode is its task, its seed and its actions: replaying them on any replica of the same server gives the
same episode (the sim is deterministic under its seed; the same replay makes forks and signed snapshots). The pool
keeps a :class:`Journal` per open episode, and when the episode's replica stops answering it :func:`rebuild`\\ s the
episode elsewhere, checks that the replay came out where the journal says (the same steps, the same total reward),
and carries on with the step that failed. A world whose worker cannot replay, or a replica that refuses the reset,
fails the rebuild with the server's error, which the pool reports naming the replicas.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
import httpx

from openenv_mcp.errors import OpenEnvError, ReplayDiverged
from openenv_mcp.models import StepResult

__all__ = ["Ask", "Journal", "Plan", "arun", "rebuild", "run"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Ask:
    """One thing a :data:`Plan` needs done: ``client.method(*args, **kwargs)`` (an :class:`EnvClient` or an
    :class:`AsyncEnvClient`, whichever the pool holds), or with no client a pause of ``args[0]`` seconds."""

    client: Any
    method: str = "sleep"
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Ask, Any, T]
"""How an episode is resumed, written once for both pool twins: a generator that yields what it needs done and is
sent the answer (or thrown the error). :func:`run` carries it out with blocking calls, :func:`arun` awaiting them."""


class _Carried(Generic[T]):
    """A plan being carried out: :meth:`next` gives what it asks next, given how the last ask went."""

    def __init__(self, plan: Plan[T]) -> None:
        self.plan = plan
        self.answer: Any = None
        self.error: BaseException | None = None  # the plan's handlers see it (an interrupt or cancellation too)
        self.result: T

    def next(self) -> Ask | None:
        """The next ask; None once the plan has returned (its value in ``result``)."""
        try:
            ask = self.plan.send(self.answer) if self.error is None else self.plan.throw(self.error)
        except StopIteration as done:
            self.result = done.value
            return None
        self.answer, self.error = None, None
        return ask


def run(plan: Plan[T]) -> T:
    """Carry out ``plan`` with the blocking clients of :class:`~openenv_mcp.client.pool.EnvPool`."""
    carried = _Carried(plan)
    while (ask := carried.next()) is not None:
        try:
            call = time.sleep if ask.client is None else getattr(ask.client, ask.method)
            carried.answer = call(*ask.args, **ask.kwargs)
        except BaseException as exc:
            carried.error = exc
    return carried.result


async def arun(plan: Plan[T]) -> T:
    """Carry out ``plan`` with the async clients of :class:`~openenv_mcp.client.pool.AsyncEnvPool`."""
    carried = _Carried(plan)
    while (ask := carried.next()) is not None:
        try:
            call = anyio.sleep if ask.client is None else getattr(ask.client, ask.method)
            carried.answer = await call(*ask.args, **ask.kwargs)
        except BaseException as exc:
            carried.error = exc
    return carried.result


@dataclass(slots=True)
class Journal:
    """One open episode as the pool can rebuild it.

    Attributes:
        task_id: Its task.
        seed: The seed its reset used (the server reports it).
        url: The replica that holds it now.
        server_id: Its id on that replica (the caller keeps the id its reset returned).
        steps: The steps applied so far, in order, with their arguments.
        step_count: The server's step count after the last of them.
        total_reward: The server's total reward after the last of them.
    """

    task_id: str
    seed: int | None
    url: str
    server_id: str
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    step_count: int = 0
    total_reward: float = 0.0

    @classmethod
    def opened(cls, first: StepResult, url: str) -> Journal:
        """The journal of the episode a reset on ``url`` answered ``first``."""
        seed = first.info.get("seed")
        return cls(str(first.info.get("task_id", "")), None if seed is None else int(seed), url, first.episode_id)

    def applied(self, tool: str, arguments: dict[str, Any], result: StepResult) -> None:
        """Write down a step the server applied, and where it left the episode."""
        self.steps.append((tool, arguments))
        self.step_count = int(result.info.get("step_count", self.step_count + 1))
        self.total_reward = float(result.info.get("total_reward", self.total_reward + result.reward))


def rebuild(journal: Journal, client: Any) -> Plan[str]:
    """Open ``journal``'s episode on ``client``'s server and replay its steps; the new episode's id there.

    Raises:
        httpx.HTTPError: That server did not answer either (the caller tries another).
        OpenEnvError: It answered but the episode cannot be rebuilt there (a reset refused, a replay that came out
            elsewhere: :class:`~openenv_mcp.errors.ReplayDiverged`); the half-built episode is closed.
    """
    first: StepResult = yield Ask(client, "reset", kwargs={"task_id": journal.task_id, "seed": journal.seed})
    client.episode_id = None  # the pool, not the client, remembers episodes
    try:
        last = first
        for tool, arguments in journal.steps:
            last = yield Ask(client, "step", (tool, arguments), {"episode_id": first.episode_id})
        count = int(last.info.get("step_count", len(journal.steps)))
        reward = float(last.info.get("total_reward", 0.0))
        if (count, round(reward, 9)) != (journal.step_count, round(journal.total_reward, 9)):
            raise ReplayDiverged(
                f"Replaying episode of task {journal.task_id!r} (seed {journal.seed}) gave {count} steps and reward "
                f"{reward:g}, where it had {journal.step_count} and {journal.total_reward:g}: its environment is "
                "not deterministic under its seed"
            )
    except OpenEnvError:
        with contextlib.suppress(OpenEnvError, httpx.HTTPError):
            yield Ask(client, "close_episode", kwargs={"episode_id": first.episode_id})
        raise
    return first.episode_id
