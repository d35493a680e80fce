"""Making the prod service hold what a sim episode starts from, before a script plays, through the tools themselves.

A sim episode starts from its task's seeded state; a prod service holds one state that every script before has
changed. Where the environment's own tools can set the prod state, it declares a stage
(:attr:`Parity.stage <openenv_mcp.environment.declarations.Parity.stage>`), which runs before each script through
the one path on both sides (calls the report does not count). Where they cannot, the tasks compared are those whose
state the service already holds (:attr:`Parity.compared <openenv_mcp.environment.declarations.Parity.compared>`).
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.environment.declarations import Side, Stage
from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import BackendUnavailable
from openenv_mcp.runtime import Runtime

__all__ = ["Stage", "prod_writes", "side"]


def side(runtime: Runtime, episode: str | None) -> Side:
    """``runtime`` (on ``episode`` in the sim) as a stage sees it: ``(tool, arguments) -> structured content``,
    an answer that is an error raising :class:`BackendUnavailable` naming the side."""

    async def call(tool: str, arguments: dict[str, Any]) -> Any:
        observation = (await runtime.call(tool, arguments, episode)).observation
        if observation.is_error:
            which = "sim" if runtime.sim else "prod"
            name = runtime.env.name
            raise BackendUnavailable(f"Staging {name} for parity: {which} {tool} failed: {observation.text}")
        return observation.structured_content

    return call


def prod_writes(env: Environment[Any, Any]) -> str | None:
    """What a parity run of ``env`` would change on its prod service, or ``None`` when every call only reads.

    A tool counts as a writer unless it declares ``readOnlyHint``; a stage replaces the service's state outright.
    """
    writers = sorted(tool.name for tool in env.tools if not tool.annotations.get("readOnlyHint"))
    changes = [f"it calls {', '.join(writers)}, which change the service"] if writers else []
    if env.declares.parity.stage is not None:
        changes.append("before each script it replaces everything the service holds with the sim episode's start")
    return "; ".join(changes) or None
