"""SkyRL: a ``skyrl-gym`` text environment over a sim server (``pip install skyrl-gym``).

    import skyrl_gym
    import openenv_mcp.training.skyrl  # registers "openenv_mcp"

    env = skyrl_gym.make("openenv_mcp", env_config={"server_url": "http://127.0.0.1:8000"},
                         extras={"task_id": "sql-001", "seed": 0})
    conversation, info = env.init([{"role": "user", "content": ""}])   # the task's prompt fills the turn
    out = env.step('<tool_call>{"name": "list_tables", "arguments": {}}</tool_call>')
    env.close()

SkyRL's generator makes one environment per dataset row with ``skyrl_gym.make(row["env_class"],
env_config=..., extras=row)``. With ``env_class: "openenv_mcp"`` (or a name given to :func:`register_server`),
each row is an episode:

- **where**: ``server_url`` from the row's extras, else from ``env_config`` (SkyRL's
  ``environment.skyrl_gym.<env_class>`` config), else the one :func:`register_server` bound to the name;
- **which task**: the row's ``task_id``, ``split`` and ``seed`` (each optional; also read from
  ``extras["extra_info"]``, where SkyRL datasets keep per-row data);
- **init(prompt)** opens the episode; the task's prompt fills the last message if it is empty, else the
  prompt is kept as given;
- **step(action)** reads the model's text: a ``<tool_call>{"name", "arguments"}</tool_call>`` (Hermes/Qwen
  style, several allowed) is a step per call, each answered as a ``tool`` message; text without a tool call
  ends the episode. The step's reward is the sum of the server's rewards for its calls; ``done`` is the
  server's (task ended, step limit) or the end of the answer. A call the server refuses (unknown tool,
  invalid arguments) is answered with the server's message and is no step; ``metadata`` carries the
  episode id, step count and total reward;
- **close()** closes the episode on the server (also at garbage collection).

A server that cannot be reached raises :class:`~openenv_mcp.errors.BackendUnavailable` naming it, after at
most ``timeout`` seconds (30 by default; ``env_config["timeout"]``). Only this module imports ``skyrl_gym``.
"""

from __future__ import annotations

import contextlib
import json
import re
import weakref
from collections.abc import Mapping
from typing import Any

import httpx
from skyrl_gym.envs.base_text_env import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
    BaseTextEnv,
)
from skyrl_gym.envs.registration import register, registry  # type: ignore[import-not-found, unused-ignore]

from openenv_mcp.client import EnvClient
from openenv_mcp.errors import BackendUnavailable, ConfigError, EpisodeFinished, OpenEnvError, ToolError

__all__ = ["ENV_CLASS", "OpenEnvMCPTextEnv", "parse_tool_calls", "register_server"]

