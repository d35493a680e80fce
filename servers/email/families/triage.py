"""``triage``: route a shared folder's messages to the teams a rule names, one forward each, and leave the rest.

A folder of its own (a shared inbox: "Info", "Hello"...) holds messages of several categories (invoices, support
requests, press enquiries, job applications, contracts for signature, security alerts) and of none (newsletters,
thank-you notes, out-of-office replies). The prompt gives one to three rules ("every invoice to
accounting@northwind.example"); each message of a ruled category is forwarded once to its team. Level 2 adds
messages of ruled categories that are already read, which the prompt says were dealt with.
"""

from __future__ import annotations

import datetime as dt
import random

from openenv_mcp.servers.email.families import Plan, names, phrase
from openenv_mcp.servers.email.tasks import Expectation
from openenv_mcp.servers.email.world import ME, TEAMS, Company, Letter, company_pool, contact, mail, timeline

__all__ = ["triage"]

PHRASINGS = (
    "Triage the '{folder}' folder: forward {rules} (one forward per message) and leave everything else alone.",
    "You look after the shared '{folder}' folder. Route its messages: forward {rules}. One forward per message; "
    "forward nothing else.",
    "Go through the '{folder}' folder and forward {rules}, one message per forward; nothing else needs action.",
    "Mail is waiting in the '{folder}' folder. Send on {rules}, as one forward per message, and ignore the rest.",
)
FOLDERS = ("Info", "Hello", "Shared inbox", "Front desk", "Team inbox")
CATEGORIES = {  # category: (team, what the rule calls it)
    "invoice": ("accounting", "every invoice"),
    "support": ("support", "every support request from a customer"),
    "press": ("press", "every press enquiry"),
    "application": ("careers", "every job application"),
    "contract": ("legal", "every contract sent for signature"),
    "security": ("security", "every security alert"),
}
PDF = "application/pdf"
_NOISE = ["newsletter", "thanks", "away"]


def triage(rng: random.Random, *, tag: str, test: bool, level: int) -> Plan:
    pool = list(company_pool(test=test))
    rng.shuffle(pool)
    people: set[str] = set()
    folder = rng.choice(FOLDERS)
    ruled = rng.sample(sorted(CATEGORIES), 1 + level)
    unruled = [c for c in CATEGORIES if c not in ruled]
    routed = [rng.choice(ruled) for _ in range(1 + level)] + ruled  # every ruled category at least once
    rng.shuffle(routed)
    left = rng.sample(unruled, min(len(unruled), 1 + level)) + rng.sample(_NOISE, 1 + (level > 0))
    done = [rng.choice(ruled) for _ in range(2)] if level == 2 else []
    kinds = [(c, True, False) for c in routed] + [(c, False, False) for c in left] + [(c, False, True) for c in done]
    rng.shuffle(kinds)
    moments = timeline(rng, len(kinds), within=5)
    letters: list[Letter] = []
    expect: list[Expectation] = []
    used: list[Company] = []
    for i, ((category, wanted, read), moment) in enumerate(zip(kinds, moments, strict=True)):
        company = pool[i % len(pool)]
        used.append(company)
        letter = _message(rng, category, company, people, f"{tag}.t{i}", folder, moment, unread=not read)
        letters.append(letter)
        if wanted:
            team = TEAMS[CATEGORIES[category][0]]
            expect.append(Expectation(kind="forward", to=frozenset({team[1]}), targets=(letter.message_id,)))
    rules = [f"{CATEGORIES[c][1]} to {TEAMS[CATEGORIES[c][0]][1]}" for c in ruled]
    text = rules[0] if len(rules) == 1 else ", ".join(rules[:-1]) + " and " + rules[-1]
    index, template = phrase(rng, PHRASINGS, test=test)
    prompt = template.format(folder=folder, rules=text)
    if done:
        prompt += " Only the unread messages need handling: the read ones were dealt with already."
    return Plan(
        prompt=prompt,
        expect=tuple(expect),
        letters=tuple(letters),
        phrasing=f"route{index}",
        companies=names(*used),
        near_misses=len(left) + len(done),
    )


# category: (the sending team's name and mailbox, or None for a person), subjects, body, attachment name
KINDS: dict[str, tuple[tuple[str, str] | None, tuple[str, ...], str, str | None]] = {
    "invoice": (
        ("Billing", "billing"),
        ("Invoice {number} from {k}", "{k}: your invoice for {goods}"),
        "Hello,\n\nAttached is invoice {number} for {goods}, payable within 30 days.\n\n{k} Billing",
        "invoice-{number}.pdf",
    ),
    "support": (
        None,
        ("Problem with our {goods}", "Help needed: order {number}", "Something is wrong"),
        "Hi,\n\nThe {goods} we ordered from you (order {number}) is not working as it should. Could someone look "
        "into it?\n\n{first}, {k}",
        None,
    ),
    "press": (
        None,
        ("Interview request", "Question from a journalist", "Story on {goods}"),
        "Hello,\n\nI'm writing a piece on {goods} for the {k} trade journal and would like a quote from Northwind. "
        "Who could I speak to?\n\n{name}",
        None,
    ),
    "application": (
        None,
        ("Application: {role}", "Applying for the {role} role"),
        "Dear hiring team,\n\nPlease find my CV attached for the {role} position.\n\nBest regards,\n{name}",
        "CV-{first}.pdf",
    ),
    "contract": (
        None,
        ("Agreement {number} for signature", "Please sign: {goods} agreement"),
        "Hello,\n\nAttached is the {goods} agreement ({number}) for Northwind's signature. Please return a signed "
        "copy.\n\n{name}, {k}",
        "agreement-{number}.pdf",
    ),
    "security": (
        ("Security", "security"),
        ("Unusual sign-in to your account", "Security alert: new device", "Suspicious login"),
        "We noticed a sign-in to the Northwind account on the {k} portal from a new device (reference {number}). "
        "If this wasn't you, act now.\n\n{k} Security",
        None,
    ),
    "newsletter": (
        ("News", "news"),
        ("{k} news: what's new in {goods}",),
        "This month at {k}: new {goods}, a customer story and our summer opening hours.\n\nUnsubscribe at any time.",
        None,
    ),
    "thanks": (
        None,
        ("Thank you!", "Thanks for the visit"),
        "Hi,\n\nThanks for hosting us last week, it was great to meet the team.\n\n{first}",
        None,
    ),
    "away": (
        None,
        ("Out of office: {name}",),
        "I'm away until next Monday with limited access to email.\n\n{first}",
        None,
    ),
}
ROLES = ("warehouse lead", "account manager", "data analyst", "office coordinator")


def _message(
    rng: random.Random,
    category: str,
    k: Company,
    people: set[str],
    key: str,
    folder: str,
    date: dt.datetime,
    *,
    unread: bool,
) -> Letter:
    person = contact(rng, k, people)
    team, subjects, body, attachment = KINDS[category]
    values = {
        "k": k.name,
        "goods": rng.choice(k.goods),
        "number": rng.randrange(10000, 99999),
        "name": person[0],
        "first": person[0].split()[0],
        "role": rng.choice(ROLES),
    }
    sender = (f"{k.name} {team[0]}", f"{team[1]}@{k.domain}") if team else person
    files = [(attachment.format(**values), PDF, rng.randrange(20_000, 250_000))] if attachment else []
    return mail(
        key,
        folder=folder,
        date=date,
        sender=sender,
        to=[(folder, "info@northwind.example"), ME],
        subject=rng.choice(subjects).format(**values),
        body=body.format(**values),
        attachments=files,
        unread=unread,
    )
