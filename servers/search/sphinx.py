"""Sphinx search (``searchd``) over SphinxQL, the MySQL-protocol dialect Manticore Search also speaks.

A prod alternative to PostgreSQL, chosen by a ``sphinx://host:port`` ``SEARCH_DATABASE_URL``; the
index is ``SEARCH_TABLE`` (default ``documents``). Write an index configuration for the shipped
corpus with::

    python -m openenv_mcp.servers.search.sphinx DIR [--port 9306] [--index documents]
    indexer --config DIR/sphinx.conf --all
    searchd --config DIR/sphinx.conf

Title and text are full-text fields stored as string attributes too (so ``fetch`` needs no other
store), category is a string attribute and the date a UTC-midnight timestamp. Ranking is Sphinx's
default proximity + BM25 with the title weighted 4 to 1; snippets come from ``CALL SNIPPETS``.
Tested against Debian's ``sphinxsearch`` 2.2.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pymysql
from sqlalchemy.engine import make_url

from openenv_mcp import BackendUnavailable, ConfigError, ToolFailed
from openenv_mcp.servers.search.backends import ELLIPSIS, MARK, TITLE_WEIGHT, unknown_document
from openenv_mcp.servers.search.corpus import Record, corpus
from openenv_mcp.servers.search.models import CollectionInfo, Document, Hit
from openenv_mcp.servers.search.query import ParsedQuery
from openenv_mcp.servers.search.settings import SearchSettings

__all__ = ["SphinxSearchBackend", "main", "write_config"]

_FIELDS = "id, doc_id, title, category, date"


def _timestamp(day: dt.date | str) -> int:
    day = dt.date.fromisoformat(day) if isinstance(day, str) else day
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def _day(timestamp: int) -> dt.date:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC).date()


class SphinxSearchBackend:
    """A small pool of SphinxQL connections; each call runs in a worker thread (pymysql blocks)."""

    def __init__(self, host: str, port: int, settings: SearchSettings) -> None:
        self._host, self._port = host, port
        self._settings = settings
        self._index = settings.table
        self._idle: list[pymysql.connections.Connection[Any]] = []
        self._slots = asyncio.Semaphore(settings.pool_size)
        self._where = f"sphinx://{host}:{port}"
        timeout = settings.statement_timeout_ms
        self._options = (
            f"OPTION ranker=proximity_bm25, field_weights=(title={TITLE_WEIGHT:g}, text=1), max_query_time={timeout}"
        )

    @classmethod
    async def open(cls, settings: SearchSettings) -> SphinxSearchBackend:
        if settings.database_url is None:
            raise ConfigError("Prod search needs an engine: set SEARCH_DATABASE_URL (e.g. sphinx://searchd:9306)")
        url = make_url(settings.database_url.get_secret_value())
        if url.get_backend_name() != "sphinx":
            raise ConfigError(f"Not a sphinx:// URL: {url.get_backend_name()}://")
        return cls(url.host or "127.0.0.1", url.port or 9306, settings)

    async def ping(self) -> None:
        await self._rows(f"SELECT id FROM {self._index} LIMIT 1", ())

    async def aclose(self) -> None:
        while self._idle:
            self._idle.pop().close()

    async def search(
        self, query: ParsedQuery, *, k: int, category: str | None, date_from: dt.date | None, date_to: dt.date | None
    ) -> list[Hit]:
        match = " | ".join('"' + " ".join(words) + '"' for words in query.terms)
        where, params = "MATCH(%s)", list[str | int]([match])
        for condition, value in (("category =", category), ("date >=", date_from), ("date <=", date_to)):
            if value is not None:
                where += f" AND {condition} %s"
                params.append(_timestamp(value) if isinstance(value, dt.date) else value)
        sql = (
            f"SELECT {_FIELDS}, text, WEIGHT() AS score FROM {self._index} WHERE {where} "
            f"ORDER BY score DESC, id ASC LIMIT {int(k)} {self._options}"
        )
        rows = await self._rows(sql, params)
        if not rows:
            return []
        snippets = await self._snippets([row[5] for row in rows], match)
        return [
            Hit(doc_id=row[1], title=row[2], category=row[3], date=_day(row[4]), score=float(row[6]), snippet=snippet)
            for row, snippet in zip(rows, snippets, strict=True)
        ]

    async def fetch(self, doc_id: str) -> Document:
        rows = await self._rows(f"SELECT {_FIELDS}, text FROM {self._index} WHERE doc_id = %s LIMIT 1", [doc_id])
        if not rows:
            raise unknown_document(doc_id)
        _, found, title, category, date, text = rows[0]
        return Document(doc_id=found, title=title, category=category, date=_day(date), text=text)

    async def info(self) -> CollectionInfo:
        rows = await self._rows(
            f"SELECT category, COUNT(*), MIN(date), MAX(date) FROM {self._index} GROUP BY category LIMIT 1000", ()
        )
        categories = {row[0]: int(row[1]) for row in sorted(rows)}
        return CollectionInfo(
            documents=sum(categories.values()),
            categories=categories,
            first_date=min((_day(row[2]) for row in rows), default=None),
            last_date=max((_day(row[3]) for row in rows), default=None),
        )

    async def _snippets(self, texts: list[str], match: str) -> list[str]:
        placeholders = ", ".join(["%s"] * len(texts))
        words = self._settings.snippet_words
        sql = (
            f"CALL SNIPPETS(({placeholders}), %s, %s, {words} AS limit_words, '{MARK}' AS before_match, "
            f"'{MARK}' AS after_match, ' {ELLIPSIS} ' AS chunk_separator, 1 AS query_mode, "
            "'none' AS html_strip_mode)"
        )
        if len(texts) == 1:  # a one-item list in parentheses is a syntax error in SphinxQL
            sql = sql.replace(f"(({placeholders})", f"({placeholders}", 1)
        rows = await self._rows(sql, [*texts, self._index, match])
        return [str(row[0]).strip().removesuffix(ELLIPSIS).strip() for row in rows]

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with self._slots:
            return await asyncio.to_thread(self._run, sql, params)

    def _run(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        reused = bool(self._idle)
        try:
            conn = self._idle.pop() if reused else self._connect()
            try:
                rows = self._execute(conn, sql, params)
            except pymysql.err.OperationalError:
                conn.close()
                if not reused:
                    raise
                conn = self._connect()  # an idle connection went stale (searchd restarted): one fresh try
                rows = self._execute(conn, sql, params)
        except pymysql.err.OperationalError as exc:
            raise BackendUnavailable(f"Sphinx searchd at {self._where} is unavailable: {exc.args[-1]}") from None
        except pymysql.err.MySQLError as exc:
            self._idle.append(conn)
            message = str(exc.args[-1])
            if "unknown local index" in message or "no enabled local indexes" in message:
                raise BackendUnavailable(
                    f"Sphinx searchd at {self._where} has no index {self._index!r}: index the corpus "
                    "('python -m openenv_mcp.servers.search.sphinx DIR', then indexer) or set SEARCH_TABLE"
                ) from None
            raise ToolFailed(f"Search error: {message}") from None
        self._idle.append(conn)
        return rows

    @staticmethod
    def _execute(conn: pymysql.connections.Connection[Any], sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with conn.cursor() as cursor:
            cursor.execute(sql, params or None)
            return list(cursor.fetchall())

    def _connect(self) -> pymysql.connections.Connection[Any]:
        return pymysql.connect(
            host=self._host,
            port=self._port,
            user="",
            autocommit=True,
            charset="utf8",
            connect_timeout=5,
            read_timeout=self._settings.statement_timeout_ms / 1000 + 5,
        )


# the index configuration -------------------------------------------------------------------------


def _xmlpipe(records: Sequence[Record]) -> Iterator[str]:
    yield '<?xml version="1.0" encoding="utf-8"?>\n<sphinx:docset>\n'
    for number, record in enumerate(records, start=1):
        yield (
            f'<sphinx:document id="{number}"><doc_id>{escape(record.doc_id)}</doc_id>'
            f"<title>{escape(record.title)}</title><text>{escape(record.text)}</text>"
            f"<category>{escape(record.category)}</category><date>{_timestamp(record.date)}</date>"
            "</sphinx:document>\n"
        )
    yield "</sphinx:docset>\n"


def write_config(directory: Path, *, port: int = 9306, index: str = "documents", host: str = "127.0.0.1") -> Path:
    """Write ``corpus.xml`` (the shipped corpus as an xmlpipe2 stream) and ``sphinx.conf`` into ``directory``."""
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "corpus.xml"
    source.write_text("".join(_xmlpipe(corpus())), encoding="utf-8")
    config = directory / "sphinx.conf"
    config.write_text(
        f"""# written by python -m openenv_mcp.servers.search.sphinx
