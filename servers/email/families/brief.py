"""``brief``: gather facts about an order from the supplier's messages and send them in a new message.

A supplier confirms an order (its number, goods and total) and later sends a dispatch notice (tracking number,
delivery date). Level 0 asks for the delivery date (one look-alike: the supplier's other order); level 1 for the
order's total and delivery date, from two messages, among the other order's and another supplier's; level 2 for
the tracking number and delivery date, where the dispatch notice names only the order number (the confirmation
says which goods it is) and the delivery was rescheduled by a later message.
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
    amount,
    code,
    colleagues,
    company_pool,
    day_fact,
    mail,
    timeline,
    upcoming_days,
)

__all__ = ["brief"]

PHRASINGS = (
    'Write a new email (not a reply) to {who} <{address}> with the subject "{subject}", telling them {facts}.',
    '{first} needs to know {facts}. Send them a new message at {address} with the subject "{subject}".',
    'Send a new email to {address} ({who}) with the subject "{subject}" that gives {facts}.',
    'Put {facts} in a fresh email to {who} ({address}) with the subject "{subject}".',
)


@dataclass(frozen=True, slots=True)
class Order:
    company: Company
    goods: str
    number: Fact
    total: Fact
    tracking: Fact
    delivery: Fact


def brief(rng: random.Random, *, tag: str, test: bool, level: int) -> Plan:
    pool = list(company_pool(test=test))
    rng.shuffle(pool)
    people: set[str] = set()
    (who,) = colleagues(rng, 1, people)
    k = pool[0]
    numbers: set[str] = set()
    totals: set[int] = set()
    days = iter(upcoming_days(rng, 5))

    def order(company: Company, goods: str) -> Order:
        return Order(
            company,
            goods,
            code(rng, "ORD", numbers, digits=6),
            amount(rng, totals),
            code(rng, "TRK", numbers, digits=8),
            day_fact(next(days)),
        )

    first_goods, second_goods = rng.sample(k.goods, 2)
    orders = [order(k, first_goods), order(k, second_goods)]
    if level:
        orders.append(order(pool[1], rng.choice(pool[1].goods)))
    target = orders[0]
    moved = day_fact(next(days)) if level == 2 else None
    moments = timeline(rng, 2 * len(orders) + 1, within=12)
    slots = iter(rng.sample(range(len(orders)), len(orders)))  # confirmations first, in a random order
    letters: list[Letter] = []
    for i, o in enumerate(orders):
        letters.append(_confirmation(o, f"{tag}.c{i}", moments[next(slots)]))
    late = iter(rng.sample(range(len(orders), 2 * len(orders)), len(orders)))
    dispatches: list[Letter] = []
    for i, o in enumerate(orders):
        dispatches.append(_dispatch(o, f"{tag}.s{i}", moments[next(late)], goods_named=level < 2))
    letters += dispatches
    if moved is not None:
        letters.append(_reschedule(target, moved, f"{tag}.r", moments[-1], dispatches[0]))
    subject = f"{k.name} {first_goods} order"
    if level == 0:
        wanted, facts = [target.delivery], f"when the {first_goods} from {k.name} will be delivered"
    elif level == 1:
        wanted = [target.total, target.delivery]
        facts = f"the total of the {k.name} order for {first_goods} and its delivery date"
    else:
        wanted = [target.tracking, moved or target.delivery]
        facts = f"the tracking number and the delivery date of the {k.name} order for {first_goods}"
    avoid: list[Fact] = []
    for o in orders[1:]:
        avoid += [o.total, o.delivery] if level == 1 else [o.delivery] if level == 0 else [o.tracking, o.delivery]
    if moved is not None:
        avoid.append(target.delivery)
    index, template = phrase(rng, PHRASINGS, test=test)
    prompt = template.format(who=who[0], first=who[0].split()[0], address=who[1], subject=subject, facts=facts)
    expect = Expectation(
        kind="new",
        to=frozenset({who[1]}),
        facts=spell(*wanted),
        subject=((k.name.split()[0].lower(),), ("order",)),
        avoid=spell(*avoid),
    )
    return Plan(
        prompt=prompt + EXACT,
        expect=(expect,),
        letters=tuple(letters),
        phrasing=f"brief{index}",
        companies=names(*(o.company for o in orders)),
        near_misses=2 * (len(orders) - 1) - (level == 0) + (moved is not None),
        hops=(level > 0),
        superseded=moved is not None,
    )


def _confirmation(o: Order, key: str, date: dt.datetime) -> Letter:
    k = o.company
    return mail(
        key,
        date=date,
        sender=(f"{k.name} Sales", f"sales@{k.domain}"),
        to=[ME],
        subject=f"Order confirmation {o.number.text}",
        body=f"Dear Alex,\n\nThank you for your order {o.number.text} for {o.goods}.\n\nOrder total: {o.total.text}\n"
        f"We will let you know when it ships.\n\n{k.name} Sales",
    )


def _dispatch(o: Order, key: str, date: dt.datetime, *, goods_named: bool) -> Letter:
    k = o.company
    what = f"{o.number.text} ({o.goods})" if goods_named else o.number.text
    return mail(
        key,
        date=date,
        sender=(f"{k.name} Dispatch", f"dispatch@{k.domain}"),
        to=[ME],
        subject=f"{k.name}: order {o.number.text} has shipped",
        body=f"Hello,\n\nYour order {what} is on its way.\n\nTracking number: {o.tracking.text}\n"
        f"Expected delivery: {o.delivery.text}\n\n{k.name} Dispatch",
    )


def _reschedule(o: Order, day: Fact, key: str, date: dt.datetime, dispatch: Letter) -> Letter:
    k = o.company
    return mail(
        key,
        date=date,
        sender=(f"{k.name} Dispatch", f"dispatch@{k.domain}"),
        to=[ME],
        subject=f"Delivery rescheduled: order {o.number.text}",
        body=f"Hello,\n\nThe delivery of order {o.number.text} has been rescheduled from {o.delivery.text} to "
        f"{day.text}. Tracking number {o.tracking.text} stays the same.\n\n{k.name} Dispatch",
        parent=dispatch,
    )
