"""The email tasks and their grading: a score computed from what the episode sent.

A task expects one or more messages (``data/tasks.json``), each of a kind:

- ``reply``: a reply in a given thread (any of its ``targets`` Message-IDs) to given people;
- ``forward``: a given message (its ``targets`` Message-ID) forwarded to given people;
- ``new``: a new message to given people, with given words in its subject.

Every message the episode sends is matched, in order, to an expectation not yet attempted:
a reply by the message it answers, a forward by the message it forwards, else any message by
its recipients (a forward of the wrong message never matches a forward expectation). The
first message matched to an expectation is the one scored: sent mail cannot be recalled.
A message that matches nothing is an extra.

Score of one expected message (0-1), a weighted sum of three parts:

- recipients (0.3): Jaccard overlap of the expected and actual recipients (To and Cc), so
  missing people and people who should not get it both cost;
- form (0.2): reply: half for In-Reply-To/References pointing into the thread, half for the
  "Re: <original subject>" subject; forward: 0.75 for forwarding the right message (its
  attachments travel with it), 0.25 for the "Fwd: <original subject>" subject; new: half for
  not being a reply or forward, half for the share of required subject words present;
- facts (0.5): the share of required facts found in the text the agent wrote (the body, or a
  forward's note); a fact is a list of accepted spellings ("14:00", "2pm", ...), matched as
  whole words, case-insensitively. A task may also list values to ``avoid`` (the distractors'
  values: another invoice's amount, a superseded date): a text that states any of them scores
  0 for facts, so naming every candidate is never better than naming the right one.

When a task lists no facts the weights are 0.4 recipients and 0.6 form.

Task score = mean over expected messages (0 for one never attempted) - 0.2 per extra message,
floored at 0. Each step's reward is the change in task score, so an episode's total reward is
its final score (1.0 only for a perfect run). The episode is done once every expected message
has been attempted, or at the step limit.

Each graded step also reports its named scores (``docs/rewards.md``): ``recipients``, ``form`` and ``facts``
(the means of those parts over the expected messages, 0 for one never attempted; ``facts`` only when the task
lists some), ``attempted`` (the share of expected messages attempted) and ``extra_messages`` (how many).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from openenv_mcp import BoundCall, Grade, Observation, Task, TaskSet
from openenv_mcp.servers.email.backends import MailBackend
from openenv_mcp.servers.email.drafts import Draft, subject_base
from openenv_mcp.servers.email.models import Message
from openenv_mcp.servers.email.sim import Scenario, SimMailbox, fixture, mailbox_of

__all__ = [
    "EXTRA_PENALTY",
    "EmailTask",
    "Expectation",
    "assess",
    "common_tail",
    "grade",
    "load_tasks",
    "score",
    "solve",
]

EXTRA_PENALTY = 0.2
SENDING_TOOLS = frozenset({"send_email", "reply_email", "forward_email"})

_HOW = (
    "\n\nYou are {name} <{address}>; today is {today}. Find what you need with list_folders, list_emails, "
    "search_emails and read_email (message ids look like INBOX/12); send with reply_email, forward_email or "
    "send_email. Sent mail cannot be recalled: every message you send is graded."
)


@dataclass(frozen=True, slots=True)
class Expectation:
    """One message the task expects to be sent."""

    kind: Literal["reply", "forward", "new"]
    to: frozenset[str]
    targets: tuple[str, ...] = ()
    facts: tuple[tuple[str, ...], ...] = ()
    subject: tuple[tuple[str, ...], ...] = ()
    avoid: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class EmailTask(Task):
    """A task prompt and the messages that solve it; a generated task also carries the scenario messages its
    mailbox adds to the shipped one (see :mod:`.generator`)."""

    expect: tuple[Expectation, ...] = ()
    scenario: Scenario | None = None

    def __post_init__(self) -> None:
        if any(isinstance(e, dict) for e in self.expect):  # read back from JSON (OPENENV_EXTRA_TASKS: a mined task)
            object.__setattr__(
                self, "expect", tuple(_expectation(e) if isinstance(e, dict) else e for e in self.expect)
            )


def _expectation(fields: Mapping[str, Any]) -> Expectation:
    return Expectation(
        kind=fields["kind"],
        to=frozenset(a.lower() for a in fields["to"]),
        targets=tuple(fields.get("targets", ())),
        facts=tuple(tuple(f) for f in fields.get("facts", ())),
        subject=tuple(tuple(s) for s in fields.get("subject", ())),
        avoid=tuple(tuple(a) for a in fields.get("avoid", ())),
    )


@functools.cache
def common_tail() -> str:
    """What every task's prompt ends with: who you are, today's date, the tools, and that sent mail is graded."""
    mailbox = fixture()
    today = mailbox.now.strftime("%A %d %B %Y").replace(" 0", " ")
    return _HOW.format(name=mailbox.owner_name, address=mailbox.owner, today=today)


def load_tasks() -> TaskSet:
    """The hand-written tasks (``data/tasks.json``) in their train and test splits (the environment serves these
    and the generated ones: :func:`.generator.load_all`)."""
    raw = json.loads(
        resources.files("openenv_mcp.servers.email").joinpath("data/tasks.json").read_text(encoding="utf-8")
    )
    how = common_tail()
    return TaskSet(
        EmailTask(
            id=t["id"],
            split=t["split"],
            prompt=t["prompt"] + how,
            difficulty=t["difficulty"],
            expect=tuple(_expectation(e) for e in t["expect"]),
        )
        for t in raw
    )


def solve(task: EmailTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution, from what the task expects: for each expected message, read the message it
    concerns (if any), then send it with the right recipients, form and the first spelling of every fact.

    A reply answers the thread's latest message (to all when the task expects several people); a forward
    forwards its message with the facts as its note; a new message's subject is its required words. It needs
    only the task: a task's mailbox is a function of the task (never of the episode's seed).
    """
    mailbox = mailbox_of(task.scenario)
    sign = mailbox.owner_name.split()[0]
    calls: list[tuple[str, dict[str, Any]]] = []
    for e in task.expect:
        text = "Hello,\n\n" + "; ".join(spellings[0] for spellings in e.facts) + f"\n\n{sign}"
        if e.kind == "new":
            subject = " ".join(words[0] for words in e.subject).title()
            calls.append(("send_email", {"to": sorted(e.to), "subject": subject, "body": text}))
            continue
        target = mailbox.by_message_id[e.targets[-1] if e.kind == "reply" else e.targets[0]].id
        calls.append(("read_email", {"message_id": target}))
        if e.kind == "reply":
            calls.append(("reply_email", {"message_id": target, "body": text, "reply_all": len(e.to) > 1}))
        else:
            calls.append(("forward_email", {"message_id": target, "to": sorted(e.to), "note": text}))
    return calls


