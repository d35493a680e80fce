"""Clients of a sim server: the typed control-plane clients, finding what a server offers, and episodes opened
and closed safely from async workers.

- :class:`EnvClient` / :class:`AsyncEnvClient` (``env_client.py``): reset, step, state, fork and snapshot over HTTP.
- ``discovery.py``: a server's name, description and MCP tool list, and starting a server by name for a run.
- ``lifecycle.py``: opening and closing episodes from workers that may be cancelled (rollouts, trainers).
- ``pool.py``: :class:`~openenv_mcp.client.pool.EnvPool` / ``AsyncEnvPool``, episodes spread over many replicas.
"""

from openenv_mcp.client.env_client import AsyncEnvClient, EnvClient, auth_headers

__all__ = ["AsyncEnvClient", "EnvClient", "auth_headers"]
