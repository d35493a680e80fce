"""The SQL backends: SQLite per episode in sim, a shared PostgreSQL pool in prod.

Both speak through SQLAlchemy and share the same introspection and query code (the
functions below take a sync ``Connection``; prod runs them through ``run_sync``).
Read-only is enforced three times: the lexical guard, the engine (SQLite's authorizer and
``query_only``; PostgreSQL read-only transactions), and, in prod, the role you connect as.
"""

from __future__ import annotations

import functools
import sqlite3
import time
import uuid
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio.to_thread
from sqlalchemy import Connection, create_engine, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, NoSuchTableError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from openenv_mcp.backends.postgres import database_error, open_engine, unavailable
from openenv_mcp.errors import ConfigError, ToolFailed
from openenv_mcp.servers.sql.column_names import postgres_column_name
from openenv_mcp.servers.sql.models import Column, ForeignKey, QueryResult, TableSchema
from openenv_mcp.servers.sql.readonly import single_read_statement
from openenv_mcp.servers.sql.results import NO_ROWS, ResultBuilder, stream_postgres
from openenv_mcp.servers.sql.settings import SqlSettings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine  # prod only: the sim server starts without it

__all__ = ["PostgresBackend", "SqlBackend", "SqliteBackend", "fixture_database", "fixture_sql"]

T = TypeVar("T")


class SqlBackend(Protocol):
    """What the SQL tools need from a database."""

    async def ping(self) -> None: ...
    async def aclose(self) -> None: ...
    async def tables(self) -> list[str]: ...
    async def describe(self, table: str) -> TableSchema: ...
    async def query(self, sql: str, *, limit: int | None = None) -> QueryResult: ...


# shared by both backends ------------------------------------------------------------------


def _tables(conn: Connection, schema: str | None) -> list[str]:
    return sorted(inspect(conn).get_table_names(schema=schema))


def _describe(conn: Connection, table: str, schema: str | None) -> TableSchema:
    inspector = inspect(conn)
    names = inspector.get_table_names(schema=schema)
    if table not in names:
        raise ToolFailed(f"No table {table!r}; tables: {', '.join(sorted(names))}")
    try:
        primary = set(inspector.get_pk_constraint(table, schema=schema).get("constrained_columns") or [])
        # A primary key column is NOT NULL in PostgreSQL whatever the DDL says; SQLite reports it nullable (it
        # lets a non-INTEGER key hold NULL, a historical quirk): both show what PostgreSQL enforces.
        columns = [
            Column(
                name=c["name"],
                type=str(c["type"]),
                nullable=bool(c["nullable"]) and c["name"] not in primary,
                primary_key=c["name"] in primary,
            )
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
        foreign.sort(key=lambda fk: (fk.columns, fk.references_table))  # each engine lists them in its own order
    except NoSuchTableError:
        raise ToolFailed(f"No table {table!r}") from None
    return TableSchema(table=table, columns=columns, foreign_keys=foreign)


# sim: SQLite ---------------------------------------------------------------------------------


def fixture_sql() -> str:
    """The shipped fixture: schema and rows, valid for SQLite and PostgreSQL alike."""
    return resources.files("openenv_mcp.servers.sql").joinpath("data/fixture.sql").read_text(encoding="utf-8")


@functools.cache
def _fixture() -> tuple[sqlite3.Connection, str | None]:
    """The fixture, loaded once per process into a named in-memory database, and its URI.

    SQLite's memdb VFS (3.36+) shares a database whose name starts with '/' between the connections
    of a process: every episode opens its own read-only connection to this one copy (the data never
    changes: writes are refused three times over), instead of deserializing a private ~110 KB copy.
    The episodes' connections also share one page cache and one parsed schema (``cache=shared``): a
    private schema cost every connection about 31 KB, the shared one costs nothing per connection, and
    readers never block one another (nothing writes). The connection returned keeps the database alive.
    An older SQLite has no shareable memdb: the URI is then None and each episode gets a private copy.
    """
    name = f"/openenv-mcp-sql-{uuid.uuid4().hex}"
    try:
        conn = sqlite3.connect(f"file:{name}?vfs=memdb", uri=True, check_same_thread=False)
    except sqlite3.OperationalError:  # "no such vfs: memdb"
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        name = ""
    conn.execute("PRAGMA page_size = 1024")
    conn.executescript(fixture_sql())
    return conn, f"file:{name}?vfs=memdb&mode=ro&cache=shared" if name else None


def fixture_database() -> sqlite3.Connection:
    """The process's one in-memory copy of the fixture (see ``_fixture``), for reading only: every episode's
    connection reads the same pages, so nothing may write through this one."""
    return _fixture()[0]


# SQLite authorizer action codes allowed for queries; everything else is denied.
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
# Pragmas that only read, whatever their argument (the inspector uses them), and one that the
# SQLAlchemy dialect reads on connect (allowed only as a read: with no value to set).
_SCHEMA_PRAGMAS = {"table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info", "index_xinfo"}
_READ_ONLY_PRAGMAS = {"read_uncommitted"}


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action in _ALLOWED_ACTIONS or action == sqlite3.SQLITE_TRANSACTION:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _SCHEMA_PRAGMAS or (name in _READ_ONLY_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"


def _fresh_sqlite() -> sqlite3.Connection:
    # Memory per episode (10,000 episodes must fit in 2 GB): no private copy of the data, nor of its schema and
    # page cache (see _fixture), reads served from the shared pages in place (mmap), no prepared-statement
    # cache. The TEMP schema is left unopened (it costs 7 KB): only describe's inspector reads it (_describe_sqlite).
    shared, uri = _fixture()
    if uri is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False, cached_statements=0)
        conn.deserialize(shared.serialize())
        conn.execute("PRAGMA cache_size = 2")
    else:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, cached_statements=0)
    conn.execute("PRAGMA mmap_size = 67108864")
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_authorize)
    return conn


