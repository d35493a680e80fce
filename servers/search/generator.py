"""The search task generator: single- and multi-hop questions over the corpus's world, with their evidence.

    from openenv_mcp.servers.search.generator import VERSION, generate
    for candidate in generate():          # deterministic: the same tasks, ids and prompts every time
        candidate.task                    # a SearchTask: id, split, prompt, answers, evidence, hops, difficulty

The questions come from the templates of :mod:`~openenv_mcp.servers.search.questions` over the facts that
``data/generate.py`` writes with the corpus (``data/facts.json.gz``); nothing is searched at load time.

- **Ids** are ``search-g{VERSION}-{template}-{hash}``, the hash of the template and the entity it starts from.
- **Difficulty** is the number of articles a question needs: one is ``easy``, two ``medium``, three ``hard``.
- **Split**: a question is in ``test`` when the entity it starts from is held out (:func:`held_out`: a hash of
  its name, about one in six). A question's fact is its last article and its answer; no train question has the
  fact of a test question (hand-written ones included), and no test question has the fact of a hand-written train
  one, so a model cannot answer test from what train taught it, even when a test question reaches a train
  question's entity by another path.
- **Caps**: a template asks about at most 20, 30 or 50 entities (one, two, three articles), taken in a seeded
  order, so the set is not mostly about the 1,010 people and leans to the questions that need more reading.
- Questions whose wording equals a hand-written one are left to the hand-written task.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from math import gcd

from openenv_mcp.environment.tasks import TaskSet
from openenv_mcp.servers.search.facts import facts
from openenv_mcp.servers.search.questions import TEMPLATES, Question, Template
from openenv_mcp.servers.search.tasks import HOW, TIERS, SearchTask, hand_written

__all__ = ["VERSION", "Candidate", "fact_of", "generate", "held_out", "load_tasks"]

VERSION = 1
CAPS = {1: 20, 2: 30, 3: 50}
"""Questions per template at most, by the number of articles they need (the harder, the more)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A generated task, the template it comes from and the entity it starts from."""

    task: SearchTask
    template: Template
    anchor: str


@functools.cache
def held_out(anchor: str) -> bool:
    """Whether questions starting from this entity (``people:Nico Pham``, ``finals:2018 Kelmarian Cup``) are test."""
    return int(hashlib.sha256(f"search-held-out:{anchor}".encode()).hexdigest()[:8], 16) % 6 == 0


def fact_of(task: SearchTask) -> tuple[str, str]:
    """What a question's answer rests on: its last article and its answer."""
    return task.evidence[-1], task.answers[0].casefold()


def generate(*, seed: int = 0) -> Iterator[Candidate]:
    """Every generated task, in template order (``seed`` draws the entities of capped templates)."""
    hand = hand_written()
    hand_prompts = {_words(task.prompt.removesuffix(HOW)) for task in hand}
    asked = [
        (template, question, held_out(question.anchor), (question.hops[-1][1], question.answers[0].casefold()))
        for template in TEMPLATES
        for question in _asked(template, seed)
        if _words(question.prompt) not in hand_prompts
    ]
    hand_train = {fact_of(task) for task in hand if task.split == "train"}
    test_facts = {fact for _, _, test, fact in asked if test and fact not in hand_train}
    test_facts |= {fact_of(task) for task in hand if task.split == "test"}
    for template, question, test, fact in asked:
        if (fact not in hand_train) if test else (fact not in test_facts):
            yield Candidate(_task(template, question, test), template, question.anchor)


def _asked(template: Template, seed: int) -> list[Question]:
    """At most :data:`CAPS` questions of a template, about entities taken in a seeded order: from a seeded start, by
    a seeded step that is prime to their number, so every entity comes once (cheaper than shuffling 1,010 people
    for each of 76 templates)."""
    entities = facts()[template.kind]
    count = len(entities)
    rng = random.Random(f"{seed}:{template.name}")
    start, step = rng.randrange(count), rng.randrange(count // 3, count) if count > 3 else 1
    while gcd(step, count) != 1:
        step += 1
    order = (entities[(start + i * step) % count] for i in range(count))
    return list(islice(template.questions(facts(), order), CAPS[template.hops]))


def _task(template: Template, question: Question, test: bool) -> SearchTask:
    digest = hashlib.sha256(f"{VERSION}:{template.name}:{question.anchor}".encode()).hexdigest()
    return SearchTask(
        id=f"search-g{VERSION}-{template.name}-{digest[:6]}",
        split="test" if test else "train",
        prompt=question.prompt + HOW,
        difficulty=TIERS[template.hops],
        answers=tuple(question.answers),
        evidence=tuple(doc_id for _, doc_id in question.hops),
        hops=question.hops,
        family=template.name,
    )


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


def load_tasks() -> TaskSet:
    """The environment's tasks: the hand-written ones (``data/tasks.json``), then the generated ones."""
    return TaskSet([*hand_written(), *(candidate.task for candidate in generate())])
