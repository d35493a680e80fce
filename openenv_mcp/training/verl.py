"""verl: a ``BaseTool`` over a sim server's tools, and an agent loop that gives each rollout one episode.

    openenv-mcp verl tools http://127.0.0.1:8000 -o tools.yaml   # every tool, class_name OpenEnvMCPTool
    # actor_rollout_ref.rollout.multi_turn.tool_config_path=tools.yaml, rows with agent_name "openenv_mcp_agent"

verl loads the tools with its ``initialize_tools_from_config`` (one :class:`OpenEnvMCPTool` per server tool) and
its ``ToolAgentLoop`` calls ``create``, ``execute`` and ``release`` around **every** tool call. An episode lives
longer than a call, so the tools bind calls to episodes by a **trajectory key**, and the episode is opened by
the first call of a trajectory (with the task of the row's ``tools_kwargs.<tool>.create_kwargs``: ``task_id``,
``split``, ``seed``):

- inside :class:`OpenEnvMCPAgentLoop` (``agent_name: openenv_mcp_agent``, a ``ToolAgentLoop``): the rollout;
  the loop closes the episode when the rollout ends, sets the rollout's ``reward_score`` to the episode's total
  reward (so verl's reward function is not needed), and adds ``openenv_mcp_episode_id``, ``openenv_mcp_reward``
  and ``openenv_mcp_done`` to its ``extra_fields``;
- under verl's plain ``tool_agent`` loop: the ``agent_data`` verl passes to ``execute`` (a key kept in its
  ``extra_fields``); the episode is closed as soon as the environment says done, but one the model leaves
  unfinished stays open until the server's idle timeout closes it (``OPENENV_IDLE_TIMEOUT``, 900 s);
- called directly with ``create(instance_id=...)`` (the create-once, release-once lifecycle of verl's older
  rollouts): that instance id; ``create`` opens the episode and answers the task's prompt, ``release`` closes it
  once every tool that created it has released it.

``execute`` is one step: its answer is the observation's text, its reward the step's reward; ``calc_reward``
is the episode's total reward. A call the server refuses (a tool it lacks, invalid arguments, a step after the
episode is over) is answered with the server's message, reward 0, as verl answers its own refusals; a server that
cannot be reached raises :class:`~openenv_mcp.errors.BackendUnavailable` naming it (verl's loop shows it to the
model, and :class:`OpenEnvMCPAgentLoop` then fails the rollout with it, rather than train on it). Only this
module imports ``verl``.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import httpx
from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
    AgentLoopOutput,
    register,
)
from verl.experimental.agent_loop.tool_agent_loop import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
    ToolAgentLoop,
)
from verl.tools.base_tool import BaseTool  # type: ignore[import-not-found, import-untyped, unused-ignore]
from verl.tools.schemas import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
    OpenAIFunctionToolSchema,
    ToolResponse,
)

from openenv_mcp.client import AsyncEnvClient, auth_headers
from openenv_mcp.client.lifecycle import close_surely, opened_reset
from openenv_mcp.errors import BackendUnavailable, ConfigError, OpenEnvError
from openenv_mcp.training.verl_config import AGENT_NAME, verl_tool_schema

__all__ = ["AGENT_NAME", "OpenEnvMCPAgentLoop", "OpenEnvMCPTool", "open_episodes"]


@dataclass
class _Rollout:
    key: str
    failure: OpenEnvError | None = None  # the server unreachable, or the row's task refused


_ROLLOUT: contextvars.ContextVar[_Rollout | None] = contextvars.ContextVar("openenv_mcp_rollout", default=None)
_KEY_FIELD = "openenv_mcp_trajectory"  # where the key is kept in verl's agent_data.extra_fields (plain tool_agent)
_KEPT = 10_000  # trajectories remembered (a finished one, so that a late call is refused, not a new episode)


@dataclass(eq=False)
class _Episode:
    url: str
    key: str
    task: dict[str, Any]
    client: AsyncEnvClient
    timeout: float
    id: str | None = None
    prompt: str = ""
    total_reward: float = 0.0
    steps: int = 0
    done: bool = False
    closed: bool = False
    failure: OpenEnvError | None = None  # its reset failed: every call waiting on it fails the same way
    holders: int = 0  # create(instance_id=...) calls not yet released
    ready: asyncio.Lock = field(default_factory=asyncio.Lock)


_episodes: OrderedDict[tuple[str, str], _Episode] = OrderedDict()


def open_episodes() -> list[str]:
    """The server episode ids this process has open (for checks: a finished run leaves none)."""
    return [e.id for e in _episodes.values() if e.id and not e.closed]


@dataclass
class _Instance:
    task: dict[str, Any]
    key: str | None = None  # the trajectory, once known
    holds: bool = False  # created with an instance id: it holds its episode open until released


class OpenEnvMCPTool(BaseTool):  # type: ignore[misc, unused-ignore]
    """One tool of a sim server as a verl ``BaseTool`` (see the module docstring).

    Args:
        config: The tool config's ``config``: ``server_url`` (required), ``timeout`` (seconds per request, 30),
            ``token`` (the server's bearer token; default ``$OPENENV_AUTH_TOKEN``), ``name`` (the tool, when no
            ``tool_schema`` is given: it is then read from the server).
        tool_schema: verl's schema of the tool, as ``openenv-mcp verl tools`` writes it.
    """

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None) -> None:
        url = config.get("server_url")
        if not url:
            raise ConfigError("OpenEnvMCPTool needs config.server_url: the sim server's URL (openenv-mcp verl tools)")
        self.url = str(url).rstrip("/")
        self.timeout = float(config.get("timeout", 30.0))
        self.token = config.get("token") or os.environ.get("OPENENV_AUTH_TOKEN") or None
        if tool_schema is None:
            tool_schema = OpenAIFunctionToolSchema.model_validate(self._schema_from_server(str(config.get("name"))))
        self._instances: dict[str, _Instance] = {}
        super().__init__(config, tool_schema)

    def _schema_from_server(self, name: str) -> dict[str, Any]:
        from concurrent.futures import ThreadPoolExecutor

        from openenv_mcp.client.discovery import discover

        with ThreadPoolExecutor(1) as pool:  # verl may build tools inside a running event loop
            info = pool.submit(asyncio.run, discover(self.url, token=self.token)).result()
        for tool in info.tools:
            if tool["name"] == name:
                return verl_tool_schema(tool)
        raise ConfigError(f"No tool {name!r} on the server at {self.url}; it has {[t['name'] for t in info.tools]}")

    async def create(
        self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        """A tool instance; with ``instance_id`` (a trajectory's id) its episode is opened now and its prompt
        answered. ``create_kwargs`` (or keyword arguments) pick the task: ``task_id``, ``split``, ``seed``."""
        task = {k: v for k, v in {**kwargs, **dict(create_kwargs or {})}.items() if k in ("task_id", "split", "seed")}
        if instance_id is None:
            instance_id = uuid4().hex
            self._instances[instance_id] = _Instance(task)
            return instance_id, ToolResponse()
        instance = self._instances[instance_id] = _Instance(task, key=instance_id, holds=True)
        episode = await self._episode(instance)
        episode.holders += 1
        return instance_id, ToolResponse(text=episode.prompt)

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """One step of the instance's episode: the observation's text, the step's reward, and metrics."""
        instance = self._instances.get(instance_id)
        if instance is None:
            return ToolResponse(text=f"No instance {instance_id!r} of tool {self.name!r}: call create() first"), 0.0, {}
        if instance.key is None:
            instance.key = _trajectory_key(kwargs.get("agent_data")) or instance_id
        episode = await self._episode(instance)
        if episode.closed:
            text = f"The episode {episode.id} is over (done: {episode.done}): no more tool calls count; answer"
            return ToolResponse(text=text), 0.0, {"episode_id": episode.id}
        try:
            result = await episode.client.step(self.name, parameters, episode_id=episode.id)
        except httpx.HTTPError as exc:
            raise _unreachable(episode, exc) from None
        except OpenEnvError as exc:  # refused: a tool the server lacks, invalid arguments, the episode over or gone
            return ToolResponse(text=exc.message), 0.0, {"episode_id": episode.id, "error": exc.code}
        episode.steps += 1
        episode.total_reward = float(result.info.get("total_reward", episode.total_reward + result.reward))
        episode.done = result.done
        metrics = {"episode_id": episode.id, "step_count": episode.steps, "done": result.done}
        if result.done and not instance.holds:
            await _close(episode)  # nothing more can happen in it; under verl's own loop no one else closes it
        return ToolResponse(text=result.observation.text), float(result.reward), metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The episode's total reward so far (the environment's; 0 before its first step)."""
        instance = self._instances.get(instance_id)
        episode = _episodes.get((self.url, instance.key)) if instance and instance.key else None
        return episode.total_reward if episode else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the instance; an episode opened by ``create(instance_id=...)`` is closed with its last holder."""
        instance = self._instances.pop(instance_id, None)
        if instance is None or not instance.holds or instance.key is None:
            return
        episode = _episodes.get((self.url, instance.key))
        if episode is not None:
            episode.holders -= 1
            if episode.holders <= 0:
                await _close(episode)
                _episodes.pop((self.url, instance.key), None)

    async def _episode(self, instance: _Instance) -> _Episode:
        assert instance.key is not None
        episode = _episodes.get((self.url, instance.key))
        if episode is None:
            headers = auth_headers(self.token)
            client = AsyncEnvClient(self.url, timeout=self.timeout, headers=headers)
            episode = _Episode(self.url, instance.key, instance.task, client, self.timeout)
            _episodes[(self.url, instance.key)] = episode
            await _evict()
        async with episode.ready:  # parallel calls of one turn share one reset
            if episode.failure is not None:
                raise episode.failure
            if episode.id is None and not episode.closed:
                try:
                    task = episode.task
                    opened = await opened_reset(
                        episode.client, task_id=task.get("task_id"), split=task.get("split"), seed=task.get("seed")
                    )
                except (httpx.HTTPError, OpenEnvError) as exc:
                    _episodes.pop((self.url, instance.key), None)  # the next call of the trajectory tries again
                    await episode.client.aclose()
                    if isinstance(exc, httpx.HTTPError):
                        episode.failure = _unreachable(episode, exc)
                    else:
                        message = f"openenv-mcp server at {self.url} refused the row's task: {exc.message}"
                        episode.failure = _failed(type(exc)(message))
                    raise episode.failure from None
                episode.id, episode.prompt = opened.episode_id, opened.observation.text
                episode.client.episode_id = None  # closed by _close, not by the client
        return episode


