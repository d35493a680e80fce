"""The catalog of servers: every package that registers an ``openenv_mcp.servers`` entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import ConfigError

__all__ = ["load_environment", "server_names"]

GROUP = "openenv_mcp.servers"


def server_names() -> list[str]:
    """Names of the installed servers, without importing them."""
    return sorted(ep.name for ep in entry_points(group=GROUP))


def load_environment(name: str) -> Environment[Any, Any]:
    """Import and return the environment registered as ``name``."""
    found = [ep for ep in entry_points(group=GROUP) if ep.name == name]
    if not found:
        names = ", ".join(server_names()) or "(none installed)"
        raise ConfigError(f"No server {name!r}; installed servers: {names} (see 'openenv-mcp list')")
    env = found[0].load()
    if not isinstance(env, Environment):
        raise ConfigError(f"Entry point {found[0].value!r} is not an openenv_mcp.Environment")
    return env
