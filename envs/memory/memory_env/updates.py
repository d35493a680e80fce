"""Update families: change the graph as the agent is told, and leave the look-alikes alone.

- ``record``: a new person (and sometimes a new city) with two to five facts about them;
- ``observe``: new observations about one to three people already in the graph;
- ``move``: someone moved city or changed employer, or an organization relocated (old relation gone, new one in);
- ``forget``: remove a person and their relations, or only one relation of theirs;
- ``correct``: replace a wrong observation with the right one;
- ``link``: a project (new or existing) for everyone a condition picks (``works_on`` relations).

Level 1 and 2 add people who share a first name with the person the task is about; where they hold the same
fact (the same wrong observation, the same city), a ``keep`` check says it must survive.
"""

from __future__ import annotations

import random

from memory_env.plans import Check, Plan, first_name, phrase
from memory_env.world import Graph, world

__all__ = ["correct", "forget", "link", "move", "observe", "record"]

NEWS = [
    "speaks Greek", "is learning Japanese", "volunteers at a food bank", "sings in a choir", "has a pilot licence",
    "is training for a triathlon", "prefers email to calls", "is allergic to shellfish", "mentors new hires",
    "grew up in Canada", "is on parental leave until March", "holds a forklift licence",
]  # fmt: skip


def _twins(graph: Graph, rng: random.Random, person: str, level: int) -> list[str]:
    """``level`` look-alikes of ``person`` (same first name), somewhere in the graph."""
    return [
        graph.person(rng.choice(graph.orgs), rng.choice(graph.cities), first=first_name(person)) for _ in range(level)
    ]


RECORD = (
    "Record in the knowledge graph: {facts}. Use the entity types 'person' and 'city' and the relation types "
    "'works_at', 'lives_in' and 'works_on'.",
    "Add what you were just told to the graph: {facts}. (Entity types 'person', 'city'; relations 'works_at', "
    "'lives_in', 'works_on'.)",
    "Update the graph with this news: {facts}. Relations: 'works_at', 'lives_in', 'works_on'; types 'person', 'city'.",
    "Please store these facts in the graph: {facts}. Model them with 'works_at', 'lives_in' and 'works_on', and "
    "the types 'person' and 'city'.",
)


def record(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test)
    name = graph.new_person()
    graph.reserved.add(name)
    org = rng.choice(graph.orgs)
    city = rng.choice(graph.spare_cities if rng.random() < 0.5 else graph.cities)
    facts = [f"{name} has joined {org}", f"{name} lives in {city}"]
    goals: list[Check] = [
        {"kind": "entity", "name": name, "type": "person"},
        {"kind": "relation", "from": name, "to": org, "type": "works_at"},
        {"kind": "relation", "from": name, "to": city, "type": "lives_in"},
    ]
    if city in graph.spare_cities:
        goals.append({"kind": "entity", "name": city, "type": "city"})
    if level:
        project = rng.choice(graph.projects)
        facts.append(f"{name} works on project {project}")
        goals.append({"kind": "relation", "from": name, "to": project, "type": "works_on"})
    if level == 2:
        news = rng.choice(NEWS)
        facts.append(f"{name} {news}")
        goals.append({"kind": "observation", "name": name, "contains": news})
    near = len(_twins(graph, rng, name, level))
    index, template = phrase(rng, RECORD, test=test)
    text = ", ".join(facts[:-1]) + " and " + facts[-1]
    return Plan(prompt=template.format(facts=text), goals=goals, graph=graph, phrasing=f"record{index}", near=near)


OBSERVE = (
    "Remember these facts, as observations on the people already in the graph: {facts}.",
    "Add observations to the graph for what you learnt today: {facts}.",
    "The following is new about people in the knowledge graph; record each as an observation: {facts}.",
    "Store as observations on the existing entities: {facts}.",
)


def observe(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test)
    people = rng.sample(graph.people, 1 + level)
    news = rng.sample(NEWS, len(people))
    goals: list[Check] = [{"kind": "observation", "name": p, "contains": n} for p, n in zip(people, news, strict=True)]
    keep: list[Check] = []
    for p, n in zip(people, news, strict=True):
        for twin in _twins(graph, rng, p, min(level, 1)):
            keep.append({"kind": "no_observation", "name": twin, "contains": n})
    index, template = phrase(rng, OBSERVE, test=test)
    facts = "; ".join(f"{p} {n}" for p, n in zip(people, news, strict=True))
    return Plan(
        prompt=template.format(facts=facts),
        goals=goals,
        graph=graph,
        phrasing=f"observe{index}",
        near=len(keep),
        keep=keep,
    )