ENV_CLASS = "openenv_mcp"
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def parse_tool_calls(text: str) -> list[tuple[str, dict[str, Any]] | str]:
    """The ``<tool_call>`` blocks of a model's answer: ``(name, arguments)`` each, or a message saying what
    is wrong with one (to be shown to the model)."""
    calls: list[tuple[str, dict[str, Any]] | str] = []
    for body in _TOOL_CALL.findall(text):
        try:
            call = json.loads(body)
        except json.JSONDecodeError as exc:
            calls.append(f'Not JSON ({exc.msg}): a tool call is <tool_call>{{"name": ..., "arguments": {{...}}}}')
            continue
        name = call.get("name") if isinstance(call, dict) else None
        arguments = call.get("arguments", {}) if isinstance(call, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            calls.append('A tool call is <tool_call>{"name": NAME, "arguments": {...}}</tool_call>')
            continue
        calls.append((name, arguments))
    return calls


class OpenEnvMCPTextEnv(BaseTextEnv):  # type: ignore[misc, unused-ignore]
    """One episode of a sim server as a SkyRL ``BaseTextEnv`` (see the module docstring).

    Args:
        env_config: SkyRL's per-env config (``server_url``, ``timeout``); a mapping or an OmegaConf node.
        extras: The dataset row: ``server_url``, ``task_id``, ``split``, ``seed``, ``max_turns``.
        server_url: The default server, set by :func:`register_server`.
    """

    def __init__(
        self, env_config: Any = None, extras: Mapping[str, Any] | None = None, server_url: str | None = None
    ) -> None:
        super().__init__()
        config = dict(env_config or {})
        row = dict(extras or {})
        info = row.get("extra_info") if isinstance(row.get("extra_info"), Mapping) else {}
        pick = {**dict(info or {}), **row}
        url = pick.get("server_url") or config.get("server_url") or server_url
        if not url:
            raise ConfigError(
                "No server for the openenv_mcp env: give server_url in the row, in env_config "
                "(environment.skyrl_gym.<env_class>.server_url), or register_server(name, url)"
            )
        self.url = str(url)
        self.timeout = float(config.get("timeout", 30.0))
        self.task_id: str | None = pick.get("task_id")
        self.split: str | None = pick.get("split")
        self.seed: int | None = pick.get("seed")
        self.max_turns = int(pick.get("max_turns") or 0)
        self.episode_id: str | None = None
        self.total_reward = 0.0
        self.done = False
        self._client = EnvClient(self.url, timeout=self.timeout)
        self._finalizer = weakref.finalize(self, self._client.close)

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        try:
            result = self._client.reset(task_id=self.task_id, split=self.split, seed=self.seed)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        except OpenEnvError as exc:
            raise type(exc)(f"openenv-mcp server at {self.url} refused the row's task: {exc.message}") from None
        self.episode_id = result.episode_id
        if not self.max_turns:
            self.max_turns = int(result.info.get("max_steps", 20))
        conversation = [dict(message) for message in prompt]
        if not conversation or conversation[-1].get("content"):
            conversation.append({"role": "user", "content": result.observation.text})
        else:
            conversation[-1]["content"] = result.observation.text
        return conversation, {"episode_id": self.episode_id, **result.info}

    def step(self, action: str) -> dict[str, Any]:
        if self.episode_id is None:
            raise EpisodeFinished(f"No episode of {self.url} is open: call init(prompt) first")
        self.turns += 1
        calls = parse_tool_calls(action)
        observations: list[dict[str, str]] = []
        reward = 0.0
        for call in calls:
            if self.done:
                break
            if isinstance(call, str):
                observations.append({"role": "tool", "content": call})
                continue
            name, arguments = call
            try:
                result = self._client.step(name, arguments, episode_id=self.episode_id)
            except httpx.HTTPError as exc:
                raise self._unreachable(exc) from None
            except ToolError as exc:  # unknown tool, invalid arguments: the model reads why
                observations.append({"role": "tool", "content": exc.message})
                continue
            reward += result.reward
            self.total_reward = float(result.info.get("total_reward", self.total_reward + result.reward))
            self.done = result.done
            observations.append({"role": "tool", "content": result.observation.text})
        if not calls or self.turns >= self.max_turns:
            self.done = True  # an answer without a tool call ends the episode, as does the turn budget
        metadata = {"episode_id": self.episode_id, "total_reward": self.total_reward, "tool_calls": len(calls)}
        return {"observations": [] if self.done else observations, "reward": reward, "done": self.done,
                "metadata": metadata}  # fmt: skip

    def close(self) -> None:
        """Close the episode on the server (safe to call twice)."""
        if self.episode_id is not None:
            with contextlib.suppress(OpenEnvError, httpx.HTTPError):  # reaped, or the server is gone
                self._client.close_episode(episode_id=self.episode_id)
            self.episode_id = None

    def _unreachable(self, exc: httpx.HTTPError) -> BackendUnavailable:
        return BackendUnavailable(
            f"Cannot reach the openenv-mcp server at {self.url} ({type(exc).__name__}: {exc}; timeout "
            f"{self.timeout:g} s): start it (openenv-mcp serve NAME --mode sim) or fix server_url"
        )


def register_server(name: str, url: str) -> None:
    """Register ``name`` as a SkyRL env class bound to the server at ``url`` (rows select it by ``env_class``)."""
    if name in registry:
        raise ConfigError(f"A SkyRL env named {name!r} is already registered; pick another name")
    register(id=name, entry_point=OpenEnvMCPTextEnv, kwargs={"server_url": url})


if ENV_CLASS not in registry:
    register(id=ENV_CLASS, entry_point="openenv_mcp.training.skyrl:OpenEnvMCPTextEnv")
