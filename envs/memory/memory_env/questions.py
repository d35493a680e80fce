"""Question families: read the graph, follow relations, and write the answer back into it.

The tools are the upstream memory server's, with no "answer" tool, so an answer is recorded in the graph, in a
form the prompt gives: an observation ``"<label>: <value>"`` on the entity the question is about (exactly one
observation with that label, so a list of guesses fails), or relations to an entity the task creates.

- ``lookup``: one relation (``the organization X works at``, ``the person X reports to``...);
- ``chain``: two (``the city where X's organization is located``, ``the organization owning X's project``...);
- ``path3``: three (``the city where the organization of X's manager is located``...);
- ``count``: how many people stand in a relation to an entity, directly or through an organization;
- ``collect``: create an event and invite everyone a condition picks (one or two relations away).

Level 0 has no look-alike; 1 and 2 add people who share a first name with the subject (with other answers), and
for counts people who *used to* work somewhere (``worked_at``), who must not be counted.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from memory_env.plans import Check, Plan, first_name, phrase
from memory_env.world import Graph, world

__all__ = ["chain", "collect", "count", "lookup", "path3"]

# relation path -> (label, what it names, phrased with {p})
PATHS: dict[tuple[str, ...], tuple[str, str]] = {
    ("works_at",): ("employer", "the organization {p} works at"),
    ("lives_in",): ("home city", "the city {p} lives in"),
    ("reports_to",): ("manager", "the person {p} reports to"),
    ("works_on",): ("project", "the project {p} works on"),
    ("works_at", "located_in"): ("office city", "the city where the organization {p} works at is located"),
    ("works_on", "owned_by"): ("project owner", "the organization that owns the project {p} works on"),
    ("reports_to", "lives_in"): ("manager's city", "the city where the person {p} reports to lives"),
    ("reports_to", "works_on"): ("manager's project", "the project that the person {p} reports to works on"),
    ("reports_to", "works_at", "located_in"): (
        "manager's office city",
        "the city where the organization of the person {p} reports to is located",
    ),
    ("works_on", "owned_by", "located_in"): (
        "project owner's city",
        "the city where the organization that owns {p}'s project is located",
    ),
}
ASK = (
    "Work out {what} from the knowledge graph, and record it as an observation on {p} of exactly the form "
    "'{label}: <name>'.",
    "Answer from the graph: what is {what}? Add the observation '{label}: <name>' to {p} (just one, in that form).",
    "Add one observation '{label}: <name>' to {p}, where <name> is {what} according to the graph.",
    "Using only what the graph holds, find {what} and note it on {p} as the observation '{label}: <name>'.",
)


def _walk(graph: Graph, start: str, path: tuple[str, ...]) -> str | None:
    node: str | None = start
    for kind in path:
        node = graph.one(node, kind) if node is not None else None
    return node


def _ask(rng: random.Random, test: bool, level: int, hops: int, family: str) -> Plan:
    graph = world(rng, test=test, orgs=3, staff=3)
    path = rng.choice([p for p in PATHS if len(p) == hops])
    subjects = [p for p in graph.people if _walk(graph, p, path) is not None]
    while not subjects:  # every person lacks the path (no project, say): give one a project
        person = rng.choice([p for p in graph.people if graph.one(p, "reports_to")])
        graph.link(person, rng.choice(graph.projects), "works_on")
        manager = graph.one(person, "reports_to")
        if manager is not None and graph.one(manager, "works_on") is None:
            graph.link(manager, rng.choice(graph.projects), "works_on")
        subjects = [p for p in graph.people if _walk(graph, p, path) is not None]
    subject = rng.choice(subjects)
    answer = _walk(graph, subject, path)
    assert answer is not None
    near = 0
    for _ in range(2 * level):
        twin = graph.person(rng.choice(graph.orgs), rng.choice(graph.cities), first=first_name(subject))
        if path[0] in ("reports_to", "works_on"):  # give the look-alike the path's first step too
            target = rng.choice([p for p in graph.people if p != twin and not graph.one(p, "reports_to")])
            graph.link(twin, target if path[0] == "reports_to" else rng.choice(graph.projects), path[0])
        near += 1
    label, what = PATHS[path]
    index, template = phrase(rng, ASK, test=test)
    return Plan(
        prompt=template.format(what=what.format(p=subject), p=subject, label=label),
        goals=[{"kind": "answer", "name": subject, "prefix": f"{label}:", "value": answer}],
        graph=graph,
        phrasing=f"{family}{index}",
        hops=hops,
        near=near,
    )


def lookup(rng: random.Random, *, test: bool, level: int) -> Plan:
    return _ask(rng, test, level, 1, "lookup")


def chain(rng: random.Random, *, test: bool, level: int) -> Plan:
    return _ask(rng, test, level, 2, "chain")


def path3(rng: random.Random, *, test: bool, level: int) -> Plan:
    return _ask(rng, test, level, 3, "path3")


COUNT = (
    "How many {who}? Count them in the graph and record the number on {e} as the observation '{label}: <number>'.",
    "Record on {e} the observation '{label}: <number>', giving how many {who} according to the graph.",
    "Count the {who_noun} in the knowledge graph and note the count on {e} as '{label}: <number>' (digits).",
    "From the graph, find how many {who}, then add '{label}: <number>' to {e} as a single observation.",
)


def count(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test, orgs=3, staff=rng.randrange(2, 5))
    kind = rng.choice(("headcount", "residents", "team") if level < 2 else ("headcount", "city staff"))
    near = 0
    if kind in ("headcount", "city staff"):
        org = rng.choice(graph.orgs)
        if level:  # people who used to work there: not counted
            for _ in range(level):
                former = graph.person(rng.choice([o for o in graph.orgs if o != org]), rng.choice(graph.cities))
                graph.link(former, org, "worked_at")
                near += 1
        if kind == "headcount":
            entity, value, hops = org, len(graph.sources(org, "works_at")), 1
            who, noun, label = f"people work at {org} now", f"current employees of {org}", "headcount"
        else:
            entity = graph.one(org, "located_in") or graph.cities[0]
            staffed = [o for o in graph.orgs if graph.one(o, "located_in") == entity]
            value, hops = sum(len(graph.sources(o, "works_at")) for o in staffed), 2
            who = f"people work at an organization located in {entity}"
            noun, label = f"people working at organizations located in {entity}", "local staff"
    elif kind == "residents":
        entity = rng.choice(graph.cities)
        value, hops = len(graph.sources(entity, "lives_in")), 1
        who, noun, label = f"people live in {entity}", f"residents of {entity}", "residents"
    else:
        entity = rng.choice(graph.projects)
        value, hops = len(graph.sources(entity, "works_on")), 1
        who, noun, label = f"people work on project {entity}", f"people working on project {entity}", "team size"
    index, template = phrase(rng, COUNT, test=test)
    return Plan(
        prompt=template.format(who=who, who_noun=noun, e=entity, label=label),
        goals=[{"kind": "answer", "name": entity, "prefix": f"{label}:", "value": str(value)}],
        graph=graph,
        phrasing=f"count{index}",
        hops=hops,
        near=near,
    )


COLLECT = (
    "Create an entity '{event}' of type 'event' and add a relation 'invited_to' from every person who {rule} to it "
    "(nobody else).",
    "Everyone who {rule} is invited to {event}. Record it: create {event} (entityType 'event') and an 'invited_to' "
    "relation from each of them to it, and from no one else.",
    "Add the event '{event}' (type 'event') to the graph and link exactly the people who {rule} to it with "
    "'invited_to'.",
    "Invite to '{event}' (a new 'event' entity) each person who {rule}: one 'invited_to' relation per person, to "
    "the event, for them only.",
)
EVENTS = ("Summer Offsite", "Safety Training", "Spring Hackathon", "Leadership Retreat", "Data Workshop", "Town Hall")


def collect(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test, orgs=3, staff=3)
    rules = ["org", "project", "manager"] if level == 0 else ["org city", "org and city", "project org"]
    rule = rng.choice(rules)
    pick, text, hops = _rule(graph, rng, rule)
    while not pick(graph):  # nobody matches: draw the rule's parameters again
        pick, text, hops = _rule(graph, rng, rule)
    members = pick(graph)
    near = 0
    for member in rng.sample(members, min(len(members), level)):
        graph.person(rng.choice(graph.orgs), rng.choice(graph.cities), first=first_name(member))
        near += 1
    picked = set(pick(graph))  # a look-alike may match the rule too: then it is a member
    event = f"{rng.choice(EVENTS)} {rng.randrange(2024, 2027)}"
    index, template = phrase(rng, COLLECT, test=test)
    goals: list[Check] = [{"kind": "entity", "name": event, "type": "event"}]
    goals += [{"kind": "relation", "from": p, "to": event, "type": "invited_to"} for p in sorted(picked)]
    goals.append({"kind": "only", "to": event, "type": "invited_to", "from": "|".join(sorted(picked)), "also": ""})
    return Plan(
        prompt=template.format(event=event, rule=text),
        goals=goals,
        graph=graph,
        phrasing=f"collect{index}",
        hops=hops,
        near=near,
    )


def _rule(graph: Graph, rng: random.Random, rule: str) -> tuple[Callable[[Graph], list[str]], str, int]:
    """A condition on people: how to pick them from a graph, how the prompt says it, and its relations."""
    if rule == "org":
        org = rng.choice(graph.orgs)
        return lambda g: g.sources(org, "works_at"), f"works at {org}", 1
    if rule == "project":
        project = rng.choice(graph.projects)
        return lambda g: g.sources(project, "works_on"), f"works on project {project}", 1
    if rule == "manager":
        manager = rng.choice([p for p in graph.people if not graph.one(p, "reports_to")])
        return lambda g: g.sources(manager, "reports_to"), f"reports to {manager}", 1
    if rule == "org city":
        city = rng.choice(graph.cities)

        def local(g: Graph) -> list[str]:
            return [p for o in g.orgs if g.one(o, "located_in") == city for p in g.sources(o, "works_at")]

        return local, f"works at an organization located in {city}", 2
    if rule == "org and city":
        org, city = rng.choice(graph.orgs), rng.choice(graph.cities)
        return (
            lambda g: [p for p in g.sources(org, "works_at") if g.one(p, "lives_in") == city],
            f"works at {org} and lives in {city}",
            2,
        )
    project = rng.choice(graph.projects)

    def owners(g: Graph) -> list[str]:
        owner = g.one(project, "owned_by")
        return g.sources(owner, "works_at") if owner else []

    return owners, f"works at the organization that owns project {project}", 2
