"""Typed clients of the control plane: :class:`EnvClient` and its async twin :class:`AsyncEnvClient`.

    with EnvClient("http://127.0.0.1:8000") as env:
        first = env.reset(seed=7)
        result = env.step("run_query", {"sql": "SELECT COUNT(*) FROM customers"})
        print(result.reward, result.done, env.state().total_reward)

A client remembers the episode its last ``reset`` opened; pass ``episode_id=`` to act on
another. ``fork()`` opens a copy of an episode in its current state, ``snapshot()`` returns an
episode as signed data, and ``reset(snapshot=...)`` restores one (docs/episodes.md). Server
errors are raised as the package's own exceptions, carrying the server's message.
``token=`` sends the server's bearer token (``OPENENV_AUTH_TOKEN``) with every request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import urlencode

import httpx
from pydantic import BaseModel

from openenv_mcp.errors import OpenEnvError, ResetNeeded, error_for_code
from openenv_mcp.models import BatchItem, BatchResult, EpisodeState, Snapshot, StepResult, TaskList

__all__ = ["AsyncEnvClient", "EnvClient", "auth_headers"]

ModelT = TypeVar("ModelT", bound=BaseModel)
_HEADER = "X-Episode-Id"


@dataclass(frozen=True, slots=True)
class _Call:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None = None


def _tasks_call(split: str | None, difficulty: str | None, query: str | None, offset: int, limit: int | None) -> _Call:
    params = {"split": split, "difficulty": difficulty, "q": query, "offset": offset or None, "limit": limit}
    given = urlencode({name: value for name, value in params.items() if value is not None})
    return _Call("GET", "/tasks" + (f"?{given}" if given else ""), {})


def auth_headers(token: str | None, headers: dict[str, str] | None = None) -> dict[str, str]:
    """``headers`` plus ``Authorization: Bearer <token>`` when a token is given."""
    merged = dict(headers or {})
    if token:
        merged["Authorization"] = f"Bearer {token}"
    return merged


def _parse(response: httpx.Response, model: type[ModelT]) -> ModelT:
    if response.status_code >= 400:
        raise _error(response)
    return model.model_validate_json(response.content)


def _error(response: httpx.Response) -> OpenEnvError:
    try:
        detail = response.json()["error"]
        return error_for_code(str(detail["code"]), str(detail["message"]))
    except (ValueError, KeyError, TypeError):
        return OpenEnvError(f"HTTP {response.status_code} from {response.request.url}: {response.text[:200]}")


BatchSpec = tuple[str, str, dict[str, Any] | None] | tuple[str, str, dict[str, Any] | None, str | None]
"""A step of a batch: ``(episode_id, tool, arguments)``, or with its step id as a fourth item."""


class _Base:
    episode_id: str | None

    def _episode(self, episode_id: str | None) -> dict[str, str]:
        chosen = episode_id or self.episode_id
        if chosen is None:
            raise ResetNeeded("No episode yet: call reset() first, or pass episode_id=")
        return {_HEADER: chosen}

    def _reset(self, task_id: str | None, split: str | None, seed: int | None, snapshot: Snapshot | None) -> _Call:
        body: dict[str, Any] = {
            k: v for k, v in {"task_id": task_id, "split": split, "seed": seed}.items() if v is not None
        }
        if snapshot is not None:
            body["snapshot"] = snapshot.model_dump(mode="json")
        return _Call("POST", "/reset", {}, body)

    def _fork(self, episode_id: str | None, via: str) -> _Call:
        return _Call("POST", f"/episodes/{self._episode(episode_id)[_HEADER]}/fork?via={via}", {})

    def _snapshot(self, episode_id: str | None) -> _Call:
        return _Call("POST", f"/episodes/{self._episode(episode_id)[_HEADER]}/snapshot", {})

    def _forks(self, episode_ids: Sequence[str]) -> _Call:
        return _Call("POST", "/step_batch", {}, {"steps": [{"episode_id": e, "fork": True} for e in episode_ids]})

    def _step(self, tool: str, arguments: dict[str, Any] | None, episode_id: str | None, step_id: str | None) -> _Call:
        headers = self._episode(episode_id)
        if step_id is not None:
            headers["X-Step-Id"] = step_id
        return _Call("POST", "/step", headers, {"action": {"tool": tool, "arguments": arguments or {}}})

    def _batch(self, steps: Sequence[BatchSpec]) -> _Call:
        body: list[dict[str, Any]] = []
        for step in steps:
            episode_id, tool, arguments, *named = step
            item = {"episode_id": episode_id, "action": {"tool": tool, "arguments": arguments or {}}}
            if named and named[0] is not None:
                item["step_id"] = named[0]
            body.append(item)
        return _Call("POST", "/step_batch", {}, {"steps": body})

    def _close_episode(self, episode_id: str | None) -> _Call:
        return _Call("DELETE", f"/episodes/{self._episode(episode_id)[_HEADER]}", {})


class EnvClient(_Base):
    """A synchronous client of one server's control plane.

    Args:
        base_url: The server, e.g. ``http://127.0.0.1:8000``.
        timeout: Seconds per request.
        headers: Headers sent with every request.
        token: The server's bearer token, sent as ``Authorization: Bearer <token>``.
        transport: An httpx transport (tests: ``httpx.MockTransport``).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.episode_id = None
        headers = auth_headers(token, headers)
        self._http = httpx.Client(base_url=base_url, timeout=timeout, headers=headers, transport=transport)

    def _send(self, call: _Call, model: type[ModelT]) -> ModelT:
        return _parse(self._http.request(call.method, call.path, headers=call.headers, json=call.body), model)

    def reset(
        self,
        *,
        task_id: str | None = None,
        split: str | None = None,
        seed: int | None = None,
        snapshot: Snapshot | None = None,
    ) -> StepResult:
        """Open an episode (by task id, or by split and seed, or from a snapshot); it becomes the current one."""
        result = self._send(self._reset(task_id, split, seed, snapshot), StepResult)
        self.episode_id = result.episode_id
        return result

    def fork(self, *, episode_id: str | None = None, via: str = "auto") -> StepResult:
        """A new episode in the current one's (or ``episode_id``'s) state; the current episode stays the same.

        ``via="replay"`` replays the actions even where the environment has a fast path.
        """
        return self._send(self._fork(episode_id, via), StepResult)

    def fork_batch(self, episode_ids: Sequence[str]) -> list[BatchItem]:
        """One fork of each of ``episode_ids`` (repeat an id for several), in one request through the batch path."""
        return self._send(self._forks(episode_ids), BatchResult).results

    def snapshot(self, *, episode_id: str | None = None) -> Snapshot:
        """The current episode (or ``episode_id``) as signed data; ``reset(snapshot=...)`` restores it."""
        return self._send(self._snapshot(episode_id), Snapshot)

    def step(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        episode_id: str | None = None,
        step_id: str | None = None,
    ) -> StepResult:
        """Call ``tool`` with ``arguments`` on the current episode (or ``episode_id``).

        ``step_id`` names the step: sent again with the same id (its answer was lost), the server answers what the
        step did the first time instead of running it twice.
        """
        return self._send(self._step(tool, arguments, episode_id, step_id), StepResult)

    def step_batch(self, steps: Sequence[BatchSpec]) -> list[BatchItem]:
        """Steps of many episodes in one request: ``(episode_id, tool, arguments)`` each, answered in order.

        A step that fails comes back as an item with ``ok=False`` and its error; the others still run. A step
        given as ``(episode_id, tool, arguments, step_id)`` has an id: the batch sent again (its answer was lost)
        is answered with what those steps did, without running them twice.
        """
        return self._send(self._batch(steps), BatchResult).results

    def state(self, *, episode_id: str | None = None) -> EpisodeState:
        return self._send(_Call("GET", "/state", self._episode(episode_id)), EpisodeState)

    def tasks(
        self,
        *,
        split: str | None = None,
        difficulty: str | None = None,
        query: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> TaskList:
        """The server's tasks (without answers) that match, ``limit`` of them from ``offset`` (all by default)."""
        return self._send(_tasks_call(split, difficulty, query, offset, limit), TaskList)

    def close_episode(self, *, episode_id: str | None = None) -> EpisodeState:
        """Close the current episode (or ``episode_id``) on the server and free its backend."""
        state = self._send(self._close_episode(episode_id), EpisodeState)
        if state.episode_id == self.episode_id:
            self.episode_id = None
        return state

    def health(self) -> dict[str, Any]:
        response = self._http.get("/healthz")
        if response.status_code >= 400:
            raise _error(response)
        return dict(response.json())

    def close(self) -> None:
        """Close the current episode, if any, and the HTTP connection pool."""
        try:
            if self.episode_id is not None:
                self.close_episode()
        except (OpenEnvError, httpx.HTTPError):
            pass  # the server may be gone or the episode already reaped; nothing left to free here
        finally:
            self.episode_id = None
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class AsyncEnvClient(_Base):
    """The async twin of :class:`EnvClient`."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
        token: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.episode_id = None
        headers = auth_headers(token, headers)
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout, headers=headers, transport=transport)

    async def _send(self, call: _Call, model: type[ModelT]) -> ModelT:
        return _parse(await self._http.request(call.method, call.path, headers=call.headers, json=call.body), model)

    async def reset(
        self,
        *,
        task_id: str | None = None,
        split: str | None = None,
        seed: int | None = None,
        snapshot: Snapshot | None = None,
    ) -> StepResult:
        result = await self._send(self._reset(task_id, split, seed, snapshot), StepResult)
        self.episode_id = result.episode_id
        return result

    async def fork(self, *, episode_id: str | None = None, via: str = "auto") -> StepResult:
        return await self._send(self._fork(episode_id, via), StepResult)

    async def fork_batch(self, episode_ids: Sequence[str]) -> list[BatchItem]:
        return (await self._send(self._forks(episode_ids), BatchResult)).results

    async def snapshot(self, *, episode_id: str | None = None) -> Snapshot:
        return await self._send(self._snapshot(episode_id), Snapshot)

    async def step(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        episode_id: str | None = None,
        step_id: str | None = None,
    ) -> StepResult:
        return await self._send(self._step(tool, arguments, episode_id, step_id), StepResult)

    async def step_batch(self, steps: Sequence[BatchSpec]) -> list[BatchItem]:
        return (await self._send(self._batch(steps), BatchResult)).results

    async def state(self, *, episode_id: str | None = None) -> EpisodeState:
        return await self._send(_Call("GET", "/state", self._episode(episode_id)), EpisodeState)

    async def tasks(
        self,
        *,
        split: str | None = None,
        difficulty: str | None = None,
        query: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> TaskList:
        """The server's tasks (without answers) that match, ``limit`` of them from ``offset`` (all by default)."""
        return await self._send(_tasks_call(split, difficulty, query, offset, limit), TaskList)

    async def close_episode(self, *, episode_id: str | None = None) -> EpisodeState:
        state = await self._send(self._close_episode(episode_id), EpisodeState)
        if state.episode_id == self.episode_id:
            self.episode_id = None
        return state

    async def health(self) -> dict[str, Any]:
        response = await self._http.get("/healthz")
        if response.status_code >= 400:
            raise _error(response)
        return dict(response.json())

    async def aclose(self) -> None:
        try:
            if self.episode_id is not None:
                await self.close_episode()
        except (OpenEnvError, httpx.HTTPError):
            pass  # the server may be gone or the episode already reaped; nothing left to free here
        finally:
            self.episode_id = None
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()
