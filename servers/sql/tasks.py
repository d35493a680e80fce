"""The SQL tasks and their grading: rows compared with the gold query's rows.

The grade is a rubric (``docs/rewards.md``) that scores ``submit_answer`` only (which ends the episode):
``exact_rows`` (weight 0.5) is 1 for the gold rows (in order when the question asks for one), ``row_f1``
(weight 0.5) the row-level F1 against them; so the reward is 1.0 for the gold rows, else half the F1.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv_mcp import Task
from openenv_mcp.rewards.rubrics import Criterion, Rubric, Scoring
from openenv_mcp.servers.sql.backends import SqlBackend
from openenv_mcp.servers.sql.models import Cell

__all__ = ["HOW", "SqlTask", "exact_rows", "grade", "hand_written", "row_f1", "score_rows", "solve"]

HOW = (
    "\n\nExplore the database with list_tables, describe_table and run_query, then call submit_answer "
    "with the SQL query that returns the answer (or the rows themselves)."
)


@dataclass(frozen=True, slots=True)
class SqlTask(Task):
    """A question, the gold SQL that answers it, whether row order matters, and the family it comes from
    (``hand-written`` for the tasks of ``data/tasks.json``)."""

    gold_sql: str = ""
    ordered: bool = False
    family: str = "hand-written"


def hand_written() -> list[SqlTask]:
    """The hand-written tasks (``data/tasks.json``), with their ids, splits and difficulties."""
    raw = json.loads(resources.files("openenv_mcp.servers.sql").joinpath("data/tasks.json").read_text(encoding="utf-8"))
    return [
        SqlTask(
            id=t["id"],
            split=t["split"],
            prompt=t["question"] + HOW,
            difficulty=t["difficulty"],
            gold_sql=t["gold_sql"],
            ordered=t["ordered"],
        )
        for t in raw
    ]


_gold: dict[str, list[list[Cell]]] = {}


def solve(task: SqlTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution: look at the tables, run the gold query, submit it."""
    return [("list_tables", {}), ("run_query", {"sql": task.gold_sql}), ("submit_answer", {"sql": task.gold_sql})]


def _submitted(s: Scoring) -> bool:
    result = s.observation
    return s.call.tool.name == "submit_answer" and not result.is_error and result.structured_content is not None


async def _rows(s: Scoring) -> tuple[list[list[Cell]], list[list[Cell]]]:
    task: SqlTask = s.task
    if task.id not in _gold:  # the fixture is the same for every episode, so the gold rows are too
        db: SqlBackend = s.backend
        _gold[task.id] = (await db.query(task.gold_sql, limit=100_000)).rows
    assert s.observation.structured_content is not None
    return s.observation.structured_content["rows"], _gold[task.id]


grade = Rubric(
    Criterion("exact_rows", lambda s: exact_rows(*s.data, ordered=s.task.ordered), weight=0.5, terminal=True),
    Criterion("row_f1", lambda s: row_f1(*s.data), weight=0.5, terminal=True),
    tools=("submit_answer",),
    prepare=lambda s: _rows(s) if _submitted(s) else None,
    done=_submitted,
)
"""Reward only on ``submit_answer`` (which ends the episode, unless refused); every other step earns 0."""


def exact_rows(submitted: list[list[Cell]], gold: list[list[Cell]], *, ordered: bool) -> bool:
    """Whether the rows are the gold rows (in order when the question asks for one), values normalised."""
    mine = [_row(r) for r in submitted]
    theirs = [_row(r) for r in gold]
    return (mine == theirs) if ordered else (Counter(mine) == Counter(theirs))


def row_f1(submitted: list[list[Cell]], gold: list[list[Cell]]) -> float:
    """The row-level F1 of ``submitted`` against ``gold`` (rows as multisets, values normalised; 1.0 for both
    empty)."""
    mine = Counter(_row(r) for r in submitted)
    theirs = Counter(_row(r) for r in gold)
    if mine == theirs:
        return 1.0
    common = sum((mine & theirs).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(mine.values()), common / sum(theirs.values())
    return 2 * precision * recall / (precision + recall)


def score_rows(submitted: list[list[Cell]], gold: list[list[Cell]], *, ordered: bool) -> float:
    """1.0 for the gold rows (in order when the question asks for one); else half the row-level F1.

    Values are normalised first: numbers rounded to 2 decimals (so 63750, 63750.0 and "63750.00"
    agree), text stripped. Rows with the wrong number of columns never match. The rubric's total:
    ``0.5 * exact_rows + 0.5 * row_f1``, to 4 decimals.
    """
    exact = float(exact_rows(submitted, gold, ordered=ordered))
    return round(0.0 + 0.5 * exact + 0.5 * row_f1(submitted, gold), 4)


def _row(row: list[Cell]) -> tuple[object, ...]:
    return tuple(_value(v) for v in row)


def _value(value: Cell) -> object:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return round(float(value), 2)
    text = value.strip()
    try:
        return round(float(text), 2)
    except ValueError:
        return text
