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
replica. When a replica stops answering, new episodes go elsewhere, the other replicas' episodes go on
untouched, and the replica is tried again for new episodes after ``retry_after`` seconds.

:class:`EnvPool` and :class:`AsyncEnvPool`, its async twin (which ``rollout`` and ``eval`` use), also keep each open
episode's journal (:mod:`openenv_mcp.client.resume`: its task, seed and steps) and give every step an id
(``X-Step-Id``). When an episode's replica stops answering (refused, reset) or no longer knows the episode (it
restarted), the step is sent again with the same id (a live server that ran it answers its recorded result), else
the episode is rebuilt on a replica that answers (another, or the same one once it is back; waiting up to
``resume_within`` seconds) by replaying its journal, and the step goes on there: the caller sees a slower step,
with the episode id it had. An episode that cannot be rebuilt raises :class:`ReplicaUnavailable` naming the
replicas and why. The twins share that logic (a :data:`~openenv_mcp.client.resume.Plan` each carries out with its
own clients).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Generic, Self

import anyio.to_thread
import httpx

from openenv_mcp.client.env_client import AsyncEnvClient, EnvClient
from openenv_mcp.client.replicas import (
    Book,
    ClientT,
    Replica,
    ReplicaStats,
    ReplicaTimeout,
    ReplicaUnavailable,
    Resolver,
    is_down,
    on_replica,
    resolve_addresses,
    targets,
)
from openenv_mcp.client.resume import Ask, Journal, Plan, arun, rebuild, run
from openenv_mcp.errors import CapacityExceeded, ConfigError, EpisodeNotFound, OpenEnvError
from openenv_mcp.models import EpisodeState, StepResult

__all__ = ["AsyncEnvPool", "EnvPool", "ReplicaStats", "ReplicaTimeout", "ReplicaUnavailable", "resolve_addresses"]


