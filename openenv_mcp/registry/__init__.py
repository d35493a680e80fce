"""The tool registry: every shipped server's tools mapped to the sim backend and prod services behind them.

One MCP registry ``server.json`` per server (schema 2025-12-11) in ``registry/``, generated from
the servers' declarations (``openenv-mcp registry generate``) and checked against them
(``--check``) and against running servers (``openenv-mcp registry validate --against URL``).
Our map sits under ``_meta["io.modelcontextprotocol.registry/publisher-provided"]["openenv-mcp"]``.

    >>> from openenv_mcp.registry import Registry
    >>> binding = Registry.load().lookup("run_query")
    >>> binding.qualified, [service.title for service in binding.tool.prod]
    ('sql/run_query', ['PostgreSQL'])

See ``docs/registry.md`` for the format.
"""

from openenv_mcp.registry.entry import (
    META_KEY,
    NAMESPACE,
    OpenEnvMeta,
    RegistryEntry,
    ServiceBinding,
    ToolEntry,
    load_entry,
    schema_hash,
    validate_entry,
)
from openenv_mcp.registry.generator import GenerateReport, build_document, generate
from openenv_mcp.registry.live import Advertised, fetch_advertised, live_drift
from openenv_mcp.registry.lookup import Registry, ToolBinding, default_directory

__all__ = [
    "META_KEY",
    "NAMESPACE",
    "Advertised",
    "GenerateReport",
    "OpenEnvMeta",
    "Registry",
    "RegistryEntry",
    "ServiceBinding",
    "ToolBinding",
    "ToolEntry",
    "build_document",
    "default_directory",
    "fetch_advertised",
    "generate",
    "live_drift",
    "load_entry",
    "schema_hash",
    "validate_entry",
]
