"""Opening and closing episodes from async workers (the rollout runner's, trainers'), safe against being
cancelled, once or again.

A trainer that stops cancels its workers, and ``asyncio.run`` then cancels again whatever is still running
(Atropos does both; a Ctrl-C under ``openenv-mcp rollout`` or ``eval`` cancels the runner's tasks). A worker
cancelled while the server opens an episode would never learn its id; one cancelled a second time while it
closes an episode in a ``finally`` would leave it open. Here the request always runs to its end (the worker
waits for it, however often it is cancelled meanwhile), what was opened is closed, and the cancellation is
raised afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

import httpx

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import EpisodeState, StepResult

__all__ = ["Episodes", "close_all", "close_surely", "finished", "opened_reset", "settle"]

T = TypeVar("T")


class Episodes(Protocol):
    """What opens and closes episodes: an :class:`~openenv_mcp.client.AsyncEnvClient` or an
    :class:`~openenv_mcp.client.pool.AsyncEnvPool`."""

    async def reset(
        self, *, task_id: str | None = None, split: str | None = None, seed: int | None = None
    ) -> StepResult: ...

    async def close_episode(self, *, episode_id: str) -> EpisodeState: ...


async def settle(future: asyncio.Future[Any]) -> bool:
    """Wait until ``future`` has ended, even if cancelled meanwhile (it is not cancelled with the waiter);
    whether a cancellation came."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait([future])
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


def finished(future: asyncio.Future[T]) -> T | None:
    """The result of a ``future`` that has ended; ``None`` if it failed or was cancelled (its error retrieved)."""
    if future.cancelled() or future.exception() is not None:
        return None
    return future.result()


async def close_surely(client: Episodes, episode_id: str) -> bool:
    """Close ``episode_id`` to the end (already closed or reaped, or the server gone: nothing to do); whether
    the caller was cancelled meanwhile (raise ``asyncio.CancelledError`` once the rest is closed too)."""
    close = asyncio.ensure_future(client.close_episode(episode_id=episode_id))
    cancelled = await settle(close)
    error = None if close.cancelled() else close.exception()
    if error is not None and not isinstance(error, OpenEnvError | httpx.HTTPError):
        raise error
    return cancelled or close.cancelled()


async def close_all(client: Episodes, episode_ids: Iterable[str]) -> bool:
    """:func:`close_surely` each of ``episode_ids``, every one to the end; whether a cancellation came."""
    cancelled = False
    for episode_id in episode_ids:
        cancelled = await close_surely(client, episode_id) or cancelled
    return cancelled


async def opened_reset(
    client: Episodes, *, task_id: str | None, seed: int | None, split: str | None = None
) -> StepResult:
    """``client.reset``; cancelled while the server opens the episode, the episode is closed, then the
    cancellation raised (the episode does not stay open on the server)."""
    request = asyncio.ensure_future(client.reset(task_id=task_id, split=split, seed=seed))
    if await settle(request):
        if (first := finished(request)) is not None:
            await close_surely(client, first.episode_id)
        raise asyncio.CancelledError
    return request.result()
