"""What the PostgreSQL-backed servers share: one way to open a bounded pool, and telling "the
server is not there" from "the query is wrong".

:func:`open_engine` makes the pool every prod PostgreSQL backend uses (sql, search): every session
read-only, bounded in time (statement, lock and idle-in-transaction timeouts), talking UTF-8
whatever the database's encoding, and reset when a connection goes back to the pool
(``DISCARD ALL``: advisory locks, settings, prepared statements, LISTEN, temporary tables), so
nothing one call did survives into the next.

A driver failure becomes :class:`~openenv_mcp.errors.BackendUnavailable` (503, ``/readyz`` names
it) or a :class:`~openenv_mcp.errors.ToolFailed` result the agent can read and correct.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolResetState

from openenv_mcp.errors import BackendUnavailable, OpenEnvError, ToolFailed

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["database_error", "first_line", "open_engine", "session_options", "sqlstate", "unavailable"]


def session_options(statement_timeout_ms: int) -> dict[str, str]:
    """The settings every session starts with (sent at connect, so ``RESET ALL`` comes back to them).

    A lock wait is cut at a second at most (an agent waiting behind DDL learns so at once), and a
    transaction left idle (a stalled fetch) is ended by the server after twice the statement limit.
    """
    return {
        "default_transaction_read_only": "on",
        "statement_timeout": str(statement_timeout_ms),
        "lock_timeout": str(min(statement_timeout_ms, 1_000)),
        "idle_in_transaction_session_timeout": str(max(2 * statement_timeout_ms, 10_000)),
    }


def open_engine(url: URL, *, statement_timeout_ms: int, pool_size: int, **options: Any) -> AsyncEngine:
    """A pool of read-only, time-bounded sessions to ``url`` (a ``postgresql+psycopg`` URL), reset on return.

    ``client_encoding`` is UTF8 so text comes back as ``str`` even from a SQL_ASCII database (the
    driver would hand SQLAlchemy bytes there, and its version check would fail with a TypeError).
    """
    from sqlalchemy.ext.asyncio import create_async_engine  # prod only: sim servers start without it

    settings = " ".join(f"-c {name}={value}" for name, value in session_options(statement_timeout_ms).items())
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        pool_pre_ping=True,
        pool_reset_on_return=None,  # _reset below rolls back, then discards the session's state
        connect_args={"options": settings, "connect_timeout": 5, "client_encoding": "UTF8"},
        **options,
    )
    event.listen(engine.sync_engine, "reset", _reset)
    return engine


def _reset(dbapi_connection: Any, record: Any, state: PoolResetState) -> None:
    """Roll back, then ``DISCARD ALL`` (outside a transaction, as it must run): session advisory
    locks, ``set_config(..., false)`` settings, LISTEN, prepared statements and temporary tables go.

    A connection garbage-collected outside the event loop cannot be talked to; SQLAlchemy closes it.
    """
    if not state.asyncio_safe:
        return
    dbapi_connection.rollback()
    dbapi_connection.autocommit = True
    try:
        cursor = dbapi_connection.cursor()
        cursor.execute("DISCARD ALL")
        cursor.close()
    finally:
        dbapi_connection.autocommit = False


# SQLSTATE classes that mean the server is gone or refusing: connection (08), resources (53),
# operator intervention such as a shutdown (57P).
_UNAVAILABLE_CLASSES = ("08", "53", "57P")


def sqlstate(exc: DBAPIError) -> str | None:
    """The SQLSTATE the driver reported, if any (none when the connection itself failed)."""
    state = getattr(exc.orig, "sqlstate", None)
    return str(state) if state is not None else None


def database_error(exc: DBAPIError, *, where: str, query_error: str) -> OpenEnvError:
    """The error a driver failure becomes: unavailable (no SQLSTATE, an outage class, a dropped
    connection) or a tool failure worded ``"{query_error}: {message}"``."""
    state = sqlstate(exc)
    if state is None or state.startswith(_UNAVAILABLE_CLASSES) or exc.connection_invalidated:
        return unavailable(where, exc.orig)
    return ToolFailed(f"{query_error}: {first_line(exc.orig)}")


def unavailable(where: str, exc: BaseException | None) -> BackendUnavailable:
    return BackendUnavailable(f"PostgreSQL at {where} is unavailable: {first_line(exc)}")


def first_line(exc: BaseException | None) -> str:
    """The first line of an exception's message (drivers add context lines), or its type's name."""
    text = str(exc).strip() if exc is not None else ""
    return text.splitlines()[0] if text else type(exc).__name__
