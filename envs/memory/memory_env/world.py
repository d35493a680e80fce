"""The small knowledge graphs generated tasks start from: people, organizations, cities and projects.

:func:`world` draws one from a seeded :class:`random.Random`: organizations located in cities, people who work at
them (one manager per organization, the others reporting to them), live in cities and work on projects owned by
organizations, each with an observation or two. ``near`` adds look-alikes: people who share a first name with
someone the task is about, with other facts. Held-out names: test tasks draw organizations and projects only from
the held-out quarter of those pools, train tasks never do. No name here is one the sim adds as unrelated
people (``backends.open_sim``), so the answers never depend on an episode's seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Graph", "world"]

_FIRST = [
    "Abel", "Adele", "Anouk", "Arjun", "Bea", "Boris", "Cyrus", "Dalia", "Edwin", "Elif", "Ezra", "Fatima", "Flora",
    "Gideon", "Hedda", "Ingrid", "Isak", "Joaquin", "Juno", "Kamal", "Kira", "Linnea", "Lorenzo", "Malik", "Mira",
    "Nadim", "Noor", "Otto", "Petra", "Ravi", "Rena", "Silas", "Sunita", "Tobias", "Ulla", "Valentin", "Wren",
    "Ximena", "Yusuf", "Zora",
]  # fmt: skip
_LAST = [
    "Achterberg", "Bianchi", "Carvalho", "Dunmore", "Eklund", "Falk", "Grimaldi", "Holm", "Iqbal", "Jovanovic",
    "Kessler", "Laine", "Marsh", "Nieminen", "Okoro", "Pereira", "Quint", "Ruiz", "Strand", "Thorne", "Ueda",
    "Vasquez", "Winther", "Xu", "Yamada", "Zeller",
]  # fmt: skip
_ORGS = [
    "Alder Systems", "Basalt Works", "Corvid Media", "Dovetail Bank", "Elmwood Clinic", "Fenwick Freight",
    "Glasshouse Studio", "Heron Capital", "Ironbark Mining", "Jetstream Air", "Kiln Ceramics", "Lodestar Robotics",
    "Marigold Farms", "Nettle Apparel", "Obsidian Games", "Pebble Telecom", "Quarry Foods", "Rookery Press",
    "Saltmarsh Energy", "Tamarind Hotels", "Upland Water", "Vellum Books", "Wicker Furniture", "Yarrow Pharma",
    "Zenith Optics", "Amberline Rail", "Briar Insurance", "Cinder Foundry", "Driftwood Yachts", "Ember Analytics",
    "Foxglove Health", "Gannet Shipping", "Hollow Oak Wines", "Indigo Grid", "Juniper Schools", "Kestrel Drones",
]  # fmt: skip
_CITIES = [
    "Aarhus", "Bergen", "Bilbao", "Bruges", "Cork", "Dijon", "Gdansk", "Ghent", "Graz", "Kaunas", "Krakow", "Leeds",
    "Lille", "Ljubljana", "Lyon", "Malmo", "Porto", "Salzburg", "Seville", "Tallinn", "Tampere", "Trieste",
    "Turin", "Utrecht", "Valencia", "Vilnius", "Zagreb", "Zurich",
]  # fmt: skip
_PROJECTS = [
    "Aurora", "Beacon", "Cascade", "Dynamo", "Eclipse", "Falcon", "Granite", "Harbor", "Ignite", "Jigsaw", "Keystone",
    "Lantern", "Meridian", "Nebula", "Orchard", "Pinnacle", "Quasar", "Riverstone", "Summit", "Tundra", "Umbra",
    "Vortex", "Willow", "Zephyr",
]  # fmt: skip
_FACTS = [
    "speaks Italian", "speaks Korean", "plays the violin", "coaches a youth football team", "is a certified diver",
    "writes a cooking blog", "restores old bicycles", "keeps bees", "studied law", "ran the Berlin marathon",
    "is vegetarian", "collects vinyl records",
]  # fmt: skip


def _held_out(names: list[str], *, test: bool) -> list[str]:
    """Every fourth name is for test tasks only."""
    return [n for i, n in enumerate(names) if (i % 4 == 3) == test]


@dataclass
class Graph:
    """A drawn graph and what a task needs to know about it."""

    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    orgs: list[str] = field(default_factory=list)
    cities: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    spare_cities: list[str] = field(default_factory=list)
    spare_orgs: list[str] = field(default_factory=list)
    spare_projects: list[str] = field(default_factory=list)
    taken_first: set[str] = field(default_factory=set)
    reserved: set[str] = field(default_factory=set)  # names a task will create: no look-alike may take them
    rng: random.Random = field(default_factory=random.Random)

    def add(self, name: str, kind: str, *observations: str) -> None:
        self.entities.append({"name": name, "entityType": kind, "observations": list(observations)})

    def link(self, a: str, b: str, kind: str) -> None:
        self.relations.append({"from": a, "to": b, "relationType": kind})

    def one(self, a: str, kind: str) -> str | None:
        """The single target of ``a``'s ``kind`` relation (``None`` when it has none or several)."""
        found = [r["to"] for r in self.relations if r["from"] == a and r["relationType"] == kind]
        return found[0] if len(found) == 1 else None

    def sources(self, b: str, kind: str) -> list[str]:
        return [r["from"] for r in self.relations if r["to"] == b and r["relationType"] == kind]

    def entity(self, name: str) -> dict[str, Any]:
        return next(e for e in self.entities if e["name"] == name)

    def new_person(self, *, first: str | None = None) -> str:
        """A person name not in the graph; with ``first``, a look-alike sharing that first name."""
        while True:
            given = first or self.rng.choice([f for f in _FIRST if f not in self.taken_first])
            name = f"{given} {self.rng.choice(_LAST)}"
            if name not in self.reserved and all(e["name"] != name for e in self.entities):
                self.taken_first.add(given)
                return name

    def person(self, org: str, city: str, *, first: str | None = None, manager: str | None = None) -> str:
        """Add a person working at ``org``, living in ``city``, with one observation."""
        name = self.new_person(first=first)
        born = f"born in {self.rng.randrange(1960, 2001)}"
        self.add(name, "person", born if self.rng.random() < 0.5 else self.rng.choice(_FACTS))
        self.people.append(name)
        self.link(name, org, "works_at")
        self.link(name, city, "lives_in")
        if manager is not None:
            self.link(name, manager, "reports_to")
        return name


