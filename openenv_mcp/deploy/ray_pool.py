"""RayPool: an EnvPool whose replicas are Ray actors, placed over the cluster's nodes by Ray.

    ray.init(address="auto")                            # or let the pool connect (address=...)
    with RayPool("sql", replicas=4) as pool:            # 4 actors, each serving sql on its node
        first = pool.reset(seed=3)                      # on the replica with the fewest open episodes
        pool.step(first.episode_id, "run_query", {"sql": "SELECT 1"})   # on that same replica, over HTTP
        pool.placements()                               # {replica URL: its Ray node, actor and process}

Each replica is a :class:`~openenv_mcp.deploy.ray_replica.ServerReplica` actor: ``openenv-mcp serve NAME``
in the actor's process, both doors (control plane and ``/mcp``) on a port of its node, its URL reported to
the pool. From there the pool *is* :class:`~openenv_mcp.client.pool.EnvPool` over those URLs (placement by
open episodes, sticky episodes, a dead replica's episodes rebuilt on the others, and an episode that cannot be
rebuilt raising :class:`ReplicaUnavailable` naming its replica), plus replacement: when a replica stops
answering, the pool asks its actor where it is now (Ray restarts a crashed actor, ``max_restarts``) or, if the
actor is dead for good, starts a new one; new episodes go to the replacement once it is ready.
:class:`AsyncRayPool` is the async twin. Closing the pool closes its episodes and ends every actor it started
(their servers end with them).

Needs Ray (``pip install 'openenv-mcp[ray]'``); nothing else in the package imports it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError

from openenv_mcp.client import AsyncEnvClient, EnvClient
from openenv_mcp.client.pool import AsyncEnvPool, EnvPool, ReplicaStats, ReplicaUnavailable
from openenv_mcp.deploy.providers.base import STOP_GRACE, ProviderError
from openenv_mcp.deploy.ray_replica import Placement, Replica, ServerReplica
from openenv_mcp.errors import ConfigError
from openenv_mcp.settings import Mode

__all__ = ["DEFAULT_OPTIONS", "AsyncRayPool", "Placement", "RayPool", "ReplicaStats", "ReplicaUnavailable"]

DEFAULT_OPTIONS: Mapping[str, Any] = {
    "num_cpus": 1,  # a replica is a server process: one core when busy
    "scheduling_strategy": "SPREAD",  # over the nodes, not packed onto the first
    "max_restarts": -1,  # Ray restarts a replica whose process died ...
    "max_task_retries": -1,  # ... and asks the restarted one where it serves now
}


@dataclass(eq=False)
class _Slot:
    """One replica: its actor, where it serves (once known), or the question being asked of it."""

    handle: Any
    asked: Any = None  # ObjectRef[Placement] of a pending placement() call
    placement: Placement | None = None
    served: bool = False  # this actor has served once: its death is worth a replacement
    error: str | None = None  # a replacement that never served: left out until refresh()


class _Actors:
    """The replica actors of one pool: started, asked where they serve, replaced, ended. Thread-safe."""

    def __init__(self, replica: Replica, count: int, *, options: Mapping[str, Any]) -> None:
        self.replica = replica
        self.server = replica.server
        self.startup_timeout = replica.startup_timeout
        self._options = {**DEFAULT_OPTIONS, **options}
        self._class = ray.remote(ServerReplica)
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()
        self.slots = [self._start() for _ in range(count)]

    def _start(self) -> _Slot:
        handle: Any = self._class.options(**self._options).remote(self.replica)  # methods: .remote()
        return _Slot(handle, asked=handle.placement.remote())

    def urls(self) -> list[str]:
        with self._lock:
            return [s.placement.url for s in self.slots if s.placement is not None]

    def names(self) -> dict[str, str]:
        """How messages name each replica: its URL, Ray actor and node."""
        with self._lock:
            return {
                p.url: f"{p.url} (Ray actor {p.actor_id[:12]} on node {p.node_id[:12]})"
                for p in (s.placement for s in self.slots)
                if p is not None
            }

    def placements(self) -> dict[str, Placement]:
        with self._lock:
            return {s.placement.url: s.placement for s in self.slots if s.placement is not None}

    def lost(self, url: str) -> None:
        """The replica at ``url`` stopped answering: ask its actor where it serves now (non-blocking)."""
        with self._lock:
            for slot in self.slots:
                if slot.placement is not None and slot.placement.url == url and slot.asked is None:
                    slot.placement = None
                    slot.asked = slot.handle.placement.remote()

    def settle(self, *, timeout: float = 0.0) -> bool:
        """Take the answers that have come (waiting up to ``timeout``); start replacements. True if URLs changed."""
        with self._lock:
            asked = [s.asked for s in self.slots if s.asked is not None]
        if not asked:
            return False
        done, _ = ray.wait(asked, num_returns=len(asked), timeout=timeout)
        if not done:
            return False
        finished = set(done)
        with self._lock:
            for index, slot in enumerate(self.slots):
                if slot.asked is None or slot.asked not in finished:
                    continue
                try:
                    slot.placement = ray.get(slot.asked)
                    slot.served, slot.asked, slot.error = True, None, None
                except ActorUnavailableError:  # restarting (options without task retries): ask again
                    slot.asked = slot.handle.placement.remote()
                except RayActorError as exc:
                    if slot.served:  # it served, then died for good: a new actor takes its place
                        self.slots[index] = self._start()
                    else:
                        slot.asked, slot.error = None, _reason(exc)
        return True

    def refresh(self) -> list[str]:
        """Ask every replica where it serves, replace dead ones, wait until all answer; their URLs.

        Raises:
            ProviderError: a replica did not start (its reason), or none answered in ``startup_timeout``.
        """
        with self._refreshing:
            with self._lock:
                for index, slot in enumerate(self.slots):
                    if slot.error is not None:
                        self.slots[index] = self._start()  # asked for: try a failed replica again
                    elif slot.asked is None:
                        slot.asked = slot.handle.placement.remote()
            deadline = time.monotonic() + self.startup_timeout
            while True:
                self.settle(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
                with self._lock:
                    failed = [s.error for s in self.slots if s.error is not None]
                    waiting = sum(s.asked is not None for s in self.slots)
                if failed:
                    raise ProviderError(f"A Ray replica of {self.server!r} did not start: {failed[0]}")
                if not waiting:
                    return self.urls()
                if time.monotonic() > deadline:
                    raise ProviderError(
                        f"{waiting} Ray replica(s) of {self.server!r} were not ready within "
                        f"{self.startup_timeout:.0f} s: does the cluster have a node with what each asks for "
                        f"({_resources(self._options)})? `ray status` shows the pending demands"
                    )

    def close(self) -> None:
        """End every actor: stop the servers that serve gracefully (bounded), then kill every actor."""
        with self._lock:
            slots, self.slots = self.slots, []
        stopping = [slot.handle.stop.remote() for slot in slots if slot.placement is not None]
        if stopping:
            with contextlib.suppress(GetTimeoutError):
                ray.wait(stopping, num_returns=len(stopping), timeout=STOP_GRACE)
        for slot in slots:
            ray.kill(slot.handle, no_restart=True)  # ends it, whether it stopped, is starting or never got a node


def _reason(exc: RayActorError) -> str:
    text = str(exc).strip()
    cause = getattr(exc, "cause", None)
    return str(cause) if cause is not None else text.splitlines()[-1] if text else type(exc).__name__


def _resources(options: Mapping[str, Any]) -> str:
    wanted = {"CPU": options.get("num_cpus", 1), **(options.get("resources") or {})}
    return ", ".join(f"{name}: {amount}" for name, amount in wanted.items())


class _RayPoolMixin:
    """What both twins add to their EnvPool: actors for replicas, and the Ray connection."""

    _actors: _Actors
    _owns_ray: bool
    _book: Any  # the EnvPool's or AsyncEnvPool's, like _setup: the twins' shared parts come from there
    _setup: Callable[..., None]

    def __init__(
        self,
        server: str,
        *,
        replicas: int = 2,
        mode: Mode = "sim",
        environment: Mapping[str, str] | None = None,
        token: str | None = None,
        options: Mapping[str, Any] | None = None,
        address: str | None = None,
        timeout: float = 30.0,
        retry_after: float = 30.0,
        startup_timeout: float = 120.0,
        log_level: str = "warning",
    ) -> None:
        self._setup(timeout=timeout, retry_after=retry_after, token=token)
        if replicas < 1:
            raise ConfigError(f"RayPool needs at least one replica, not {replicas}")
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address)
        replica = Replica(
            server=server,
            mode=mode,
            environment=dict(environment or {}),
            token=token,
            startup_timeout=startup_timeout,
            log_level=log_level,
        )
        self._actors = _Actors(replica, replicas, options=options or {})

    def _urls(self) -> list[str]:
        urls = self._actors.refresh()
        self._book.names = self._actors.names()
        return urls

    def _lost(self, url: str) -> None:
        self._actors.lost(url)

    def placements(self) -> dict[str, Placement]:
        """Where each replica serves (its Ray node, actor and process), by replica URL."""
        return self._actors.placements()

    def _end_actors(self) -> None:
        self._actors.close()
        if self._owns_ray:
            ray.shutdown()


class RayPool(_RayPoolMixin, EnvPool):
    """Replicas of one server as Ray actors, spread over the cluster; the API of :class:`EnvPool`.

    Args:
        server: The server each replica serves, as ``openenv-mcp list`` shows it.
        replicas: How many replica actors to keep.
        mode: sim (training) or prod.
        environment: Variables for each replica's process (prod URLs, ``OPENENV_*`` settings).
        token: A bearer token each replica requires and the pool sends (``OPENENV_AUTH_TOKEN``).
        options: Ray actor options over :data:`DEFAULT_OPTIONS` (``num_cpus``, ``resources``,
            ``scheduling_strategy``, ``max_restarts``, ...).
        address: The cluster to connect to when Ray is not initialised yet (Ray's default: ``RAY_ADDRESS``,
            else a running local cluster, else a new one); the pool then shuts Ray down when it closes.
        timeout: Seconds per request.
        retry_after: Seconds before a replica that stopped answering, and was not replaced, gets new episodes.
        startup_timeout: Seconds for the replicas to be ready (the first call and :meth:`refresh` wait).
        log_level: The servers' log level (their logs are the actors', in Ray's worker logs).
    """

    def _ready(self) -> None:
        if not self._resolved:
            self.refresh()
        elif self._actors.settle():
            self._adopt()

    def _adopt(self) -> None:
        self._book.names = self._actors.names()
        for client in self._book.add(
            self._actors.urls(), lambda url: EnvClient(url, timeout=self.timeout, token=self.token)
        ):
            client.close()

    def refresh(self) -> list[str]:
        """Ask every replica where it serves, replacing dead ones, and wait until all do. The replicas' URLs."""
        return super().refresh()

    def close(self) -> None:
        """Close every open episode (best effort), every connection, and every replica actor."""
        try:
            super().close()
        finally:
            self._end_actors()


class AsyncRayPool(_RayPoolMixin, AsyncEnvPool):
    """The async twin of :class:`RayPool` (same arguments; ``await`` every call, ``aclose()``)."""

    async def _ready(self) -> None:
        if not self._resolved:
            await self.refresh()
        elif self._actors.settle():
            self._book.names = self._actors.names()
            for client in self._book.add(
                self._actors.urls(), lambda url: AsyncEnvClient(url, timeout=self.timeout, token=self.token)
            ):
                await client.aclose()

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await anyio.to_thread.run_sync(self._end_actors)
