"""eager_gather: answers in order, without a task for a coroutine that never waits."""

from __future__ import annotations

import asyncio

import pytest

from openenv_mcp.runtime._gather import eager_gather

pytestmark = pytest.mark.anyio


async def test_eager_gather_answers_in_order_whether_or_not_a_coroutine_waits() -> None:
    lock = asyncio.Lock()
    seen: list[str] = []

    async def step(name: str, wait: float) -> str:
        async with lock:  # first come, first served, as an episode's steps are
            seen.append(f"start {name}")
            if wait:
                await asyncio.sleep(wait)
            seen.append(f"end {name}")
        return name.upper()

    assert await eager_gather([step("a", 0), step("b", 0.01), step("c", 0), step("d", 0)]) == ["A", "B", "C", "D"]
    assert seen == ["start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d"]
    assert await eager_gather([]) == []


async def test_eager_gather_raises_the_first_error_and_can_be_cancelled() -> None:
    ran: list[int] = []

    async def fine(i: int) -> int:
        ran.append(i)
        return i

    async def broken() -> int:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await eager_gather([fine(0), broken(), fine(2)])
    assert ran == [0, 2]  # every coroutine started, as under gather

    async def slow() -> int:
        await asyncio.sleep(10)
        return 1

    task = asyncio.ensure_future(eager_gather([slow(), slow()]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
