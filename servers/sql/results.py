"""Query results within bounds: rows, characters per value, characters per result.

Both backends build their answer through :class:`ResultBuilder`, which converts each value to a
JSON cell and stops at the first bound reached, saying which in the result's ``note``. In prod,
:func:`stream_postgres` also keeps memory flat whatever the query returns: the rows come through
a server-side cursor, a batch at a time, and long values are cut by PostgreSQL before they are
sent (a ``repeat('x', 100000000)`` costs the server process 10,000 characters, not 100 MB).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from openenv_mcp.errors import ToolFailed
from openenv_mcp.servers.sql.models import Cell, QueryResult

__all__ = ["ResultBuilder", "cell", "stream_postgres"]

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


# PostgreSQL type oids whose values are small whatever the query (numeric is at most ~128 KB).
_SMALL = {16, 18, 19, 20, 21, 23, 26, 650, 700, 701, 790, 829, 869, 1082, 1083, 1114, 1184, 1186, 1266, 1700, 2950}
_TEXT = {25, 705, 1042, 1043}  # text, unknown, char(n), varchar(n): cut in place, still text
_BYTEA = 17


def _bounded(column: str, type_code: int, chars: int) -> str:
    """An expression giving ``column`` cut to ``chars`` characters (plus one, to tell it was longer)."""
    if type_code in _SMALL:
        return column
    if type_code in _TEXT:
        return f"left({column}::text, {chars + 1})"
    if type_code == _BYTEA:  # shown as hex: two characters a byte
        return f"substring({column} from 1 for {chars // 2 + 1})"
    return f"left({column}::text, {chars + 1})"  # json, arrays, xml, ranges, records...: their text form


def _execute(conn: Connection, statement: str) -> tuple[Any, list[Any]]:
    """Run one statement on the driver's cursor, with no parameters (so a '%' in the agent's SQL is
    just a character); driver errors come out as SQLAlchemy's, like every other query's."""
    import psycopg  # prod only: the sim server starts without it

    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(statement)
        description = cursor.description
        return description, (list(cursor.fetchall()) if description is not None else [])
    except psycopg.Error as exc:
        raise DBAPIError.instance(statement, None, exc, psycopg.Error) from None
    finally:
        cursor.close()


def stream_postgres(
    conn: Connection, query: str, *, limit: int, cell_chars: int, result_chars: int, timeout_ms: int
) -> QueryResult:
    """Run ``query`` (one read, already checked) through server-side cursors, within the bounds.

    A first cursor is only declared and fetched zero rows from (PostgreSQL plans the query and runs
    nothing) to learn the columns and their types; the query is then wrapped so that long values are
    cut on the server, and its rows fetched in batches sized so that a batch stays within
    ``result_chars``. Each FETCH is bounded by ``statement_timeout``; fetching stops once
    ``timeout_ms`` have passed in all.
    """
    started = time.monotonic()
    # Cursors by SQL (not the driver's server-side cursors, whose cleanup warns once a connection is lost):
    # they end with the transaction, which the pool rolls back when the call returns.
    _execute(conn, f"DECLARE openenv_probe NO SCROLL CURSOR FOR {query}\n")
    description, _ = _execute(conn, "FETCH FORWARD 0 FROM openenv_probe")  # the columns; no row is run
    if description is None:
        raise ToolFailed(NO_ROWS)
    columns = [str(column[0]) for column in description]
    types = [int(column[1]) for column in description]  # psycopg: the type oid
    if not columns:
        return QueryResult(columns=[], rows=[], row_count=0, truncated=False)
    # Values are cut so that one row never exceeds the result's budget, however many columns.
    chars = max(16, min(cell_chars, result_chars // len(columns)))
    names = [f"c{i}" for i in range(len(columns))]
    select = ", ".join(_bounded(f"q.{name}", code, chars) for name, code in zip(names, types, strict=True))
    # The newlines keep a trailing '--' comment of the query from swallowing the wrapper.
    wrapped = f"SELECT {select} FROM (\n{query}\n) AS q({', '.join(names)})"
    wide = sum(1 for code in types if code not in _SMALL)
    batch = max(1, min(limit + 1, 500, result_chars // max(1, wide * chars)))
    builder = ResultBuilder(columns, limit=limit, cell_chars=chars, result_chars=result_chars)
    _execute(conn, f"DECLARE openenv_rows NO SCROLL CURSOR FOR {wrapped}")
    while True:
        _, fetched = _execute(conn, f"FETCH FORWARD {batch} FROM openenv_rows")
        if not builder.add(fetched) or len(fetched) < batch:
            break
        if (time.monotonic() - started) * 1000 > timeout_ms:
            builder.stop(f"fetching stopped after {timeout_ms} ms")
            break
    return builder.result()
