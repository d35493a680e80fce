"""Tasks and the grade: keep a knowledge graph true to what the agent is told.

The hand-written tasks: six kinds, four tasks each (three train, one test): record new facts, add an
observation, move a relation, forget an entity, correct an observation, and link every employee of an
organisation to a project (which needs reading the graph first). The generated ones (``generator.py``) add
questions answered by writing into the graph and the same updates at many parameters, with look-alikes.

Each task lists goal checks on the resulting graph; the score is the fraction met, minus half the fraction of
entities the episode destroyed that it was not asked to, minus half the fraction of ``keep`` checks (facts about
look-alikes that must survive) it broke. Every goal check is false at the start, so an episode's total reward
is its final score. Each step reports the parts as named scores (``goals``, weight 1, ``destroyed``, weight -0.5,
and for tasks with keep checks ``broken``, weight -0.5; see openenv-mcp's docs/rewards.md).

Check kinds: ``entity``/``no_entity`` (a name, with its type), ``observation``/``no_observation`` (an entity's
observation containing a text, case-insensitive), ``relation``/``no_relation``; ``answer``: the entity has exactly
one observation starting with ``prefix`` and the rest of it is ``value`` (case and spaces aside), so a list of
guesses fails; ``only``: every name in ``from`` has the relation ``type`` to ``to``, and nobody outside ``from``
and ``also`` (those who had it at the start) does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from memory_env.backends import Memory, SimMemory
from openenv_mcp import BoundCall, Grade, Observation, Task, TaskSet

__all__ = ["Check", "MemoryTask", "grade", "load_tasks", "parts", "passes", "score", "solve"]

Check = dict[str, str]


Graph = tuple[list[dict[str, Any]], list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class MemoryTask(Task):
    """A task: the graph an episode starts from, and the checks its end state must pass.

    A generated task carries ``build`` instead of ``entities`` and ``relations``: it draws the task's graph again
    when an episode opens (the same graph every time), so the task table holds no graphs. An ``exact`` task (mined
    from a prod session: ``openenv-mcp tasks mine``) starts from exactly its graph, with no unrelated people added.
    """

    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    goals: list[Check] = field(default_factory=list)
    mentions: frozenset[str] = frozenset()
    keep: list[Check] = field(default_factory=list)
    build: Callable[[], Graph] | None = None
    exact: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.mentions, frozenset):  # read back from JSON (OPENENV_EXTRA_TASKS) as a list
            object.__setattr__(self, "mentions", frozenset(self.mentions))

    def graph(self) -> Graph:
        """The entities and relations an episode starts from (before the sim's unrelated people)."""
        return self.build() if self.build is not None else (self.entities, self.relations)


_PEOPLE = ["Ada Park", "Ben Ortiz", "Carla Diaz", "Dev Patel", "Eva Rossi", "Femi Ade", "Gus Hale", "Hana Sato"]
_ORGS = ["Lumen Labs", "Northwind", "Orbit Foods", "Pine Bank"]
_CITIES = ["Oslo", "Lisbon", "Rome", "Quito", "Accra", "Hanoi", "Perth", "Riga"]
_FACTS = ["speaks Portuguese", "is allergic to peanuts", "prefers email to calls", "is training for a triathlon"]
_PROJECTS = ["Apollo", "Borealis", "Cobalt", "Delta"]


def _person(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def _thing(name: str, kind: str) -> dict[str, Any]:
    return {"name": name, "entityType": kind, "observations": []}


def _rel(a: str, b: str, kind: str) -> dict[str, str]:
    return {"from": a, "to": b, "relationType": kind}


def _split(i: int) -> str:
    return "test" if i == 3 else "train"


def _build() -> list[MemoryTask]:
    tasks = []
    for i in range(4):
        p, o, c = _PEOPLE[i], _ORGS[i], _CITIES[i]
        tasks.append(
            MemoryTask(
                id=f"record-{i}",
                split=_split(i),
                prompt=(
                    f"Record in the knowledge graph: {p} (entityType 'person') works at {o} (entityType "
                    f"'organization'), which is located in {c} (entityType 'city'). Use the relation types "
                    "'works_at' and 'located_in'."
                ),
                goals=[
                    {"kind": "entity", "name": p, "type": "person"},
                    {"kind": "entity", "name": o, "type": "organization"},
                    {"kind": "entity", "name": c, "type": "city"},
                    {"kind": "relation", "from": p, "to": o, "type": "works_at"},
                    {"kind": "relation", "from": o, "to": c, "type": "located_in"},
                ],
                mentions=frozenset({p, o, c}),
            )
        )
    for i in range(4):
        p, fact = _PEOPLE[i + 4], _FACTS[i]
        tasks.append(
            MemoryTask(
                id=f"observe-{i}",
                split=_split(i),
                prompt=f"{p} is already in the knowledge graph. Remember this about them: {p} {fact}.",
                entities=[_person(p, "joined in 2021")],
                goals=[{"kind": "observation", "name": p, "contains": fact.split(" ", 1)[1]}],
                mentions=frozenset({p}),
            )
        )
    for i in range(4):
        p, old, new = _PEOPLE[i], _CITIES[i + 4], _CITIES[(i + 5) % 8]
        tasks.append(
            MemoryTask(
                id=f"move-{i}",
                split=_split(i),
                prompt=(
                    f"{p} moved from {old} to {new}. Update the graph: {p} should have a 'lives_in' relation to "
                    f"{new} (a 'city' entity) and none to {old}. Keep the entity {old}."
                ),
                entities=[_person(p), _thing(old, "city")],
                relations=[_rel(p, old, "lives_in")],
                goals=[
                    {"kind": "entity", "name": new, "type": "city"},
                    {"kind": "relation", "from": p, "to": new, "type": "lives_in"},
                    {"kind": "no_relation", "from": p, "to": old, "type": "lives_in"},
                ],
                mentions=frozenset({p, old, new}),
            )
        )
    for i in range(4):
        p, o = _PEOPLE[i + 4], _ORGS[i]
        tasks.append(
            MemoryTask(
                id=f"forget-{i}",
                split=_split(i),
                prompt=f"Forget {p} entirely: remove them and every relation that involves them. Keep {o}.",
                entities=[_person(p, "asked to be forgotten"), _thing(o, "organization")],
                relations=[_rel(p, o, "works_at")],
                goals=[
                    {"kind": "no_entity", "name": p},
                    {"kind": "no_relation", "from": p, "to": o, "type": "works_at"},
                ],
                mentions=frozenset({p, o}),
            )
        )
    for i in range(4):
        p, year = _PEOPLE[(i + 2) % 8], 1980 + i
        tasks.append(
            MemoryTask(
                id=f"correct-{i}",
                split=_split(i),
                prompt=(
                    f"The observation 'born in {year}' on {p} is wrong: {p} was born in {year + 1}. "
                    "Correct it so that only the right year remains."
                ),
                entities=[_person(p, f"born in {year}", "lives near the coast")],
                goals=[
                    {"kind": "observation", "name": p, "contains": f"born in {year + 1}"},
                    {"kind": "no_observation", "name": p, "contains": f"born in {year}"},
                ],
                mentions=frozenset({p}),
            )
        )
    for i in range(4):
        o, other, project = _ORGS[i], _ORGS[(i + 1) % 4], _PROJECTS[i]
        staff = [_PEOPLE[(i + k) % 8] for k in (0, 3, 5)]
        others = [_PEOPLE[(i + k) % 8] for k in (1, 6)]
        tasks.append(
            MemoryTask(
                id=f"link-{i}",
                split=_split(i),
                prompt=(
                    f"Everyone who works at {o} (see the graph) now works on project {project}. Create {project} as "
                    f"an entity of type 'project' and add a 'works_on' relation from each of them to it."
                ),
                entities=[_thing(o, "organization"), _thing(other, "organization")]
                + [_person(name) for name in staff + others],
                relations=[_rel(name, o, "works_at") for name in staff]
                + [_rel(name, other, "works_at") for name in others],
                goals=[{"kind": "entity", "name": project, "type": "project"}]
                + [{"kind": "relation", "from": name, "to": project, "type": "works_on"} for name in staff],
                mentions=frozenset({o, other, project, *staff, *others}),
            )
        )
    return tasks


TIERS = {"record": "medium", "observe": "easy", "move": "medium", "forget": "easy", "correct": "medium", "link": "hard"}
"""The hand-written tasks' tiers, per kind: link reads the graph before four writes; observe and forget are one
change; the others two to five."""


def load_tasks() -> TaskSet:
    """The hand-written tasks (the environment serves these and the generated ones: ``generator.load_all``)."""
    return TaskSet(replace(task, difficulty=TIERS[task.id.split("-")[0]]) for task in _build())


def solve(task: MemoryTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution, from the goal checks: create what must exist, remove what must not, then link.

    Entities first (relations and observations need them), then deletions (an observation to remove is
    named by its exact text, found in the task's starting graph), then observations, then relations.
    """
    goals: dict[str, list[Check]] = {}
    for check in task.goals:
        goals.setdefault(check["kind"], []).append(check)
    calls: list[tuple[str, dict[str, Any]]] = []
    if asked := goals.get("answer"):  # a question: look at what it is about first
        calls.append(("open_nodes", {"names": sorted({c["name"] for c in asked})}))
    if made := goals.get("entity"):
        entities = [{"name": c["name"], "entityType": c["type"], "observations": []} for c in made]
        calls.append(("create_entities", {"entities": entities}))
    gone = [c["name"] for c in goals.get("no_entity", [])]
    if gone:  # which takes their relations with them
        calls.append(("delete_entities", {"entityNames": gone}))
    if unlinked := [c for c in goals.get("no_relation", []) if c["from"] not in gone and c["to"] not in gone]:
        relations = [_rel(c["from"], c["to"], c["type"]) for c in unlinked]
        calls.append(("delete_relations", {"relations": relations}))
    if wrong := goals.get("no_observation"):
        start = {e["name"]: e["observations"] for e in task.graph()[0]}
        deletions = [
            {"entityName": c["name"], "observations": [o for o in start.get(c["name"], []) if _has(o, c)]}
            for c in wrong
        ]
        calls.append(("delete_observations", {"deletions": deletions}))
    facts = [(c["name"], c["contains"]) for c in goals.get("observation", [])]
    facts += [(c["name"], f"{c['prefix']} {c['value']}") for c in goals.get("answer", [])]
    if facts:
        observations = [{"entityName": name, "contents": [text]} for name, text in facts]
        calls.append(("add_observations", {"observations": observations}))
    if linked := goals.get("relation"):
        calls.append(("create_relations", {"relations": [_rel(c["from"], c["to"], c["type"]) for c in linked]}))
    return calls


def _has(observation: str, check: Check) -> bool:
    """Whether ``observation`` is one an (no_)observation check looks for (as the grade matches them)."""
    return check["contains"].lower() in observation.lower()


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


def _norm(text: str) -> str:
    return text.strip().lower().replace(" ", "_")


def passes(check: Check, memory: SimMemory) -> bool:
    """Whether ``memory`` passes ``check``."""
    kind = check["kind"]
    if kind == "only":
        required = set(filter(None, check["from"].split("|")))
        allowed = required | set(filter(None, check["also"].split("|")))
        having = {
            r["from"]
            for r in memory.relations
            if r["to"] == check["to"] and _norm(r["relationType"]) == _norm(check["type"])
        }
        return required <= having and having <= allowed
    entity = next((e for e in memory.entities if e["name"] == check.get("name")), None)
    if kind == "entity":
        return entity is not None and _norm(entity["entityType"]) == _norm(check["type"])
    if kind == "no_entity":
        return entity is None
    if kind == "answer":
        prefix = check["prefix"].casefold()
        said = [o for o in (entity or {}).get("observations", []) if o.strip().casefold().startswith(prefix)]
        return len(said) == 1 and _words(said[0].strip()[len(prefix) :]) == _words(check["value"])
    if kind in ("observation", "no_observation"):
        seen = entity is not None and any(check["contains"].lower() in o.lower() for o in entity["observations"])
        return seen if kind == "observation" else entity is not None and not seen
    found = any(
        r["from"] == check["from"] and r["to"] == check["to"] and _norm(r["relationType"]) == _norm(check["type"])
        for r in memory.relations
    )
    return found if kind == "relation" else not found


def parts(task: MemoryTask, memory: SimMemory) -> dict[str, float]:
    """The score's parts: ``goals`` (the fraction of goal checks met), ``destroyed`` (the fraction of entities
    destroyed without being asked) and, for a task with keep checks, ``broken`` (the fraction of them broken)."""
    met = sum(passes(check, memory) for check in task.goals) / len(task.goals)
    asked = {check["name"] for check in task.goals if check["kind"] == "no_entity"}
    keep = memory.initial_names - asked
    names = {e["name"] for e in memory.entities}
    destroyed = len(keep - names) / len(keep) if keep else 0.0
    found = {"goals": met, "destroyed": destroyed}
    if task.keep:
        found["broken"] = sum(not passes(check, memory) for check in task.keep) / len(task.keep)
    return found


def score(task: MemoryTask, memory: SimMemory) -> float:
    """Goal checks met (a fraction), minus half the fraction of entities destroyed without being asked."""
    found = parts(task, memory)
    return found["goals"] - 0.5 * found["destroyed"] - 0.5 * found.get("broken", 0.0)


async def grade(task: MemoryTask, memory: Memory, call: BoundCall, observation: Observation) -> Grade:
    """Pay each step what it added to the score; the episode is done when every goal check passes."""
    if not isinstance(memory, SimMemory):  # grading runs on sim episodes only
        raise TypeError(f"grade needs a SimMemory, got {type(memory).__name__}")
    before = 0.0 if memory.last_score is None else memory.last_score
    found = parts(task, memory)
    # rounded like the rewards, so they add up to the final score (not 0.999999)
    now = round(found["goals"] - 0.5 * found["destroyed"] - 0.5 * found.get("broken", 0.0), 6)
    memory.last_score = now
    done = all(passes(check, memory) for check in task.goals)
    return Grade(reward=round(now - before, 6), done=done, scores=found)
