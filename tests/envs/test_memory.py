"""The memory environment against the real upstream: parity, calls, drift refused, a killed upstream, interop.

The upstream is the MCP reference memory server (npm, pinned in envs/memory/package.json).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from memory_env import environment

from openenv_mcp.backends.upstream import UpstreamServer
from openenv_mcp.doors.mcp import McpDoor
from openenv_mcp.environment.tools import Toolbox
from openenv_mcp.errors import BackendUnavailable, ConfigError
from openenv_mcp.runtime import Runtime
from openenv_mcp.settings import Settings
from tests.support import live_server, memory_upstream, node_client, wait_for

COMPARED = ("name", "title", "description", "inputSchema", "annotations")


def _children(pattern: str) -> list[int]:
    """Processes started by this test process whose command line contains ``pattern``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and pattern in command:
            found.append(int(entry.name))
    return found


async def _open(command: str, tmp_path: Path, declared: Toolbox[Any] | None = None) -> UpstreamServer:
    return await UpstreamServer.open(
        name="memory",
        command=[command],
        env={"MEMORY_FILE_PATH": str(tmp_path / "graph.jsonl")},
        declared=declared,
        timeout=15,
    )


def test_sim_lists_exactly_what_the_real_upstream_lists(tmp_path: Path) -> None:
    command = memory_upstream()

    async def upstream_tools() -> list[dict[str, Any]]:
        upstream = await _open(command, tmp_path)
        try:
            return await upstream.list_tools()
        finally:
            await upstream.aclose()

    listed = anyio.run(upstream_tools)
    theirs = {t["name"]: {k: t.get(k) for k in COMPARED} for t in listed}
    sim = McpDoor(Runtime(environment, Settings(mode="sim"), None)).tool_list()
    ours = {t["name"]: {k: t.get(k) for k in COMPARED} for t in sim}
    # the same, but that ours are advertised without the upstream's "$schema" (draft-07), which Gemini refuses
    assert all(theirs[name]["inputSchema"].pop("$schema") for name in theirs)
    assert ours == theirs
    assert len(ours) == 9


def test_prod_calls_reach_the_upstream_and_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_UPSTREAM_COMMAND", memory_upstream())
    monkeypatch.setenv("MEMORY_FILE_PATH", str(tmp_path / "graph.jsonl"))
    entity = {"name": "Ada", "entityType": "person", "observations": ["writes code"]}
    with live_server(environment, mode="prod") as server:
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        (made,) = node_client("--url", server.mcp_url, "call", "create_entities", json.dumps({"entities": [entity]}))
        (graph,) = node_client("--url", server.mcp_url, "call", "read_graph")
        assert httpx.post(f"{server.url}/reset", json={}).status_code == 404
    assert made["structuredContent"] == {"entities": [entity]}
    assert graph["structuredContent"] == {"entities": [entity], "relations": []}
    stored = [json.loads(line) for line in (tmp_path / "graph.jsonl").read_text().splitlines()]
    assert stored == [{"type": "entity", **entity}]


def test_an_upstream_that_drifts_is_refused_with_a_diff(tmp_path: Path) -> None:
    command = memory_upstream()
    changed = Toolbox[Any]("memory")
    for tool in environment.tools:
        changed._tools[tool.name] = tool
    changed._tools["read_graph"] = dataclasses.replace(environment.tools.get("read_graph"), description="Read it all")
    del changed._tools["open_nodes"]

    with pytest.raises(ConfigError) as caught:
        anyio.run(_open, command, tmp_path, changed)
    message = caught.value.message
    assert "refusing to start" in message
    assert "+ open_nodes: listed by the upstream, not declared here" in message
    assert "~ read_graph.description: declared 'Read it all', upstream 'Read the entire knowledge graph'" in message
    assert not _children(command)  # the refused upstream's process is gone


