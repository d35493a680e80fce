"""EnvPool: episodes spread over many replicas of one server, each episode kept on its replica.

    with EnvPool(["tasks.sql:8000"]) as pool:          # Swarm: one address per task of service sql
        first = pool.reset(seed=3)                       # on the replica with the fewest open episodes
        result = pool.step(first.episode_id, "run_query", {"sql": "SELECT 1"})  # on that same replica
        pool.close_episode(first.episode_id)

Replicas are given as URLs (``http://10.0.0.5:8000``, one replica each) or as ``host[:port]``
names that resolve to one address per replica (Swarm's ``tasks.<service>``, a Kubernetes
headless Service such as ``openenv-sql.training.svc:8000``); :meth:`EnvPool.refresh` resolves
them again after a scale-up. An episode lives in one server process, so the pool places it
(fewest open episodes, then fewest placed so far) and sends every later call for it to the same
replica. When a replica stops answering, the calls of its episodes raise
:class:`ReplicaUnavailable` naming the replica (those episodes are lost: reset to start
others), new episodes go elsewhere, and the other replicas' episodes go on untouched; the
replica is tried again for new episodes after ``retry_after`` seconds.
:class:`AsyncEnvPool` is the async twin.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Self, TypeVar
from urllib.parse import urlsplit

import anyio.to_thread
import httpx

from openenv_mcp.client import AsyncEnvClient, EnvClient
from openenv_mcp.errors import BackendUnavailable, CapacityExceeded, ConfigError, EpisodeNotFound, OpenEnvError
from openenv_mcp.models import EpisodeState, StepResult

__all__ = ["AsyncEnvPool", "EnvPool", "ReplicaStats", "ReplicaTimeout", "ReplicaUnavailable", "resolve_addresses"]

Resolver = Callable[[str, int], list[str]]
ClientT = TypeVar("ClientT", EnvClient, AsyncEnvClient)


class ReplicaUnavailable(BackendUnavailable):
    """A replica did not answer; the episodes placed on it are lost (it names the replica)."""

    code = "replica_unavailable"
    status = 503


class ReplicaTimeout(ReplicaUnavailable):
    """A replica was reached but did not answer in time (it names the replica): the server was slow, not gone."""

    code = "replica_timeout"
    status = 504


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6, each once, sorted)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


@dataclass(frozen=True, slots=True)
class ReplicaStats:
    """One replica as the pool sees it."""

    url: str
    open: int
    placed: int
    up: bool
    error: str | None


@dataclass(eq=False)
class _Replica(Generic[ClientT]):
    url: str
    client: ClientT
    open: int = 0
    placed: int = 0
    down_until: float = 0.0
    error: str | None = None
    episodes: set[str] = field(default_factory=set)

    def up(self, now: float) -> bool:
        return self.error is None or now >= self.down_until


def _targets(specs: Sequence[str], port: int, resolve: Resolver) -> list[str]:
    """The replica URLs behind ``specs`` (URLs as they are; names resolved to one URL per address)."""
    urls: list[str] = []
    for spec in specs:
        if "://" in spec:
            urls.append(spec.rstrip("/"))
            continue
        parts = urlsplit(f"//{spec}")
        host, spec_port = parts.hostname, parts.port or port
        if not host:
            raise ConfigError(f"Replica {spec!r} is neither a URL nor host[:port]")
        try:
            addresses = resolve(host, spec_port)
        except OSError as exc:
            raise ConfigError(
                f"Cannot resolve {host!r} ({exc}): names such as tasks.<service> (Swarm) or a headless Service "
                "(Kubernetes) resolve only inside that cluster's network; from elsewhere pass the replicas' URLs"
            ) from None
        if not addresses:
            raise ConfigError(f"{host!r} resolves to no address: is the service scaled to zero?")
        urls.extend(f"http://[{a}]:{spec_port}" if ":" in a else f"http://{a}:{spec_port}" for a in addresses)
    return list(dict.fromkeys(urls))


class _Book(Generic[ClientT]):
    """Placement and stickiness, shared by both twins; every method holds the lock briefly, never across I/O."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        self.replicas: dict[str, _Replica[ClientT]] = {}
        self.where: dict[str, _Replica[ClientT]] = {}
        self.lost: dict[str, str] = {}
        self.names: dict[str, str] = {}  # how messages name a replica, by URL (default: the URL)
        self.lock = threading.Lock()

    def name(self, replica: _Replica[ClientT]) -> str:
        return self.names.get(replica.url, replica.url)

    def add(self, urls: Sequence[str], make: Callable[[str], ClientT]) -> list[ClientT]:
        """Add new replicas, forget vanished ones that hold no episode; the clients to close."""
        stale: list[ClientT] = []
        with self.lock:
            for url in urls:
                if url not in self.replicas:
                    self.replicas[url] = _Replica(url=url, client=make(url))
            for url, replica in list(self.replicas.items()):
                if url not in urls and not replica.episodes:
                    stale.append(self.replicas.pop(url).client)
        return stale

    def choose(self, tried: set[str]) -> _Replica[ClientT]:
        now = time.monotonic()
        with self.lock:
            ready = [r for r in self.replicas.values() if r.up(now) and r.url not in tried]
            if not ready:
                states = "; ".join(f"{self.name(r)}: {r.error or 'at capacity'}" for r in self.replicas.values())
                raise ReplicaUnavailable(
                    f"No replica can take an episode ({states or 'no replicas'}); "
                    "check the servers (their /readyz), or refresh() after scaling"
                )
            order = list(self.replicas.values())
            chosen = min(ready, key=lambda r: (r.open, r.placed, order.index(r)))
            chosen.open += 1  # reserved now, so concurrent resets spread out
            return chosen

    def placed(self, replica: _Replica[ClientT], episode_id: str) -> None:
        with self.lock:
            replica.placed += 1
            replica.error = None
            replica.episodes.add(episode_id)
            self.where[episode_id] = replica

    def release(self, replica: _Replica[ClientT]) -> None:
        with self.lock:
            replica.open -= 1

    def replica_of(self, episode_id: str) -> _Replica[ClientT]:
        with self.lock:
            replica = self.where.get(episode_id)
            if replica is not None:
                return replica
            if episode_id in self.lost:
                raise ReplicaUnavailable(self.lost[episode_id])
        raise EpisodeNotFound(f"Episode {episode_id!r} was not opened through this pool (or is closed): reset first")

    def closed(self, episode_id: str) -> None:
        with self.lock:
            replica = self.where.pop(episode_id, None)
            if replica is not None and episode_id in replica.episodes:
                replica.episodes.discard(episode_id)
                replica.open -= 1
            self.lost.pop(episode_id, None)

    def down(self, replica: _Replica[ClientT], exc: Exception) -> str:
        """Mark ``replica`` down; its episodes are lost. The message for them."""
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        with self.lock:
            replica.error = reason
            replica.down_until = time.monotonic() + self.retry_after
            for episode_id in replica.episodes:
                self.lost[episode_id] = (
                    f"Replica {self.name(replica)} stopped answering ({reason}); episode {episode_id} was on it and is "
                    "lost: reset() starts a new episode on another replica"
                )
                self.where.pop(episode_id, None)
            replica.open -= len(replica.episodes)
            replica.episodes.clear()
        return reason

    def stats(self) -> list[ReplicaStats]:
        with self.lock:
            return [
                ReplicaStats(url=r.url, open=r.open, placed=r.placed, up=r.error is None, error=r.error)
                for r in self.replicas.values()
            ]


