from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_mcp.servers.sql import environment as sql_environment
from openenv_mcp.servers.sql.load import load
from tests.support import LiveServer, as_role, live_server, scratch_database


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database with the SQL fixture, reached through a SELECT-only role."""
    with scratch_database(lambda url: load(url, reader="openenv_reader")) as url:
        yield as_role(url, "openenv_reader")


@pytest.fixture(scope="module")
def sim_server() -> Iterator[LiveServer]:
    with live_server(sql_environment, mode="sim", max_episodes=64) as server:
        yield server


@pytest.fixture(scope="module")
def prod_server(pg_url: str, monkeypatch_module: Any) -> Iterator[LiveServer]:
    monkeypatch_module.setenv("SQL_DATABASE_URL", pg_url)
    monkeypatch_module.setenv("SQL_STATEMENT_TIMEOUT_MS", "1000")
    with live_server(sql_environment, mode="prod") as server:
        yield server


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


# Servers the tests start (in process or as `openenv-mcp serve`) record no trajectories unless a
# test asks: the default would write into the user data directory of whoever runs the suite.
os.environ.setdefault("OPENENV_TRAJECTORIES", "off")
