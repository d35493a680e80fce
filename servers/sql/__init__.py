"""The SQL environment: answer questions about a shop's database with read-only SQL.

Sim: a private in-memory SQLite copy of the shipped fixture per episode.
Prod: a PostgreSQL database (``SQL_DATABASE_URL``), in read-only transactions.
"""

from __future__ import annotations

from openenv_mcp import Environment, ProdService
from openenv_mcp.servers.sql.backends import SqlBackend, SqliteBackend, open_prod_backend
from openenv_mcp.servers.sql.declarations import declarations
from openenv_mcp.servers.sql.generator import load_tasks
from openenv_mcp.servers.sql.settings import SqlSettings
from openenv_mcp.servers.sql.tasks import SqlTask, grade, solve
from openenv_mcp.servers.sql.tools import tools

__all__ = ["environment"]

environment: Environment[SqlBackend, SqlTask] = Environment(
    name="sql",
    description=(
        "Answer questions about a shop's relational database (customers, orders, products, employees) "
        "with read-only SQL: list_tables, describe_table, run_query, then submit_answer."
    ),
    tools=tools,
    tasks=load_tasks,
    settings=SqlSettings,
    sim_backend=SqliteBackend.open,
    prod_backend=open_prod_backend,
    grade=grade,
    prod_requires=("database_url",),
    sim_summary="SQLite in memory: one read-only copy of the shipped fixture per process, a connection per episode",
    prod_services=(
        ProdService(
            name="postgresql",
            title="PostgreSQL",
            role="the database the queries run on, in read-only transactions",
            settings=(
                "database_url",
                "db_schema",
                "statement_timeout_ms",
                "pool_size",
                "max_rows",
                "max_cell_chars",
                "max_result_chars",
            ),
            tested="in CI against PostgreSQL 15 on the test machine, through a SELECT-only role",
            image="postgres:16-alpine",
        ),
    ),
    solve=solve,
    examples=(
        ("list_tables", {}),
        ("describe_table", {"table": "orders"}),
        ("run_query", {"sql": "SELECT status, COUNT(*) FROM orders GROUP BY status ORDER BY status"}),
    ),
    max_steps=20,
    sim_fork=SqliteBackend.fork,
    declares=declarations,
)
