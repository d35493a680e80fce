"""The nine tools of the MCP reference memory server, declared here with the upstream's exact interface.

Names, titles, descriptions, input schemas and annotations equal the upstream's ``tools/list``
(``data/upstream_tools.json`` records it; a test compares it with the real server). Arguments are
validated by the signatures below, which take exactly the schemas' properties.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any, cast

from typing_extensions import TypedDict

from memory_env.backends import Memory
from openenv_mcp import Toolbox

__all__ = ["UPSTREAM_TOOLS", "tools"]

UPSTREAM_TOOLS: dict[str, dict[str, Any]] = {
    tool["name"]: tool
    for tool in json.loads(files("memory_env").joinpath("data/upstream_tools.json").read_text(encoding="utf-8"))
}

tools: Toolbox[Memory] = Toolbox("memory")


class Entity(TypedDict):
    name: str
    entityType: str
    observations: list[str]


Relation = TypedDict("Relation", {"from": str, "to": str, "relationType": str})


class ObservationAddition(TypedDict):
    entityName: str
    contents: list[str]


class ObservationDeletion(TypedDict):
    entityName: str
    observations: list[str]


class AddedObservations(TypedDict):
    entityName: str
    addedObservations: list[str]


class Entities(TypedDict):
    entities: list[Entity]


class Relations(TypedDict):
    relations: list[Relation]


class Added(TypedDict):
    results: list[AddedObservations]


class Done(TypedDict):
    success: bool
    message: str


class Graph(TypedDict):
    entities: list[Entity]
    relations: list[Relation]


def _upstream(name: str) -> dict[str, Any]:
    tool = UPSTREAM_TOOLS[name]
    hints = tool["annotations"]
    return {
        "title": tool["title"],
        "read_only": hints["readOnlyHint"],
        "destructive": hints["destructiveHint"],
        "idempotent": hints["idempotentHint"],
        "open_world": hints["openWorldHint"],
        "input_schema": tool["inputSchema"],
    }


@tools.tool(**_upstream("create_entities"))
async def create_entities(memory: Memory, entities: list[Entity]) -> Entities:
    """Create multiple new entities in the knowledge graph"""
    return cast(Entities, await memory.call("create_entities", {"entities": entities}))


@tools.tool(**_upstream("create_relations"))
async def create_relations(memory: Memory, relations: list[Relation]) -> Relations:
    """Create multiple new relations between entities in the knowledge graph. Relations should be in active voice"""
    return cast(Relations, await memory.call("create_relations", {"relations": relations}))


@tools.tool(**_upstream("add_observations"))
async def add_observations(memory: Memory, observations: list[ObservationAddition]) -> Added:
    """Add new observations to existing entities in the knowledge graph"""
    return cast(Added, await memory.call("add_observations", {"observations": observations}))


@tools.tool(**_upstream("delete_entities"))
async def delete_entities(memory: Memory, entityNames: list[str]) -> Done:
    """Delete multiple entities and their associated relations from the knowledge graph"""
    return cast(Done, await memory.call("delete_entities", {"entityNames": entityNames}))


@tools.tool(**_upstream("delete_observations"))
async def delete_observations(memory: Memory, deletions: list[ObservationDeletion]) -> Done:
    """Delete specific observations from entities in the knowledge graph"""
    return cast(Done, await memory.call("delete_observations", {"deletions": deletions}))


@tools.tool(**_upstream("delete_relations"))
async def delete_relations(memory: Memory, relations: list[Relation]) -> Done:
    """Delete multiple relations from the knowledge graph"""
    return cast(Done, await memory.call("delete_relations", {"relations": relations}))


@tools.tool(**_upstream("read_graph"))
async def read_graph(memory: Memory) -> Graph:
    """Read the entire knowledge graph"""
    return cast(Graph, await memory.call("read_graph", {}))


@tools.tool(**_upstream("search_nodes"))
async def search_nodes(memory: Memory, query: str) -> Graph:
    """Search for nodes in the knowledge graph based on a query"""
    return cast(Graph, await memory.call("search_nodes", {"query": query}))


@tools.tool(**_upstream("open_nodes"))
async def open_nodes(memory: Memory, names: list[str]) -> Graph:
    """Open specific nodes in the knowledge graph by their names"""
    return cast(Graph, await memory.call("open_nodes", {"names": names}))
