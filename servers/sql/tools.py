"""The SQL tools: explore the schema, query, submit an answer. The same in sim and prod."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from openenv_mcp import Toolbox, ToolFailed
from openenv_mcp.servers.sql.backends import SqlBackend
from openenv_mcp.servers.sql.models import Answer, Cell, QueryResult, TableSchema

__all__ = ["tools"]

tools: Toolbox[SqlBackend] = Toolbox("sql")

Sql = Annotated[str, Field(min_length=1, max_length=20_000)]


@tools.tool(title="List Tables", read_only=True, destructive=False, idempotent=True, open_world=False)
async def list_tables(db: SqlBackend) -> list[str]:
    """List the tables of the database."""
    return await db.tables()


@tools.tool(title="Describe Table", read_only=True, destructive=False, idempotent=True, open_world=False)
async def describe_table(db: SqlBackend, table: str) -> TableSchema:
    """Describe a table: its columns (name, type, nullable, primary key) and its foreign keys.

    Args:
        table: The table's name, as list_tables gives it.
    """
    return await db.describe(table)


@tools.tool(title="Run Read-only Query", read_only=True, destructive=False, idempotent=True, open_world=False)
async def run_query(db: SqlBackend, sql: Sql) -> QueryResult:
    """Run one read-only SQL query and return its columns and rows (at most max_rows; 'note' says what was cut).

    Writes, DDL and several statements in one call are refused.

    Args:
        sql: One SELECT, WITH or VALUES statement.
    """
    return await db.query(sql)


@tools.tool(title="Submit Answer", read_only=True, destructive=False, idempotent=False, open_world=False)
async def submit_answer(db: SqlBackend, sql: Sql | None = None, rows: list[list[Cell]] | None = None) -> Answer:
    """Submit the final answer, either as the SQL query that returns it or as the rows themselves.

    Submitting ends the task. Give the columns in the order the question asks for.

    Args:
        sql: A read-only query whose rows are the answer.
        rows: The answer's rows, each a list of values, when not giving sql.
    """
    if (sql is None) == (rows is None):
        raise ToolFailed("Pass exactly one of 'sql' (a query returning the answer) or 'rows' (the answer's rows)")
    if sql is not None:
        result = await db.query(sql, limit=5_000)
        if result.truncated:
            raise ToolFailed(f"The answer is too large to submit whole ({result.note}); refine the query")
        return Answer(columns=result.columns, rows=result.rows, row_count=result.row_count)
    assert rows is not None
    return Answer(columns=[], rows=rows, row_count=len(rows))
