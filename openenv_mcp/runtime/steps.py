"""Step identity: a step sent again with the same id is answered with what it did the first time, never run twice.

A client that lost the answer to a step (the connection reset, a timeout, a proxy that gave up) cannot know
whether the server ran it. It sends the step again with the same ``X-Step-Id``; the server keeps the answers of
its most recent step ids (per episode, a few thousand in all) and answers a repeat with the recorded result, or,
while the first is still running, with that one's result once it ends. A step that failed did not count (the
error says so, or it ran and its grade is pending: sending it again grades it), so its id is forgotten and a
repeat runs it.

    steps = RecentSteps()
    result = await steps.once(episode_id, step_id, lambda: run_the_step())
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from openenv_mcp.models import StepResult

__all__ = ["RecentSteps"]


class RecentSteps:
    """The answers of the most recent ``keep`` step ids, by episode and id."""

    def __init__(self, keep: int = 4096) -> None:
        self.keep = keep
        self._answers: OrderedDict[tuple[str, str], asyncio.Future[StepResult]] = OrderedDict()

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
