"""The search backends: a shared SQLite FTS5 index in sim, PostgreSQL full-text search in prod.

Every backend takes a parsed query (:mod:`openenv_mcp.servers.search.query`) and returns the same shapes;
only the ranking functions differ (BM25 in SQLite, cover density in PostgreSQL, proximity and
BM25 in Sphinx, see :mod:`openenv_mcp.servers.search.sphinx`). The prod engine is picked by the scheme of
``SEARCH_DATABASE_URL`` (:func:`open_prod_backend`).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from openenv_mcp import Backend, BackendUnavailable, ConfigError, ToolFailed
from openenv_mcp.backends.postgres import database_error, open_engine, sqlstate, unavailable
from openenv_mcp.servers.search.corpus import Record, corpus
from openenv_mcp.servers.search.models import CollectionInfo, Document, Hit
from openenv_mcp.servers.search.query import ParsedQuery
from openenv_mcp.servers.search.settings import SearchSettings

__all__ = [
    "PostgresSearchBackend",
    "SearchBackend",
    "SqliteIndex",
    "SqliteSearchBackend",
    "open_prod_backend",
    "sim_index",
]

log = logging.getLogger(__name__)

MARK = "**"
ELLIPSIS = "…"
TITLE_WEIGHT = 4.0  # a word in the title counts this many times a word in the text (BM25, sim)


class SearchBackend(Backend, Protocol):
    """What the search tools need from a search engine."""

    async def search(
        self, query: ParsedQuery, *, k: int, category: str | None, date_from: dt.date | None, date_to: dt.date | None
    ) -> list[Hit]: ...
    async def fetch(self, doc_id: str) -> Document: ...
    async def info(self) -> CollectionInfo: ...


_INFO_SQL = "SELECT category, COUNT(*), MIN(date), MAX(date) FROM {table} GROUP BY category ORDER BY category"


def _info(rows: Sequence[Sequence[Any]]) -> CollectionInfo:
    categories = {row[0]: int(row[1]) for row in rows}
    return CollectionInfo(
        documents=sum(categories.values()),
        categories=categories,
        first_date=min((row[2] for row in rows), default=None),
        last_date=max((row[3] for row in rows), default=None),
    )


def unknown_document(doc_id: str) -> ToolFailed:
    return ToolFailed(f"No document with doc_id {doc_id!r}; pass the doc_id of a search hit (e.g. 'doc-0042')")


def _conditions(
    category: str | None, date_from: dt.date | None, date_to: dt.date | None
) -> list[tuple[str, str | dt.date]]:
    """The filters given, as ``(SQL condition on the documents aliased d, value)`` pairs."""
    given = (("d.category =", category), ("d.date >=", date_from), ("d.date <=", date_to))
    return [(condition, value) for condition, value in given if value is not None]


# sim: SQLite FTS5 ----------------------------------------------------------------------------


class SqliteIndex:
    """The corpus in an in-memory SQLite FTS5 index: built once, then read-only and shared by all episodes.

    Episodes run on several event loops' threads in one process (tests serve several apps), so
    the one connection is guarded by a lock; each query holds it for well under a millisecond.
    """

    def __init__(self, records: Iterable[Record]) -> None:
        started = time.perf_counter()
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.executescript(
            """
            CREATE TABLE documents (
                id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
                category TEXT NOT NULL, date TEXT NOT NULL, text TEXT NOT NULL
            );
            CREATE VIRTUAL TABLE documents_fts USING fts5(
                title, text, content='documents', content_rowid='id',
                tokenize='porter unicode61 remove_diacritics 2'
            );
            """
        )
        with conn:
            conn.executemany(
                "INSERT INTO documents (doc_id, title, category, date, text) VALUES (?, ?, ?, ?, ?)",
                ((r.doc_id, r.title, r.category, r.date, r.text) for r in records),
            )
            conn.execute("INSERT INTO documents_fts (documents_fts) VALUES ('rebuild')")
        conn.execute("PRAGMA query_only = ON")
        self._conn = conn
        self._lock = threading.Lock()
        self.info = _info(conn.execute(_INFO_SQL.format(table="documents")).fetchall())
        self.size = self.info.documents
        self.build_seconds = time.perf_counter() - started

    def search(
        self,
        query: ParsedQuery,
        *,
        k: int,
        snippet_words: int,
        category: str | None,
        date_from: dt.date | None,
        date_to: dt.date | None,
    ) -> list[Hit]:
        conditions = _conditions(category, date_from, date_to)
        where = "".join(f" AND {condition} ?" for condition, _ in conditions)
        params = [str(value) for _, value in conditions]  # ISO days compare as text
        rank = f"bm25(documents_fts, {TITLE_WEIGHT}, 1.0)"
        sql = (
            f"SELECT d.doc_id, d.title, d.category, d.date, -{rank}, "
            f"snippet(documents_fts, 1, '{MARK}', '{MARK}', '{ELLIPSIS}', ?) "
            "FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid "
            f"WHERE documents_fts MATCH ?{where} ORDER BY {rank}, d.doc_id LIMIT ?"
        )
        rows = self._read(sql, [snippet_words, query.fts5(), *params, k])
        return [_hit(row) for row in rows]

    def fetch(self, doc_id: str) -> Document:
        rows = self._read("SELECT doc_id, title, category, date, text FROM documents WHERE doc_id = ?", [doc_id])
        if not rows:
            raise unknown_document(doc_id)
        found = rows[0]
        return Document(doc_id=found[0], title=found[1], category=found[2], date=found[3], text=found[4])

    def ping(self) -> None:
        self._read("SELECT 1", [])

    def _read(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:  # a query the parser let through but FTS5 refuses
                raise ToolFailed(f"Search error: {exc}") from None


def _hit(row: Sequence[Any]) -> Hit:
    doc_id, title, category, date, score, snippet = row
    return Hit(doc_id=doc_id, title=title, category=category, date=date, score=round(score, 4), snippet=snippet)


@functools.cache
def sim_index() -> SqliteIndex:
    """The process's one sim index, built at first use (the server's start-up probe builds it)."""
    index = SqliteIndex(corpus())
    log.info("search: indexed %d documents in %.0f ms", index.size, index.build_seconds * 1000)
    return index


class SqliteSearchBackend:
    """One episode's view of the shared index; the episode's own state lives in the runtime."""

    def __init__(self, index: SqliteIndex, settings: SearchSettings) -> None:
        self._index = index
        self._settings = settings

    @classmethod
    async def open(cls, task: object, seed: int, settings: SearchSettings) -> SqliteSearchBackend:
        return cls(sim_index(), settings)

    async def fork(self) -> SqliteSearchBackend:
        """Fast-path fork: the index is shared and read-only, so a new handle on it is in the same state."""
        return SqliteSearchBackend(self._index, self._settings)

    async def ping(self) -> None:
        self._index.ping()

    async def aclose(self) -> None:
        """Nothing to free: the index is shared and outlives every episode."""

    async def search(
        self, query: ParsedQuery, *, k: int, category: str | None, date_from: dt.date | None, date_to: dt.date | None
    ) -> list[Hit]:
        return self._index.search(
            query,
            k=k,
            snippet_words=self._settings.snippet_words,
            category=category,
            date_from=date_from,
            date_to=date_to,
        )

    async def fetch(self, doc_id: str) -> Document:
        return self._index.fetch(doc_id)

    async def info(self) -> CollectionInfo:
        return self._index.info


# prod: PostgreSQL full-text search --------------------------------------------------------------


async def open_prod_backend(settings: SearchSettings) -> SearchBackend:
    """The prod engine ``SEARCH_DATABASE_URL`` names: ``postgresql://...`` or ``sphinx://host:port``."""
    if settings.database_url is None:
        raise ConfigError(
            "Prod search needs an engine: set SEARCH_DATABASE_URL (e.g. postgresql://reader@db:5432/search "
            "or sphinx://searchd:9306)"
        )
    if make_url(settings.database_url.get_secret_value()).get_backend_name() == "sphinx":
        from openenv_mcp.servers.search.sphinx import SphinxSearchBackend  # pymysql is imported only when used

        return await SphinxSearchBackend.open(settings)
    return await PostgresSearchBackend.open(settings)


