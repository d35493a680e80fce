"""memory: keep a knowledge graph true, with the MCP reference memory server's tools.

Sim: a seeded in-memory graph per episode with the upstream's semantics. Prod: the upstream
server itself (``@modelcontextprotocol/server-memory``), every call forwarded to it over stdio
or Streamable HTTP; it must list exactly these tools or prod refuses to start.
"""

from __future__ import annotations

from functools import partial

from memory_env.backends import open_prod, open_sim
from memory_env.declarations import declarations
from memory_env.generator import load_all
from memory_env.settings import MemorySettings
from memory_env.tasks import grade, solve
from memory_env.tools import tools
from openenv_mcp import Environment, ProdService, Upstream

__all__ = ["UPSTREAM", "environment"]

UPSTREAM = Upstream(
    package="@modelcontextprotocol/server-memory", registry="npm", version="2026.8.31", command=("mcp-server-memory",)
)

environment = Environment(
    name="memory",
    description=(
        "Keep a knowledge graph of entities, relations and observations true to what you are told: "
        "record, correct, move, link and forget facts."
    ),
    tools=tools,
    tasks=load_all,
    settings=MemorySettings,
    sim_backend=open_sim,
    prod_backend=partial(open_prod, declared=tools),  # prod checks the upstream lists exactly these tools
    grade=grade,
    sim_summary="A seeded in-memory knowledge graph per episode, with the upstream memory server's semantics.",
    prod_services=(
        ProdService(
            name="server-memory",
            title="MCP reference memory server",
            role="keeps the knowledge graph (a JSON-lines file); every tool call is forwarded to it",
            settings=("upstream_command", "upstream_url", "upstream_headers", "file_path", "timeout"),
            tested="CI runs the real server: tools/list parity, calls, drift refused, the process killed mid-run",
            upstream=UPSTREAM,
        ),
    ),
    solve=solve,
    examples=(("read_graph", {}), ("search_nodes", {"query": "person"})),
    max_steps=20,
    version="0.1.0",
    declares=declarations,
)
