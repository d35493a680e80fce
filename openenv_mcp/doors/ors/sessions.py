"""ORS sessions: a session id bound to one of our episodes, forgotten when that episode closes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openenv_mcp.errors import EpisodeNotFound

__all__ = ["Session", "Sessions"]


@dataclass(frozen=True, slots=True)
class Session:
    """One ORS session: its id (``X-Session-ID``), its episode, task and prompt blocks."""

    id: str
    episode_id: str
    task_id: str
    prompt: list[dict[str, Any]]


class Sessions:
    """The live ORS sessions of one server, one per open episode at most.

    Nothing is kept for a session before ``/create`` binds it to an episode, and the entry goes
    when the episode closes (``/delete``, idle reaping, shutdown), so the table cannot leak.
    """

    def __init__(self, *, idle_timeout: float) -> None:
        self.idle_timeout = idle_timeout
        self._by_id: dict[str, Session] = {}
        self._by_episode: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._by_id

    def add(self, session: Session) -> None:
        self._by_id[session.id] = session
        self._by_episode[session.episode_id] = session.id

    def find(self, session_id: str) -> Session | None:
        return self._by_id.get(session_id)

    def get(self, session_id: str) -> Session:
        session = self._by_id.get(session_id)
        if session is None:
            raise self.gone(session_id)
        return session

    def gone(self, session_id: str) -> EpisodeNotFound:
        """The error for a session that does not exist (any more)."""
        return EpisodeNotFound(
            f"Unknown ORS session {session_id!r}: it was deleted, reaped after {self.idle_timeout:g} s "
            "without a call or ping, or never created; POST /create_session, then POST /create"
        )

    def forget_episode(self, episode_id: str) -> None:
        """Drop the session bound to ``episode_id``, if any (its episode closed)."""
        session_id = self._by_episode.pop(episode_id, None)
        if session_id is not None:
            self._by_id.pop(session_id, None)

    def clear(self) -> None:
        self._by_id.clear()
        self._by_episode.clear()
