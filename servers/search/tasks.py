"""The search tasks and their grading: the submitted answer against the gold answers.

Reward, computed once, on ``submit_answer`` (which ends the episode): both sides are
normalised (:func:`normalize_answer`); a submission equal to any gold answer or alias earns
1.0, otherwise the best token F1 against them (partial credit, 0.0 with no word in common).
Every other step earns 0. The grade is a rubric (``docs/rewards.md``): ``answer_f1`` (weight 1) is the best
token F1, which is 1.0 for an exact match; ``exact_match`` (weight 0) reports whether it was one.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from openenv_mcp import Task
from openenv_mcp.rewards.rubrics import Criterion, Rubric, Scoring

__all__ = [
    "HOW",
    "TIERS",
    "SearchTask",
    "best_f1",
    "exact_match",
    "grade",
    "hand_written",
    "normalize_answer",
    "score_answer",
    "solve",
    "token_f1",
]

TIERS = {1: "easy", 2: "medium", 3: "hard"}
"""Difficulty by the number of articles a question needs."""

HOW = (
    "\n\nFind the answer in the document collection: search it (optionally filtered by category and date), "
    "read documents with fetch, then call submit_answer with just the answer (a name, a number or a year)."
)


@dataclass(frozen=True, slots=True)
class SearchTask(Task):
    """A question, its gold answers (the first is canonical, the rest accepted aliases), the articles that hold the
    answer (``evidence``), per hop a query that finds its article and that article (``hops``), and the template the
    question comes from (``hand-written`` for ``data/tasks.json``)."""

    answers: tuple[str, ...] = ()
    evidence: tuple[str, ...] = field(default=())
    hops: tuple[tuple[str, str], ...] = ()
    family: str = "hand-written"


def hand_written() -> list[SearchTask]:
    """The hand-written tasks (``data/tasks.json``, written by ``data/generate.py``) with their ids and splits; one
    article is easy, two are medium."""
    raw = json.loads(
        resources.files("openenv_mcp.servers.search").joinpath("data/tasks.json").read_text(encoding="utf-8")
    )
    return [
        SearchTask(
            id=t["id"],
            split=t["split"],
            prompt=t["question"] + HOW,
            difficulty=TIERS[len(t["hops"])],
            answers=tuple(t["answers"]),
            evidence=tuple(t["evidence"]),
            hops=tuple((hop["query"], hop["doc_id"]) for hop in t["hops"]),
        )
        for t in raw
    ]


def solve(task: SearchTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution, through the tools: per hop, search with its query and fetch its article; then submit
    the gold answer."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for query, doc_id in task.hops:
        calls += [("search", {"query": query}), ("fetch", {"doc_id": doc_id})]
    return [*calls, ("submit_answer", {"answer": task.answers[0]})]


def _submitted(s: Scoring) -> bool:
    result = s.observation
    return s.call.tool.name == "submit_answer" and not result.is_error and result.structured_content is not None


def _answer(s: Scoring) -> str:
    assert s.observation.structured_content is not None
    return str(s.observation.structured_content["answer"])


grade = Rubric(
    Criterion("exact_match", lambda s: exact_match(_answer(s), s.task.answers), weight=0.0),
    Criterion("answer_f1", lambda s: best_f1(_answer(s), s.task.answers)),
    tools=("submit_answer",),
    graded=_submitted,
    done=lambda s: True,
)
"""Score ``submit_answer`` (and end the episode); a refused submission or any other step earns 0."""


def exact_match(prediction: str, answers: tuple[str, ...] | list[str]) -> bool:
    """Whether the normalised prediction equals a normalised gold answer or alias."""
    normalized = normalize_answer(prediction)
    return bool(normalized) and any(normalized == normalize_answer(gold) for gold in answers)


def best_f1(prediction: str, answers: tuple[str, ...] | list[str]) -> float:
    """The best token F1 against the gold answers (1.0 for an exact match)."""
    if exact_match(prediction, answers):
        return 1.0
    return max((token_f1(prediction, gold) for gold in answers), default=0.0)


def normalize_answer(text: str) -> str:
    """Lowercase, strip accents, drop thousands separators, punctuation and articles, collapse whitespace.

    ``"The Kestrel-Motors"`` -> ``"kestrel motors"``; ``"4,812 m."`` -> ``"4812 m"``.
    """
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"(?<=\d)[,.](?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s]|_", " ", text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """F1 over the normalised words of both (each word counted as often as it occurs)."""
    mine, theirs = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(mine) & Counter(theirs)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(mine), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def score_answer(prediction: str, answers: tuple[str, ...] | list[str]) -> float:
    """1.0 when the normalised prediction equals a normalised answer, else the best token F1 (4 decimals)."""
    return round(best_f1(prediction, answers), 4)
