"""A Gymnasium environment over a sim server's control plane (``pip install 'openenv-mcp[gym]'``).

    import gymnasium
    import openenv_mcp.training.gym  # registers "openenv_mcp/ToolEnv-v0"

    env = gymnasium.make("openenv_mcp/ToolEnv-v0", base_url="http://127.0.0.1:8000")
    observation, info = env.reset(seed=7)  # the task's prompt
    observation, reward, terminated, truncated, info = env.step('{"tool": "list_tables", "arguments": {}}')

**Observations** are text: the observation's text blocks (for a tool, its JSON result or its error
message), cut to ``max_observation_length`` characters. ``info`` carries the rest: ``is_error``,
``structured_content``, ``step_count``, ``total_reward``, ``task_id`` (and at reset ``split``,
``seed``, ``max_steps``).

**Actions** are text too, because a language model's action is text: a JSON object
``{"tool": NAME, "arguments": {...}}`` (``arguments`` may be left out; a dict of the same shape
is accepted as well). An action that is not such an object, names no tool the server has, or
carries invalid arguments is not sent as a step: it yields an error observation with reward 0
(``info["invalid_action"]`` is true), so the agent can read the message and correct itself,
and it counts against the step limit.

**Episode ends**: ``terminated`` when the task ends the episode (the step result's
``info["truncated"]`` is false); ``truncated`` when the step limit ends it (the server says so in
``info["truncated"]``, or ``max_steps`` actions, invalid ones included, were taken).

**Seeds**: ``reset(seed=s)`` asks the server for seed ``s`` (the task :class:`~openenv_mcp.EnvClient`
would get with ``seed=s``); ``reset()`` draws the server seed from the env's ``np_random``, so a
seeded sequence of resets is reproducible. ``options`` may name a ``task_id`` or a ``split``.
"""

from __future__ import annotations

import contextlib
import json
import string
from collections.abc import Mapping
from typing import Any

import gymnasium
from gymnasium import spaces

from openenv_mcp.client import EnvClient
from openenv_mcp.errors import OpenEnvError, ResetNeeded, ToolError
from openenv_mcp.models import Observation

__all__ = ["ENV_ID", "AnyText", "ToolEnv", "parse_action"]

ENV_ID = "openenv_mcp/ToolEnv-v0"
_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "


class AnyText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains any Unicode string of an allowed length.

    ``Text`` checks every character against a finite charset; tool output is free text (names,
    accents, newlines), so membership here checks the type and the length only. ``sample`` still
    draws from the charset (printable ASCII by default).
    """

    def __init__(self, max_length: int, *, min_length: int = 0, charset: str = _CHARSET) -> None:
        super().__init__(max_length, min_length=min_length, charset=charset)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class ToolEnv(gymnasium.Env[str, str]):
    """A sim server's episodes as a Gymnasium environment (see the module docstring).

    Args:
        base_url: The server's URL (``http://127.0.0.1:8000``).
        split: The split tasks are drawn from (default: the server's default); ``options`` may override.
        max_observation_length: Observations longer than this are cut, with a note saying so.
        max_action_length: The longest action text the action space holds.
        timeout: Seconds to wait for the server on each request.
        client: An :class:`EnvClient` to use instead of making one (the env closes it).
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        split: str | None = None,
        max_observation_length: int = 16_384,
        max_action_length: int = 4_096,
        timeout: float = 30.0,
        client: EnvClient | None = None,
    ) -> None:
        self.client = client or EnvClient(base_url, timeout=timeout)
        self.split = split
        self.max_observation_length = max_observation_length
        self.observation_space = AnyText(max_observation_length)
        self.action_space = AnyText(max_action_length, min_length=1)
        self.episode_id: str | None = None
        self._actions = 0
        self._max_steps = 0
        self._progress: dict[str, Any] = {"step_count": 0, "total_reward": 0.0, "task_id": None}
        self._over = False
        self._closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31))
        self._close_episode()
        options = options or {}
        result = self.client.reset(task_id=options.get("task_id"), split=options.get("split", self.split), seed=seed)
        self.episode_id = result.episode_id
        self._actions, self._over = 0, False
        self._max_steps = int(result.info["max_steps"])
        self._progress = {"step_count": 0, "total_reward": 0.0, "task_id": result.info.get("task_id")}
        text, cut = self._text(result.observation)
        info = {"is_error": False, "structured_content": result.observation.structured_content, **result.info}
        info.update(self._progress, observation_cut=cut)
        return text, info

    def step(self, action: str | Mapping[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.episode_id is None or self._over:
            raise ResetNeeded("No episode is running: call reset() first (and again after terminated or truncated)")
        self._actions += 1
        limit_hit = False  # the server ended the episode at its step limit
        try:
            tool, arguments = parse_action(action)
            result = self.client.step(tool, arguments, episode_id=self.episode_id)
        except ToolError as exc:  # malformed, unknown tool, or invalid arguments: not a step
            text, reward, done = exc.message, 0.0, False
            info: dict[str, Any] = {"is_error": True, "structured_content": None, **self._progress}
            info.update(invalid_action=True, observation_cut=False)
        else:
            observation = result.observation
            text, cut = self._text(observation)
            reward, done = result.reward, result.done
            limit_hit = bool(result.info.get("truncated"))
            self._progress = {key: result.info[key] for key in self._progress if key in result.info}
            info = {"is_error": observation.is_error, "structured_content": observation.structured_content}
            info.update(self._progress, invalid_action=False, observation_cut=cut)
        terminated = done and not limit_hit
        truncated = not terminated and (limit_hit or self._actions >= self._max_steps)
        self._over = terminated or truncated
        return text, float(reward), terminated, truncated, info

    def close(self) -> None:
        """Close the running episode on the server, and the HTTP client (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        self.client.close()  # closes the client's current episode too
        self.episode_id = None

    def _close_episode(self) -> None:
        if self.episode_id is not None:
            with contextlib.suppress(OpenEnvError):  # reaped or already closed: nothing to free
                self.client.close_episode(episode_id=self.episode_id)
            self.episode_id = None

    def _text(self, observation: Observation) -> tuple[str, bool]:
        text = observation.text
        limit = self.max_observation_length
        if len(text) <= limit:
            return text, False
        keep = limit
        for _ in range(2):  # the note's length depends on the count it gives
            note = f"\n[cut: {len(text) - keep} more characters]"
            keep = max(0, limit - len(note))
        return (text[:keep] + note)[-limit:], True


def parse_action(action: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(tool, arguments)`` from a JSON tool call; a malformed one raises ToolError saying what is expected."""
    expected = 'an action is a JSON object {"tool": NAME, "arguments": {...}}'
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except json.JSONDecodeError as exc:
            raise ToolError(f"Not JSON ({exc.msg} at character {exc.pos}): {expected}") from None
    if not isinstance(action, Mapping):
        raise ToolError(f"Got {type(action).__name__}: {expected}")
    tool, arguments = action.get("tool"), action.get("arguments", {})
    if not isinstance(tool, str) or not tool:
        raise ToolError(f"No tool name: {expected}")
    if not isinstance(arguments, Mapping):
        raise ToolError(f"'arguments' must be an object: {expected}")
    return tool, dict(arguments)


if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="openenv_mcp.training.gym:ToolEnv")
