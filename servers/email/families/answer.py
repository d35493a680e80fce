"""``answer``: someone asks for a value; it is in other messages, among look-alikes; reply in their thread.

Four kinds of value: a purchase order number (asked by the supplier, given by a colleague in procurement), a
delivery date (asked by a colleague, given by the supplier's dispatch notice), an invoice total (asked by
finance, given by the supplier's invoice) and a contract end date (asked by legal, given by the supplier). Level 0
has one look-alike (the same kind of value for other goods or another supplier); level 1 three, a reminder in the
thread and a colleague in copy (so the reply goes to all); level 2 adds a later correction of the value, whose
old value must not be given.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from openenv_mcp.servers.email.families import EXACT, Plan, names, phrase, reply_expectation
from openenv_mcp.servers.email.world import (
    ME,
    Company,
    Fact,
    Letter,
    Person,
    amount,
    code,
    colleagues,
    company_pool,
    contact,
    day_fact,
    mail,
    timeline,
    upcoming_days,
)

__all__ = ["answer"]

PHRASINGS = (
    "{asker} ({org}) asked you for {need}. Reply in that thread with the answer.",
    "Find the answer to {first}'s question about {topic} in your mailbox and reply to their latest message.",
    "Reply to {asker}'s unanswered email about {topic}: they need {need}.",
    "{asker} of {org} is still waiting to hear {need}. Look it up and answer in the same thread.",
)
PDF = "application/pdf"


@dataclass(frozen=True, slots=True)
class Item:
    """One value of the scenario's kind: whose, for what, and the value."""

    company: Company
    goods: str
    value: Fact


def answer(rng: random.Random, *, tag: str, test: bool, level: int) -> Plan:
    kind = rng.choice(("po", "delivery", "amount", "contract"))
    pool = list(company_pool(test=test))
    people: set[str] = set()
    target_company = rng.choice(pool)
    taken_numbers: set[str] = set()
    taken_amounts: set[int] = set()
    count = 1 + (1 if level == 0 else 3)
    days = upcoming_days(rng, count + 1)

    def value(i: int) -> Fact:
        if kind == "po":
            return code(rng, "PO", taken_numbers)
        if kind == "amount":
            return amount(rng, taken_amounts)
        return day_fact(days[i])

    others = [c for c in pool if c is not target_company]
    items: list[Item] = []
    for i in range(count):
        company = target_company if i < 2 else others.pop(rng.randrange(len(others)))
        goods = [g for g in company.goods if all(it.goods != g for it in items)]
        items.append(Item(company, rng.choice(goods), value(i)))
    target = items[0]
    corrected = value(count) if level == 2 else None
    final = corrected or target.value

    buyer, asker_home, copied_home = colleagues(rng, 3, people)
    if kind == "po":
        asker = contact(rng, target.company, people)
        copied = contact(rng, target.company, people)
    else:
        asker, copied = asker_home, copied_home
    need, topic = _need(kind, target)
    moments = timeline(rng, len(items) + 3)
    order = list(range(len(items)))
    rng.shuffle(order)
    letters: list[Letter] = []
    for slot, i in enumerate(order):
        letters.append(_source(kind, items[i], f"{tag}.v{i}", moments[slot], buyer, rng))
    thread = _thread(kind, target, tag, moments[len(items) :], asker, copied if level else None, need)
    letters += thread
    if corrected is not None:
        source = letters[order.index(0)]
        letters.append(_correction(kind, target, corrected, f"{tag}.fix", moments[-1], source))
    index, template = phrase(rng, PHRASINGS, test=test)
    org = target.company.name if kind == "po" else "Northwind"
    prompt = template.format(asker=asker[0], first=asker[0].split()[0], org=org, need=need, topic=topic)
    if level:
        prompt += " Reply to everyone on the thread."
    prompt += EXACT
    avoid = [it.value for it in items[1:]] + ([target.value] if corrected is not None else [])
    recipients = [asker[1], copied[1]] if level else [asker[1]]
    return Plan(
        prompt=prompt,
        expect=(reply_expectation(thread, recipients, [final], avoid),),
        letters=tuple(letters),
        phrasing=f"ask{index}",
        companies=names(*(it.company for it in items)),
        near_misses=len(items) - 1 + (corrected is not None),
        superseded=corrected is not None,
    )


def _thread(
    kind: str,
    target: Item,
    tag: str,
    moments: list[dt.datetime],
    asker: Person,
    copied: Person | None,
    need: str,
) -> list[Letter]:
    """The question, and with someone in copy a reminder after it (the thread to reply in)."""
    question = mail(
        f"{tag}.ask",
        date=moments[0],
        sender=asker,
        to=[ME],
        cc=[copied] if copied else [],
        subject=_subject(kind, target),
        body=f"Hi Alex,\n\n{_question(kind, target)}\n\nThanks,\n{asker[0].split()[0]}",
        unread=True,
    )
    if copied is None:
        return [question]
    nudge = mail(
        f"{tag}.nudge",
        date=moments[1],
        sender=asker,
        to=[ME],
        cc=[copied],
        subject="Re: " + question.raw["subject"],
        body=f"Hi Alex,\n\nJust following up on this: could you let me know {need}?\n\n{asker[0].split()[0]}",
        parent=question,
        unread=True,
    )
    return [question, nudge]