async def grade(task: EmailTask, mail: MailBackend, call: BoundCall, result: Observation) -> Grade:
    """Reward the change in task score after each message sent; 0 for every other step."""
    if call.tool.name not in SENDING_TOOLS or result.is_error or not isinstance(mail, SimMailbox):
        return Grade()
    value, complete, scores = assess(task, [sent.draft for sent in mail.outbox], mail.fixture.by_message_id)
    reward = round(value - mail.awarded, 4)
    mail.awarded = value
    return Grade(reward=reward, done=complete, scores=scores)


def score(task: EmailTask, sent: Sequence[Draft], messages: Mapping[str, Message]) -> tuple[float, bool]:
    """The task score for ``sent`` (in order), and whether every expected message was attempted.

    ``messages`` maps Message-IDs to the fixture's messages (for the original subjects).
    """
    value, complete, _ = assess(task, sent, messages)
    return value, complete


def assess(
    task: EmailTask, sent: Sequence[Draft], messages: Mapping[str, Message]
) -> tuple[float, bool, dict[str, float]]:
    """:func:`score`, with the named scores that explain it."""
    attempts: dict[int, Draft] = {}
    extras = 0
    for draft in sent:
        index = _match(task.expect, attempts, draft)
        if index is None:
            extras += 1
        else:
            attempts[index] = draft
    found = [_parts(e, attempts[i], messages) if i in attempts else None for i, e in enumerate(task.expect)]
    parts = [_combine(e, part) if part is not None else 0.0 for e, part in zip(task.expect, found, strict=True)]
    value = max(0.0, sum(parts) / len(parts) - EXTRA_PENALTY * extras)
    count = len(task.expect)
    scores = {
        name: sum(part[k] for part in found if part is not None) / count
        for k, name in enumerate(("recipients", "form"))
    }
    facts = [part[2] if part is not None else 0.0 for e, part in zip(task.expect, found, strict=True) if e.facts]
    if facts:
        scores["facts"] = sum(facts) / len(facts)
    scores["attempted"] = len(attempts) / count
    scores["extra_messages"] = float(extras)
    return round(value, 4), len(attempts) == count, scores


