"""The replica pool, where it was first: it now lives in :mod:`openenv_mcp.client.pool` (the rollout runner, below
deploy, spreads episodes through it); these names stay importable from here."""

from openenv_mcp.client.pool import (
    AsyncEnvPool,
    EnvPool,
    ReplicaStats,
    ReplicaTimeout,
    ReplicaUnavailable,
    resolve_addresses,
)

__all__ = ["AsyncEnvPool", "EnvPool", "ReplicaStats", "ReplicaTimeout", "ReplicaUnavailable", "resolve_addresses"]