def _describe_sqlite(conn: Connection, raw: sqlite3.Connection, table: str) -> TableSchema:
    # The inspector opens the TEMP schema: keep its page cache small (a pragma the authorizer denies to queries).
    raw.set_authorizer(None)
    try:
        raw.execute("PRAGMA temp.cache_size = 2")
    finally:
        raw.set_authorizer(_authorize)
    return _describe(conn, table, None)


@functools.cache
def _sim_engine() -> Any:
    # One engine for every episode; each connect() opens a fresh read-only connection to the shared fixture.
    return create_engine("sqlite://", creator=_fresh_sqlite, poolclass=NullPool)


class SqliteBackend:
    """One episode's own read-only connection to the fixture (one in-memory copy per process, see ``_fixture``).

    The connection comes from a SQLAlchemy engine (and ``describe`` uses its inspector, like prod);
    the per-step calls go straight to the sqlite3 cursor, which is several times cheaper.
    """

    def __init__(self, settings: SqlSettings) -> None:
        self._settings = settings
        self._conn: Connection = _sim_engine().connect()
        self._raw: sqlite3.Connection = self._conn.connection.dbapi_connection

    @classmethod
    async def open(cls, task: object, seed: int, settings: SqlSettings) -> SqliteBackend:
        return cls(settings)

    async def fork(self) -> SqliteBackend:
        """Fast-path fork: the sim is read-only, so a new connection to the fixture is in the same state."""
        return SqliteBackend(self._settings)

    async def ping(self) -> None:
        self._run(lambda conn: conn.exec_driver_sql("SELECT 1").scalar())

    async def aclose(self) -> None:
        self._conn.close()

    async def tables(self) -> list[str]:
        return self._run(lambda conn: [row[0] for row in self._raw.execute(_SQLITE_TABLES)])

    async def describe(self, table: str) -> TableSchema:
        return self._run(lambda conn: _describe_sqlite(conn, self._raw, table))

    async def query(self, sql: str, *, limit: int | None = None) -> QueryResult:
        # The agent's SQL runs in a worker thread: a runaway query must not stall every other episode
        # (and /healthz) until its timeout. The episode's lock keeps one call at a time on this connection.
        return await anyio.to_thread.run_sync(
            self._run, lambda conn: self._query(sql, limit or self._settings.max_rows)
        )

    def _query(self, sql: str, limit: int) -> QueryResult:
        cursor = self._raw.execute(single_read_statement(sql))
        try:
            if cursor.description is None:
                raise ToolFailed(NO_ROWS)
            settings = self._settings
            builder = ResultBuilder(
                [postgres_column_name(column[0], sql) for column in cursor.description],
                limit=limit,
                cell_chars=settings.max_cell_chars,
                result_chars=settings.max_result_chars,
            )
            builder.add(cursor.fetchmany(limit + 1))
            return builder.result()
        finally:
            cursor.close()

    def _run(self, work: Callable[[Connection], T]) -> T:
        # sqlite3.Error is DBAPIError's .orig: raw-cursor calls raise it directly.
        deadline = time.monotonic() + self._settings.statement_timeout_ms / 1000
        self._raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            return work(self._conn)
        except (DBAPIError, sqlite3.Error) as exc:
            message = str(exc.orig if isinstance(exc, DBAPIError) else exc)
            if message == "interrupted":
                message = f"Query cancelled after {self._settings.statement_timeout_ms} ms; narrow it down"
            elif "not authorized" in message or "readonly" in message:
                message = f"Only read-only queries are allowed ({message})"
            raise ToolFailed(f"SQL error: {message}") from None
        finally:
            self._raw.set_progress_handler(None, 0)
            if self._conn.in_transaction():
                self._conn.rollback()


# prod: PostgreSQL ----------------------------------------------------------------------------


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
        return await self._run(lambda conn: _tables(conn, self._settings.db_schema))

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
