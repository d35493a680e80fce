"""``schedule``: a colleague proposed slots for a meeting, everyone else answered; confirm the one that works.

The organiser proposes two to four slots (distinct days and times); each participant (colleagues and a contact at
the supplier) replies to all with the slots they can do. Exactly one slot suits everyone; the reply confirming it
goes to everyone on the thread. Level 1 adds a second scheduling thread about something else (settled on another
slot); level 2 has four slots, and a participant later withdraws from a slot that suited everyone until then.
"""

from __future__ import annotations

import datetime as dt
import random

from openenv_mcp.servers.email.families import EXACT, Plan, names, phrase, reply_expectation
from openenv_mcp.servers.email.world import (
    ME,
    Company,
    Fact,
    Letter,
    Person,
    colleagues,
    company_pool,
    contact,
    day_fact,
    mail,
    time_fact,
    timeline,
    upcoming_days,
)

__all__ = ["schedule"]

PHRASINGS = (
    "Confirm the {topic} that {organiser} is organising to everyone on its thread (reply to all), with the one "
    "slot that works for all.",
    "Everyone but you has answered {organiser}'s email about the {topic}. Reply to all with the slot all can make.",
    "Close {organiser}'s scheduling thread for the {topic}: reply to all, confirming the day and time that suits "
    "everyone.",
    "{organiser}'s thread about the {topic} needs a decision: reply to everyone on it with the day and time all of "
    "them can do.",
)
TIMES = ((9, 0), (9, 30), (10, 0), (11, 0), (11, 30), (13, 30), (14, 0), (15, 0), (15, 30), (16, 0))

Slot = tuple[dt.date, tuple[int, int]]


def schedule(rng: random.Random, *, tag: str, test: bool, level: int) -> Plan:
    pool = list(company_pool(test=test))
    rng.shuffle(pool)
    people: set[str] = set()
    times = rng.sample(TIMES, 8)
    k = pool[0]
    count = 2 + level
    topic = _topic(rng, k)
    thread, everyone, slots, agreed = _thread(rng, f"{tag}.m", k, topic, count, times[:count], people, level == 2)
    letters = list(thread)
    companies = [k]
    near = count - 1
    other_times: list[tuple[int, int]] = []
    if level:
        other = pool[1]
        companies.append(other)
        decoy, _, decoy_slots, decoy_agreed = _thread(
            rng, f"{tag}.x", other, _topic(rng, other), 2, times[count : count + 2], people, False
        )
        letters += decoy
        other_times.append(decoy_slots[decoy_agreed][1])
        near += 2
    index, template = phrase(rng, PHRASINGS, test=test)
    organiser = thread[0].raw["from"]["name"]
    day, (hour, minute) = slots[agreed]
    avoid: list[Fact] = [time_fact(*t) for i, (_, t) in enumerate(slots) if i != agreed]
    avoid += [time_fact(*t) for t in other_times]
    return Plan(
        prompt=template.format(topic=topic, organiser=organiser) + EXACT,
        expect=(reply_expectation(thread, everyone, [day_fact(day), time_fact(hour, minute)], avoid),),
        letters=tuple(letters),
        phrasing=f"slot{index}",
        companies=names(*companies),
        near_misses=near,
        superseded=level == 2,
    )


def _topic(rng: random.Random, k: Company) -> str:
    goods = rng.choice(k.goods)
    return rng.choice(
        (
            f"{k.name} kickoff meeting",
            f"{goods} review with {k.name}",
            f"{k.name} onboarding call",
            f"quarterly check-in with {k.name}",
        )
    )


def _thread(
    rng: random.Random,
    key: str,
    k: Company,
    topic: str,
    count: int,
    times: list[tuple[int, int]],
    people: set[str],
    withdrawn: bool,
) -> tuple[list[Letter], list[str], list[Slot], int]:
    """The thread's messages, everyone on it but me, its slots, and the index of the slot that suits all."""
    organiser, *staff = colleagues(rng, count - 1, people)
    guests: list[Person] = [*staff, contact(rng, k, people)]
    slots: list[Slot] = list(zip(upcoming_days(rng, count), times, strict=True))
    agreed = rng.randrange(count)
    dropped = rng.choice([i for i in range(count) if i != agreed]) if withdrawn else None
    free = {i for i in (agreed, dropped) if i is not None}
    can: dict[str, set[int]] = {g[1]: set(free) for g in guests}
    for i in range(count):
        if i in free:
            continue
        blocker = rng.choice(guests)
        for g in guests:
            if g is not blocker and rng.random() < 0.5:
                can[g[1]].add(i)
    moments = timeline(rng, len(guests) + 2, within=6)
    listing = "\n".join(f"- {_slot(s)}" for s in slots)
    first = mail(
        f"{key}0",
        date=moments[0],
        sender=organiser,
        to=[ME, *guests],
        subject=f"{topic[0].upper() + topic[1:]}: finding a time",
        body=f"Hi all,\n\nI'd like to set up the {topic}. Which of these slots work for you?\n\n{listing}\n\n"
        f"{organiser[0].split()[0]}",
    )
    thread = [first]
    order = list(guests)
    rng.shuffle(order)
    for n, guest in enumerate(order, start=1):
        previous = thread[-1]
        before = (previous.raw["from"]["name"], previous.raw["from"]["address"])
        others = [p for p in (organiser, ME, *guests) if p[1] not in (guest[1], before[1])]
        yes = [_slot(slots[i]) for i in sorted(can[guest[1]])]
        no = [_slot(slots[i]) for i in range(count) if i not in can[guest[1]]]
        text = "I can do " + " or ".join(yes) + "."
        if no:
            text += " " + " and ".join(no) + (" don't" if len(no) > 1 else " doesn't") + " work for me."
        thread.append(_reply(f"{key}{n}", moments[n], guest, before, others, previous, text, n >= len(order) - 1))
    if dropped is not None:
        leaver = rng.choice(guests)
        previous = thread[-1]
        before = (previous.raw["from"]["name"], previous.raw["from"]["address"])
        others = [p for p in (organiser, ME, *guests) if p[1] not in (leaver[1], before[1])]
        if leaver[1] == before[1]:
            before = organiser
            others = [p for p in (ME, *guests) if p[1] != leaver[1]]
        text = f"Sorry, something came up: {_slot(slots[dropped])} no longer works for me. The rest still stands."
        thread.append(_reply(f"{key}w", moments[-1], leaver, before, others, previous, text, True))
    everyone = [p[1] for p in (organiser, *guests)]
    return thread, everyone, slots, agreed


def _slot(slot: Slot) -> str:
    day, (hour, minute) = slot
    return f"{day_fact(day).text} at {hour:02d}:{minute:02d}"


def _reply(
    key: str,
    date: dt.datetime,
    sender: Person,
    to: Person,
    cc: list[Person],
    parent: Letter,
    text: str,
    unread: bool,
) -> Letter:
    subject = parent.raw["subject"]
    return mail(
        key,
        date=date,
        sender=sender,
        to=[to],
        cc=cc,
        subject=subject if subject.startswith("Re: ") else "Re: " + subject,
        body=f"{text}\n\n{sender[0].split()[0]}",
        parent=parent,
        unread=unread,
    )
