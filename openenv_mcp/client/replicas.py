"""The book of replicas of an :class:`~openenv_mcp.client.pool.EnvPool`: where each replica is, which episodes it
holds, whether it answers, and which one takes the next episode (fewest open episodes, then fewest placed so far).
Both pool twins share it; every method holds its lock briefly, never across I/O.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import urlsplit

import httpx

from openenv_mcp.client.env_client import AsyncEnvClient, EnvClient
from openenv_mcp.errors import BackendUnavailable, ConfigError, EpisodeNotFound, OpenEnvError

__all__ = [
    "ClientT",
    "ReplicaStats",
    "ReplicaTimeout",
    "ReplicaUnavailable",
    "Resolver",
    "is_down",
    "on_replica",
    "resolve_addresses",
    "targets",
]

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
class Replica(Generic[ClientT]):
    url: str
    client: ClientT
    open: int = 0
    placed: int = 0
    down_until: float = 0.0
    error: str | None = None
    episodes: set[str] = field(default_factory=set)

    def up(self, now: float) -> bool:
        return self.error is None or now >= self.down_until


def targets(specs: Sequence[str], port: int, resolve: Resolver) -> list[str]:
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


class Book(Generic[ClientT]):
    """Placement and stickiness, shared by both twins; every method holds the lock briefly, never across I/O."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        self.replicas: dict[str, Replica[ClientT]] = {}
        self.where: dict[str, Replica[ClientT]] = {}
        self.lost: dict[str, str] = {}
        self.names: dict[str, str] = {}  # how messages name a replica, by URL (default: the URL)
        self.lock = threading.Lock()

    def name(self, replica: Replica[ClientT]) -> str:
        return self.names.get(replica.url, replica.url)

    def add(self, urls: Sequence[str], make: Callable[[str], ClientT]) -> list[ClientT]:
        """Add new replicas, forget vanished ones that hold no episode; the clients to close."""
        stale: list[ClientT] = []
        with self.lock:
            for url in urls:
                if url not in self.replicas:
                    self.replicas[url] = Replica(url=url, client=make(url))
            for url, replica in list(self.replicas.items()):
                if url not in urls and not replica.episodes:
                    stale.append(self.replicas.pop(url).client)
        return stale

    def choose(self, tried: set[str]) -> Replica[ClientT]:
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

    def placed(self, replica: Replica[ClientT], episode_id: str) -> None:
        with self.lock:
            replica.placed += 1
            replica.error = None
            replica.episodes.add(episode_id)
            self.where[episode_id] = replica
            self.lost.pop(episode_id, None)

    def revived(self, replica: Replica[ClientT]) -> None:
        """``replica`` answers again: it takes episodes from now on."""
        with self.lock:
            replica.error = None
            replica.down_until = 0.0

    def release(self, replica: Replica[ClientT]) -> None:
        with self.lock:
            replica.open -= 1

    def replica_of(self, episode_id: str) -> Replica[ClientT]:
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

    def down(self, replica: Replica[ClientT], exc: Exception) -> str:
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


def is_down(exc: httpx.HTTPError) -> bool:
    """A transport failure other than a slow answer: the replica is gone (refused, reset, unreachable)."""
    return isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout)


def on_replica(name: str, exc: OpenEnvError) -> OpenEnvError:
    if isinstance(exc, EpisodeNotFound):
        return EpisodeNotFound(f"{exc.message} (on replica {name}; did it restart?)")
    return exc
