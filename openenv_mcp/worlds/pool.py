"""The warm pool: workers started ahead of resets and, between episodes, kept for the next one.

A reset takes an idle worker (or starts one when none is idle); the pool starts replacements in the background
(for each lease without reuse; once it has run dry with reuse), so the next reset does not wait for a process
start (or a JVM's). A worker whose episode ended goes
back to the pool when it is healthy, the world allows reuse and the pool has room; otherwise it is stopped.
Pools are shared by every backend made from the same configuration in one event loop, and stop (their idle
workers with them) when the last such backend closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, ClassVar

from openenv_mcp.errors import BackendUnavailable
from openenv_mcp.worlds.config import WorkerConfig
from openenv_mcp.worlds.process import Worker
from openenv_mcp.worlds.protocol import Refused, init_message

__all__ = ["WorkerPool"]

log = logging.getLogger(__name__)


class WorkerPool:
    """Idle, started workers of one configuration, and the ones being started to join them."""

    _pools: ClassVar[dict[tuple[WorkerConfig, asyncio.AbstractEventLoop], WorkerPool]] = {}

    def __init__(self, config: WorkerConfig, warm_up: tuple[str, dict[str, Any]] | None) -> None:
        self.config = config
        self.warm_up = warm_up if config.warm else None
        self.users = 0
        self.idle: list[Worker] = []
        self.started = 0  # workers started over the pool's life
        self.last_failure: str | None = None  # why the last background start failed
        self._starting: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    def joined(cls, config: WorkerConfig, warm_up: tuple[str, dict[str, Any]] | None) -> WorkerPool:
        """The pool of ``config`` in this event loop (made on first use); the caller counts as one of its users
        until it calls :meth:`leave`."""
        key = (config, asyncio.get_running_loop())
        pool = cls._pools.get(key)
        if pool is None:
            pool = cls._pools[key] = cls(config, warm_up)
        pool.users += 1
        return pool

    async def leave(self) -> None:
        """One user fewer; the last one stops the pool and its idle workers."""
        self.users -= 1
        if self.users <= 0:
            key = (self.config, asyncio.get_running_loop())
            if self._pools.get(key) is self:
                del self._pools[key]
            await self.aclose()

    @property
    def settled(self) -> bool:
        """Whether the pool is full of idle workers and starts none: the next lease takes one it has."""
        return not self._starting and len(self.idle) >= self.config.pool_size

    async def lease(self) -> Worker:
        """A started worker for one episode: an idle one if any, else a new one; then the pool tops up."""
        worker = None
        while self.idle:
            candidate = self.idle.pop()
            if candidate.alive:
                worker = candidate
                break
            await candidate.kill("found dead in the pool")
        if worker is None:
            worker = await Worker.start(self.config)
            self.started += 1
        if not self.config.reuse or not self.idle:
            # Without reuse every lease uses a worker up: replace it now. With reuse, leased workers come back when
            # their episodes end, so the pool refills only once it has run dry (replacing each lease would start a
            # process per reset, to be stopped when the leased one returns: a core's worth of waste under a trainer).
            self._top_up()
        return worker

    async def give_back(self, worker: Worker) -> None:
        """Return a worker whose episode ended: kept for another episode when it can be, else stopped."""
        # a warm worker is worth more than one still starting: it takes the place (that one is stopped on arrival)
        room = len(self.idle) < self.config.pool_size
        if self.config.reuse and worker.alive and room and not self._closed:
            self.idle.append(worker)
        else:
            await worker.close()

    def _top_up(self) -> None:
        if self._closed:
            return
        for _ in range(self.config.pool_size - len(self.idle) - len(self._starting)):
            task = asyncio.get_running_loop().create_task(self._start_idle())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_idle(self) -> None:
        worker: Worker | None = None
        try:
            worker = await Worker.start(self.config)
            self.started += 1
            if self.warm_up is not None:
                env_id, params = self.warm_up
                await worker.request(init_message(env_id, params), timeout=self.config.init_timeout, what="init")
        except (BackendUnavailable, Refused) as exc:
            self.last_failure = f"{worker.name if worker else 'A worker'} failed to start or warm up: {exc}"
            log.warning("%s", self.last_failure)
            if worker is not None:
                await worker.kill("failed to warm up")
            return
        except asyncio.CancelledError:  # the pool stopped while it started
            if worker is not None:
                await worker.kill("the pool stopped")
            raise
        self.last_failure = None
        if self._closed or len(self.idle) >= self.config.pool_size:  # stopped, or full of returned workers
            await worker.close()
            return
        self.idle.append(worker)

    async def aclose(self) -> None:
        """Stop the pool: workers being started are cancelled, idle ones stopped."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        for task in list(self._starting):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        idle, self.idle = self.idle, []
        await asyncio.gather(*(worker.close() for worker in idle))
