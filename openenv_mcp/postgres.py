"""What the PostgreSQL-backed servers share: telling "the server is not there" from "the query is wrong".

The first becomes :class:`~openenv_mcp.errors.BackendUnavailable` (503, ``/readyz`` names it); the
second a :class:`~openenv_mcp.errors.ToolFailed` result the agent can read and correct.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

from openenv_mcp.errors import BackendUnavailable, OpenEnvError, ToolFailed

__all__ = ["database_error", "first_line", "sqlstate", "unavailable"]

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
