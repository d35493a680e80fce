"""Load the shipped corpus into a PostgreSQL database for the prod search backend.

    python -m openenv_mcp.servers.search.load postgresql://admin@db:5432/search \
        [--table documents] [--replace] [--grant reader]

Creates the table if needed (a ``tsvector`` column generated from title and text, a GIN index
on it, b-tree indexes for the filters), upserts every document by ``doc_id``, and analyses the
table. ``--replace`` drops the table first; ``--grant ROLE`` gives a role SELECT on it (point
``SEARCH_DATABASE_URL`` at that role). Run it again after regenerating the corpus.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import psycopg
from psycopg import sql

from openenv_mcp.servers.search.backends import TEXT_CONFIG
from openenv_mcp.servers.search.corpus import corpus

__all__ = ["load_corpus", "main"]


def _schema(table: sql.Identifier, name: str) -> list[sql.Composed]:
    def index(suffix: str) -> sql.Identifier:
        return sql.Identifier(f"{name.split('.')[-1]}_{suffix}")

    config = sql.Literal(TEXT_CONFIG)
    return [
        sql.SQL(
            """
            CREATE TABLE IF NOT EXISTS {table} (
                doc_id text PRIMARY KEY,
                title text NOT NULL,
                category text NOT NULL,
                date date NOT NULL,
                text text NOT NULL,
                search tsvector GENERATED ALWAYS AS (
                    setweight(to_tsvector({config}::regconfig, title), 'A')
                    || setweight(to_tsvector({config}::regconfig, text), 'B')
                ) STORED
            )
            """
        ).format(table=table, config=config),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (search)").format(index("search"), table),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (category)").format(index("category"), table),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (date)").format(index("date"), table),
    ]


def load_corpus(url: str, *, table: str = "documents", replace: bool = False, grant: str | None = None) -> int:
    """Create ``table`` in the database at ``url`` and upsert the corpus into it; return the documents loaded."""
    target = sql.Identifier(*table.split("."))
    records = corpus()
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://", 1), connect_timeout=10) as conn:
        if replace:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(target))
        for statement in _schema(target, table):
            conn.execute(statement)
        with conn.cursor() as cursor:
            cursor.executemany(
                sql.SQL(
                    "INSERT INTO {} (doc_id, title, category, date, text) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (doc_id) DO UPDATE SET title = EXCLUDED.title, category = EXCLUDED.category, "
                    "date = EXCLUDED.date, text = EXCLUDED.text"
                ).format(target),
                [(r.doc_id, r.title, r.category, r.date, r.text) for r in records],
            )
        if grant is not None:
            conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(target, sql.Identifier(grant)))
        conn.commit()
        conn.autocommit = True
        conn.execute(sql.SQL("ANALYZE {}").format(target))
    return len(records)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m openenv_mcp.servers.search.load",
        description="Load the search corpus into PostgreSQL for prod mode.",
    )
    parser.add_argument(
        "url", help="PostgreSQL URL of a role that may create tables, e.g. postgresql://admin@db/search"
    )
    parser.add_argument("--table", default="documents", help="table to create or update (default: documents)")
    parser.add_argument("--replace", action="store_true", help="drop the table first")
    parser.add_argument("--grant", metavar="ROLE", help="give ROLE SELECT on the table (the role prod connects as)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        count = load_corpus(args.url, table=args.table, replace=args.replace, grant=args.grant)
    except psycopg.Error as exc:
        print(f"error: could not load the corpus: {str(exc).strip()}", file=sys.stderr)
        return 1
    print(f"Loaded {count} documents into {args.table} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
