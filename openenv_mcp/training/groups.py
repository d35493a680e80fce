"""Groups from a shared prefix: k episodes forked from one after its first steps, so GRPO compares continuations.

    with EnvClient(url) as env:
        group = shared_prefix_group(env, task_id="sql-002", seed=3, k=4, actions=[("list_tables", {})])
        for member in group.members:           # four episodes, each after the same step, in the same state
            env.step("submit_answer", {...}, episode_id=member.episode_id)

:func:`shared_prefix_group` (and its async twin :func:`ashared_prefix_group`) opens the root episode
(``POST /reset`` with the task and seed), plays the prefix on it, forks it ``k`` times in one request
(``fork`` items of ``POST /step_batch``) and closes the root, whatever happens. The prefix is either
``actions`` (``(tool, arguments)`` pairs: a refused one is an error naming it) or, with the async twin, the
first ``steps`` steps of a rollout ``policy`` (fewer if the policy stops sooner; calls the server refuses are
not steps). A prefix that ends the episode is an error: its forks would be finished copies with nothing left
to compare. Every member starts in the root's state after the prefix (same observation, step count and
reward so far: the server's fork guarantees it) and goes on independently; the caller closes the members
(the async twin closes them itself if it is cancelled before it returns them).

:meth:`PrefixGroup.messages` is the prefix as a chat (the task as the user turn, then one assistant tool call
and its tool answer per step), the history each member's model continues from; trainers mask it out of the
loss, since no member generated it. :class:`MemberPool` hands a group's members out one at a time by a group
key, for trainers that open one episode per generation (TRL's ``reset(**row)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from openenv_mcp.client import AsyncEnvClient, EnvClient
from openenv_mcp.client.discovery import ServerInfo
from openenv_mcp.client.lifecycle import close_all, finished, opened_reset, settle
from openenv_mcp.errors import ConfigError, EpisodeFinished, OpenEnvError, ToolError, error_for_code
from openenv_mcp.models import BatchItem, StepResult
from openenv_mcp.rollout.runner import Policy, RolloutEpisode
from openenv_mcp.trajectories.chat import ChatMessage, tool_call_message, tool_result_message

__all__ = [
    "MemberPool",
    "PrefixGroup",
    "PrefixStep",
    "ashared_prefix_group",
    "prefix_actions",
    "shared_prefix_group",
]

Action = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class PrefixStep:
    """One step of a shared prefix: the call, and what the environment answered."""

    tool: str
    arguments: dict[str, Any]
    observation: str
    reward: float
    is_error: bool = False


@dataclass(slots=True)
class PrefixGroup:
    """``k`` open episodes in one state: the root's after its prefix (the root itself is closed).

    Attributes:
        task_id, split, seed: The root's task and seed (the members share them).
        prompt: The task, as the root's first observation gave it.
        steps: The prefix, in order.
        members: The forks, as ``POST /episodes/{id}/fork`` answered them: ``episode_id``, the last observation
            of the prefix, ``info`` with ``step_count``, ``total_reward``, ``forked_from``.
        root_id: The root episode's id (closed once forked).
    """

    task_id: str
    split: str
    seed: int
    prompt: str
    root_id: str
    steps: list[PrefixStep] = field(default_factory=list)
    members: list[StepResult] = field(default_factory=list)

    @property
    def episode_ids(self) -> list[str]:
        return [member.episode_id for member in self.members]

    @property
    def reward(self) -> float:
        """The reward the prefix earned (each member's ``total_reward`` at the fork)."""
        return sum(step.reward for step in self.steps)

    def messages(self, system: str | None = None, *, style: Literal["openai", "trl"] = "openai") -> list[ChatMessage]:
        """The prefix as a chat: ``system`` (when given), the task as the user turn, then per step the assistant's
        tool call (id ``prefix_<n>``) and the tool's answer.

        ``style="openai"`` gives arguments as JSON strings (the OpenAI API's form, the rollout policies'),
        ``"trl"`` as objects with the tool's name on its answer (TRL's conversational form).
        """
        chat: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
        chat.append({"role": "user", "content": self.prompt})
        for number, step in enumerate(self.steps, start=1):
            call_id = f"prefix_{number}"
            if style == "trl":
                function = {"name": step.tool, "arguments": step.arguments}
                chat.append(
                    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": function}]}
                )
                chat.append({"role": "tool", "name": step.tool, "content": step.observation})
            else:
                chat.append(tool_call_message(call_id, step.tool, step.arguments))
                chat.append(tool_result_message(call_id, step.observation))
        return chat


def prefix_actions(value: Any, *, where: str = "the prefix") -> list[Action]:
    """``value`` as ``(tool, arguments)`` pairs: it may hold pairs, or ``{"tool", "arguments"}`` objects, or be
    their JSON text (a dataset column). A clear :class:`~openenv_mcp.errors.ConfigError` otherwise."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where} is not JSON ({exc}): give a list of actions") from None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ConfigError(f"{where} must be a list of actions ({{'tool': ..., 'arguments': {{...}}}}), got {value!r}")
    actions: list[Action] = []
    for index, item in enumerate(value):
        if isinstance(item, dict) and isinstance(item.get("tool"), str):
            tool, arguments = item["tool"], item.get("arguments") or {}
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2 and isinstance(item[0], str):
            tool, arguments = item[0], item[1] or {}
        else:
            raise ConfigError(f"Action {index} of {where} is {item!r}: give {{'tool': NAME, 'arguments': {{...}}}}")
        if isinstance(arguments, str):
            with contextlib.suppress(json.JSONDecodeError):
                arguments = json.loads(arguments)
        if not isinstance(arguments, dict):
            raise ConfigError(
                f"The arguments of action {index} ({tool}) of {where} must be an object, got {arguments!r}"
            )
        actions.append((tool, dict(arguments)))
    return actions


def _check(k: int) -> None:
    if k < 1:
        raise ConfigError(f"A shared-prefix group needs k >= 1 members, got {k}")


def _root(first: StepResult, task_id: str, seed: int) -> PrefixGroup:
    return PrefixGroup(
        task_id=str(first.info.get("task_id", task_id)),
        split=str(first.info.get("split", "")),
        seed=int(first.info.get("seed", seed)),
        prompt=first.observation.text,
        root_id=first.episode_id,
    )


def _played(group: PrefixGroup, tool: str, arguments: dict[str, Any], result: StepResult) -> None:
    group.steps.append(
        PrefixStep(tool, dict(arguments), result.observation.text, result.reward, result.observation.is_error)
    )
    if result.done:
        raise EpisodeFinished(
            f"The shared prefix of task {group.task_id} (seed {group.seed}) ended the episode at step "
            f"{len(group.steps)} ({tool}): its forks would have nothing left to do; use a shorter prefix"
        )


def _refused(group: PrefixGroup, index: int, tool: str, error: OpenEnvError) -> OpenEnvError:
    where = f"Action {index} ({tool}) of the shared prefix of task {group.task_id} (seed {group.seed})"
    return type(error)(f"{where} was refused: {error.message}")


def _members(group: PrefixGroup, items: list[BatchItem]) -> list[str]:
    """Keep the forks that were made; the ids of those to close when one failed (then raise after closing)."""
    group.members = [item.result for item in items if item.ok and item.result is not None]
    return [] if len(group.members) == len(items) else group.episode_ids


def _fork_error(items: list[BatchItem]) -> OpenEnvError:
    detail = next(item.error for item in items if not item.ok and item.error is not None)
    return error_for_code(detail.code, f"Forking the shared prefix failed: {detail.message}")


def shared_prefix_group(
    client: EnvClient,
    *,
    task_id: str,
    seed: int,
    k: int,
    actions: Sequence[Action] = (),
) -> PrefixGroup:
    """Open ``task_id`` with ``seed``, play ``actions``, fork ``k`` members, close the root (see the module).

    Raises:
        ConfigError: ``k`` < 1, or a malformed action.
        ToolError, EpisodeError: The server refused an action of the prefix (the message names it), the
            prefix ended the episode (:class:`~openenv_mcp.errors.EpisodeFinished`), or a fork failed
            (e.g. :class:`~openenv_mcp.errors.CapacityExceeded`); no episode is left open.
    """
    _check(k)
    script = prefix_actions(list(actions))
    group = _root(client.reset(task_id=task_id, seed=seed), task_id, seed)
    try:
        for index, (tool, arguments) in enumerate(script):
            try:
                result = client.step(tool, arguments, episode_id=group.root_id)
            except (ToolError, EpisodeFinished) as exc:
                raise _refused(group, index, tool, exc) from None
            _played(group, tool, arguments, result)
        items = client.fork_batch([group.root_id] * k)
        for episode_id in _members(group, items):
            with contextlib.suppress(OpenEnvError, httpx.HTTPError):
                client.close_episode(episode_id=episode_id)
        if len(group.members) < k:
            raise _fork_error(items)
    finally:
        with contextlib.suppress(OpenEnvError, httpx.HTTPError):  # reaped already, or the server is gone
            client.close_episode(episode_id=group.root_id)
    return group


class MemberPool:
    """Members of shared-prefix groups handed out one at a time by group key, for trainers that open one episode
    per generation (TRL's ``reset(**row)``): the first taker of a key builds its group of ``k`` members, the
    next ``k - 1`` takers of that key get the others, and the one after starts a new group. Thread-safe.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, list[StepResult]] = {}
        self._lock = threading.Lock()

    def take(
        self, client: EnvClient, key: str, *, task_id: str, seed: int, k: int, actions: Sequence[Action]
    ) -> StepResult:
        """A member of ``key``'s group (built with :func:`shared_prefix_group` when none is waiting)."""
        with self._lock:
            waiting = self._waiting.get(key)
            if not waiting:
                group = shared_prefix_group(client, task_id=task_id, seed=seed, k=k, actions=actions)
                waiting = self._waiting[key] = list(group.members)
            member = waiting.pop(0)
            if not waiting:
                del self._waiting[key]
            return member

    def waiting(self) -> int:
        """Members built and not handed out yet."""
        with self._lock:
            return sum(len(members) for members in self._waiting.values())

    def close(self, client: EnvClient) -> int:
        """Close the members not handed out; how many."""
        with self._lock:
            left = [member.episode_id for members in self._waiting.values() for member in members]
            self._waiting.clear()
        for episode_id in left:
            with contextlib.suppress(OpenEnvError, httpx.HTTPError):  # reaped already, or the server is gone
                client.close_episode(episode_id=episode_id)
        return len(left)


class _PrefixEpisode(RolloutEpisode):
    """The root as a policy sees it: it ends (``done``) once the prefix has its steps; each step is recorded."""

    def __init__(self, client: AsyncEnvClient, server: ServerInfo, first: StepResult, group: PrefixGroup, limit: int):
        super().__init__(client, server, first, group.seed)
        self.group = group
        self.limit = limit

    async def step(self, tool: str, arguments: dict[str, Any] | None = None) -> StepResult:
        if self.steps >= self.limit:
            raise EpisodeFinished(f"The shared prefix has its {self.limit} steps; the group's members go on from here")
        result = await super().step(tool, arguments)
        _played(self.group, tool, arguments or {}, result)
        self.done = self.done or self.steps >= self.limit
        return result


async def ashared_prefix_group(
    client: AsyncEnvClient,
    *,
    task_id: str,
    seed: int,
    k: int,
    actions: Sequence[Action] = (),
    policy: Policy | None = None,
    steps: int | None = None,
    server: ServerInfo | None = None,
) -> PrefixGroup:
    """The async twin of :func:`shared_prefix_group`; the prefix may also be a rollout ``policy``'s first ``steps``
    steps on the root (``server``: the server's :class:`~openenv_mcp.rollout.ServerInfo`, which the policy reads).
    """
    _check(k)
    if policy is not None and (steps is None or steps < 0 or server is None or actions):
        raise ConfigError("A prefix played by a policy needs steps >= 0 and the server's ServerInfo, and no actions")
    script = prefix_actions(list(actions))
    first = await opened_reset(client, task_id=task_id, seed=seed)
    group = _root(first, task_id, seed)
    made = cancelled = False  # made: the group is whole; cancelled: a cancellation came while closing
    try:
        if policy is not None and server is not None and steps:
            await policy(_PrefixEpisode(client, server, first, group, steps))
        for index, (tool, arguments) in enumerate(script):
            try:
                result = await client.step(tool, arguments, episode_id=group.root_id)
            except (ToolError, EpisodeFinished) as exc:
                raise _refused(group, index, tool, exc) from None
            _played(group, tool, arguments, result)
        # cancelled meanwhile, the forks are still made, so they are known and closed here
        request = asyncio.ensure_future(client.fork_batch([group.root_id] * k))
        if await settle(request):
            forks = finished(request) or []
            await close_all(client, [item.result.episode_id for item in forks if item.result is not None])
            raise asyncio.CancelledError
        items = request.result()
        cancelled = await close_all(client, _members(group, items))
        if len(group.members) < k:
            raise _fork_error(items)
        made = True
    finally:
        cancelled = await close_all(client, [group.root_id]) or cancelled
        if cancelled:  # the caller never gets the group: its members are closed too
            await close_all(client, group.episode_ids if made else [])
            raise asyncio.CancelledError
    return group