def _forwarded(draft: Draft) -> str | None:
    return draft.forward_of.message_id if draft.forward_of is not None else None


def _match(expect: Sequence[Expectation], attempts: Mapping[int, Draft], draft: Draft) -> int | None:
    open_ = [i for i in range(len(expect)) if i not in attempts]
    forwarded = _forwarded(draft)
    for i in open_:
        e = expect[i]
        if e.kind == "reply" and draft.in_reply_to is not None and draft.in_reply_to in e.targets:
            return i
        if e.kind == "forward" and forwarded is not None and forwarded in e.targets:
            return i
    recipients = set(draft.recipients)
    for i in open_:
        e = expect[i]
        if e.kind == "forward" and forwarded is not None:
            continue
        if recipients & e.to:
            return i
    return None


def _combine(e: Expectation, part: tuple[float, float, float]) -> float:
    recipients, form, facts = part
    if e.facts:
        return round(0.3 * recipients + 0.2 * form + 0.5 * facts, 4)
    return round(0.4 * recipients + 0.6 * form, 4)


def _parts(e: Expectation, draft: Draft, messages: Mapping[str, Message]) -> tuple[float, float, float]:
    """One expected message's recipients, form and facts parts (facts 1.0 when it lists none)."""
    actual = set(draft.recipients)
    recipients = len(actual & e.to) / len(actual | e.to)
    bases = {subject_base(messages[t].subject) for t in e.targets if t in messages}
    if e.kind == "reply":
        threaded = draft.in_reply_to in e.targets and draft.in_reply_to in draft.references
        titled = _prefixed(draft.subject, "re") and subject_base(draft.subject) in bases
        form = 0.5 * threaded + 0.5 * titled
    elif e.kind == "forward":
        right = _forwarded(draft) in e.targets
        titled = _prefixed(draft.subject, "fwd?") and subject_base(draft.subject) in bases
        form = 0.75 * right + 0.25 * titled
    else:
        fresh = draft.in_reply_to is None and draft.forward_of is None
        form = 0.5 * fresh + 0.5 * _share(e.subject, draft.subject)
    facts = _share(e.facts, draft.text)
    if e.avoid and _share(e.avoid, draft.text) > 0:
        facts = 0.0  # a distractor's value stated: a guess among candidates earns no facts
    return recipients, float(form), facts


def _prefixed(subject: str, prefix: str) -> bool:
    return re.match(rf"^\s*{prefix}\s*:", subject, re.IGNORECASE) is not None


def _share(groups: Sequence[Sequence[str]], text: str) -> float:
    """The share of ``groups`` with at least one spelling found in ``text`` as whole words (1.0 if none)."""
    if not groups:
        return 1.0
    normal = " ".join(text.split()).casefold()
    found = sum(any(_contains(normal, spelling) for spelling in group) for group in groups)
    return found / len(groups)


def _contains(text: str, phrase: str) -> bool:
    pattern = r"(?<!\w)" + re.escape(" ".join(phrase.split()).casefold()) + r"(?!\w)"
    return re.search(pattern, text) is not None
