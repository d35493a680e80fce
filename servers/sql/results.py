"""Query results within bounds: rows, characters per value, characters per result.

Both backends build their answer through :class:`ResultBuilder`, which converts each value to a
JSON cell and stops at the first bound reached, saying which in the result's ``note``. In prod,
:func:`openenv_mcp.servers.sql.postgres.stream_postgres` also keeps memory flat whatever the query returns.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from openenv_mcp.servers.sql.models import Cell, QueryResult

__all__ = ["NO_ROWS", "ResultBuilder", "cell"]

NO_ROWS = "The statement returned no rows; use SELECT, WITH or VALUES"


def cell(value: Any) -> Cell:
    """A database value as JSON: numbers and text as they are, dates in ISO form, bytes in hex."""
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, float):
        return _digits(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else _digits(float(value))
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def _digits(value: float) -> float:
    """``value`` to 15 significant digits, the most a double holds exactly (DBL_DIG): SQLite sums REALs in binary
    (36233.14999999998) where PostgreSQL sums NUMERICs exactly (36233.15), and an average's last digits differ
    likewise; both backends show the digits they agree on."""
    return float(f"{value:.15g}") if math.isfinite(value) else value


class ResultBuilder:
    """Collects rows until ``limit`` rows or ``result_chars`` characters of values; cuts values at ``cell_chars``."""

    def __init__(self, columns: list[str], *, limit: int, cell_chars: int, result_chars: int) -> None:
        self.columns = columns
        self.rows: list[list[Cell]] = []
        self._limit = limit
        self._cell_chars = cell_chars
        self._budget = result_chars
        self._used = 0
        self._cut_values = 0
        self._stopped: str | None = None

    @property
    def full(self) -> bool:
        return self._stopped is not None

    def add(self, fetched: Sequence[Sequence[Any]]) -> bool:
        """Take rows; False once a bound is reached (fetch no more)."""
        for row in fetched:
            if len(self.rows) == self._limit:
                self._stopped = f"only the first {self._limit} rows are shown"
                return False
            converted = [self._value(value) for value in row]
            size = sum(len(value) if isinstance(value, str) else 8 for value in converted)
            if self.rows and self._used + size > self._budget:
                self._stopped = f"the rows shown hold {self._used:,} characters (at most {self._budget:,} per result)"
                return False
            self._used += size
            self.rows.append(converted)
        return True

    def stop(self, why: str) -> None:
        self._stopped = why

    def _value(self, value: Any) -> Cell:
        converted = cell(value)
        # A value PostgreSQL cut to the cap plus one character (see stream_postgres) was longer.
        if isinstance(converted, str) and len(converted) > self._cell_chars:
            self._cut_values += 1
            return converted[: self._cell_chars] + "…"
        return converted

    def result(self) -> QueryResult:
        notes = []
        if self._stopped:
            notes.append(f"More rows exist: {self._stopped}; aggregate, filter or add LIMIT/OFFSET to see others")
        if self._cut_values:
            notes.append(
                f"{self._cut_values} value(s) longer than {self._cell_chars:,} characters were cut (marked '…'); "
                "select substr(column, start, length) to read a part"
            )
        return QueryResult(
            columns=self.columns,
            rows=self.rows,
            row_count=len(self.rows),
            truncated=bool(notes),
            note=" ".join(notes) or None,
        )
