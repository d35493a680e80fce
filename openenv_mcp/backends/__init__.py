"""Backends the toolkit ships for servers to use (PostgreSQL, an upstream MCP server).

:class:`Backend`, the contract every backend meets, belongs to the environment contract
(:mod:`openenv_mcp.environment.backend`); it is re-exported here, where it was first defined.
"""

from __future__ import annotations

from openenv_mcp.environment.backend import Backend

__all__ = ["Backend"]
