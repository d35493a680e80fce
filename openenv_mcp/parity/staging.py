"""Making the prod service hold what a sim episode starts from, before a script plays, through the tools themselves.

A sim episode starts from its task's seeded state; a prod service holds one state that every script before has
changed. Where the environment's own tools can set the prod state, a stage does so before each script, through
the one path on both sides (a call the report does not count). Where they cannot, the tasks compared are those whose
state the service already holds (:data:`openenv_mcp.parity.scripts.PROD_STATE`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import BackendUnavailable
from openenv_mcp.runtime import Runtime

__all__ = ["STAGES", "Stage", "prod_writes"]

Stage = Callable[[Runtime, Runtime, str], Awaitable[None]]
"""``stage(sim, prod, episode_id)``: make ``prod`` hold the state the sim episode ``episode_id`` is in."""


async def _result(runtime: Runtime, tool: str, arguments: dict[str, Any], episode: str | None) -> Any:
    observation = (await runtime.call(tool, arguments, episode)).observation
    if observation.is_error:
        side = "sim" if runtime.sim else "prod"
        raise BackendUnavailable(f"Staging {runtime.env.name} for parity: {side} {tool} failed: {observation.text}")
    return observation.structured_content


async def _memory_graph(sim: Runtime, prod: Runtime, episode_id: str) -> None:
    """The upstream memory server's graph becomes the episode's: every relation and entity it holds is deleted, then
    the sim's entities and relations are created (one read_graph step in the sim episode, which earns nothing)."""
    start = await _result(sim, "read_graph", {}, episode_id)
    held = await _result(prod, "read_graph", {}, None)
    if held["relations"]:  # first: a relation between names that are no entities outlives delete_entities
        await _result(prod, "delete_relations", {"relations": held["relations"]}, None)
    names = [entity["name"] for entity in held["entities"]]
    if names:
        await _result(prod, "delete_entities", {"entityNames": names}, None)
    if start["entities"]:
        await _result(prod, "create_entities", {"entities": start["entities"]}, None)
    if start["relations"]:
        await _result(prod, "create_relations", {"relations": start["relations"]}, None)


STAGES: dict[str, Stage] = {"memory": _memory_graph}
"""The stages of the environments whose tools can set the prod state, by environment name."""


def prod_writes(env: Environment[Any, Any]) -> str | None:
    """What a parity run of ``env`` would change on its prod service, or ``None`` when every call only reads.

    A tool counts as a writer unless it declares ``readOnlyHint``; a stage replaces the service's state outright.
    """
    writers = sorted(tool.name for tool in env.tools if not tool.annotations.get("readOnlyHint"))
    changes = [f"it calls {', '.join(writers)}, which change the service"] if writers else []
    if env.name in STAGES:
        changes.append("before each script it replaces everything the service holds with the sim episode's start")
    return "; ".join(changes) or None
