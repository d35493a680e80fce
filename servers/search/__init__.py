"""The search environment: answer questions from a document collection with search and fetch.

Sim: the shipped corpus (a generated fictional encyclopedia and news archive) in an SQLite FTS5
index with BM25 ranking, built once per process and shared read-only by every episode.
Prod: PostgreSQL full-text search (``SEARCH_DATABASE_URL=postgresql://...``) over the same
documents, loaded with ``python -m openenv_mcp.servers.search.load URL``, or Sphinx ``searchd`` over SphinxQL
(``SEARCH_DATABASE_URL=sphinx://host:port``), indexed from ``python -m openenv_mcp.servers.search.sphinx DIR``.
"""

from __future__ import annotations

from openenv_mcp import Environment, ProdService
from openenv_mcp.servers.search.backends import SearchBackend, SqliteSearchBackend, open_prod_backend
from openenv_mcp.servers.search.declarations import declarations
from openenv_mcp.servers.search.generator import load_tasks
from openenv_mcp.servers.search.settings import SearchSettings
from openenv_mcp.servers.search.tasks import SearchTask, grade, solve
from openenv_mcp.servers.search.tools import tools

__all__ = ["environment"]

environment: Environment[SearchBackend, SearchTask] = Environment(
    name="search",
    description=(
        "Answer questions from a document collection (an encyclopedia and a news archive): search it with "
        "keywords and filters, fetch documents to read them, then submit_answer "
        "(collection_info describes the collection)."
    ),
    tools=tools,
    tasks=load_tasks,
    settings=SearchSettings,
    sim_backend=SqliteSearchBackend.open,
    prod_backend=open_prod_backend,
    grade=grade,
    prod_requires=("database_url",),
    sim_summary="SQLite FTS5 (BM25) over the shipped corpus, indexed once per process and shared read-only",
    prod_services=(
        ProdService(
            name="postgresql",
            title="PostgreSQL full-text search",
            role="the search engine: a tsvector column with a GIN index, ranked by ts_rank_cd, read-only",
            settings=("database_url", "table", "snippet_words", "statement_timeout_ms", "pool_size"),
            tested="in CI against PostgreSQL 15 on the test machine, loaded by openenv_mcp.servers.search.load, "
            "through a SELECT-only role",
            image="postgres:16-alpine",
        ),
        ProdService(
            name="sphinx",
            title="Sphinx searchd (SphinxQL)",
            role="the alternative search engine, chosen by a sphinx://host:port SEARCH_DATABASE_URL",
            settings=("database_url", "table", "snippet_words", "statement_timeout_ms", "pool_size"),
            tested="in CI against Debian's sphinxsearch 2.2, started by the tests on a free port over an index "
            "written by openenv_mcp.servers.search.sphinx; Manticore speaks the same protocol but is not tested",
            image=None,
        ),
    ),
    solve=solve,
    examples=(
        ("collection_info", {}),
        ("search", {"query": "founded headquarters river", "k": 3}),
        ("search", {"query": "cup final", "category": "event", "date_from": "2018-01-01", "date_to": "2020-12-31"}),
        ("fetch", {"doc_id": "doc-0001"}),
    ),
    max_steps=20,
    sim_fork=SqliteSearchBackend.fork,
    declares=declarations,
)
