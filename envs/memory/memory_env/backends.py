"""The knowledge graph behind the tools: one protocol, a sim and a prod implementation.

Sim: an in-memory graph per episode with the upstream server's semantics (which entities a
create skips, what a delete removes, how search matches), seeded from the task and the seed.
Prod: the upstream MCP memory server itself, every call forwarded to it.
"""

from __future__ import annotations

import copy
import json
import random
import shlex
from pathlib import Path
from typing import Any, Protocol

from openenv_mcp import Backend, ConfigError, Toolbox, ToolFailed
from openenv_mcp.backends.upstream import UpstreamServer

__all__ = ["INSTALL_HINT", "Memory", "SimMemory", "UpstreamMemory", "open_prod", "open_sim"]

INSTALL_HINT = (
    "npm install -g @modelcontextprotocol/server-memory@2026.8.31 (or 'npm ci' in envs/memory and set "
    "MEMORY_UPSTREAM_COMMAND=envs/memory/node_modules/.bin/mcp-server-memory)"
)


class Memory(Backend, Protocol):
    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


def _same_relation(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a["from"] == b["from"] and a["to"] == b["to"] and a["relationType"] == b["relationType"])


class SimMemory:
    """One episode's knowledge graph, in memory."""

    def __init__(self, entities: list[dict[str, Any]], relations: list[dict[str, Any]]) -> None:
        self.entities = copy.deepcopy(entities)
        self.relations = copy.deepcopy(relations)
        self.last_score: float | None = None  # the grade's memory: the score after the previous step
        self.initial_names: set[str] = {e["name"] for e in entities}

    def graph(self) -> dict[str, Any]:
        return {"entities": copy.deepcopy(self.entities), "relations": copy.deepcopy(self.relations)}

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return getattr(self, f"_{tool}")(**copy.deepcopy(arguments))  # type: ignore[no-any-return]

    def _create_entities(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        names = {e["name"] for e in self.entities}
        new = [dict(e) for e in entities if e["name"] not in names]
        self.entities += copy.deepcopy(new)
        return {"entities": new}

    def _create_relations(self, relations: list[dict[str, Any]]) -> dict[str, Any]:
        new = [dict(r) for r in relations if not any(_same_relation(r, old) for old in self.relations)]
        self.relations += copy.deepcopy(new)
        return {"relations": new}

    def _add_observations(self, observations: list[dict[str, Any]]) -> dict[str, Any]:
        entities = copy.deepcopy(self.entities)  # all or nothing, as upstream: a missing entity changes nothing
        results = []
        for item in observations:
            entity = next((e for e in entities if e["name"] == item["entityName"]), None)
            if entity is None:
                raise ToolFailed(f"Entity with name {item['entityName']} not found")
            new = [c for c in item["contents"] if c not in entity["observations"]]
            entity["observations"] += new
            results.append({"entityName": item["entityName"], "addedObservations": new})
        self.entities = entities
        return {"results": results}

    def _delete_entities(self, entityNames: list[str]) -> dict[str, Any]:
        self.entities = [e for e in self.entities if e["name"] not in entityNames]
        self.relations = [r for r in self.relations if r["from"] not in entityNames and r["to"] not in entityNames]
        return {"success": True, "message": "Entities deleted successfully"}

    def _delete_observations(self, deletions: list[dict[str, Any]]) -> dict[str, Any]:
        for item in deletions:
            entity = next((e for e in self.entities if e["name"] == item["entityName"]), None)
            if entity is not None:
                entity["observations"] = [o for o in entity["observations"] if o not in item["observations"]]
        return {"success": True, "message": "Observations deleted successfully"}

    def _delete_relations(self, relations: list[dict[str, Any]]) -> dict[str, Any]:
        self.relations = [r for r in self.relations if not any(_same_relation(r, d) for d in relations)]
        return {"success": True, "message": "Relations deleted successfully"}

    def _read_graph(self) -> dict[str, Any]:
        return self.graph()

    def _search_nodes(self, query: str) -> dict[str, Any]:
        q = query.lower()
        found = [
            e
            for e in self.entities
            if q in e["name"].lower() or q in e["entityType"].lower() or any(q in o.lower() for o in e["observations"])
        ]
        return self._subgraph(found)

    def _open_nodes(self, names: list[str]) -> dict[str, Any]:
        return self._subgraph([e for e in self.entities if e["name"] in names])

    def _subgraph(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        names = {e["name"] for e in entities}
        relations = [r for r in self.relations if r["from"] in names or r["to"] in names]
        return copy.deepcopy({"entities": entities, "relations": relations})

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        self.entities, self.relations = [], []


class UpstreamMemory:
    """The upstream MCP memory server: every call forwarded, its answer returned as it came."""

    def __init__(self, upstream: UpstreamServer) -> None:
        self.upstream = upstream

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.upstream.call(tool, arguments)
        if not isinstance(result, dict):
            raise ToolFailed(f"{tool}: the upstream answered without structured content: {str(result)[:200]}")
        return result

    async def ping(self) -> None:
        await self.upstream.ping()

    async def aclose(self) -> None:
        await self.upstream.aclose()


_PEOPLE = ["Iris Vogel", "Omar Haddad", "Lena Berg", "Tomas Novak", "Priya Raman", "Kofi Mensah", "Sara Lind"]
_ORGS = ["Harbor Analytics", "Bluefin Robotics", "Cedar Health", "Quill Press"]
_TRAITS = ["likes chess", "runs marathons", "plays the cello", "collects stamps", "speaks Finnish"]


async def open_sim(task: Any, seed: int, settings: Any) -> SimMemory:
    """A fresh graph for one episode: the task's graph plus unrelated people drawn from ``seed`` (none for an
    ``exact`` task: a mined one starts from the graph prod held)."""
    rng = random.Random(seed)
    start_entities, start_relations = task.graph()
    if task.exact:
        return SimMemory(start_entities, start_relations)
    entities = copy.deepcopy(start_entities)
    relations = copy.deepcopy(start_relations)
    taken = {e["name"] for e in entities} | task.mentions
    for name in rng.sample(_PEOPLE, k=min(settings.distractors, len(_PEOPLE))):
        if name in taken:
            continue
        entities.append({"name": name, "entityType": "person", "observations": [rng.choice(_TRAITS)]})
        relations.append({"from": name, "to": rng.choice(_ORGS), "relationType": "works_at"})
    for org in sorted({r["to"] for r in relations if r["to"] in _ORGS} - {e["name"] for e in entities}):
        entities.append({"name": org, "entityType": "organization", "observations": []})
    memory = SimMemory(entities, relations)
    memory.initial_names = {e["name"] for e in entities}
    return memory


async def open_prod(settings: Any, *, declared: Toolbox[Any]) -> UpstreamMemory:
    """Start (or reach) the upstream memory server and check it lists exactly the ``declared`` tools."""
    headers: dict[str, str] = {}
    if settings.upstream_headers is not None:
        try:
            headers = {str(k): str(v) for k, v in json.loads(settings.upstream_headers.get_secret_value()).items()}
        except (ValueError, AttributeError):
            raise ConfigError("MemorySettings: MEMORY_UPSTREAM_HEADERS must be a JSON object of header names") from None
    # The upstream reads MEMORY_FILE_PATH and resolves a relative one against its own install folder.
    env = {"MEMORY_FILE_PATH": str(Path(settings.file_path).expanduser().resolve())}
    if settings.upstream_url:
        upstream = await UpstreamServer.open(
            name="memory", url=settings.upstream_url, headers=headers, declared=declared, timeout=settings.timeout
        )
    else:
        upstream = await UpstreamServer.open(
            name="memory",
            command=shlex.split(settings.upstream_command),
            env=env,
            declared=declared,
            install_hint=INSTALL_HINT,
            timeout=settings.timeout,
        )
    return UpstreamMemory(upstream)
