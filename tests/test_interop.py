"""An external MCP client we did not write (the TypeScript SDK) lists and calls our tools in both modes."""

from __future__ import annotations

import sys

import httpx
import pytest

from tests.support import LiveServer, node_client

pytestmark = pytest.mark.interop


def test_typescript_client_lists_and_calls_in_sim(sim_server: LiveServer) -> None:
    episode = httpx.post(f"{sim_server.url}/reset", json={"task_id": "sql-001"}).json()["episode_id"]
    listed, tables, answer = node_client(
        "--url",
        sim_server.mcp_url,
        "--header",
        f"X-Episode-Id: {episode}",
        "list",
        "call",
        "list_tables",
        "{}",
        "call",
        "submit_answer",
        '{"sql": "SELECT COUNT(*) FROM customers"}',
    )
    assert [t["name"] for t in listed["tools"]] == ["list_tables", "describe_table", "run_query", "submit_answer"]
    assert "orders" in tables["structuredContent"]["result"]
    assert answer["_meta"]["openenv-mcp/episode_id"] == episode and "openenv-mcp/reward" not in answer["_meta"]
    state = httpx.get(f"{sim_server.url}/state", headers={"X-Episode-Id": episode}).json()  # the trainer's channel
    assert (state["total_reward"], state["done"]) == (1.0, True)


def test_typescript_client_sees_tool_errors(sim_server: LiveServer) -> None:
    bad_type, write = node_client(
        "--url",
        sim_server.mcp_url,
        "call",
        "run_query",
        '{"sql": 3}',
        "call",
        "run_query",
        '{"sql": "DROP TABLE orders"}',
    )
    assert bad_type["isError"] is True and write["isError"] is True
    assert "read-only" in write["content"][0]["text"]


@pytest.mark.prod
def test_typescript_client_in_prod_over_http_and_stdio(prod_server: LiveServer, pg_url: str) -> None:
    (over_http,) = node_client(
        "--url", prod_server.mcp_url, "call", "run_query", '{"sql": "SELECT COUNT(*) FROM products"}'
    )
    assert over_http["structuredContent"]["rows"] == [[40]]
    command = f"{sys.executable} -m openenv_mcp.cli serve sql --transport stdio --mode prod --log-level warning"
    listed, over_stdio = node_client(
        "--stdio",
        command,
        "--env",
        f"SQL_DATABASE_URL={pg_url}",
        "list",
        "call",
        "describe_table",
        '{"table": "products"}',
    )
    assert len(listed["tools"]) == 4
    assert over_stdio["structuredContent"]["table"] == "products"
