"""``forward``: find the right document among look-alikes and forward it to the right person.

Level 0 names the document (supplier, kind, number) and the recipient's address; one look-alike. Level 1 names it
by supplier and goods, and the recipient only by name (their address is in a message they sent you); three
look-alikes (other goods, another supplier, another kind of document for the same goods). Level 2 is either a
colleague's request to act on (forward them the supplier's latest quote, with its total in the note; an older
quote was revised) or every invoice of one supplier since a given day (one forward each).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from openenv_mcp.servers.email.families import EXACT, Plan, names, phrase, spell
from openenv_mcp.servers.email.tasks import Expectation
from openenv_mcp.servers.email.world import (
    ME,
    Company,
    Fact,
    Letter,
    Person,
    amount,
    colleagues,
    company_pool,
    day_fact,
    mail,
    timeline,
)

__all__ = ["forward"]

NAMED = (
    "Forward {k}'s {doc} {number} (for the {g}) to {who} at {address}.",
    "Please send {k}'s {doc} {number} on to {address} ({who}) as a forward.",
    "{who} ({address}) needs {k}'s {doc} {number}: forward it to them.",
    "Pass {k}'s {doc} {number} on to {who} <{address}> by forwarding it.",
)
FOUND = (
    "Forward the {doc} from {k} for the {g} to {who}.",
    "{who} needs {k}'s {doc} for the {g}. Forward it to them.",
    "Find {k}'s {doc} for the {g} and forward it to your colleague {who}.",
    "Your colleague {who} should get the {g} {doc} from {k}: forward it.",
)
REQUESTED = (
    "{who} asked you by email for a document from {k}. Forward it to them, with a note giving its total.",
    "Do what {who} asked for in their email about {k}: forward the document, with its total in your note.",
    "{who} is waiting for a {k} document they asked you for. Forward it and state its total in the note.",
    "Answer {who}'s request about {k} by forwarding what they asked for; put its total in the note.",
)
EVERY = (
    "Forward every invoice {k} sent you since {since} to {who} ({address}), one forward per invoice.",
    "{who} <{address}> needs each {k} invoice received since {since}: forward them one by one.",
    "Send {address} ({who}) every {k} invoice that arrived since {since}, as one forward per invoice.",
    "One forward per invoice: every {k} invoice since {since} goes to {who} at {address}.",
)
DOCS = {"invoice": "INV", "quote": "Q", "delivery note": "DN"}
PDF = "application/pdf"


@dataclass(frozen=True, slots=True)
class Doc:
    company: Company
    kind: str
    goods: str
    number: str
    total: Fact


def forward(rng: random.Random, *, tag: str, test: bool, level: int) -> Plan:
    pool = list(company_pool(test=test))
    rng.shuffle(pool)
    people: set[str] = set()
    (who,) = colleagues(rng, 1, people)
    if level == 2:
        return _requested(rng, tag, test, pool, who) if rng.random() < 0.5 else _every(rng, tag, test, pool, who)
    numbers: set[str] = set()
    totals: set[int] = set()
    k, other = pool[0], pool[1]
    kind = rng.choice(list(DOCS))
    goods, second = rng.sample(k.goods, 2)
    docs = [_doc(rng, k, kind, goods, numbers, totals), _doc(rng, k, kind, second, numbers, totals)]
    if level == 1:
        docs.append(_doc(rng, other, kind, rng.choice(other.goods), numbers, totals))
        docs.append(_doc(rng, k, rng.choice([d for d in DOCS if d != kind]), goods, numbers, totals))
    moments = timeline(rng, len(docs) + 1, within=15)
    slots = rng.sample(range(len(docs)), len(docs))  # the target is not always the oldest
    letters = [_letter(d, f"{tag}.d{i}", moments[slots[i]], rng) for i, d in enumerate(docs)]
    if level == 1:  # the colleague's address is in a message of theirs
        letters.append(_chatter(rng, who, f"{tag}.who", moments[-1]))
    target = docs[0]
    index, template = phrase(rng, NAMED if level == 0 else FOUND, test=test)
    prompt = template.format(k=k.name, doc=kind, number=target.number, g=goods, who=who[0], address=who[1])
    return Plan(
        prompt=prompt,
        expect=(Expectation(kind="forward", to=frozenset({who[1]}), targets=(letters[0].message_id,)),),
        letters=tuple(letters),
        phrasing=f"{'named' if level == 0 else 'found'}{index}",
        companies=names(*(d.company for d in docs)),
        near_misses=len(docs) - 1,
        hops=level,
    )


def _requested(rng: random.Random, tag: str, test: bool, pool: list[Company], who: Person) -> Plan:
    numbers: set[str] = set()
    totals: set[int] = set()
    k, other = pool[0], pool[1]
    goods, second = rng.sample(k.goods, 2)
    old, new = _doc(rng, k, "quote", goods, numbers, totals), _doc(rng, k, "quote", goods, numbers, totals)
    docs = [
        old,
        _doc(rng, k, "quote", second, numbers, totals),
        _doc(rng, other, "quote", rng.choice(other.goods), numbers, totals),
    ]
    moments = timeline(rng, len(docs) + 2, within=15)
    order = [0, 1, 2]
    rng.shuffle(order)
    letters = [_letter(docs[i], f"{tag}.d{i}", moments[slot], rng) for slot, i in enumerate(order)]
    revised = _letter(new, f"{tag}.rev", moments[3], rng, revises=old)
    request = mail(
        f"{tag}.ask",
        date=moments[4],
        sender=who,
        to=[ME],
        subject=f"{k.name} quote",
        body=f"Hi Alex,\n\nCould you forward me {k.name}'s latest quote for the {goods}? I need the total for the "
        f"budget.\n\nThanks,\n{who[0].split()[0]}",
        unread=True,
    )
    index, template = phrase(rng, REQUESTED, test=test)
    expect = Expectation(
        kind="forward",
        to=frozenset({who[1]}),
        targets=(revised.message_id,),
        facts=spell(new.total),
        avoid=spell(*(d.total for d in docs)),
    )
    return Plan(
        prompt=template.format(who=who[0], k=k.name) + EXACT,
        expect=(expect,),
        letters=(*letters, revised, request),
        phrasing=f"requested{index}",
        companies=names(k, other),
        near_misses=len(docs),
        hops=1,
        superseded=True,
    )


def _every(rng: random.Random, tag: str, test: bool, pool: list[Company], who: Person) -> Plan:
    numbers: set[str] = set()
    totals: set[int] = set()
    k, other = pool[0], pool[1]
    wanted, before = rng.choice((2, 3)), rng.choice((1, 2))
    moments = timeline(rng, wanted + before + 1, within=19)
    since = moments[before].date()  # K's invoices from this day on are wanted, the last one excepted (another's)
    docs: list[tuple[Doc, dt.datetime, bool]] = []
    late = [m for m in moments if m.date() >= since]
    for m in moments:
        company = other if m == late[-1] else k
        doc = _doc(rng, company, "invoice", rng.choice(company.goods), numbers, totals)
        docs.append((doc, m, company is k and m.date() >= since))
    letters = [_letter(d, f"{tag}.d{i}", m, rng) for i, (d, m, _) in enumerate(docs)]
    targets = [letter for letter, (_, _, wanted_) in zip(letters, docs, strict=True) if wanted_]
    index, template = phrase(rng, EVERY, test=test)
    text = day_fact(since).text
    return Plan(
        prompt=template.format(k=k.name, since=text, who=who[0], address=who[1]),
        expect=tuple(
            Expectation(kind="forward", to=frozenset({who[1]}), targets=(letter.message_id,)) for letter in targets
        ),
        letters=tuple(letters),
        phrasing=f"every{index}",
        companies=names(k, other),
        near_misses=len(letters) - len(targets),
    )


def _doc(rng: random.Random, company: Company, kind: str, goods: str, numbers: set[str], totals: set[int]) -> Doc:
    while True:
        number = f"{DOCS[kind]}-{rng.randrange(1000, 99999)}"
        if number not in numbers:
            numbers.add(number)
            return Doc(company, kind, goods, number, amount(rng, totals))


def _letter(doc: Doc, key: str, date: dt.datetime, rng: random.Random, *, revises: Doc | None = None) -> Letter:
    k, domain = doc.company.name, doc.company.domain
    team = {"invoice": ("Billing", "billing"), "quote": ("Sales", "sales"), "delivery note": ("Dispatch", "dispatch")}
    title, box = team[doc.kind]
    what = {"invoice": "Total due", "quote": "Quoted total", "delivery note": "Goods value"}[doc.kind]
    opening = f"please find attached our {doc.kind} {doc.number} for {doc.goods}."
    subject = f"{k} {doc.kind} {doc.number}"
    if revises is not None:
        opening = (
            f"as discussed, attached is our revised quote {doc.number} for {doc.goods}; it replaces quote "
            f"{revises.number}."
        )
        subject = f"Revised quote {doc.number} from {k}"
    filename = f"{doc.kind.replace(' ', '-')}-{doc.number}.pdf"
    return mail(
        key,
        date=date,
        sender=(f"{k} {title}", f"{box}@{domain}"),
        to=[ME],
        subject=subject,
        body=f"Hello Alex,\n\n{opening[0].upper() + opening[1:]}\n\n{what}: {doc.total.text}\n\n{k} {title}",
        attachments=[(filename, PDF, rng.randrange(25_000, 120_000))],
    )


def _chatter(rng: random.Random, who: Person, key: str, date: dt.datetime) -> Letter:
    """A message from ``who`` about something else: where their address can be found."""
    subject, body = rng.choice(
        (
            ("Desk booking next week", "Could you book me a desk near the window on Tuesday and Wednesday?"),
            ("Notes from the supplier review", "I've put the notes from this morning's supplier review on the wiki."),
            ("Parking at the new office", "Do you know whether the new office has visitor parking?"),
            ("Cover while I'm away", "I'm off on Friday; Nadia will cover my supplier calls."),
        )
    )
    return mail(key, date=date, sender=who, to=[ME], subject=subject, body=f"Hi Alex,\n\n{body}\n\n{who[0].split()[0]}")
