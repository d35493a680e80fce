"""The SQL backends: SQLite per episode in sim (on ``sqlite3`` alone), PostgreSQL in prod.

The sim's episodes each read the shipped fixture through a read-only connection of their own; the prod backend
(:mod:`openenv_mcp.servers.sql.postgres`, SQLAlchemy and psycopg) is imported only when a prod server opens it, so
the sim server starts without either. Read-only is enforced three times: the lexical guard, the engine (SQLite's
authorizer and ``query_only``; PostgreSQL read-only transactions), and, in prod, the role you connect as.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import time
import uuid
from collections.abc import Callable
from importlib import resources
from typing import Protocol, TypeVar

import anyio.to_thread

from openenv_mcp.environment.backend import Backend
from openenv_mcp.errors import ToolFailed
from openenv_mcp.servers.sql.column_names import postgres_column_name
from openenv_mcp.servers.sql.models import Column, ForeignKey, QueryResult, TableSchema
from openenv_mcp.servers.sql.readonly import single_read_statement
from openenv_mcp.servers.sql.results import NO_ROWS, ResultBuilder
from openenv_mcp.servers.sql.settings import SqlSettings

__all__ = ["SqlBackend", "SqliteBackend", "fixture_database", "fixture_sql", "open_prod_backend"]

T = TypeVar("T")


class SqlBackend(Backend, Protocol):
    """What the SQL tools need from a database."""

    async def tables(self) -> list[str]: ...
    async def describe(self, table: str) -> TableSchema: ...
    async def query(self, sql: str, *, limit: int | None = None) -> QueryResult: ...


async def open_prod_backend(settings: SqlSettings) -> SqlBackend:
    """The prod backend: PostgreSQL at ``SQL_DATABASE_URL`` (SQLAlchemy loads here, never in a sim server)."""
    from openenv_mcp.servers.sql.postgres import PostgresBackend

    return await PostgresBackend.open(settings)


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
# Pragmas that only read, whatever their argument (describe_table reads the first two).
_SCHEMA_PRAGMAS = {"table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info", "index_xinfo"}


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action in _ALLOWED_ACTIONS or action == sqlite3.SQLITE_TRANSACTION:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _SCHEMA_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"


@functools.cache
def _fixture_tables() -> tuple[str, ...]:
    """The fixture's table names, read once per process: no connection can add or drop a table (every episode's is
    read-only), so ``list_tables`` answers from here. Reading them per call meant preparing the query again each
    time (episodes' connections cache no statements), SQLite's parser and the authorizer's Python callback on
    every call: the largest part of what the sim's ``list_tables`` cost over a constant answer (bench/README.md)."""
    return tuple(row[0] for row in fixture_database().execute(_SQLITE_TABLES))


def _fresh_sqlite() -> sqlite3.Connection:
    # Memory per episode (10,000 episodes must fit in 2 GB): no private copy of the data, nor of its schema and
    # page cache (see _fixture), reads served from the shared pages in place (mmap), no prepared-statement
    # cache. The TEMP schema is never opened (it costs 7 KB): describe reads the main schema's pragmas only.
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


_DECLARED = re.compile(r"\s*([A-Za-z_][\w ]*?)\s*(?:\((.*)\))?\s*")


def _type_name(declared: str) -> str:
    """A column's declared type as describe_table shows it, like PostgreSQL's: ``NUMERIC(10,2)`` -> ``NUMERIC(10, 2)``;
    no declared type is SQLite's BLOB affinity."""
    match = _DECLARED.fullmatch(declared)
    if match is None:
        return declared.upper() or "BLOB"
    name, args = match.group(1).upper(), match.group(2)
    return name if args is None else f"{name}({', '.join(arg.strip() for arg in args.split(','))})"


def _describe(raw: sqlite3.Connection, table: str) -> TableSchema:
    names = _fixture_tables()
    if table not in names:
        raise ToolFailed(f"No table {table!r}; tables: {', '.join(names)}")
    quoted = '"' + table.replace('"', '""') + '"'  # a name from the list above, quoted as an identifier
    info = raw.execute(f"PRAGMA main.table_info({quoted})").fetchall()  # cid, name, type, notnull, default, pk
    # A primary key column is NOT NULL in PostgreSQL whatever the DDL says; SQLite reports it nullable (it lets a
    # non-INTEGER key hold NULL, a historical quirk): describe shows what PostgreSQL enforces.
    columns = [
        Column(name=name, type=_type_name(declared), nullable=not notnull and not pk, primary_key=bool(pk))
        for _, name, declared, notnull, _, pk in info
    ]
    keys: dict[int, ForeignKey] = {}  # the fixture names the referred columns of every key
    for key, _, referred, column, to, *_ in raw.execute(f"PRAGMA main.foreign_key_list({quoted})"):
        fk = keys.setdefault(key, ForeignKey(columns=[], references_table=referred, references_columns=[]))
        fk.columns.append(column)
        fk.references_columns.append(to)
    foreign = list(keys.values())
    foreign.sort(key=lambda fk: (fk.columns, fk.references_table))  # each engine lists them in its own order
    return TableSchema(table=table, columns=columns, foreign_keys=foreign)


class SqliteBackend:
    """One episode's own read-only connection to the fixture (one in-memory copy per process, see ``_fixture``)."""

    def __init__(self, settings: SqlSettings) -> None:
        self._settings = settings
        self._raw: sqlite3.Connection = _fresh_sqlite()

    @classmethod
    async def open(cls, task: object, seed: int, settings: SqlSettings) -> SqliteBackend:
        return cls(settings)

    async def fork(self) -> SqliteBackend:
        """Fast-path fork: the sim is read-only, so a new connection to the fixture is in the same state."""
        return SqliteBackend(self._settings)

    async def ping(self) -> None:
        self._run(lambda raw: raw.execute("SELECT 1").fetchone())

    async def aclose(self) -> None:
        self._raw.close()

    async def tables(self) -> list[str]:
        return list(_fixture_tables())

    async def describe(self, table: str) -> TableSchema:
        return self._run(lambda raw: _describe(raw, table))

    async def query(self, sql: str, *, limit: int | None = None) -> QueryResult:
        # The agent's SQL runs in a worker thread: a runaway query must not stall every other episode
        # (and /healthz) until its timeout. The episode's lock keeps one call at a time on this connection.
        return await anyio.to_thread.run_sync(
            self._run, lambda raw: self._query(raw, sql, limit or self._settings.max_rows)
        )

    def _query(self, raw: sqlite3.Connection, sql: str, limit: int) -> QueryResult:
        cursor = raw.execute(single_read_statement(sql))
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

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        raw = self._raw
        deadline = time.monotonic() + self._settings.statement_timeout_ms / 1000
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            return work(raw)
        except sqlite3.Error as exc:
            message = str(exc)
            if message == "interrupted":
                message = f"Query cancelled after {self._settings.statement_timeout_ms} ms; narrow it down"
            elif "not authorized" in message or "readonly" in message:
                message = f"Only read-only queries are allowed ({message})"
            raise ToolFailed(f"SQL error: {message}") from None
        finally:
            raw.set_progress_handler(None, 0)
            if raw.in_transaction:
                raw.rollback()