def _trajectory_key(agent_data: Any) -> str | None:
    rollout = _ROLLOUT.get()
    key = rollout.key if rollout else None
    if key is None and agent_data is not None and isinstance(getattr(agent_data, "extra_fields", None), dict):
        key = str(agent_data.extra_fields.setdefault(_KEY_FIELD, uuid4().hex))  # set before any await: one per rollout
    return key


def _unreachable(episode: _Episode, exc: httpx.HTTPError) -> OpenEnvError:
    return _failed(BackendUnavailable(
        f"Cannot reach the openenv-mcp server at {episode.url} ({type(exc).__name__}: {exc}; timeout "
        f"{episode.timeout:g} s): start it (openenv-mcp serve NAME --mode sim) or fix server_url"
    ))  # fmt: skip


def _failed(exc: OpenEnvError) -> OpenEnvError:
    """Note a failure of the trainer's set-up for the rollout (its loop fails with it), and give it back."""
    rollout = _ROLLOUT.get()
    if rollout is not None and rollout.failure is None:
        rollout.failure = exc
    return exc


async def _close(episode: _Episode) -> None:
    if episode.closed:
        return
    episode.closed = True
    try:  # to the end, even if cancelled meanwhile (then raised once the client is closed too)
        cancelled = episode.id is not None and await close_surely(episode.client, episode.id)
    finally:
        await episode.client.aclose()
    if cancelled:
        raise asyncio.CancelledError


