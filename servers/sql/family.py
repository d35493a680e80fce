"""What a SQL question family is: a question (one or two wordings), a gold query and a grid of parameters.

The parameters come from the fixture's entities and from fixed lists (:mod:`~openenv_mcp.servers.sql.shop`); the
gold queries are written to give the same rows on SQLite and PostgreSQL: dates compared as ISO text literals, months
as ``SUBSTR(CAST(d AS TEXT), 1, 7)``, no ``ROUND`` (the grader rounds to 2 decimals), no integer division, no date
arithmetic, ties broken by ids, never by text. ``{limit}`` in a gold query is where a top-k question's LIMIT goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.servers.sql.shop import Shop

__all__ = ["POINTS", "Choice", "Family", "each"]

POINTS = {"group": 1, "having": 1, "null": 1, "dates": 1, "top": 1, "subquery": 2, "window": 2}
"""Difficulty points of what a gold query needs besides its joins (one point per table beyond the first)."""


@dataclass(frozen=True)
class Family:
    """One kind of question.

    Attributes:
        name: Short, in the task ids (``sql-g1-NAME-hash``).
        anchor: ``(kind, parameter)``: the parameter whose held-out values make a task a test task, and its kind.
        tables: Tables the gold query reads (subqueries included).
        needs: What else it needs (keys of :data:`POINTS`).
        questions: The wordings (``str.format`` over the parameters).
        sql: The gold query (``str.format`` over the parameters and ``limit``).
        grid: The parameters of every instance.
        ordered: Whether the answer's row order is part of it.
        top: For a top-k question, the column the rows are ranked by (parameter ``k`` is the k).
    """

    name: str
    anchor: tuple[str, str]
    tables: int
    needs: tuple[str, ...]
    questions: tuple[str, ...]
    sql: str
    grid: Callable[[Shop], Iterable[dict[str, Any]]]
    ordered: bool = False
    top: int | None = None
    points: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", self.tables - 1 + sum(POINTS[need] for need in self.needs))
        object.__setattr__(self, "sql", " ".join(self.sql.split()))  # one line, single spaces


@dataclass(frozen=True, slots=True)
class Choice:
    """A variant of a question: its ``key``, the ``words`` it adds to the question and the ``sql`` to the query."""

    key: str
    words: str
    sql: str

    def __str__(self) -> str:
        return self.words


def each(**axes: Iterable[Any] | str) -> Callable[[Shop], Iterator[dict[str, Any]]]:
    """A grid: every combination of the axes; an axis given as a string names a list of the :class:`Shop`."""

    def grid(shop: Shop) -> Iterator[dict[str, Any]]:
        combos: list[dict[str, Any]] = [{}]
        for name, values in axes.items():
            found = getattr(shop, values) if isinstance(values, str) else list(values)
            combos = [{**combo, name: value} for combo in combos for value in found]
        return iter(combos)

    return grid


REV = "SUM(oi.quantity * oi.unit_price)"
IN = "o.order_date >= '{p.start}' AND o.order_date <= '{p.end}'"
LIVE = "o.status <> 'cancelled'"
MONTH = "SUBSTR(CAST(o.order_date AS TEXT), 1, 7)"
REVENUE = "revenue is quantity times unit price summed over the order lines"
SPENDING = "spending is quantity times unit price summed over the order lines"
ITEMS = "JOIN order_items oi ON oi.order_id = o.order_id"
PRODUCTS = "JOIN products pr ON pr.product_id = oi.product_id"
CATEGORY = "JOIN categories ca ON ca.category_id = pr.category_id"
CUSTOMER_REGION = "JOIN customers cu ON cu.customer_id = o.customer_id JOIN regions re ON re.region_id = cu.region_id"
