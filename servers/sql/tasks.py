"""The SQL tasks and their grading: rows compared with the gold query's rows."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv_mcp import BoundCall, Grade, Observation, Task, TaskSet
from servers.sql.backends import SqlBackend
from servers.sql.models import Cell

__all__ = ["SqlTask", "grade", "load_tasks", "score_rows", "solve"]

_HOW = (
    "\n\nExplore the database with list_tables, describe_table and run_query, then call submit_answer "
    "with the SQL query that returns the answer (or the rows themselves)."
)


@dataclass(frozen=True, slots=True)
class SqlTask(Task):
    """A question, the gold SQL that answers it, and whether row order matters."""

    gold_sql: str = ""
    ordered: bool = False


def load_tasks() -> TaskSet:
    """The shipped tasks (``data/tasks.json``) in their train and test splits."""
    raw = json.loads(resources.files("servers.sql").joinpath("data/tasks.json").read_text(encoding="utf-8"))
    return TaskSet(
        SqlTask(id=t["id"], split=t["split"], prompt=t["question"] + _HOW, gold_sql=t["gold_sql"], ordered=t["ordered"])
        for t in raw
    )


_gold: dict[str, list[list[Cell]]] = {}


def solve(task: SqlTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution: look at the tables, run the gold query, submit it."""
    return [("list_tables", {}), ("run_query", {"sql": task.gold_sql}), ("submit_answer", {"sql": task.gold_sql})]


async def grade(task: SqlTask, db: SqlBackend, call: BoundCall, result: Observation) -> Grade:
    """Reward only on ``submit_answer`` (which ends the episode); every other step earns 0."""
    if call.tool.name != "submit_answer":
        return Grade()
    if result.is_error or result.structured_content is None:
        return Grade(reward=0.0, done=False)
    if task.id not in _gold:  # the fixture is the same for every episode, so the gold rows are too
        _gold[task.id] = (await db.query(task.gold_sql, limit=100_000)).rows
    return Grade(reward=score_rows(result.structured_content["rows"], _gold[task.id], ordered=task.ordered), done=True)


def score_rows(submitted: list[list[Cell]], gold: list[list[Cell]], *, ordered: bool) -> float:
    """1.0 for the gold rows (in order when the question asks for one); else half the row-level F1.

    Values are normalised first: numbers rounded to 2 decimals (so 63750, 63750.0 and "63750.00"
    agree), text stripped. Rows with the wrong number of columns never match.
    """
    mine = [_row(r) for r in submitted]
    theirs = [_row(r) for r in gold]
    if (mine == theirs) if ordered else (Counter(mine) == Counter(theirs)):
        return 1.0
    if not mine or not theirs:
        return 0.0
    common = sum((Counter(mine) & Counter(theirs)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(mine), common / len(theirs)
    return round(0.5 * 2 * precision * recall / (precision + recall), 4)


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
