"""What SQL questions are about: periods of days and the fixture's entities, read from the fixture itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HALVES",
    "ORDER_PERIODS",
    "SIGNUP_PERIODS",
    "YEARS",
    "YEARS_HALVES",
    "Entity",
    "Period",
    "Shop",
    "periods",
    "q",
]

_MONTHS: tuple[str, ...] = ("January", "February", "March", "April", "May", "June", "July", "August")
_MONTHS += ("September", "October", "November", "December")
_LAST_DAY = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # February has 28 outside leap years (_day)


@dataclass(frozen=True, slots=True)
class Period:
    """A span of days: a month, a quarter, a half or a year (``key`` like ``2024-03``, ``2024-Q1``, ``2024-H1``)."""

    key: str
    label: str
    start: str
    end: str

    @property
    def span(self) -> str:
        return f"{self.label} (from {self.start} through {self.end})"

    def __str__(self) -> str:
        return self.key


def _day(year: int, month: int, last: bool) -> str:
    day = (_LAST_DAY[month - 1] - (month == 2 and year % 4 != 0)) if last else 1
    return f"{year}-{month:02d}-{day:02d}"


def periods(years: Iterable[int], *, months: bool = True, until: str = "9999") -> list[Period]:
    """Years, halves, quarters and (if ``months``) months of ``years``, those starting before ``until``."""
    found = []
    for year in years:
        found.append(Period(str(year), str(year), _day(year, 1, False), _day(year, 12, True)))
        for half in (1, 2):
            first = 6 * half - 5
            label = f"the {'first' if half == 1 else 'second'} half of {year}"
            found.append(Period(f"{year}-H{half}", label, _day(year, first, False), _day(year, first + 5, True)))
        for quarter in (1, 2, 3, 4):
            first = 3 * quarter - 2
            label = f"Q{quarter} {year} ({_MONTHS[first - 1]} to {_MONTHS[first + 1]})"
            found.append(Period(f"{year}-Q{quarter}", label, _day(year, first, False), _day(year, first + 2, True)))
        if months:
            for month in range(1, 13):
                label = f"{_MONTHS[month - 1]} {year}"
                found.append(Period(f"{year}-{month:02d}", label, _day(year, month, False), _day(year, month, True)))
    return [period for period in found if period.start < until]


ORDER_PERIODS = periods((2023, 2024))
YEARS = [p for p in ORDER_PERIODS if "-" not in p.key]
HALVES = [p for p in ORDER_PERIODS if "-H" in p.key]
YEARS_HALVES = YEARS + HALVES
SIGNUP_PERIODS = periods((2021, 2022, 2023, 2024), months=False, until="2024-07-01")


def q(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Entity:
    """A row of the fixture a question names: ``key`` identifies it, ``label`` is how the question says it."""

    key: int | str
    label: str
    name: str = ""  # as stored (a product's, a category's...)

    @property
    def q(self) -> str:
        return q(self.name)

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Shop:
    """The fixture's entities that questions are about."""

    customers: list[Entity]
    products: list[Entity]
    employees: list[Entity]
    suppliers: list[Entity]
    categories: list[Entity]
    regions: list[Entity]
    cities: list[Entity]

    @classmethod
    def read(cls, db: sqlite3.Connection) -> Shop:
        """Read them from the fixture's database."""

        def rows(sql: str) -> list[Any]:
            return list(db.execute(sql).fetchall())

        def named(sql: str) -> list[Entity]:
            return [Entity(name, name, name) for (name,) in rows(sql)]

        return cls(
            customers=[
                Entity(i, f"{first} {last} (customer id {i})", f"{first} {last}")
                for i, first, last in rows("SELECT customer_id, first_name, last_name FROM customers ORDER BY 1")
            ],
            products=[Entity(i, n, n) for i, n in rows("SELECT product_id, name FROM products ORDER BY 1")],
            employees=[
                Entity(i, f"{first} {last} (employee id {i})", f"{first} {last}")
                for i, first, last in rows("SELECT employee_id, first_name, last_name FROM employees ORDER BY 1")
            ],
            suppliers=[Entity(i, n, n) for i, n in rows("SELECT supplier_id, company_name FROM suppliers ORDER BY 1")],
            categories=named("SELECT name FROM categories ORDER BY category_id"),
            regions=named("SELECT name FROM regions ORDER BY region_id"),
            cities=named("SELECT DISTINCT city FROM customers ORDER BY city"),
        )