def _need(kind: str, item: Item) -> tuple[str, str]:
    """What is asked for (a noun phrase) and what it is about (a topic)."""
    k, g = item.company.name, item.goods
    return {
        "po": (f"the purchase order number for the {g} order", f"the {g} order"),
        "delivery": (f"when the {g} from {k} will be delivered", f"the {k} {g} delivery"),
        "amount": (f"the total of {k}'s invoice for the {g}", f"{k}'s {g} invoice"),
        "contract": (f"when the {k} contract for {g} ends", f"the {k} {g} contract"),
    }[kind]


def _subject(kind: str, item: Item) -> str:
    k, g = item.company.name, item.goods
    return {
        "po": f"PO number for the {g} order?",
        "delivery": f"{k} {g}: delivery date?",
        "amount": f"{k} invoice total ({g})",
        "contract": f"{k} {g} contract end date",
    }[kind]


def _question(kind: str, item: Item) -> str:
    k, g = item.company.name, item.goods
    return {
        "po": f"We are ready to invoice the {g} we supplied to Northwind. Which purchase order number should the "
        "invoice quote?",
        "delivery": f"Do you know when the {g} from {k} is being delivered? I need to plan the warehouse team.",
        "amount": f"For the month-end accruals: what is the total of the {k} invoice for the {g}?",
        "contract": f"I'm reviewing our supplier contracts. Until when does the {k} contract for {g} run?",
    }[kind]


def _source(kind: str, item: Item, key: str, date: dt.datetime, buyer: Person, rng: random.Random) -> Letter:
    """The message that gives ``item``'s value."""
    k, g, v = item.company.name, item.goods, item.value.text
    domain = item.company.domain
    if kind == "po":
        return mail(
            key,
            date=date,
            sender=buyer,
            to=[ME],
            subject=f"PO raised: {k} {g}",
            body=f"Hi Alex,\n\nI've raised {v} for the {g} from {k}. Please pass it on if they ask.\n\n"
            f"{buyer[0].split()[0]}",
        )
    if kind == "delivery":
        order = f"ORD-{rng.randrange(100000, 999999)}"
        return mail(
            key,
            date=date,
            sender=(f"{k} Dispatch", f"dispatch@{domain}"),
            to=[ME],
            subject=f"Your {k} order {order} has shipped",
            body=f"Hello,\n\nYour order {order} ({g}) has left our warehouse and will be delivered on {v}.\n\n"
            f"{k} Dispatch",
        )
    if kind == "amount":
        number = f"INV-{rng.randrange(10000, 99999)}"
        return mail(
            key,
            date=date,
            sender=(f"{k} Billing", f"billing@{domain}"),
            to=[ME],
            subject=f"Invoice {number} from {k}",
            body=f"Dear customer,\n\nPlease find attached invoice {number} for {g}.\n\nTotal due: {v}\n"
            f"Payment terms: 30 days\n\n{k} Billing",
            attachments=[(f"invoice-{number}.pdf", PDF, rng.randrange(30_000, 90_000))],
        )
    return mail(
        key,
        date=date,
        sender=(f"{k} Accounts", f"accounts@{domain}"),
        to=[ME],
        subject=f"Your {k} contract for {g}",
        body=f"Dear Alex,\n\nA reminder that your contract with {k} for {g} runs until {v}. Let us know if you "
        f"would like to discuss a renewal.\n\nKind regards,\n{k} Accounts",
    )


def _correction(kind: str, item: Item, new: Fact, key: str, date: dt.datetime, source: Letter) -> Letter:
    """A later message from the source's sender that replaces ``item``'s value with ``new``."""
    k, g, old = item.company.name, item.goods, item.value.text
    sender = (source.raw["from"]["name"], source.raw["from"]["address"])
    text = {
        "po": f"Sorry, I gave you the wrong number: the PO for the {g} from {k} is {new.text}, not {old}.",
        "delivery": f"A change to the delivery of your {g}: it will now arrive on {new.text} instead of {old}.",
        "amount": f"The invoice for {g} went out with the wrong total: the correct total is {new.text}, not "
        f"{old}. Please use the corrected figure.",
        "contract": f"Following our call, the end date of your {g} contract has changed: it now runs until "
        f"{new.text} (previously {old}).",
    }[kind]
    return mail(
        key,
        date=date,
        sender=sender,
        to=[ME],
        subject="Correction: " + source.raw["subject"],
        body=f"Hello,\n\n{text}\n\n{sender[0].split()[0]}",
        parent=source,
    )