async def _evict() -> None:
    """Keep at most ``_KEPT`` trajectories: the oldest go, closed (under verl's plain loop nothing else ends them)."""
    while len(_episodes) > _KEPT:
        _, episode = _episodes.popitem(last=False)
        await _close(episode)


@register(AGENT_NAME)
class OpenEnvMCPAgentLoop(ToolAgentLoop):  # type: ignore[misc, unused-ignore]
    """verl's ``ToolAgentLoop`` with one episode per rollout, closed when the rollout ends, whose total reward is
    the rollout's ``reward_score``. Rows select it with ``agent_name: openenv_mcp_agent``."""

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        rollout = _Rollout(uuid4().hex)
        token = _ROLLOUT.set(rollout)
        try:
            output = await super().run(sampling_params, **kwargs)
        finally:
            _ROLLOUT.reset(token)
            mine = [(k, e) for k, e in _episodes.items() if k[1] == rollout.key]
            for k, opened in mine:
                await _close(opened)
                del _episodes[k]
        if rollout.failure is not None:  # verl showed it to the model; training on that would be wrong
            raise rollout.failure
        episode = mine[0][1] if mine else None  # none when the model called no tool: reward 0, as for no step
        reward = episode.total_reward if episode else 0.0
        done = bool(episode and episode.done)
        output.extra_fields.update({"openenv_mcp_episode_id": episode.id if episode else None,
                                    "openenv_mcp_reward": reward, "openenv_mcp_done": done})  # fmt: skip
        if output.reward_score is None:
            output.reward_score = reward
        return output