MOVE = (
    "{news}. Update the graph: the old '{kind}' relation goes, the new one comes in (create '{new}' as a '{type}' "
    "if it is missing), and '{old}' stays in the graph.",
    "Keep the graph current: {news}. Replace the '{kind}' relation accordingly ('{new}' is a '{type}'; keep '{old}').",
    "{news}. Change the '{kind}' relation in the graph to match, creating the {type} '{new}' if needed and keeping "
    "'{old}'.",
    "News: {news}. Make the graph say so with '{kind}' (add the {type} '{new}' when absent), without deleting '{old}'.",
)


def move(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test)
    what = rng.choice(("home", "job", "office"))
    keep: list[Check] = []
    if what == "office":
        who = rng.choice(graph.orgs)
        old, new, kind, kind_type = graph.one(who, "located_in"), rng.choice(graph.spare_cities), "located_in", "city"
        news = f"{who} has relocated from {old} to {new}"
    elif what == "home":
        who = rng.choice(graph.people)
        old, kind, kind_type = graph.one(who, "lives_in"), "lives_in", "city"
        new = rng.choice([c for c in graph.cities + graph.spare_cities if c != old])
        news = f"{who} has moved from {old} to {new}"
    else:
        who = rng.choice(graph.people)
        old, kind, kind_type = graph.one(who, "works_at"), "works_at", "organization"
        new = rng.choice([o for o in graph.orgs + graph.spare_orgs if o != old])
        news = f"{who} has left {old} and now works at {new}"
    assert old is not None
    near = 0
    if what != "office":
        for twin in _twins(graph, rng, who, level):
            graph.relations = [r for r in graph.relations if not (r["from"] == twin and r["relationType"] == kind)]
            graph.link(twin, old, kind)  # the look-alike stays where the subject was
            keep.append({"kind": "relation", "from": twin, "to": old, "type": kind})
            near += 1
    goals: list[Check] = [
        {"kind": "entity", "name": new, "type": kind_type},
        {"kind": "relation", "from": who, "to": new, "type": kind},
        {"kind": "no_relation", "from": who, "to": old, "type": kind},
    ]
    if any(e["name"] == new for e in graph.entities):
        goals = goals[1:]  # it exists already: nothing to create
    index, template = phrase(rng, MOVE, test=test)
    prompt = template.format(news=news, kind=kind, new=new, type=kind_type, old=old)
    return Plan(prompt[0].upper() + prompt[1:], goals, graph, f"move{index}", near=near, keep=keep)


FORGET = (
    "Forget {p} entirely: remove them and every relation that involves them. Keep everyone else.",
    "{p} asked to be removed from the knowledge graph. Delete them and their relations, and nothing else.",
    "Remove {p} and all of their relations from the graph; other people stay.",
    "Erase {p} from memory (the entity and all its relations), leaving every other entity in place.",
)
UNLINK = (
    "{p} no longer works on project {project}. Remove that relation only; keep {p} and their other relations.",
    "Update the graph: {p} has left project {project}. Delete just that 'works_on' relation.",
    "Take {p} off project {project} in the graph (the 'works_on' relation), changing nothing else.",
    "{p} stopped working on {project}: drop that one relation and keep the rest about {p}.",
)


def forget(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test)
    on_projects = [p for p in graph.people if graph.one(p, "works_on")]
    if on_projects and rng.random() < 0.4:
        person = rng.choice(on_projects)
        project = graph.one(person, "works_on")
        assert project is not None
        goals: list[Check] = [{"kind": "no_relation", "from": person, "to": project, "type": "works_on"}]
        employer = graph.one(person, "works_at") or ""
        keep: list[Check] = [{"kind": "relation", "from": person, "to": employer, "type": "works_at"}]
        near = 0
        for twin in _twins(graph, rng, person, level):
            graph.link(twin, project, "works_on")
            keep.append({"kind": "relation", "from": twin, "to": project, "type": "works_on"})
            near += 1
        index, template = phrase(rng, UNLINK, test=test)
        return Plan(template.format(p=person, project=project), goals, graph, f"unlink{index}", near=near, keep=keep)
    person = rng.choice(graph.people)
    goals = [{"kind": "no_entity", "name": person}]
    goals += [
        {"kind": "no_relation", "from": r["from"], "to": r["to"], "type": r["relationType"]}
        for r in graph.relations
        if person in (r["from"], r["to"])
    ][: 1 + level]
    near = len(_twins(graph, rng, person, level))
    index, template = phrase(rng, FORGET, test=test)
    return Plan(template.format(p=person), goals, graph, f"forget{index}", near=near)


