"""One episode's world: a worker leased from the pool and sent ``init`` with the episode's task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from openenv_mcp.errors import BackendUnavailable, ToolFailed
from openenv_mcp.worlds.config import WorkerConfig
from openenv_mcp.worlds.pool import WorkerPool
from openenv_mcp.worlds.process import Worker
from openenv_mcp.worlds.protocol import VALID_ACTION_KEYS, Refused, Reply, init_message, step_message

__all__ = ["WorldBackend", "WorldView"]


class WorldView(BaseModel):
    """What the world shows after an action (or at the start of an episode)."""

    observation: str = Field(description="The world's text")
    valid_actions: list[str] | None = Field(
        default=None, description="The actions the world accepts now, when it lists them"
    )
    info: dict[str, JsonValue] = Field(default_factory=dict, description="The world's other details (score, moves...)")


class WorldBackend:
    """The sim backend of a world: one worker for one episode, returned to the pool when the episode closes."""

    def __init__(self, pool: WorkerPool, worker: Worker, opening: Reply, *, show_valid_actions: bool) -> None:
        self.pool = pool
        self.worker = worker
        self.opening = opening
        self.last: Reply | None = opening  # the last answer (None after a refused step)
        self.show_valid_actions = show_valid_actions
        self._closed = False

    @classmethod
    async def open(
        cls,
        config: WorkerConfig,
        env_id: str,
        params: Mapping[str, Any],
        *,
        show_valid_actions: bool = True,
    ) -> WorldBackend:
        """Lease a worker and start the episode's world on it (``init``)."""
        pool = WorkerPool.joined(config, (env_id, dict(params)))
        try:
            worker = await pool.lease()
        except BaseException:
            await pool.leave()
            raise
        try:
            opening = await worker.request(init_message(env_id, params), timeout=config.init_timeout, what="init")
        except Refused as exc:
            await pool.give_back(worker)
            await pool.leave()
            raise BackendUnavailable(f"The {worker.name} refused to start {env_id!r}: {exc}") from None
        except BaseException:
            await worker.kill("its init failed")
            await pool.leave()
            raise
        worker.episodes += 1
        return cls(pool, worker, opening, show_valid_actions=show_valid_actions)

    async def act(self, action: str) -> Reply:
        """One step; the world's refusal is the tool's error (the episode goes on), a failing worker a 503."""
        try:
            reply = await self.worker.request(
                step_message(action), timeout=self.worker.config.step_timeout, what="a step"
            )
        except Refused as exc:
            self.last = None
            raise ToolFailed(f"The world refused {action!r}: {exc}") from None
        self.last = reply
        return reply

    def view(self, reply: Reply) -> WorldView:
        """What an agent sees of an answer: the text, the valid actions (when shown), the other extras."""
        info: dict[str, Any] = {key: value for key, value in reply.extras.items() if key not in VALID_ACTION_KEYS}
        valid = reply.valid_actions if self.show_valid_actions else None
        return WorldView.model_construct(observation=reply.observation, valid_actions=valid, info=info)

    async def ping(self) -> None:
        if not self.worker.alive:
            raise BackendUnavailable(f"The {self.worker.name} is gone ({self.worker.failed or 'it exited'})")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.pool.give_back(self.worker)
        finally:
            await self.pool.leave()
