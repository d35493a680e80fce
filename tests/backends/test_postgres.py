"""Telling a PostgreSQL outage from a wrong query (the real outages are in tests/test_faults.py)."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

from openenv_mcp import BackendUnavailable, ToolFailed
from openenv_mcp.backends.postgres import database_error


class DriverError(Exception):
    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def classify(message: str, sqlstate: str | None) -> Exception:
    failure = DBAPIError("SELECT 1", {}, DriverError(message, sqlstate))
    return database_error(failure, where="db:5432", query_error="SQL")


def test_outage_classes_and_a_missing_sqlstate_are_unavailable() -> None:
    for state in ("08006", "53300", "57P01", None):
        error = classify("server closed the connection\nDETAIL: more", state)
        assert isinstance(error, BackendUnavailable), state
        assert error.message == "PostgreSQL at db:5432 is unavailable: server closed the connection"


def test_query_errors_are_tool_failures_with_the_first_line() -> None:
    error = classify('column "nope" does not exist\nLINE 1: SELECT nope', "42703")
    assert isinstance(error, ToolFailed) and error.message == 'SQL: column "nope" does not exist'
