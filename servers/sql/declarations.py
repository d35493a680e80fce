"""What sql declares for the toolkit: what parity forgives between SQLite and PostgreSQL, and how a recorded prod
session becomes a task."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from openenv_mcp.environment.declarations import COMMON, Declarations, Mining, Normaliser, Parity, Recorded, Rejected
from openenv_mcp.environment.tasks import Task

__all__ = ["declarations", "mine_session", "normalise"]

_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def normalise(tool: str, arguments: Mapping[str, Any], value: Any) -> Any:
    """Row order when the query has no ORDER BY anywhere (SQL promises none; SQLite and PostgreSQL pick
    different plans); true and false as 1 and 0 (SQLite has no boolean type)."""
    if tool in ("run_query", "submit_answer") and isinstance(value, dict) and isinstance(value.get("rows"), list):
        rows = [[float(cell) if isinstance(cell, bool) else cell for cell in row] for row in value["rows"]]
        sql = str(arguments.get("sql") or "")
        value = {**value, "rows": rows if _ORDER_BY.search(sql) else sorted(rows, key=repr)}
    return value


def mine_session(template: Task, session: Recorded, task_id: str, prompt: str) -> tuple[Task, int]:
    """A sql task whose gold query is the session's last accepted ``submit_answer`` query (prod is one read-only
    database, the sim's fixture: every session starts from it)."""
    calls = session.calls
    answers = [n for n, c in enumerate(calls) if c["tool"] == "submit_answer" and not c.get("is_error")]
    if not answers:
        raise Rejected("no accepted submit_answer: there is no answer to grade by")
    last = answers[-1]
    gold = calls[last]["arguments"].get("sql")
    if not isinstance(gold, str):
        raise Rejected("the answer was submitted as rows, not as a query: the sim cannot recompute it")
    steps = last + 1
    difficulty = "easy" if steps <= 3 else "medium" if steps <= 6 else "hard"
    fields: dict[str, Any] = {"id": task_id, "prompt": prompt, "difficulty": difficulty, "split": "train"}
    fields |= {"gold_sql": gold, "ordered": bool(_ORDER_BY.search(gold)), "family": "mined"}  # SqlTask's own
    return dataclasses.replace(template, **fields), steps


declarations = Declarations(
    parity=Parity(
        normaliser=Normaliser(
            forgives=(
                *COMMON,
                "the order of rows when the query has no ORDER BY: SQL promises no order then, and the two engines' "
                "plans differ (a truncated result can then hold other rows: that stays a difference)",
                "true and false against 1 and 0 in rows: SQLite has no boolean type, so a comparison (x > 1, x IS "
                "NULL, EXISTS) gives the integer 1 or 0 where PostgreSQL gives a boolean; an agent reads them alike",
            ),
            rule=normalise,
        )
    ),
    mining=Mining(miner=mine_session),
)
"""sql's declarations (``Environment.declares``)."""
