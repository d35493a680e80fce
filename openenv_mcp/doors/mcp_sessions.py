"""MCP sessions that are episodes: the episode each stateful MCP session acts on, and when it closes.

The rule (sim mode; the MCP door applies it to every ``tools/call``, first match wins):

1. An explicit episode id: the ``X-Episode-Id`` header, else ``_meta["openenv-mcp/episode_id"]`` in the request.
   ``default`` names the server's shared default episode.
2. The session's own episode: a stateful session (a 2025-era HTTP session, by ``Mcp-Session-Id``; a 2025-era
   in-process or stdio connection; or the one client of a stdio server, whatever its protocol era) acts on the
   episode its ``prompts/get`` opened, else on one its first call opens (the default split, a drawn seed; the
   curriculum's draw when it is on). A later ``prompts/get`` moves the session to a new episode and closes the one
   before. The session's episodes close when it ends: a DELETE, its idle timeout, the client going away, stdio
   closing.
3. Otherwise (a sessionless 2026-07-28 request without an id): the shared default episode, so any client still
   works with no set-up; such a client gets an episode of its own by sending a handle (rule 1), which
   ``prompts/get`` (its result's ``_meta``) or ``POST /reset`` mints: SEP-2567's explicit state handle, carried by
   the client in ``_meta`` or a header rather than by the model as a tool argument, so the tools' schemas stay the
   same in sim and prod.

:class:`SessionEpisodes` is the table behind rule 2, and knows nothing of tasks: it is given how to open and close
what a session acts on, so a prod environment that needs one instance per session (a world) can reuse it with an
opener of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["SessionEpisodes"]


class SessionEpisodes:
    """Session key -> the episode it acts on; opened on first use, closed with the session.

    Args:
        open_episode: Opens an episode for a session and returns its id.
        close_episode: Closes an episode (one already closed or reaped is not an error).
    """

    def __init__(
        self, *, open_episode: Callable[[], Awaitable[str]], close_episode: Callable[[str], Awaitable[None]]
    ) -> None:
        self._open, self._close = open_episode, close_episode
        self._episodes: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def __len__(self) -> int:
        return len(self._episodes)

    def __contains__(self, key: object) -> bool:
        return key in self._episodes

    async def episode(self, key: str) -> str:
        """The episode of session ``key``, opened now if it has none (once, however many calls come at once)."""
        if (found := self._episodes.get(key)) is not None:
            return found
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if (found := self._episodes.get(key)) is None:
                found = self._episodes[key] = await self._open()
            return found

    async def bind(self, key: str, episode_id: str) -> None:
        """Move session ``key`` to ``episode_id`` (a ``prompts/get`` opened it), closing the one it had."""
        before = self._episodes.get(key)
        self._episodes[key] = episode_id
        if before is not None and before != episode_id:
            await self._close(before)

    async def end(self, key: str) -> None:
        """Session ``key`` ended: close its episode."""
        self._locks.pop(key, None)
        episode_id = self._episodes.pop(key, None)
        if episode_id is not None:
            await self._close(episode_id)

    async def end_all(self) -> None:
        """Close every session's episode (the server is stopping)."""
        for key in list(self._episodes):
            await self.end(key)
