"""What memory declares for openenv-mcp: how parity stages the upstream's graph, how a recorded prod session becomes
a task, and what its container and a cluster need (prod runs the npm upstream, whose graph is one file)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from memory_env.backends import SimMemory
from memory_env.tasks import Check, MemoryTask, passes
from openenv_mcp import Task, ToolFailed
from openenv_mcp.environment.declarations import (
    ClusterNeeds,
    ContainerNeeds,
    Declarations,
    Mining,
    Parity,
    Recorded,
    Rejected,
    Side,
)

__all__ = ["declarations", "goals_between", "mine_session", "stage"]


async def stage(sim: Side, prod: Side) -> None:
    """The upstream memory server's graph becomes the episode's: every relation and entity it holds is deleted, then
    the sim's entities and relations are created (one read_graph step in the sim episode, which earns nothing)."""
    start = await sim("read_graph", {})
    held = await prod("read_graph", {})
    if held["relations"]:  # first: a relation between names that are no entities outlives delete_entities
        await prod("delete_relations", {"relations": held["relations"]})
    names = [entity["name"] for entity in held["entities"]]
    if names:
        await prod("delete_entities", {"entityNames": names})
    if start["entities"]:
        await prod("create_entities", {"entities": start["entities"]})
    if start["relations"]:
        await prod("create_relations", {"relations": start["relations"]})


def _key(relation: Mapping[str, Any]) -> tuple[str, str, str]:
    return relation["from"], relation["to"], relation["relationType"]


def goals_between(start: SimMemory, end: SimMemory) -> list[Check]:
    """The goal checks that tell ``end`` from ``start``: entities made and removed, observations added and removed,
    relations made and removed (a relation of a removed entity goes with it)."""
    before = {e["name"]: e for e in start.entities}
    after = {e["name"]: e for e in end.entities}
    goals: list[Check] = []
    for name, entity in after.items():
        if name not in before:
            goals.append({"kind": "entity", "name": name, "type": entity["entityType"]})
        had = before[name]["observations"] if name in before else []
        goals += [{"kind": "observation", "name": name, "contains": o} for o in entity["observations"] if o not in had]
        if name in before:
            goals += [
                {"kind": "no_observation", "name": name, "contains": o} for o in had if o not in entity["observations"]
            ]
    gone = [name for name in before if name not in after]
    goals += [{"kind": "no_entity", "name": name} for name in gone]
    old, new = {_key(r) for r in start.relations}, {_key(r) for r in end.relations}
    goals += [{"kind": "relation", "from": a, "to": b, "type": t} for a, b, t in sorted(new - old)]
    goals += [
        {"kind": "no_relation", "from": a, "to": b, "type": t}
        for a, b, t in sorted(old - new)
        if a not in gone and b not in gone
    ]
    return goals


def _apply(memory: SimMemory, tool: str, arguments: Mapping[str, Any]) -> None:
    """Play one recorded call on ``memory`` with the upstream's semantics (a call the upstream refused changes
    nothing there, and here)."""
    with contextlib.suppress(ToolFailed):  # all or nothing, as upstream: the replay checks the sim refuses it too
        getattr(memory, f"_{tool}")(**copy.deepcopy(dict(arguments)))


def mine_session(template: Task, session: Recorded, task_id: str, prompt: str) -> tuple[Task, int]:
    """A task that starts from the graph prod held when the session opened (the recorded ``read_graph``) and whose
    goal checks are what the session changed in it; its reference is the session's calls up to the one after which
    every check passes."""
    if session.opening is None:
        raise Rejected(
            "the recording holds no opening graph for this session (record over an MCP session with this version, "
            "which reads the graph when a session opens): the start is unknown"
        )
    graph = session.opening.get("structured_content")
    if session.opening.get("is_error") or not isinstance(graph, dict):
        raise Rejected(f"the opening read_graph failed in prod: {str(session.opening.get('text'))[:200]}")
    calls = session.calls
    start = SimMemory(graph["entities"], graph["relations"])
    end = SimMemory(graph["entities"], graph["relations"])
    for call in calls:
        _apply(end, str(call["tool"]), call["arguments"])
    goals = goals_between(start, end)
    if not goals:
        raise Rejected("the session left the graph as it found it: there is nothing to grade")
    task = MemoryTask(
        id=task_id,
        split="train",
        prompt=prompt,
        entities=graph["entities"],
        relations=graph["relations"],
        goals=goals,
        mentions=frozenset(str(check["name"]) for check in goals if "name" in check),
        exact=True,
    )
    steps = _done_after(task, calls)
    return _tiered(task, steps), steps


def _done_after(task: MemoryTask, calls: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``calls`` it takes until every goal check passes (the episode ends there)."""
    memory = SimMemory(task.entities, task.relations)
    for number, call in enumerate(calls, start=1):
        _apply(memory, str(call["tool"]), call["arguments"])
        if all(passes(check, memory) for check in task.goals):
            return number
    return len(calls)  # not reached: the replay says so


def _tiered(task: MemoryTask, steps: int) -> MemoryTask:
    return replace(task, difficulty="easy" if steps <= 2 else "medium" if steps <= 5 else "hard")


declarations = Declarations(
    parity=Parity(stage=stage),
    mining=Mining(miner=mine_session, opening=("read_graph", {})),
    # prod runs the npm upstream inside the server's container (Node.js), and keeps its graph on a volume
    container=ContainerNeeds(
        system_packages=("nodejs", "npm"),
        prod_environment={"MEMORY_FILE_PATH": "/data/graph.jsonl"},
        prod_volumes={"memory-graph": "/data"},
    ),
    cluster=ClusterNeeds(
        prod_replicas=1,
        why="the upstream keeps the graph in one file that one process owns: two replicas would keep two graphs",
    ),
)
"""memory's declarations (``Environment.declares``)."""
