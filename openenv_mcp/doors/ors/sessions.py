"""ORS sessions: a session id bound to one of our episodes, in the runtime's binding of sessions to episodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openenv_mcp.environment.tasks import Task
from openenv_mcp.errors import EpisodeNotFound
from openenv_mcp.runtime import SessionKey
from openenv_mcp.runtime import Sessions as Binding

__all__ = ["Session", "Sessions"]

_DOOR = "ors"  # ORS sessions in the runtime's binding: ("ors", sid)


@dataclass(frozen=True, slots=True)
class Session:
    """One ORS session: its id (``X-Session-ID``), its episode, task and prompt blocks."""

    id: str
    episode_id: str
    task_id: str
    prompt: list[dict[str, Any]]


class Sessions:
    """The live ORS sessions of one server, one per open episode, kept in the runtime's binding as ``("ors", sid)``.

    Nothing is kept for a session before ``/create`` binds it to an episode, and it ends when the episode closes
    (``/delete``, idle reaping, shutdown), so the table cannot leak.
    """

    def __init__(self, binding: Binding, *, idle_timeout: float) -> None:
        self.binding = binding
        self.idle_timeout = idle_timeout

    def find(self, session_id: str) -> Session | None:
        bound = self.binding.find(_key(session_id))
        if bound is None or bound.current is None or bound.data is None:
            return None
        task_id, prompt = bound.data
        return Session(session_id, bound.current, task_id, prompt)

    def get(self, session_id: str) -> Session:
        session = self.find(session_id)
        if session is None:
            raise self.gone(session_id)
        return session

    def gone(self, session_id: str) -> EpisodeNotFound:
        """The error for a session that does not exist (any more)."""
        return EpisodeNotFound(
            f"Unknown ORS session {session_id!r}: it was deleted, reaped after {self.idle_timeout:g} s "
            "without a call or ping, or never created; POST /create_session, then POST /create"
        )

    async def create(
        self, session_id: str, task: Task, seed: int | None, prompt: Callable[[list[Any]], list[dict[str, Any]]]
    ) -> Session | None:
        """Bind ``session_id`` to a new episode of ``task``; ``None`` when a concurrent ``/create`` bound it first
        (that one stands). ``prompt`` makes the prompt blocks of the episode's first observation."""
        started = await self.binding.open_first(_key(session_id), task_id=task.id, seed=seed, lasting=False)
        if started is None:
            return None
        bound = self.binding.find(_key(session_id))
        assert bound is not None  # bound by open_first, and nothing awaited since
        bound.data = (task.id, prompt(started.observation.content))
        return self.find(session_id)

    async def delete(self, session_id: str) -> None:
        """End the session: close its episode (after a call in flight). Idempotent."""
        await self.binding.end(_key(session_id))


def _key(session_id: str) -> SessionKey:
    return (_DOOR, session_id)