def test_serve_refuses_an_upstream_with_other_tools(tmp_path: Path) -> None:
    other = f"{sys.executable} -m openenv_mcp.cli serve sql --transport stdio --log-level error"
    done = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "serve", "memory", "--mode", "prod", "--port", "0"],
        env={**os.environ, "MEMORY_UPSTREAM_COMMAND": other, "MEMORY_FILE_PATH": str(tmp_path / "g.jsonl")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "does not list the declared tools" in done.stderr
    assert "- create_entities: declared here, not listed by the upstream" in done.stderr
    assert "+ run_query: listed by the upstream, not declared here" in done.stderr


def test_a_missing_upstream_says_how_to_install_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "serve", "memory", "--mode", "prod", "--port", "0"],
        env={**os.environ, "MEMORY_UPSTREAM_COMMAND": "no-such-mcp-server-memory"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "command 'no-such-mcp-server-memory' not found; install it: npm install" in done.stderr


def test_a_killed_upstream_is_a_503_then_comes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    command = memory_upstream()
    monkeypatch.setenv("MEMORY_UPSTREAM_COMMAND", command)
    monkeypatch.setenv("MEMORY_FILE_PATH", str(tmp_path / "graph.jsonl"))
    with live_server(environment, mode="prod") as server:
        (first,) = node_client("--url", server.mcp_url, "call", "read_graph")
        assert first["structuredContent"] == {"entities": [], "relations": []}
        (pid,) = _children("mcp-server-memory")
        os.kill(pid, signal.SIGKILL)
        (lost,) = node_client("--url", server.mcp_url, "--timeout", "20000", "call", "read_graph")
        assert lost["isError"] is True
        assert "Upstream MCP server 'memory'" in lost["content"][0]["text"]
        assert lost["_meta"]["openenv-mcp/error"] == "backend_unavailable"
        wait_for(lambda: httpx.get(f"{server.url}/readyz").status_code == 200, "the upstream restarted")
        (again,) = node_client("--url", server.mcp_url, "call", "read_graph")
        assert again["isError"] is not True
        assert _children("mcp-server-memory") and _children("mcp-server-memory") != [pid]


def test_a_streamable_http_upstream_gets_the_auth_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Our own sim server stands in for an HTTP upstream that needs a bearer token.
    with live_server(environment, mode="sim", auth_token="s3cret-token-for-the-test") as server:

        async def call(headers: dict[str, str]) -> Any:
            upstream = await UpstreamServer.open(
                name="memory", url=server.mcp_url, headers=headers, declared=environment.tools, timeout=10
            )
            try:
                return await upstream.call("search_nodes", {"query": "zzz-none"})
            finally:
                await upstream.aclose()

        assert anyio.run(call, {"Authorization": "Bearer s3cret-token-for-the-test"}) == {
            "entities": [],
            "relations": [],
        }
        with pytest.raises(BackendUnavailable, match="Upstream MCP server 'memory'"):
            anyio.run(call, {"Authorization": "Bearer wrong"})


def test_typescript_client_on_memory_in_sim_over_http_and_in_prod_over_stdio(tmp_path: Path) -> None:
    command = memory_upstream()
    with live_server(environment, mode="sim") as server:
        listed, graph = node_client("--url", server.mcp_url, "list", "call", "read_graph")
        assert len(listed["tools"]) == 9
        # the TypeScript client keeps a 2025-era session: its own episode, closed when the client ends it
        episode = graph["_meta"]["openenv-mcp/episode_id"]
        assert episode != "default" and episode not in server.runtime.episodes
    stdio = f"{sys.executable} -m openenv_mcp.cli serve memory --transport stdio --mode prod --log-level warning"
    listed, made = node_client(
        "--stdio",
        stdio,
        "--env",
        f"MEMORY_UPSTREAM_COMMAND={command}",
        "--env",
        f"MEMORY_FILE_PATH={tmp_path / 'graph.jsonl'}",
        "list",
        "call",
        "create_entities",
        json.dumps({"entities": [{"name": "B", "entityType": "t", "observations": []}]}),
    )
    assert len(listed["tools"]) == 9
    assert made["structuredContent"] == {"entities": [{"name": "B", "entityType": "t", "observations": []}]}
    assert "openenv-mcp/reward" not in (made.get("_meta") or {})
