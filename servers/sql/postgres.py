"""The SQL server's prod backend: a shared pool of read-only connections to PostgreSQL, through SQLAlchemy.

Imported only in prod (:func:`openenv_mcp.servers.sql.backends.open_prod_backend`): the sim server starts without
SQLAlchemy. Read-only is enforced three times: the lexical guard, PostgreSQL's read-only transactions, and the role
you connect as. :func:`stream_postgres` keeps memory flat whatever the query returns: the rows come through a
server-side cursor, a batch at a time, and long values are cut by PostgreSQL before they are sent (a
``repeat('x', 100000000)`` costs the server process 10,000 characters, not 100 MB).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, NoSuchTableError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from openenv_mcp.backends.postgres import database_error, open_engine, unavailable
from openenv_mcp.errors import ConfigError, ToolFailed
from openenv_mcp.servers.sql.models import Column, ForeignKey, QueryResult, TableSchema
from openenv_mcp.servers.sql.readonly import single_read_statement
from openenv_mcp.servers.sql.results import NO_ROWS, ResultBuilder
from openenv_mcp.servers.sql.settings import SqlSettings

__all__ = ["PostgresBackend", "stream_postgres"]

T = TypeVar("T")


class PostgresBackend:
    """A shared pool of read-only connections to a PostgreSQL database."""

    def __init__(self, engine: AsyncEngine, settings: SqlSettings, where: str) -> None:
        self._engine = engine
        self._settings = settings
        self._where = where

    @classmethod
    async def open(cls, settings: SqlSettings) -> PostgresBackend:
        if settings.database_url is None:
            raise ConfigError("Prod SQL needs a database: set SQL_DATABASE_URL (e.g. postgresql://reader@db:5432/shop)")
        url = make_url(settings.database_url.get_secret_value())
        if url.get_backend_name() != "postgresql":
            raise ConfigError(f"SQL_DATABASE_URL must be a postgresql:// URL, not {url.get_backend_name()}://")
        url = url.set(drivername="postgresql+psycopg")
        engine = open_engine(
            url,
            statement_timeout_ms=settings.statement_timeout_ms,
            pool_size=settings.pool_size,
            execution_options={"postgresql_readonly": True},
        )
        where = url.render_as_string(hide_password=True)
        return cls(engine, settings, where)

    async def ping(self) -> None:
        await self._run(lambda conn: conn.exec_driver_sql("SELECT 1").scalar())

    async def aclose(self) -> None:
        await self._engine.dispose()

    async def tables(self) -> list[str]:
        return await self._run(lambda conn: sorted(inspect(conn).get_table_names(schema=self._settings.db_schema)))

    async def describe(self, table: str) -> TableSchema:
        return await self._run(lambda conn: _describe(conn, table, self._settings.db_schema))

    async def query(self, sql: str, *, limit: int | None = None) -> QueryResult:
        query, settings = single_read_statement(sql), self._settings
        return await self._run(
            lambda conn: stream_postgres(
                conn,
                query,
                limit=limit or settings.max_rows,
                cell_chars=settings.max_cell_chars,
                result_chars=settings.max_result_chars,
                timeout_ms=settings.statement_timeout_ms,
            )
        )

    async def _run(self, work: Callable[[Connection], T]) -> T:
        try:
            async with self._engine.connect() as conn:
                return await conn.run_sync(work)
        except DBAPIError as exc:
            raise database_error(exc, where=self._where, query_error="SQL error") from None
        except (OSError, SQLAlchemyError) as exc:
            raise unavailable(self._where, exc) from None


def _describe(conn: Connection, table: str, schema: str | None) -> TableSchema:
    inspector = inspect(conn)
    names = inspector.get_table_names(schema=schema)
    if table not in names:
        raise ToolFailed(f"No table {table!r}; tables: {', '.join(sorted(names))}")
    try:
        primary = set(inspector.get_pk_constraint(table, schema=schema).get("constrained_columns") or [])
        columns = [
            Column(name=c["name"], type=str(c["type"]), nullable=bool(c["nullable"]), primary_key=c["name"] in primary)
            for c in inspector.get_columns(table, schema=schema)
        ]
        foreign = [
            ForeignKey(
                columns=list(fk["constrained_columns"]),
                references_table=fk["referred_table"],
                references_columns=list(fk["referred_columns"]),
            )
            for fk in inspector.get_foreign_keys(table, schema=schema)
        ]
    except NoSuchTableError:
        raise ToolFailed(f"No table {table!r}") from None
    foreign.sort(key=lambda fk: (fk.columns, fk.references_table))  # as the sim lists them
    return TableSchema(table=table, columns=columns, foreign_keys=foreign)


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
    import psycopg

    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(statement)
        description = cursor.description
        return description, (list(cursor.fetchall()) if description is not None else [])
    except psycopg.Error as exc:
        raise DBAPIError.instance(statement, None, exc, psycopg.Error) from None
    finally:
        cursor.close()