source {index}_source
{{
    type = xmlpipe2
    xmlpipe_command = cat {shlex.quote(str(source))}
    xmlpipe_attr_string = doc_id
    xmlpipe_field_string = title
    xmlpipe_field_string = text
    xmlpipe_attr_string = category
    xmlpipe_attr_timestamp = date
}}

index {index}
{{
    source = {index}_source
    path = {directory / index}
    morphology = stem_en
    min_word_len = 1
}}

indexer
{{
    mem_limit = 64M
}}

searchd
{{
    listen = {host}:{port}:mysql41
    log = {directory / "searchd.log"}
    query_log = {directory / "query.log"}
    pid_file = {directory / "searchd.pid"}
    binlog_path =
    workers = threads
}}
""",
        encoding="utf-8",
    )
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m openenv_mcp.servers.search.sphinx",
        description="Write a Sphinx index configuration for the search corpus.",
    )
    parser.add_argument("directory", type=Path, help="where to write sphinx.conf, corpus.xml and the index")
    parser.add_argument("--port", type=int, default=9306, help="SphinxQL port searchd listens on (default 9306)")
    parser.add_argument("--host", default="127.0.0.1", help="address searchd listens on (default 127.0.0.1)")
    parser.add_argument("--index", default="documents", help="index name, SEARCH_TABLE (default documents)")
    args = parser.parse_args(argv)
    config = write_config(args.directory, port=args.port, index=args.index, host=args.host)
    print(f"Wrote {config}. Now run:\n  indexer --config {config} --all\n  searchd --config {config}")
    print(f"and serve with SEARCH_DATABASE_URL=sphinx://{args.host}:{args.port} SEARCH_TABLE={args.index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
