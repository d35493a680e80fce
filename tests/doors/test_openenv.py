"""OpenEnv's own clients (package ``openenv`` 0.10, unmodified) drive every shipped server over its wire protocol.

The clients run in a venv of their own, ``.venv/openenv`` (see tests/interop/openenv-requirements.txt), made on
first use and reused while that file is unchanged; examples/openenv_clients.py is what they run. The servers
run here, in sim mode each, and the SQL server in prod mode against this machine's PostgreSQL.

The wire's share of /mcp is pinned without them, with plain HTTP: it answers requests shaped as OpenEnv's client
sends them (httpx's default headers), an MCP client's request reaches the SDK without the wire reading it, and a
body the wire reads is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_mcp.doors.openenv import TOO_DEEP
from openenv_mcp.environment.catalog import load_environment
from tests.support import LiveServer, live_server, peer_venv

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "interop" / "openenv-requirements.txt"
CLIENT = ROOT / "examples" / "openenv_clients.py"
VENV = ROOT / ".venv" / "openenv"
installs_openenv = pytest.mark.timeout(600)  # the first use installs openenv (about 2 min here)
CALLS = {  # a tool each server answers the same way every time, and its arguments
    "sql": ("list_tables", {}),
    "search": ("collection_info", {}),
    "email": ("list_emails", {"folder": "Archive", "limit": 3}),  # every task's (generated ones add to INBOX)
    "coding": ("describe_sandbox", {}),
    "desktop": ("screenshot", {}),
}


@pytest.fixture(scope="session")
def openenv_python() -> Path:
    return peer_venv(VENV, REQUIREMENTS, "OpenEnv (pip install openenv)", project=False, timeout=500)


def drive(python: Path, runs: list[tuple[LiveServer, str, str]]) -> list[dict[str, Any]]:
    """Run the OpenEnv clients on each ``(server, mode, name)``, in one process (importing openenv is slow)."""
    specs = [[server.url, mode, *CALLS[name]] for server, mode, name in runs]
    done = subprocess.run(
        [str(python), str(CLIENT), json.dumps(specs)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_PROXY": "127.0.0.1"}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    seen: list[dict[str, Any]] = json.loads(done.stdout)
    return seen


@pytest.fixture(scope="module")
def sim_runs(openenv_python: Path) -> Iterator[dict[str, tuple[dict[str, Any], int]]]:
    """What the clients saw on each shipped server in sim mode, and how many episodes it had open afterwards."""
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(live_server(load_environment(name), mode="sim")) for name in CALLS}
        seen = drive(openenv_python, [(server, "sim", name) for name, server in servers.items()])
        yield {name: (found, len(servers[name].runtime.episodes)) for name, found in zip(servers, seen, strict=True)}


@installs_openenv
@pytest.mark.parametrize("name", sorted(CALLS))
def test_openenvs_clients_drive_the_sim_server(sim_runs: dict[str, tuple[dict[str, Any], int]], name: str) -> None:
    env = load_environment(name)
    tool, _ = CALLS[name]
    seen, still_open = sim_runs[name]
    assert still_open == 0  # the socket's episode and the MCP session's are closed

    task = {t.id: t for t in env.tasks()}[seen["state"]["task_id"]]
    assert seen["reset"]["observation"]["text"] == task.prompt
    assert (seen["reset"]["reward"], seen["reset"]["done"]) == (0.0, False)
    assert seen["state"]["seed"] == 3 and seen["state"]["step_count"] == 2  # list_tools is not a step
    step, mcp_step = seen["step"], seen["call_tool_step"]
    assert not step["observation"]["is_error"] and step["reward"] == 0.0 and step["done"] is False
    assert mcp_step["observation"]["tool_name"] == tool and mcp_step["observation"]["error"] is None
    assert mcp_step["observation"]["result"]["content"] == step["observation"]["content"] or name == "desktop"
    assert seen["list_tools_step"] == [t.name for t in env.tools]
    assert "No tool 'drop_everything'" in seen["unknown_tool"] and "tool_not_found" in seen["unknown_tool"]
    assert seen["mcp_tools"] == {t.name: t.input_schema for t in env.tools}  # the same schemas as over MCP
    structured = step["observation"]["structured_content"]
    assert seen["mcp_call"] == (structured if structured is not None else step["observation"]["text"])
    assert "Tool 'drop_everything' failed: No tool 'drop_everything'" in seen["mcp_unknown_tool"]


@installs_openenv
@pytest.mark.prod
def test_openenvs_mcp_client_drives_the_prod_sql_server(openenv_python: Path, prod_server: LiveServer) -> None:
    [seen] = drive(openenv_python, [(prod_server, "prod", "sql")])
    sql = load_environment("sql")
    assert seen["mcp_tools"] == {t.name: t.input_schema for t in sql.tools}
    assert "orders" in seen["mcp_call"]["result"]  # the tables of this machine's PostgreSQL
    assert "No tool 'drop_everything'" in seen["mcp_unknown_tool"]


# the wire at /mcp, over plain HTTP -------------------------------------------------------------------------------

OPENENV_HEADERS = {"accept": "*/*", "content-type": "application/json"}  # httpx's defaults: what MCPToolClient posts
MCP_MARKS = {  # each alone marks a request as an MCP client's
    "protocol version": {"accept": "application/json", "mcp-protocol-version": "2026-07-28"},
    "session id": {"accept": "application/json", "mcp-session-id": "0" * 32},
    "accepts an event stream": {"accept": "application/json, text/event-stream"},
}


def rpc(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}


def test_openenvs_requests_are_answered_by_the_wire(sim_server: LiveServer) -> None:
    url, before = f"{sim_server.url}/mcp", len(sim_server.runtime.episodes)
    created = httpx.post(url, json=rpc("openenv/session/create"), headers=OPENENV_HEADERS, timeout=30)
    session = created.json()["result"]["session_id"]
    assert len(sim_server.runtime.episodes) == before + 1
    call = rpc("tools/call", name="list_tables", arguments={}, session_id=session)
    called = httpx.post(url, json=call, headers=OPENENV_HEADERS, timeout=30).json()
    assert "orders" in called["result"]["data"]["result"] and called["result"]["_meta"]["done"] is False
    httpx.post(url, json=rpc("openenv/session/close", session_id=session), headers=OPENENV_HEADERS, timeout=30)
    assert len(sim_server.runtime.episodes) == before


@pytest.mark.parametrize("mark", sorted(MCP_MARKS))
def test_an_mcp_clients_request_reaches_the_sdk_unread_by_the_wire(sim_server: LiveServer, mark: str) -> None:
    # a body the wire answers itself (a new session and its episode) when OpenEnv's client sends it
    headers, before = {"content-type": "application/json", **MCP_MARKS[mark]}, len(sim_server.runtime.episodes)
    answer = httpx.post(f"{sim_server.url}/mcp", json=rpc("openenv/session/create"), headers=headers, timeout=30)
    assert "session_id" not in answer.text and "error" in answer.json(), answer.text  # the SDK's refusal
    assert len(sim_server.runtime.episodes) == before


def test_a_body_the_wire_reads_is_bounded_and_the_wire_goes_on(sim_server: LiveServer) -> None:
    url = f"{sim_server.url}/mcp"
    deep = b'{"jsonrpc": "2.0", "method": "tools/call", "params": ' + b"[" * 300 + b"]" * 300 + b"}"
    answer = httpx.post(url, content=deep, headers=OPENENV_HEADERS, timeout=30)
    assert answer.status_code == 400 and answer.json()["error"] == {"code": "malformed_request", "message": TOO_DEEP}
    chunks = (b"x" * 65536 for _ in range(80))  # 5 MiB, chunked: no Content-Length to refuse it by
    answer = httpx.post(url, content=chunks, headers=OPENENV_HEADERS, timeout=30)
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"
    created = httpx.post(url, json=rpc("openenv/session/create"), headers=OPENENV_HEADERS, timeout=30)
    session = created.json()["result"]["session_id"]
    httpx.post(url, json=rpc("openenv/session/close", session_id=session), headers=OPENENV_HEADERS, timeout=30)