def _is_down(exc: httpx.HTTPError) -> bool:
    """A transport failure other than a slow answer: the replica is gone (refused, reset, unreachable)."""
    return isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout)


def _on_replica(name: str, exc: OpenEnvError) -> OpenEnvError:
    if isinstance(exc, EpisodeNotFound):
        return EpisodeNotFound(f"{exc.message} (on replica {name}; did it restart?)")
    return exc


class _PoolBase(Generic[ClientT]):
    def __init__(
        self,
        replicas: str | Sequence[str],
        *,
        port: int = 8000,
        timeout: float = 30.0,
        retry_after: float = 30.0,
        resolve: Resolver = resolve_addresses,
        token: str | None = None,
    ) -> None:
        self.specs = [replicas] if isinstance(replicas, str) else list(replicas)
        if not self.specs:
            raise ConfigError("EnvPool needs at least one replica URL or host name")
        self.port = port
        self._resolve = resolve
        self._setup(timeout=timeout, retry_after=retry_after, token=token)

    def _setup(self, *, timeout: float, retry_after: float, token: str | None) -> None:
        """The state every pool has, whatever gives it its replicas."""
        self.token = token
        self.timeout = timeout
        self._book: _Book[ClientT] = _Book(retry_after)
        self._resolved = False

    def _urls(self) -> list[str]:
        """The replicas' URLs now (blocking: the async twin calls it on a worker thread)."""
        return _targets(self.specs, self.port, self._resolve)

    def _lost(self, url: str) -> None:
        """The replica at ``url`` stopped answering (its episodes are lost): pools that replace replicas act here."""

    @property
    def replicas(self) -> list[str]:
        """The replicas' URLs, in the order they were found."""
        return list(self._book.replicas)

    def stats(self) -> list[ReplicaStats]:
        """Each replica: open episodes, episodes placed so far, whether it is up, its last error."""
        return self._book.stats()

    def load(self) -> dict[str, int]:
        """Open episodes by replica URL."""
        return {s.url: s.open for s in self.stats()}

    def replica_of(self, episode_id: str) -> str:
        """The URL of the replica ``episode_id`` lives on."""
        return self._book.replica_of(episode_id).url