CORRECT = (
    "The observation '{old}' on {p} is wrong: {p} {right}. Correct it so that only the right one remains.",
    "Fix the graph: {p}'s observation '{old}' is a mistake, the truth is that {p} {right}.",
    "{p} {right}, not what the graph says ('{old}'). Replace that observation.",
    "Correction for {p}: drop the observation '{old}' and record instead that {p} {right}.",
)
SWAPS = [
    ("speaks Italian", "speaks Spanish"), ("plays the violin", "plays the cello"), ("studied law", "studied medicine"),
    ("keeps bees", "keeps chickens"), ("is vegetarian", "is vegan"), ("collects vinyl records", "collects stamps"),
]  # fmt: skip


def correct(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test)
    person = rng.choice(graph.people)
    entity = graph.entity(person)
    if rng.random() < 0.5:
        year = rng.randrange(1960, 2000)
        old, right = f"born in {year}", f"born in {year + rng.choice((1, -1, 10))}"
        told = f"was {right}"
    else:
        old, right = rng.choice(SWAPS)
        told = right
    entity["observations"] = [old]
    keep: list[Check] = []
    for twin in _twins(graph, rng, person, level):
        graph.entity(twin)["observations"] = [old]  # the same observation, true of the look-alike
        keep.append({"kind": "observation", "name": twin, "contains": old})
    goals: list[Check] = [
        {"kind": "observation", "name": person, "contains": right},
        {"kind": "no_observation", "name": person, "contains": old},
    ]
    index, template = phrase(rng, CORRECT, test=test)
    prompt = template.format(p=person, old=old, right=told)
    return Plan(prompt, goals, graph, f"correct{index}", near=len(keep), keep=keep)


LINK = (
    "Everyone who {rule} now works on project {project}. Add a 'works_on' relation from each of them to {project}"
    "{create}.",
    "Put everyone who {rule} on project {project}: one 'works_on' relation each{create}, nobody else.",
    "Project {project} takes on every person who {rule}. Record that with 'works_on' relations{create}.",
    "Link each person who {rule} to project {project} with 'works_on'{create}; leave the others as they are.",
)


def link(rng: random.Random, *, test: bool, level: int) -> Plan:
    graph = world(rng, test=test)
    org = rng.choice(graph.orgs)
    staff = graph.sources(org, "works_at")
    if level < 2:
        members, rule, hops = staff, f"works at {org}", 1
    else:
        city = rng.choice([graph.one(p, "lives_in") or "" for p in staff])
        members = [p for p in staff if graph.one(p, "lives_in") == city]
        rule, hops = f"works at {org} and lives in {city}", 2
    project = rng.choice(graph.projects)
    already = set(graph.sources(project, "works_on"))
    if rng.random() < 0.5 or not set(members) - already:  # a new project (nobody is on it yet)
        project, already = rng.choice(graph.spare_projects), set()
    members = sorted(set(members) - already)
    near = 0
    for member in rng.sample(members, min(level, len(members))):
        others = [o for o in graph.orgs if o != org]
        graph.person(rng.choice(others), rng.choice(graph.cities), first=first_name(member))
        near += 1
    goals: list[Check] = [{"kind": "relation", "from": m, "to": project, "type": "works_on"} for m in members]
    create = ""
    if project in graph.spare_projects:
        goals.insert(0, {"kind": "entity", "name": project, "type": "project"})
        create = f" (create {project} as a 'project' entity first)"
    goals.append(
        {
            "kind": "only",
            "to": project,
            "type": "works_on",
            "from": "|".join(members),
            "also": "|".join(sorted(already)),
        }
    )
    index, template = phrase(rng, LINK, test=test)
    prompt = template.format(rule=rule, project=project, create=create)
    return Plan(prompt, goals, graph, f"link{index}", hops=hops, near=near)
