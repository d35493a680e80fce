"""``eager_gather``: ``asyncio.gather`` without a task per coroutine that never waits (a batch's sim steps)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["eager_gather"]

T = TypeVar("T")


async def eager_gather(coroutines: list[Coroutine[Any, Any, T]]) -> list[T]:
    """``asyncio.gather`` whose coroutines start at once, in order, in the caller's task.

    Each runs until it first waits; one that never waits (a sim tool on an in-memory backend) is done then, with
    no task, no scheduling and no loop iteration, which is most of the cost of a batched step. One that waits (on a
    lock held by an earlier step, on I/O) continues as a task, as under ``gather``. Answers come in order; the first
    exception is raised once every coroutine has started (under ``gather`` the others run on as well).
    """
    results: list[Any] = [None] * len(coroutines)
    waiting: list[tuple[int, asyncio.Future[T]]] = []
    error: Exception | None = None
    for index, coroutine in enumerate(coroutines):
        try:
            yielded = coroutine.send(None)
        except StopIteration as finished:
            results[index] = finished.value
            continue
        except Exception as exc:
            error = error or exc
            continue
        except BaseException:
            for rest in coroutines[index + 1 :]:
                rest.close()
            raise
        waiting.append((index, asyncio.ensure_future(_resume(coroutine, yielded))))
    if error is not None:
        raise error
    if waiting:
        for (index, _), value in zip(waiting, await asyncio.gather(*(task for _, task in waiting)), strict=True):
            results[index] = value
    return results


async def _resume(coroutine: Coroutine[Any, Any, T], yielded: Any) -> T:
    result: T = await _Resumed(coroutine, yielded)
    return result


class _Resumed:
    """Awaiting it carries on a coroutine that has already run up to a wait, which ``yielded`` is."""

    __slots__ = ("coroutine", "yielded")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self.coroutine, self.yielded = coroutine, yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, yielded = self.coroutine, self.yielded
        while True:
            try:
                sent = yield yielded  # the task waits on what the coroutine waits on, then wakes it the same way
            except BaseException as exc:  # cancelled, or the awaited future failed: pass it in
                try:
                    yielded = coroutine.throw(exc)
                except StopIteration as finished:
                    return finished.value
            else:
                try:
                    yielded = coroutine.send(sent)
                except StopIteration as finished:
                    return finished.value