class EnvPool(_PoolBase[EnvClient]):
    """Many replicas of one server behind one client: sticky episodes, balanced by open episodes.

    Args:
        replicas: URLs and/or ``host[:port]`` names resolving to one address per replica.
        port: The port for names given without one.
        timeout: Seconds per request.
        retry_after: Seconds before a replica that stopped answering gets new episodes again.
        resolve: ``(host, port) -> addresses`` (default: the system resolver).
        token: The servers' bearer token (``OPENENV_AUTH_TOKEN``), sent with every request.
    """

    def refresh(self) -> list[str]:
        """Resolve the names again: new replicas join, vanished idle ones leave. The replicas' URLs."""
        urls = self._urls()
        for client in self._book.add(urls, lambda url: EnvClient(url, timeout=self.timeout, token=self.token)):
            client.close()
        self._resolved = True
        return self.replicas

    def _ready(self) -> None:
        if not self._resolved:
            self.refresh()

    def reset(self, *, task_id: str | None = None, split: str | None = None, seed: int | None = None) -> StepResult:
        """Open an episode on the least-loaded replica that answers (another if one is down or full)."""
        self._ready()
        tried: set[str] = set()
        while True:
            replica = self._book.choose(tried)
            tried.add(replica.url)
            try:
                result = replica.client.reset(task_id=task_id, split=split, seed=seed)
            except httpx.HTTPError as exc:
                self._book.release(replica)
                if not _is_down(exc):
                    name = self._book.name(replica)
                    raise ReplicaTimeout(f"Replica {name} did not answer reset in time ({exc})") from None
                self._book.down(replica, exc)
                self._lost(replica.url)
                continue
            except CapacityExceeded:
                self._book.release(replica)
                continue
            except BaseException:
                self._book.release(replica)
                raise
            replica.client.episode_id = None  # the pool, not the client, remembers episodes
            self._book.placed(replica, result.episode_id)
            return result

    def _call(self, episode_id: str, call: Callable[[EnvClient], Any]) -> Any:
        replica = self._book.replica_of(episode_id)
        try:
            return call(replica.client)
        except httpx.HTTPError as exc:
            if not _is_down(exc):
                raise ReplicaTimeout(f"Replica {self._book.name(replica)} did not answer in time ({exc})") from None
            self._book.down(replica, exc)
            self._lost(replica.url)
            raise ReplicaUnavailable(self._book.lost[episode_id]) from None
        except OpenEnvError as exc:
            raise _on_replica(self._book.name(replica), exc) from None

    def step(self, episode_id: str, tool: str, arguments: dict[str, Any] | None = None) -> StepResult:
        """Call ``tool`` on ``episode_id``, on the replica it lives on."""
        result: StepResult = self._call(episode_id, lambda c: c.step(tool, arguments, episode_id=episode_id))
        return result

    def state(self, episode_id: str) -> EpisodeState:
        state: EpisodeState = self._call(episode_id, lambda c: c.state(episode_id=episode_id))
        return state

    def close_episode(self, episode_id: str) -> EpisodeState:
        """Close ``episode_id`` on its replica (and forget it, whatever the replica answers)."""
        try:
            state: EpisodeState = self._call(episode_id, lambda c: c.close_episode(episode_id=episode_id))
            return state
        finally:
            self._book.closed(episode_id)

    def close(self) -> None:
        """Close every open episode (best effort) and every connection."""
        for episode_id in list(self._book.where):
            with contextlib.suppress(OpenEnvError):  # its replica is gone or reaped it: nothing left to free
                self.close_episode(episode_id)
        for replica in list(self._book.replicas.values()):
            replica.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class AsyncEnvPool(_PoolBase[AsyncEnvClient]):
    """The async twin of :class:`EnvPool` (same arguments; ``await`` every call, ``aclose()``)."""

    async def refresh(self) -> list[str]:
        urls = await anyio.to_thread.run_sync(self._urls)
        for client in self._book.add(urls, lambda url: AsyncEnvClient(url, timeout=self.timeout, token=self.token)):
            await client.aclose()
        self._resolved = True
        return self.replicas

    async def reset(
        self, *, task_id: str | None = None, split: str | None = None, seed: int | None = None
    ) -> StepResult:
        await self._ready()
        tried: set[str] = set()
        while True:
            replica = self._book.choose(tried)
            tried.add(replica.url)
            try:
                result = await replica.client.reset(task_id=task_id, split=split, seed=seed)
            except httpx.HTTPError as exc:
                self._book.release(replica)
                if not _is_down(exc):
                    name = self._book.name(replica)
                    raise ReplicaTimeout(f"Replica {name} did not answer reset in time ({exc})") from None
                self._book.down(replica, exc)
                self._lost(replica.url)
                continue
            except CapacityExceeded:
                self._book.release(replica)
                continue
            except BaseException:
                self._book.release(replica)
                raise
            replica.client.episode_id = None
            self._book.placed(replica, result.episode_id)
            return result

    async def _ready(self) -> None:
        if not self._resolved:
            await self.refresh()

    async def _call(self, episode_id: str, call: Callable[[AsyncEnvClient], Any]) -> Any:
        replica = self._book.replica_of(episode_id)
        try:
            return await call(replica.client)
        except httpx.HTTPError as exc:
            if not _is_down(exc):
                raise ReplicaTimeout(f"Replica {self._book.name(replica)} did not answer in time ({exc})") from None
            self._book.down(replica, exc)
            self._lost(replica.url)
            raise ReplicaUnavailable(self._book.lost[episode_id]) from None
        except OpenEnvError as exc:
            raise _on_replica(self._book.name(replica), exc) from None

    async def step(self, episode_id: str, tool: str, arguments: dict[str, Any] | None = None) -> StepResult:
        result: StepResult = await self._call(episode_id, lambda c: c.step(tool, arguments, episode_id=episode_id))
        return result

    async def state(self, episode_id: str) -> EpisodeState:
        state: EpisodeState = await self._call(episode_id, lambda c: c.state(episode_id=episode_id))
        return state

    async def close_episode(self, episode_id: str) -> EpisodeState:
        try:
            state: EpisodeState = await self._call(episode_id, lambda c: c.close_episode(episode_id=episode_id))
            return state
        finally:
            self._book.closed(episode_id)

    async def aclose(self) -> None:
        for episode_id in list(self._book.where):
            with contextlib.suppress(OpenEnvError):  # its replica is gone or reaped it: nothing left to free
                await self.close_episode(episode_id)
        for replica in list(self._book.replicas.values()):
            await replica.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()
