"""Policies for rollouts: a scripted replay, any OpenAI-compatible chat model, or a user's own callable.

- :func:`scripted_policy` replays calls (tool, arguments) and stops; :func:`environment_policy` plays an
  environment's reference solution of each task (``solve``), else its ``examples``.
- :class:`OpenAIPolicy` runs a tool-calling chat loop: the server's MCP tools as OpenAI function
  schemas, the task as the user message, each returned tool call executed through ``/step`` and its
  observation appended as a ``tool`` message, until the episode is done, the model answers without
  a tool call, or ``max_turns`` model calls were made. A call the server refuses (unknown tool,
  invalid arguments, arguments that are not JSON) comes back to the model as the tool message, so
  it can correct itself; such a call is not an environment step. Given ``capture`` (a
  :data:`~openenv_mcp.trajectories.turns.TurnSink`), it asks the endpoint for token ids and
  log-probabilities and sends each episode's turns there when the episode ends
  (:mod:`openenv_mcp.rollout.capture`).
- :func:`load_policy` imports ``module:callable``, a user's own async policy.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread
import httpx

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import ConfigError, EpisodeFinished, OpenEnvError, ToolError
from openenv_mcp.rollout.capture import CAPTURE_OPTIONS, captured_turn
from openenv_mcp.rollout.runner import Policy, PolicyError, RolloutEpisode
from openenv_mcp.trajectories.chat import ChatMessage, tool_result_message
from openenv_mcp.trajectories.turns import Turn, TurnSink

__all__ = ["OpenAIPolicy", "environment_policy", "load_policy", "scripted_policy"]


def scripted_policy(
    examples: Sequence[tuple[str, dict[str, Any]]],
    *,
    solution: Callable[[str], Sequence[tuple[str, dict[str, Any]]] | None] | None = None,
) -> Policy:
    """A policy that calls each ``(tool, arguments)`` in turn, stopping early if the episode ends.

    Args:
        examples: The calls to make on any task.
        solution: Given the episode's task id, the calls that solve that task (``None``: play ``examples``).
    """
    script = [(tool, dict(arguments)) for tool, arguments in examples]

    async def replay(episode: RolloutEpisode) -> None:
        # off the event loop: a world's reference can take seconds to make, and other episodes go on meanwhile
        calls = await anyio.to_thread.run_sync(solution, episode.task_id) if solution is not None else None
        for tool, arguments in calls if calls is not None else script:
            if episode.done:
                return
            await episode.step(tool, dict(arguments))

    return replay


def environment_policy(env: Environment[Any, Any]) -> Policy:
    """``--policy scripted`` for ``env``: its reference solution of each task, else its examples."""
    if env.solve is None and not env.examples:
        raise ConfigError(f"Server {env.name!r} declares no solutions or examples to replay; use another --policy")
    if env.solve is None:
        return scripted_policy(env.examples)
    solve, tasks = env.solve, env.tasks()

    def solution(task_id: str) -> Sequence[tuple[str, dict[str, Any]]] | None:
        try:
            return solve(tasks.get(task_id))
        except OpenEnvError:
            return None  # a task this copy of the environment does not know: play the examples

    return scripted_policy(env.examples, solution=solution)


class OpenAIPolicy:
    """Any OpenAI-compatible chat endpoint with tool calling, as a policy (``async with`` it, or ``aclose``).

    Args:
        base_url: The endpoint up to ``/v1`` (``POST {base_url}/chat/completions``).
        model: The model name sent with each request.
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        max_turns: Model calls per episode at most (default: the episode's step limit).
        temperature: Sent when given.
        capture: Where each episode's :class:`~openenv_mcp.trajectories.turns.Turn` list goes when the
            episode ends (a :class:`~openenv_mcp.trajectories.turns.TurnRecorder`, say). Given it, every
            request asks for token ids and log-probabilities, and an answer without them fails the episode.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        max_turns: int | None = None,
        temperature: float | None = None,
        timeout: float = 120.0,
        capture: TurnSink | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_turns = max_turns
        self.temperature = temperature
        self.capture = capture
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(timeout=timeout, headers=headers)

    async def __call__(self, episode: RolloutEpisode) -> None:
        turns: list[Turn] = []
        await self._play(episode, turns)
        if self.capture is not None:
            await self.capture(episode.server.name, episode.episode_id, turns)

    async def _play(self, episode: RolloutEpisode, turns: list[Turn]) -> None:
        messages: list[ChatMessage] = list(episode.history)
        if not messages:
            if episode.server.description:
                messages.append({"role": "system", "content": episode.server.description})
            messages.append({"role": "user", "content": episode.prompt})
        tools = episode.server.openai_tools
        for _ in range(self.max_turns or episode.max_steps):
            reply = await self.complete(messages, tools, turns)
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if not calls:
                return  # the model answered in words: its episode is over
            for call in calls:
                messages.append(tool_result_message(str(call.get("id", "")), await self._run(episode, call)))
                if episode.done:
                    return

    async def complete(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]], turns: list[Turn] | None = None
    ) -> ChatMessage:
        """One chat completion; returns the assistant message (role, content, tool_calls).

        The loop's one call to the model, so a subclass that asks another client (Atropos' server manager)
        overrides this. With ``capture`` set, the answer's tokens are appended to ``turns`` when given.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto"}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.capture is not None:
            body.update(CAPTURE_OPTIONS)
        endpoint = f"{self.base_url}/chat/completions"
        response = await self._http.post(endpoint, json=body)
        if response.status_code >= 400:
            raise PolicyError(f"The chat endpoint {endpoint} answered {response.status_code}: {response.text[:200]}")
        try:
            payload = response.json()
            message = payload["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise PolicyError(f"The chat endpoint {endpoint} answered without choices[0].message") from None
        reply: ChatMessage = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            reply["tool_calls"] = message["tool_calls"]
        if self.capture is not None and turns is not None:
            turns.append(captured_turn(payload, endpoint=endpoint, model=self.model))
        return reply

    async def _run(self, episode: RolloutEpisode, call: dict[str, Any]) -> str:
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError as exc:
            return f"The arguments of {name!r} are not valid JSON ({exc}); send a JSON object"
        if not isinstance(arguments, dict):
            return f"The arguments of {name!r} must be a JSON object, not {type(arguments).__name__}"
        try:
            result = await episode.step(name, arguments)
        except (ToolError, EpisodeFinished) as exc:
            return exc.message
        return result.observation.text

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def load_policy(spec: str) -> Policy:
    """Import ``module:callable`` (e.g. ``my_agents.sql:policy``): an async callable taking the episode."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"Policy {spec!r} is not 'scripted', 'openai' or 'module:callable'")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as 'uvicorn module:app' does: modules next to you are found
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"Cannot import the policy module {module_name!r}: {exc}") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ConfigError(f"Module {module_name!r} has no {attribute!r} (policy {spec!r})")
        found = getattr(found, part)
    if not callable(found):
        raise ConfigError(f"Policy {spec!r} is not callable; give an async function taking the episode")
    policy: Policy = found
    return policy
