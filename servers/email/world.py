"""The material generated email scenarios are made of: people, companies, dates, values and messages.

Everything here is deterministic data or a pure function of a :class:`random.Random` the caller seeds. A value
that a task asks for (an amount, a date, a code, a time) is a :class:`Fact`: the text the mail shows and every
spelling the grader accepts for it. Scenario messages are raw dicts in the shape of ``data/mailbox.json``'s
(without the UID, which the mailbox assigns when it files them), so a generated mailbox is the shipped one plus
these, parsed the same way.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMPANIES",
    "ME",
    "NOW",
    "TEAMS",
    "Company",
    "Fact",
    "Letter",
    "Person",
    "amount",
    "code",
    "colleagues",
    "company_pool",
    "contact",
    "day_fact",
    "mail",
    "time_fact",
    "timeline",
    "upcoming_days",
]

Person = tuple[str, str]  # display name, address

ME: Person = ("Alex Morgan", "alex.morgan@northwind.example")
NOW = dt.datetime(2024, 6, 14, 9, 0, tzinfo=dt.UTC)  # the shipped mailbox's "now": Friday 14 June 2024, 09:00
HOME = "northwind.example"

TEAMS: dict[str, Person] = {
    "accounting": ("Accounting", "accounting@northwind.example"),
    "support": ("Customer Support", "support@northwind.example"),
    "press": ("Press Office", "press@northwind.example"),
    "careers": ("Recruiting", "careers@northwind.example"),
    "legal": ("Legal", "legal@northwind.example"),
    "security": ("IT Security", "it-security@northwind.example"),
    "procurement": ("Procurement", "procurement@northwind.example"),
}

_FIRST = [
    "Aisha",
    "Amara",
    "Bruno",
    "Camila",
    "Chidi",
    "Clara",
    "Dmitri",
    "Elena",
    "Emeka",
    "Farah",
    "Felix",
    "Greta",
    "Hamza",
    "Hugo",
    "Ines",
    "Ivan",
    "Jana",
    "Jonas",
    "Kai",
    "Keiko",
    "Lars",
    "Leila",
    "Luca",
    "Mads",
    "Maya",
    "Mei",
    "Milan",
    "Nadia",
    "Nico",
    "Nora",
    "Olga",
    "Oscar",
    "Paula",
    "Pedro",
    "Quinn",
    "Rafael",
    "Rosa",
    "Ruth",
    "Selin",
    "Soren",
    "Tariq",
    "Tessa",
    "Theo",
    "Uma",
    "Vera",
    "Viktor",
    "Wanda",
    "Yara",
    "Yusuf",
    "Zainab",
]
_LAST = [
    "Abara",
    "Alvarez",
    "Andersen",
    "Baker",
    "Banerjee",
    "Castillo",
    "Costa",
    "Dahl",
    "Delgado",
    "Eriksen",
    "Ferreira",
    "Fontaine",
    "Garcia",
    "Gruber",
    "Hahn",
    "Hansen",
    "Ito",
    "Jansen",
    "Kamau",
    "Kowalski",
    "Lindqvist",
    "Lopez",
    "Mahler",
    "Moreau",
    "Nakamura",
    "Novak",
    "Nwosu",
    "Olsen",
    "Park",
    "Petrov",
    "Quist",
    "Reyes",
    "Rossi",
    "Sandoval",
    "Schmidt",
    "Silva",
    "Sorensen",
    "Tanaka",
    "Torres",
    "Varga",
    "Vidal",
    "Wagner",
    "Weber",
    "Yilmaz",
    "Young",
    "Zhou",
]
_TAKEN = {"Alex Morgan", "Priya Raman", "Dan Okafor", "Lena Fischer", "Marcus Bell", "Zoë Laurent", "Sam Whitaker"}


@dataclass(frozen=True, slots=True)
class Company:
    """An outside company: a supplier of ``goods`` or a client; ``test`` companies appear only in test tasks."""

    name: str
    domain: str
    goods: tuple[str, ...]
    test: bool


def _companies() -> tuple[Company, ...]:
    rows = [
        ("Acme Freight", "pallet transport", "cold-chain shipping", "customs brokerage"),
        ("Bramble Foods", "catering platters", "coffee beans", "breakfast boxes"),
        ("Cobalt Print", "product brochures", "trade-show banners", "business cards"),
        ("Dune Office", "standing desks", "ergonomic chairs", "filing cabinets"),
        ("Ember Software", "CRM licences", "analytics seats", "support hours"),
        ("Fjord Packaging", "shipping boxes", "bubble wrap", "pallet wrap"),
        ("Granite Security", "door access badges", "CCTV cameras", "alarm maintenance"),
        ("Harbor Logistics", "warehouse space", "last-mile delivery", "returns handling"),
        ("Indigo Textiles", "staff uniforms", "branded tote bags", "table linen"),
        ("Juniper Labs", "lab consumables", "sample testing", "calibration service"),
        ("Kestrel Air", "charter flights", "air freight", "courier service"),
        ("Lumen Lighting", "LED panels", "desk lamps", "emergency lighting"),
        ("Maple Cleaning", "office cleaning", "window cleaning", "carpet care"),
        ("Nimbus Hosting", "cloud servers", "backup storage", "managed database"),
        ("Orchid Events", "conference rooms", "event staffing", "AV equipment"),
        ("Pioneer Tools", "power drills", "safety gloves", "ladders"),
        ("Quartz Telecom", "mobile plans", "fibre line", "conference phones"),
        ("Redwood Legal", "contract review", "trademark filing", "compliance audit"),
        ("Saffron Catering", "lunch buffets", "fruit baskets", "team dinners"),
        ("Tidal Energy", "solar panels", "battery storage", "energy audit"),
        ("Umber Furniture", "meeting tables", "lounge sofas", "bookshelves"),
        ("Vertex Consulting", "process review", "training workshops", "market study"),
        ("Willow Water", "water coolers", "bottled water", "filter service"),
        ("Xylo Media", "video production", "photo shoot", "social media ads"),
        ("Yonder Travel", "hotel bookings", "train tickets", "travel insurance"),
        ("Zephyr Motors", "delivery vans", "fleet servicing", "tyre changes"),
        ("Atlas Paper", "copy paper", "envelopes", "notebooks"),
        ("Beacon Health", "first-aid kits", "flu vaccinations", "health checks"),
        ("Cedar Interiors", "acoustic panels", "office plants", "wall graphics"),
        ("Delta Electric", "wiring upgrade", "EV chargers", "socket installation"),
        ("Echo Audio", "headsets", "speakers", "microphones"),
        ("Falcon Couriers", "same-day courier", "document delivery", "parcel lockers"),
        ("Garnet IT", "laptops", "monitors", "docking stations"),
        ("Halo Insurance", "liability cover", "fleet insurance", "property cover"),
        ("Iris Analytics", "survey panel", "data cleaning", "dashboard build"),
        ("Jade Translation", "document translation", "interpreting", "subtitling"),
        ("Keystone Builders", "partition walls", "floor repairs", "ceiling tiles"),
        ("Lattice Networks", "Wi-Fi access points", "network switches", "firewall licences"),
        ("Mosaic Design", "logo refresh", "brand guidelines", "packaging design"),
        ("Nova Recruiting", "candidate search", "reference checks", "assessment days"),
        ("Onyx Storage", "archive boxes", "off-site storage", "document shredding"),
        ("Prism Optics", "safety glasses", "magnifiers", "display screens"),
        ("Quill Stationery", "pens", "whiteboards", "desk organisers"),
        ("Rivet Hardware", "shelving units", "cable trays", "lockers"),
        ("Sable Coffee", "espresso machines", "coffee pods", "milk frothers"),
        ("Terra Landscaping", "garden upkeep", "tree pruning", "snow clearing"),
        ("Unity Events", "venue hire", "team-building day", "gala dinner"),
        ("Vantage Vending", "snack machines", "drinks machines", "vending refills"),
    ]
    return tuple(
        Company(
            name=name,
            domain=name.lower().replace(" ", "-") + ".example",
            goods=tuple(goods),
            test=i % 4 == 3,  # every fourth company is held out for test
        )
        for i, (name, *goods) in enumerate(rows)
    )


COMPANIES = _companies()


@functools.cache
def company_pool(*, test: bool) -> tuple[Company, ...]:
    """The companies a split may use: test tasks draw only held-out ones, train tasks never do."""
    return tuple(c for c in COMPANIES if c.test == test)


def _name(rng: random.Random, avoid: set[str]) -> str:
    while True:
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        first = name.split()[0]
        if name not in avoid and name not in _TAKEN and all(a.split()[0] != first for a in avoid):
            avoid.add(name)
            return name


def _address(name: str, domain: str) -> str:
    return ".".join(name.lower().split()) + "@" + domain


def colleagues(rng: random.Random, count: int, avoid: set[str]) -> list[Person]:
    """``count`` Northwind colleagues, none sharing a first name with each other or anyone in ``avoid``."""
    return [(name, _address(name, HOME)) for name in (_name(rng, avoid) for _ in range(count))]


def contact(rng: random.Random, company: Company, avoid: set[str]) -> Person:
    """A person at ``company``."""
    name = _name(rng, avoid)
    return (name, _address(name, company.domain))


@dataclass(frozen=True, slots=True)
class Fact:
    """A value a task asks for: ``text`` as the mail shows it, ``spellings`` as the grader accepts it."""

    text: str
    spellings: tuple[str, ...]


def amount(rng: random.Random, taken: set[int], *, low: int = 300, high: int = 25_000) -> Fact:
    """A money amount, in whole units distinct from ``taken`` (so no two amounts of a scenario share digits)."""
    while True:
        units = rng.randrange(low, high)
        if units not in taken and all(abs(units - t) > 9 for t in taken):
            taken.add(units)
            break
    cents = rng.choice((0, 0, 50, 25, 90, 10))
    grouped = f"{units:,}"
    text = f"{grouped}.{cents:02d}"
    spellings = [text, f"{units}.{cents:02d}"]
    if cents == 0:
        spellings += [grouped, str(units)] if units >= 1000 else [str(units)]
    return Fact("$" + text, tuple(dict.fromkeys(spellings)))


def code(rng: random.Random, prefix: str, taken: set[str], *, digits: int = 5) -> Fact:
    """A reference like ``PO-48213``: accepted with or without the prefix."""
    while True:
        number = str(rng.randrange(10 ** (digits - 1), 10**digits))
        if number not in taken:
            taken.add(number)
            break
    text = f"{prefix}-{number}"
    return Fact(text, (text, f"{prefix} {number}", f"{prefix}{number}", number))


def _workdays(start: dt.date, end: dt.date) -> list[dt.date]:
    days, day = [], start
    while day <= end:
        if day.weekday() < 5:
            days.append(day)
        day += dt.timedelta(days=1)
    return days


_PAST = _workdays(dt.date(2024, 5, 20), dt.date(2024, 6, 13))
_UPCOMING = _workdays(dt.date(2024, 6, 17), dt.date(2024, 7, 12))


def timeline(rng: random.Random, count: int, *, within: int = 10) -> list[dt.datetime]:
    """``count`` distinct moments in working hours before now (the last ``within`` working days, or this
    morning), in order."""
    return sorted(rng.sample(_moments(within), count))


@functools.cache
def _moments(within: int) -> list[dt.datetime]:
    """Every five minutes of working hours (7:00-18:55) on the last ``within`` working days, and this morning."""
    found = []
    for day in [*_PAST[-within:], NOW.date()]:
        for hour in range(7, 19):
            for minute in range(0, 60, 5):
                moment = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=dt.UTC)
                if moment < NOW:
                    found.append(moment)
    return found


def upcoming_days(rng: random.Random, count: int) -> list[dt.date]:
    """``count`` distinct working days in the coming four weeks, in order."""
    return sorted(rng.sample(_UPCOMING, count))


@functools.cache
def day_fact(day: dt.date) -> Fact:
    """A date as mail writes it ("Tuesday 18 June") and the spellings a reply may use."""
    month, short, n = day.strftime("%B"), day.strftime("%b"), day.day
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    spellings = (
        f"{month} {n}",
        f"{n} {month}",
        f"{short} {n}",
        f"{n} {short}",
        f"{month} {n}{suffix}",
        f"{n}{suffix} {month}",
        f"{n}{suffix} of {month}",
        day.isoformat(),
        f"{n:02d}/{day.month:02d}/{day.year}",
        f"{day.month:02d}/{n:02d}/{day.year}",
        f"{n}/{day.month}",
        f"{day.month}/{n}",
    )
    return Fact(f"{day.strftime('%A')} {n} {month}", tuple(s.lower() for s in spellings))


@functools.cache
def time_fact(hour: int, minute: int = 0) -> Fact:
    """A time of day ("14:00") and its spellings ("2pm", "2:00 pm", "14.00", ...)."""
    twelve = hour % 12 or 12
    half = "am" if hour < 12 else "pm"
    clock = f"{hour:02d}:{minute:02d}"
    spellings = [clock, f"{hour}:{minute:02d}", f"{hour:02d}.{minute:02d}", f"{twelve}:{minute:02d} {half}"]
    spellings += [f"{twelve}:{minute:02d}{half}", f"{twelve}:{minute:02d} {half[0]}.m."]
    if minute == 0:
        spellings += [f"{twelve}{half}", f"{twelve} {half}", f"{twelve} {half[0]}.m.", f"{hour}h"]
    return Fact(clock, tuple(dict.fromkeys(spellings)))


@dataclass(frozen=True, slots=True)
class Letter:
    """A scenario message before it is filed: what :func:`mail` turns into a raw mailbox entry."""

    raw: dict[str, Any]

    @property
    def message_id(self) -> str:
        return str(self.raw["message_id"])


def mail(
    key: str,
    *,
    folder: str = "INBOX",
    date: dt.datetime,
    sender: Person,
    to: Sequence[Person],
    subject: str,
    body: str,
    cc: Sequence[Person] = (),
    attachments: Sequence[tuple[str, str, int]] = (),
    parent: Letter | None = None,
    unread: bool = False,
) -> Letter:
    """A scenario message; ``key`` makes its Message-ID (unique within the task), ``parent`` makes it a reply."""
    domain = sender[1].rsplit("@", 1)[1]
    references: list[str] = []
    if parent is not None:
        references = [*parent.raw["references"], parent.message_id]
    return Letter(
        {
            "folder": folder,
            "date": date.isoformat().replace("+00:00", "Z"),
            "from": {"name": sender[0], "address": sender[1]},
            "to": [{"name": n, "address": a} for n, a in to],
            "cc": [{"name": n, "address": a} for n, a in cc],
            "reply_to": None,
            "subject": subject,
            "body": body.strip("\n"),
            "attachments": [{"filename": f, "content_type": t, "size": s} for f, t, s in attachments],
            "message_id": f"<{key}@{domain}>",
            "in_reply_to": parent.message_id if parent is not None else None,
            "references": references,
            "unread": unread,
        }
    )