def world(rng: random.Random, *, test: bool, orgs: int = 3, staff: int = 3, projects: int = 2) -> Graph:
    """A graph of ``orgs`` organizations with ``staff`` people each (the first their manager), and projects."""
    graph = Graph(rng=rng)
    org_pool = rng.sample(_held_out(_ORGS, test=test), orgs + 2)
    graph.orgs, graph.spare_orgs = org_pool[:orgs], org_pool[orgs:]
    city_pool = rng.sample(_CITIES, orgs + 3)
    graph.cities, graph.spare_cities = city_pool[:orgs], city_pool[orgs:]
    project_pool = rng.sample(_held_out(_PROJECTS, test=test), projects + 2)
    graph.projects, graph.spare_projects = project_pool[:projects], project_pool[projects:]
    for org in graph.orgs:
        graph.add(org, "organization", f"founded in {rng.randrange(1950, 2021)}")
    for city in graph.cities:
        graph.add(city, "city")
    for org, city in zip(graph.orgs, graph.cities, strict=True):
        graph.link(org, city, "located_in")
    for org in graph.orgs:
        manager = graph.person(org, rng.choice(graph.cities))
        for _ in range(staff - 1):
            graph.person(org, rng.choice(graph.cities), manager=manager)
    for project in graph.projects:
        graph.add(project, "project")
        graph.link(project, rng.choice(graph.orgs), "owned_by")
    for name in graph.people:
        if rng.random() < 0.7:
            graph.link(name, rng.choice(graph.projects), "works_on")
    return graph
