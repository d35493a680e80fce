"""Policies for rollouts: a scripted replay, any OpenAI-compatible chat model, or a user's own callable.

- :func:`scripted_policy` replays calls (tool, arguments) and stops; :func:`environment_policy` plays an
  environment's reference solution of each task (``solve``), else its ``examples``.
- :class:`~openenv_mcp.rollout.chat.OpenAIPolicy` (in :mod:`openenv_mcp.rollout.chat`) runs a tool-calling
  chat model.
- :func:`load_policy` imports ``module:callable``, a user's own async policy.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.rollout.runner import Policy, RolloutEpisode

__all__ = ["environment_policy", "load_policy", "scripted_policy"]


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
