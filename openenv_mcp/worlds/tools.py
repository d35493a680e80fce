"""A world's one tool, ``act``: send an action, see what the world shows."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from openenv_mcp.environment.tools import Toolbox
from openenv_mcp.worlds.backend import WorldBackend, WorldView

__all__ = ["world_tools"]

Command = Annotated[str, Field(min_length=1, max_length=2_000)]


def world_tools(server: str) -> Toolbox[WorldBackend]:
    """The tool table of a world served as ``server``: the same ``act`` tool for every world."""
    tools: Toolbox[WorldBackend] = Toolbox(server)

    @tools.tool(title="Act", read_only=False, destructive=False, idempotent=False, open_world=False)
    async def act(world: WorldBackend, action: Command) -> WorldView:
        """Take one action in the world and see what happens.

        The answer is the world's text, the actions it accepts now (when it lists them) and its other details.

        Args:
            action: A command in the world's own words, such as 'open door' or 'go north'; pick from
                valid_actions when they are listed.
        """
        return world.view(await world.act(action))

    return tools
