"""The committed prod compose file, up for real with its bundled PostgreSQL (one stack for the module).

sql, search and coding run against the PostgreSQL container the file bundles (the stand-in image built
from Debian's packages, through the file's ``OPENENV_POSTGRES_IMAGE`` override); the loaders create a
database and a SELECT-only role per server and load the demo data.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.deploy.conftest import PROD_SERVERS, Stack
from tests.support import node_client, wait_for

pytestmark = [pytest.mark.containers, pytest.mark.timeout(900)]


def test_sql_search_and_coding_are_ready_against_the_bundled_postgresql(prod_stack: Stack) -> None:
    assert sorted(prod_stack.urls) == sorted(PROD_SERVERS)
    for name, url in prod_stack.urls.items():
        assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200, name


def test_run_query_answers_from_postgresql_through_the_select_only_role(prod_stack: Stack) -> None:
    url = prod_stack.urls["sql"]
    count, user, write = node_client(
        "--url",
        f"{url}/mcp",
        "call",
        "run_query",
        '{"sql": "SELECT COUNT(*) FROM products"}',
        "call",
        "run_query",
        '{"sql": "SELECT current_user"}',
        "call",
        "run_query",
        '{"sql": "DROP TABLE orders"}',
    )
    assert count["structuredContent"]["rows"] == [[40]]
    assert user["structuredContent"]["rows"] == [["sql_reader"]]
    assert write["isError"] is True


def test_prod_has_no_control_plane(prod_stack: Stack) -> None:
    for url in prod_stack.urls.values():
        assert httpx.post(f"{url}/reset", json={}, timeout=10).status_code == 404


def test_postgresql_stopped_is_a_503_naming_it_and_recovers_without_restarting_the_servers(prod_stack: Stack) -> None:
    url = prod_stack.urls["sql"]
    [container] = prod_stack.containers("sql")
    started = prod_stack.inspect(container, "{{.State.StartedAt}}")
    prod_stack.runner.run("stop", "postgres", capture=True)
    try:
        answer = httpx.get(f"{url}/readyz", timeout=30)
        assert answer.status_code == 503, answer.text
        assert "postgres" in answer.text.lower(), answer.text
        [failed] = node_client("--url", f"{url}/mcp", "call", "run_query", '{"sql": "SELECT 1"}')
        assert failed["isError"] is True
        assert "postgres" in json.dumps(failed["content"]).lower(), failed
    finally:
        prod_stack.runner.run("start", "postgres", capture=True)
    wait_for(lambda: _ready(url), "sql to be ready again once PostgreSQL is back", timeout=60)
    [again] = node_client("--url", f"{url}/mcp", "call", "run_query", '{"sql": "SELECT COUNT(*) FROM products"}')
    assert again["structuredContent"]["rows"] == [[40]]
    assert prod_stack.inspect(container, "{{.State.StartedAt}}") == started, "the server was not restarted"


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False