_UNDEFINED_TABLE = "42P01"
TEXT_CONFIG = "english"


class PostgresSearchBackend:
    """A shared pool of read-only connections to a PostgreSQL table loaded by ``openenv_mcp.servers.search.load``."""

    def __init__(self, engine: AsyncEngine, settings: SearchSettings, where: str) -> None:
        self._engine = engine
        self._settings = settings
        self._where = where
        table = ".".join(f'"{part}"' for part in settings.table.split("."))
        self._table = table
        self._search = f"""
            WITH q AS (SELECT websearch_to_tsquery('{TEXT_CONFIG}', :query) AS query),
            top AS (
                SELECT d.doc_id, d.title, d.category, d.date, d.text, ts_rank_cd(d.search, q.query, 1) AS score
                FROM {table} d, q
                WHERE d.search @@ q.query {{filters}}
                ORDER BY score DESC, d.doc_id
                LIMIT :k
            )
            SELECT top.doc_id, top.title, top.category, top.date, top.score,
                   ts_headline('{TEXT_CONFIG}', top.text, q.query, :headline)
            FROM top, q
            ORDER BY top.score DESC, top.doc_id
            """
        self._headline = (
            f"StartSel={MARK}, StopSel={MARK}, MaxWords={settings.snippet_words}, "
            f"MinWords={max(settings.snippet_words // 2, 5)}, MaxFragments=1, "
            f'FragmentDelimiter=" {ELLIPSIS} "'
        )

    @classmethod
    async def open(cls, settings: SearchSettings) -> PostgresSearchBackend:
        if settings.database_url is None:
            raise ConfigError(
                "Prod search needs a database: set SEARCH_DATABASE_URL (e.g. postgresql://reader@db:5432/search)"
            )
        url = make_url(settings.database_url.get_secret_value())
        if url.get_backend_name() != "postgresql":
            raise ConfigError(
                f"SEARCH_DATABASE_URL must be a postgresql:// or sphinx:// URL, not {url.get_backend_name()}://"
            )
        url = url.set(drivername="postgresql+psycopg")
        engine = open_engine(url, statement_timeout_ms=settings.statement_timeout_ms, pool_size=settings.pool_size)
        return cls(engine, settings, url.render_as_string(hide_password=True))

    async def ping(self) -> None:
        await self._rows(f"SELECT 1 FROM {self._table} LIMIT 1", {})

    async def aclose(self) -> None:
        await self._engine.dispose()

    async def search(
        self, query: ParsedQuery, *, k: int, category: str | None, date_from: dt.date | None, date_to: dt.date | None
    ) -> list[Hit]:
        params: dict[str, Any] = {"query": query.websearch(), "k": k, "headline": self._headline}
        filters = ""
        for i, (condition, value) in enumerate(_conditions(category, date_from, date_to)):
            filters += f" AND {condition} :f{i}"
            params[f"f{i}"] = value
        rows = await self._rows(self._search.format(filters=filters), params)
        return [_hit(row) for row in rows]

    async def fetch(self, doc_id: str) -> Document:
        rows = await self._rows(
            f"SELECT doc_id, title, category, date, text FROM {self._table} WHERE doc_id = :doc_id", {"doc_id": doc_id}
        )
        if not rows:
            raise unknown_document(doc_id)
        found = rows[0]
        return Document(doc_id=found[0], title=found[1], category=found[2], date=found[3], text=found[4])

    async def info(self) -> CollectionInfo:
        return _info(await self._rows(_INFO_SQL.format(table=self._table), {}))

    async def _rows(self, sql: str, params: dict[str, Any]) -> list[Sequence[Any]]:
        try:
            async with self._engine.connect() as conn:
                result = await conn.execute(text(sql), params)
                return list(result.all())
        except DBAPIError as exc:
            if sqlstate(exc) == _UNDEFINED_TABLE:
                raise BackendUnavailable(
                    f"PostgreSQL at {self._where} has no table {self._settings.table!r}: load the corpus with "
                    "'python -m openenv_mcp.servers.search.load URL' or set SEARCH_TABLE"
                ) from None
            raise database_error(exc, where=self._where, query_error="Search error") from None
        except (OSError, SQLAlchemyError) as exc:
            raise unavailable(self._where, exc) from None
