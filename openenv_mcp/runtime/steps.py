"""Step identity: a step sent again with the same id is answered with what it did the first time, never run twice.

A client that lost the answer to a step (the connection reset, a timeout, a proxy that gave up) cannot know
whether the server ran it. It sends the step again with the same ``X-Step-Id``; the server keeps the answers of
its most recent step ids (per episode, a few thousand in all) and answers a repeat with the recorded result, or,
while the first is still running, with that one's result once it ends. A step that failed did not count (the
error says so, or it ran and its grade is pending: sending it again grades it), so its id is forgotten and a
repeat runs it.

    steps = RecentSteps(runtime.call)
    result = await steps.step("run_query", {"sql": "SELECT 1"}, episode_id, step_id)  # the call, once per id

The runtime keeps one (``Runtime.recent``) for every door: ``X-Step-Id`` on ``POST /step``, ``step_id`` on a
``/step_batch`` item and on the WebSocket's step and batch items. A step that ran but whose grade failed is the
episode's pending step: :func:`pending_step` gives it back when the same action comes again.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from openenv_mcp.errors import GradePending
from openenv_mcp.models import Observation, StepResult
from openenv_mcp.runtime.snapshots import describe

if TYPE_CHECKING:
    from openenv_mcp.environment.tools import BoundCall
    from openenv_mcp.runtime.episodes import Episode, Outcome

    Call = Callable[[str, Mapping[str, Any], str], Awaitable[Outcome]]  # Runtime.call: tool, arguments, episode id

__all__ = ["RecentSteps", "pending_step"]


class RecentSteps:
    """The answers of the most recent ``keep`` step ids, by episode and id."""

    def __init__(self, call: Call, keep: int = 4096) -> None:
        self.call = call
        self.keep = keep
        self._answers: OrderedDict[tuple[str, str], asyncio.Future[StepResult]] = OrderedDict()

    async def step(self, tool: str, arguments: Mapping[str, Any], episode_id: str, step_id: str) -> StepResult:
        """A sim step as the control plane answers it, run the first time ``step_id`` comes for ``episode_id``."""

        async def run() -> StepResult:
            return (await self.call(tool, arguments, episode_id)).as_step()

        return await self.once(episode_id, step_id, run)

    def __len__(self) -> int:
        return len(self._answers)

    async def once(self, episode_id: str, step_id: str, run: Callable[[], Awaitable[StepResult]]) -> StepResult:
        """``run()`` the first time ``step_id`` is seen on ``episode_id``; its recorded answer every later time."""
        key = (episode_id, step_id)
        found = self._answers.get(key)
        if found is not None:
            self._answers.move_to_end(key)
            return await asyncio.shield(found)
        answer: asyncio.Future[StepResult] = asyncio.get_running_loop().create_future()
        self._answers[key] = answer
        while len(self._answers) > self.keep:
            self._answers.popitem(last=False)
        try:
            result = await run()
        except BaseException as exc:
            if self._answers.get(key) is answer:
                del self._answers[key]  # it did not count: a repeat runs it
            answer.set_exception(exc)
            answer.exception()  # retrieved here: a repeat waiting on it raises it too; nobody else needs to
            raise
        answer.set_result(result)
        return result


def pending_step(episode: Episode, bound: BoundCall) -> tuple[BoundCall, Observation, float]:
    """The step that ran but was not graded, when ``bound`` is the same action; else GradePending."""
    assert episode.pending is not None
    pending, observation, ran = episode.pending
    if (bound.tool.name, dict(bound.arguments)) != (pending.tool.name, dict(pending.arguments)):
        raise GradePending(
            f"Episode {episode.id!r}: step {episode.step_count + 1} ({pending.tool.name} "
            f"{describe(pending.arguments)}) ran but its grade failed; send that same action again to grade "
            "it (the tool does not run again), or close the episode"
        )
    return pending, observation, ran