class _PoolBase(Generic[ClientT]):
    resume_within: float = 60.0  # seconds to wait for a replica that takes a lost episode back

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
        self._book: Book[ClientT] = Book(retry_after)
        self._resolved = False
        self._journal: dict[str, Journal] = {}  # what rebuilds each open episode
        self.resumes: list[float] = []  # seconds each rebuild took

    def _urls(self) -> list[str]:
        """The replicas' URLs now (blocking: the async twin calls it on a worker thread)."""
        return targets(self.specs, self.port, self._resolve)

    def _reset_failed(self, replica: Replica[ClientT], exc: httpx.HTTPError) -> None:
        """A reset on ``replica`` failed on the wire: a slow replica raises :class:`ReplicaTimeout`; a gone one is
        marked down (the caller tries the next)."""
        self._book.release(replica)
        if not is_down(exc):
            raise ReplicaTimeout(f"Replica {self._book.name(replica)} did not answer reset in time ({exc})") from None
        self._book.down(replica, exc)
        self._lost(replica.url)

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

    def _step_plan(self, episode_id: str, tool: str, arguments: dict[str, Any] | None) -> Plan[StepResult]:
        """A step of an episode this pool opened, resumed wherever it must be (the journal updated)."""
        journal = self._journal[episode_id]
        step_id = uuid.uuid4().hex  # the same on every try of this step: a server that ran it answers its result

        def call(client: ClientT, server_id: str) -> Ask:
            return Ask(client, "step", (tool, arguments), {"episode_id": server_id, "step_id": step_id})

        result = yield from self._resumable(episode_id, journal, call)
        journal.applied(tool, dict(arguments or {}), result)
        return result if result.episode_id == episode_id else result.model_copy(update={"episode_id": episode_id})

    def _resumable(self, episode_id: str, journal: Journal, call: Callable[[ClientT, str], Ask]) -> Plan[StepResult]:
        """``call`` on the episode's replica; sent again there once, then on the episode rebuilt elsewhere."""
        for _ in range(3):
            replica = self._book.replicas.get(journal.url)
            failure: Exception | None = None
            for _again in range(2 if replica is not None else 0):
                assert replica is not None
                try:
                    result: StepResult = yield call(replica.client, journal.server_id)
                    return result
                except httpx.HTTPError as exc:
                    if not is_down(exc):
                        name = self._book.name(replica)
                        raise ReplicaTimeout(f"Replica {name} did not answer in time ({exc})") from None
                    failure = exc
                except EpisodeNotFound as exc:  # it restarted: the episode is gone from it
                    failure = exc
                    break
                except OpenEnvError as exc:
                    raise on_replica(self._book.name(replica), exc) from None
            if replica is not None and isinstance(failure, httpx.HTTPError):
                self._book.down(replica, failure)
                self._lost(replica.url)
            yield from self._rebuild(episode_id, journal, failure)
        raise ReplicaUnavailable(f"Episode {episode_id} was rebuilt three times and its replica went away each time")

    def _rebuild(self, episode_id: str, journal: Journal, failure: Exception | None) -> Plan[None]:
        """Replay ``journal`` on a replica that answers (waiting up to ``resume_within``), and point it there."""
        started = time.monotonic()
        lost = self._book.names.get(journal.url, journal.url)
        why = f"{type(failure).__name__}: {failure}" if failure is not None else "it left the pool"
        self._book.closed(episode_id)
        tried: set[str] = set()
        while True:
            try:
                replica = self._book.choose(tried)
            except ReplicaUnavailable:
                if time.monotonic() - started > self.resume_within:
                    raise ReplicaUnavailable(
                        f"Episode {episode_id} was on replica {lost}, which stopped answering ({why}); no replica "
                        f"took it back within {self.resume_within:g} s: check the servers (their /readyz)"
                    ) from None
                yield Ask(None, args=(0.1,))
                tried.clear()
                yield from self._revive()
                continue
            tried.add(replica.url)
            try:
                server_id = yield from rebuild(journal, replica.client)
            except httpx.HTTPError as exc:
                self._book.release(replica)
                if is_down(exc):
                    self._book.down(replica, exc)
                continue
            except OpenEnvError as exc:
                self._book.release(replica)
                raise ReplicaUnavailable(
                    f"Episode {episode_id} was on replica {lost}, which stopped answering ({why}); it cannot be "
                    f"rebuilt on {self._book.name(replica)}: {exc.message}"
                ) from None
            except BaseException:
                self._book.release(replica)
                raise
            journal.url, journal.server_id = replica.url, server_id
            self._book.placed(replica, episode_id)
            self.resumes.append(time.monotonic() - started)
            return

    def _revive(self) -> Plan[None]:
        """Ask the replicas marked down whether they answer again (a restarted one takes episodes back)."""
        for replica in list(self._book.replicas.values()):
            if replica.error is not None:
                with contextlib.suppress(httpx.HTTPError, OpenEnvError):
                    yield Ask(replica.client, "health")
                    self._book.revived(replica)

    def _where(self, episode_id: str) -> tuple[Replica[ClientT], str]:
        journal = self._journal.get(episode_id)
        if journal is None or journal.url not in self._book.replicas:
            return self._book.replica_of(episode_id), episode_id
        return self._book.replicas[journal.url], journal.server_id

    def address(self, episode_id: str) -> tuple[str, str]:
        """Where ``episode_id`` lives now: its replica's URL and the id that replica knows it by (another than the
        caller's once the episode was rebuilt), for a client that reaches it another way (an agent harness's MCP)."""
        replica, server_id = self._where(episode_id)
        return replica.url, server_id


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
                self._reset_failed(replica, exc)
                continue
            except CapacityExceeded:
                self._book.release(replica)
                continue
            except BaseException:
                self._book.release(replica)
                raise
            replica.client.episode_id = None  # the pool, not the client, remembers episodes
            self._book.placed(replica, result.episode_id)
            self._journal[result.episode_id] = Journal.opened(result, replica.url)
            return result

    def _on(self, replica: Replica[EnvClient], episode_id: str, call: Callable[[EnvClient], Any]) -> Any:
        try:
            return call(replica.client)
        except httpx.HTTPError as exc:
            name = self._book.name(replica)
            if not is_down(exc):
                raise ReplicaTimeout(f"Replica {name} did not answer in time ({exc})") from None
            self._book.down(replica, exc)
            self._lost(replica.url)
            raise ReplicaUnavailable(
                self._book.lost.get(
                    episode_id, f"Replica {name} stopped answering ({exc}); episode {episode_id} was on it"
                )
            ) from None
        except OpenEnvError as exc:
            raise on_replica(self._book.name(replica), exc) from None

    def step(self, episode_id: str, tool: str, arguments: dict[str, Any] | None = None) -> StepResult:
        """Call ``tool`` on ``episode_id``: on its replica, or where it is rebuilt if that one stopped answering."""
        if episode_id not in self._journal:
            replica = self._book.replica_of(episode_id)  # EpisodeNotFound: not opened through this pool
            result: StepResult = self._on(replica, episode_id, lambda c: c.step(tool, arguments, episode_id=episode_id))
            return result
        return run(self._step_plan(episode_id, tool, arguments))

    def state(self, episode_id: str) -> EpisodeState:
        replica, server_id = self._where(episode_id)
        state: EpisodeState = self._on(replica, episode_id, lambda c: c.state(episode_id=server_id))
        return state.model_copy(update={"episode_id": episode_id})

    def close_episode(self, episode_id: str) -> EpisodeState:
        """Close ``episode_id`` on its replica (and forget it, whatever the replica answers)."""
        try:
            replica, server_id = self._where(episode_id)
            state: EpisodeState = self._on(replica, episode_id, lambda c: c.close_episode(episode_id=server_id))
            return state.model_copy(update={"episode_id": episode_id})
        finally:
            self._book.closed(episode_id)
            self._journal.pop(episode_id, None)

    def close(self) -> None:
        """Close every open episode (best effort) and every connection."""
        for episode_id in list(self._book.where):
            with contextlib.suppress(OpenEnvError):  # its replica is gone or reaped it: nothing left to free
                self.close_episode(episode_id)
        self._journal.clear()
        for replica in list(self._book.replicas.values()):
            replica.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class AsyncEnvPool(_PoolBase[AsyncEnvClient]):
    """The async twin of :class:`EnvPool` (same arguments; ``await`` every call, ``aclose()``): it too rebuilds an
    episode whose replica stopped answering (see the module docstring).

    ``resume_within``: seconds to wait for a replica that takes a lost episode back (default 60).
    ``resumes``: how long each rebuild took, in seconds, in order.
    """

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
                self._reset_failed(replica, exc)
                continue
            except CapacityExceeded:
                self._book.release(replica)
                continue
            except BaseException:
                self._book.release(replica)
                raise
            replica.client.episode_id = None
            self._book.placed(replica, result.episode_id)
            self._journal[result.episode_id] = Journal.opened(result, replica.url)
            return result

    async def _ready(self) -> None:
        if not self._resolved:
            await self.refresh()

    async def step(self, episode_id: str, tool: str, arguments: dict[str, Any] | None = None) -> StepResult:
        """Call ``tool`` on ``episode_id``: on its replica, or where it is rebuilt if that one stopped answering."""
        if episode_id not in self._journal:
            result: StepResult = await self._call(episode_id, lambda c: c.step(tool, arguments, episode_id=episode_id))
            return result
        return await arun(self._step_plan(episode_id, tool, arguments))

    async def state(self, episode_id: str) -> EpisodeState:
        replica, server_id = self._where(episode_id)
        state: EpisodeState = await self._on(replica, episode_id, lambda c: c.state(episode_id=server_id))
        return state.model_copy(update={"episode_id": episode_id})

    async def close_episode(self, episode_id: str) -> EpisodeState:
        try:
            replica, server_id = self._where(episode_id)
            state: EpisodeState = await self._on(replica, episode_id, lambda c: c.close_episode(episode_id=server_id))
            return state.model_copy(update={"episode_id": episode_id})
        finally:
            self._book.closed(episode_id)
            self._journal.pop(episode_id, None)

    async def _call(self, episode_id: str, call: Callable[[AsyncEnvClient], Any]) -> Any:
        return await self._on(self._book.replica_of(episode_id), episode_id, call)

    async def _on(
        self, replica: Replica[AsyncEnvClient], episode_id: str, call: Callable[[AsyncEnvClient], Any]
    ) -> Any:
        try:
            return await call(replica.client)
        except httpx.HTTPError as exc:
            name = self._book.name(replica)
            if not is_down(exc):
                raise ReplicaTimeout(f"Replica {name} did not answer in time ({exc})") from None
            self._book.down(replica, exc)
            self._lost(replica.url)
            raise ReplicaUnavailable(
                self._book.lost.get(
                    episode_id, f"Replica {name} stopped answering ({exc}); episode {episode_id} was on it"
                )
            ) from None
        except OpenEnvError as exc:
            raise on_replica(self._book.name(replica), exc) from None

    async def aclose(self) -> None:
        for episode_id in list(self._book.where):
            with contextlib.suppress(OpenEnvError):  # its replica is gone or reaped it: nothing left to free
                await self.close_episode(episode_id)
        self._journal.clear()
        for replica in list(self._book.replicas.values()):
            await replica.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()
