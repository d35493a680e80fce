"""The families of generated email scenarios: what one seeded draw of a family makes, and the registry.

A family is a function ``(rng, tag=..., test=..., level=...) -> Plan``: from a seeded random source it draws a
scenario (people, companies, values, near-miss distractors), the messages it adds to the mailbox, the prompt and
the messages the task expects to be sent. ``level`` (0, 1, 2) asks for more distractors, hops and corrections;
the tier a task gets is computed from what the plan reports (:meth:`Plan.load`), not from the level.

- ``answer``: reply in a thread with a value found in other messages (a PO number, a delivery date, an amount);
- ``forward``: forward the right document (invoice, quote...) to the right person, sometimes with a note;
- ``schedule``: confirm to everyone on a thread the one slot every participant can make;
- ``triage``: route a shared folder's messages to teams by a rule, one forward each, leaving the rest;
- ``brief``: write a new message giving facts gathered from several messages.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from openenv_mcp.servers.email.tasks import Expectation
from openenv_mcp.servers.email.world import Company, Fact, Letter

__all__ = ["Family", "Plan", "phrase", "reply_expectation", "spell"]

EXACT = " State only the value that applies: a message that also names a wrong or outdated one gets no credit for it."


@dataclass(frozen=True, slots=True)
class Plan:
    """One drawn scenario.

    Attributes:
        prompt: The task as the agent reads it (before the environment's common tail).
        expect: The messages that solve it.
        letters: The messages the scenario files into the mailbox.
        phrasing: Which of the family's prompt phrasings was used (the last of each list is held out for test).
        companies: The outside companies it involves (test tasks use only held-out ones).
        near_misses: Messages made to look like the one that matters (another vendor's invoice, the other slot).
        hops: Messages beyond the first that must be read to get from the prompt to the answer.
        superseded: Whether a value was corrected by a later message.
    """

    prompt: str
    expect: tuple[Expectation, ...]
    letters: tuple[Letter, ...]
    phrasing: str
    companies: frozenset[str]
    near_misses: int
    hops: int = 0
    superseded: bool = False

    def load(self) -> int:
        """How much the task asks: a point per three near misses (at most two), a point per hop, two for a
        superseded value, a point per two messages to send beyond the first, a point for several recipients."""
        recipients = max(len(e.to) for e in self.expect)
        return (
            min(self.near_misses, 6) // 3
            + self.hops
            + 2 * self.superseded
            + (len(self.expect) - 1) // 2
            + (recipients > 1)
        )


Family = Callable[..., Plan]


def phrase(rng: random.Random, phrasings: Sequence[str], *, test: bool) -> tuple[int, str]:
    """A prompt phrasing: test tasks take the last one (held out), train tasks one of the others."""
    index = len(phrasings) - 1 if test else rng.randrange(len(phrasings) - 1)
    return index, phrasings[index]


def spell(*facts: Fact) -> tuple[tuple[str, ...], ...]:
    return tuple(f.spellings for f in facts)


def reply_expectation(
    thread: Sequence[Letter], to: Sequence[str], facts: Sequence[Fact], avoid: Sequence[Fact]
) -> Expectation:
    """A reply somewhere in ``thread`` (the reference answers its last message)."""
    return Expectation(
        kind="reply",
        to=frozenset(a.lower() for a in to),
        targets=tuple(letter.message_id for letter in thread),
        facts=spell(*facts),
        avoid=spell(*avoid),
    )


def names(*companies: Company) -> frozenset[str]:
    return frozenset(c.name for c in companies)
