"""Sessions bound to episodes: the one table every door keeps its sessions in (MCP, OpenEnv's wire, ORS, ``/ws``).

A door names a session by a :data:`SessionKey` (the door, and the session's id there: an MCP session, an OpenEnv
session, an ORS sid, a ``/ws`` connection). :class:`Sessions` is the one place that

- opens a session's episodes, with the mode check: episodes exist in sim mode; in prod an environment with
  ``prod_sessions`` (a world) gives each MCP session a world of its own, and any other prod server has none
  (:class:`~openenv_mcp.errors.ModeError`);
- knows which episodes a session owns and which one its calls act on (its *current* episode);
- closes a session's episodes when the session ends (its door says so: a DELETE, a connection closing);
- forgets what idle reaping (or any other close) took: an episode closed under a session leaves it. A session that
  lives as long as its connection (MCP, ``/ws``) keeps pointing at it, so its next call says the episode is gone
  (``episode_not_found``) rather than moving it silently to a new one; a session that is its episode (ORS,
  OpenEnv's) ends with it, so nothing is kept for a client that went away.

Which episode an MCP call acts on (sim mode; first match wins; :meth:`Sessions.episode_of_call`):

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

In prod only rule 2 applies, and only for a world: no id a client sends reaches an episode there.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from openenv_mcp.errors import ModeError

if TYPE_CHECKING:
    from openenv_mcp.environment.spec import Environment
    from openenv_mcp.environment.tasks import Task, TaskSet
    from openenv_mcp.models import StepResult
    from openenv_mcp.runtime.episodes import Episode, EpisodeTable
    from openenv_mcp.settings import Settings

__all__ = ["DEFAULT_EPISODE", "Session", "SessionKey", "Sessions"]

DEFAULT_EPISODE = "default"
"""The episode a sim-mode MCP call without ``X-Episode-Id`` acts on (opened on first use)."""

SessionKey = tuple[str, str]
"""A session as its door names it: ``(door, id)``, e.g. ``("mcp", "3f1c...")``, ``("ors", sid)``."""


@dataclass(slots=True, eq=False)
class Session:
    """One session's episodes. Read it and change it through :class:`Sessions`; ``data`` is the door's own to set."""

    key: SessionKey
    lasting: bool  # lives until its door ends it (a connection); else it ends when its last episode closes
    current: str | None = None  # the episode its calls act on (None: none yet)
    owned: list[str] = field(default_factory=list)  # open episodes that close when the session ends
    data: Any = None  # what the door keeps with the session (ORS: its task and prompt)


class _Runtime(Protocol):
    """What the binding uses of the runtime it serves (:class:`~openenv_mcp.runtime.Runtime` is one)."""

    env: Environment[Any, Any]
    settings: Settings
    tasks: TaskSet
    episodic: bool
    episodes: EpisodeTable

    @property
    def sim(self) -> bool: ...

    async def reset(
        self, *, task_id: str | None = None, split: str | None = None, seed: int | None = None
    ) -> StepResult: ...

    async def open_episode(
        self, task: Task, seed: int, episode_id: str | None = None, *, max_steps: int | None = None
    ) -> Episode: ...


class Sessions:
    """The sessions of one runtime's doors, and the episodes each owns (the runtime makes one: ``runtime.sessions``).

    The runtime tells it of every episode that closes (:meth:`closed`), so reaping and ``DELETE /episodes/{id}``
    reach every door's sessions.
    """

    def __init__(self, runtime: _Runtime) -> None:
        self._runtime = runtime
        self._sessions: dict[SessionKey, Session] = {}
        self._owners: dict[str, SessionKey] = {}  # episode id -> the session that owns it
        self._locks: dict[SessionKey, asyncio.Lock] = {}  # a session's first episode opens once

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, key: object) -> bool:
        return key in self._sessions

    def find(self, key: SessionKey) -> Session | None:
        """The session ``key``, or ``None`` (never begun, ended, or ended with its episode)."""
        return self._sessions.get(key)

    def begin(self, key: SessionKey, *, lasting: bool) -> Session:
        """Session ``key`` from now on, with no episode yet (the same session if it exists)."""
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = Session(key, lasting)
        return session

    # opening -------------------------------------------------------------------------------------

    async def open(
        self,
        key: SessionKey,
        *,
        task_id: str | None = None,
        split: str | None = None,
        seed: int | None = None,
        lasting: bool = True,
        replace: bool = False,
    ) -> StepResult:
        """Open an episode (a reset: sim mode only) for session ``key`` and make it the session's current one.

        ``replace`` closes the episode the session acted on before (a new task for the same session); otherwise
        the session keeps it too, until it ends. ``lasting``: the session lives until its door ends it (else it
        ends when its last episode closes), for a session begun here.
        """
        opened = await self._reset(task_id, split, seed)
        session = self._sessions.get(key)
        before = session.current if session is not None and replace else None
        self.adopt(key, opened.episode_id, lasting=lasting)
        if before is not None:
            await self._close(before)  # already reaped: nothing to close
        return opened

    async def open_first(
        self, key: SessionKey, *, task_id: str | None = None, seed: int | None = None, lasting: bool = False
    ) -> StepResult | None:
        """Open session ``key``'s first episode, as :meth:`open`; ``None`` when the session gained one while this
        one opened (two requests began it at once): that one stands, and the episode opened here is closed again."""
        opened = await self._reset(task_id, None, seed)
        session = self._sessions.get(key)
        if session is not None and session.current is not None:
            await self._close(opened.episode_id)
            return None
        self.adopt(key, opened.episode_id, lasting=lasting)
        return opened

    async def _open_own(self) -> str:
        runtime = self._runtime
        if runtime.sim:
            return (await runtime.reset()).episode_id
        if not runtime.episodic:
            raise ModeError(f"{runtime.env.name} serves one shared backend in prod: its MCP sessions have no episodes")
        seed = secrets.randbelow(2**31)
        task = runtime.tasks.pick(task_id=runtime.settings.prod_task, split=None, seed=seed)
        return (await runtime.open_episode(task, seed)).id

    async def _reset(self, task_id: str | None, split: str | None, seed: int | None) -> StepResult:
        if not self._runtime.sim:  # the mode check: only a world's MCP sessions have episodes in prod (episode())
            raise ModeError("reset exists in sim mode only; this server runs in prod mode (MODE=prod)")
        return await self._runtime.reset(task_id=task_id, split=split, seed=seed)

    def adopt(self, key: SessionKey, episode_id: str, *, lasting: bool = True) -> None:
        """Make ``episode_id`` (opened for the session: a fork, a restore, a reset) session ``key``'s current one,
        closed when the session ends."""
        session = self.begin(key, lasting=lasting)
        session.current = episode_id
        session.owned.append(episode_id)
        self._owners[episode_id] = key

    async def episode(self, key: SessionKey) -> str:
        """Session ``key``'s current episode, opened now if it has none (once, however many calls come at once):
        in sim a reset (the default split, a drawn seed, the curriculum's draw when it is on); in prod, for an
        environment with ``prod_sessions``, a world of its own on the task ``OPENENV_PROD_TASK`` names, else one
        drawn from the default split; any other prod server has no episodes (ModeError)."""
        session = self._sessions.get(key)
        if session is not None and session.current is not None:
            return session.current
        async with self._locks.setdefault(key, asyncio.Lock()):
            session = self._sessions.get(key)
            if session is None or session.current is None:
                episode_id = await self._open_own()
                self.adopt(key, episode_id)
                return episode_id
            return session.current

    async def episode_of_call(self, key: SessionKey | None, explicit: str | None) -> str | None:
        """The episode an MCP call acts on, by the rule in this module's docstring (``None``: in sim the shared
        default episode; in prod, a server without episodes, the shared backend)."""
        runtime = self._runtime
        if not runtime.episodic:
            return None
        if runtime.sim and explicit is not None:
            return None if explicit == DEFAULT_EPISODE else explicit
        return await self.episode(key) if key is not None else None

    # closing -------------------------------------------------------------------------------------

    async def close(self, key: SessionKey, episode_id: str) -> Episode:
        """Close ``episode_id`` for session ``key`` (after the step running on it, if any); the session acts on
        the latest episode it still owns from now on.

        Raises:
            EpisodeNotFound: No such episode is open.
            ModeError: This server runs in prod mode.
        """
        if not self._runtime.sim:  # in prod (a world's sessions) no id a client sends reaches an episode
            raise ModeError("Closing an episode exists in sim mode only; this server runs in prod mode (MODE=prod)")
        episode = await self._runtime.episodes.close(episode_id)  # closed() takes it from its session
        session = self._sessions.get(key)
        if session is not None and session.current == episode_id:
            session.current = session.owned[-1] if session.owned else None
        return episode

    async def end(self, key: SessionKey) -> None:
        """Session ``key`` ended: close the episodes it owns (those still open) and forget it. Idempotent."""
        self._locks.pop(key, None)
        session = self._sessions.pop(key, None)
        if session is None:
            return
        for episode_id in list(session.owned):
            self._owners.pop(episode_id, None)
            await self._close(episode_id)

    def closed(self, episode_id: str) -> None:
        """The runtime closed ``episode_id`` (asked to, reaped as idle, or stopping): it leaves its session, and a
        session that ends with its episode ends."""
        key = self._owners.pop(episode_id, None)
        session = self._sessions.get(key) if key is not None else None
        if session is None:
            return
        session.owned.remove(episode_id)
        if not session.lasting and not session.owned:
            del self._sessions[session.key]
            self._locks.pop(session.key, None)

    def clear(self) -> None:
        """Forget every session (the runtime stopped; its episodes are closed)."""
        self._sessions.clear()
        self._owners.clear()
        self._locks.clear()

    async def _close(self, episode_id: str) -> None:
        if episode_id in self._runtime.episodes:  # already closed or reaped: nothing to do
            await self._runtime.episodes.close(episode_id)
