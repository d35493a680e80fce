"""Agent frameworks' own MCP support lists and calls every shipped environment's tools (sim mode).

The frameworks run in two venvs of their own, as their ``mcp`` pins conflict (langchain-mcp-adapters needs
mcp<2, llama-index-tools-mcp mcp>=2): ``.venv/agents-mcp1`` (langchain-mcp-adapters, openai-agents, Anthropic's
SDK; the 2025 session era) and ``.venv/agents-mcp2`` (llama-index-tools-mcp, pydantic-ai, google-genai; sessionless
2026-07-28 clients), pinned in tests/interop/agents-mcp{1,2}-requirements.txt, made on first use (about 2 and 3
minutes here) and reused while those files are unchanged. tests/interop/agent_frameworks.py is what runs in them:
each framework's tool objects, as an agent gets them, called directly (no model).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.environment.catalog import load_environment
from tests.support import live_server, peer_venv

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "interop" / "agent_frameworks.py"
VENVS = {
    "agents-mcp1": ["langchain", "openai-agents", "anthropic"],
    "agents-mcp2": ["llama-index", "pydantic-ai", "google-genai"],
}
FRAMEWORKS = [framework for frameworks in VENVS.values() for framework in frameworks]
# per environment: a call whose answer is the same on every episode, what the answer holds (spaces removed, as
# some frameworks re-indent JSON), and a tool without parameters to send an argument it does not take
CALLS: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "sql": ("run_query", {"sql": "SELECT COUNT(*) FROM orders"}, '"rows":[[300]]', "list_tables"),
    "search": ("collection_info", {}, '"documents":2103', "collection_info"),
    "email": ("list_folders", {}, '"name":"INBOX"', "list_folders"),
    "coding": ("describe_sandbox", {}, '"python":"3.', "describe_sandbox"),
    "desktop": ("screenshot", {}, '"width":1024', "screenshot"),
    "memory": ("search_nodes", {"query": "nobody-by-this-name"}, '"entities":[]', "read_graph"),
}
installs = pytest.mark.timeout(900)  # the first use installs a venv (2-3 minutes here, more on a busy machine)


@pytest.fixture(scope="module")
def seen() -> Iterator[dict[str, Any]]:
    """What each framework saw on each environment's sim server (both venvs' drivers run while the servers serve)."""
    pythons = {venv: peer_venv(ROOT / ".venv" / venv, ROOT / "tests" / "interop" / f"{venv}-requirements.txt",
                               f"the agent frameworks of {venv}", project=False, timeout=700)
               for venv in VENVS}  # fmt: skip
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(live_server(load_environment(name), mode="sim")) for name in CALLS}
        spec = {
            "servers": {name: server.mcp_url for name, server in servers.items()},
            "calls": {name: [tool, arguments] for name, (tool, arguments, _, _) in CALLS.items()},
            "bogus": {name: bogus for name, (_, _, _, bogus) in CALLS.items()},
        }
        runs = {
            venv: subprocess.Popen(
                [str(python), str(DRIVER), json.dumps({**spec, "frameworks": VENVS[venv]})],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "NO_PROXY": "127.0.0.1"},
            )
            for venv, python in pythons.items()
        }
        found: dict[str, Any] = {}
        for run in runs.values():
            out, err = run.communicate(timeout=600)
            assert run.returncode == 0, err[-4000:]
            found.update(json.loads(out))
        yield found


@installs
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_framework_lists_and_calls_every_environments_tools(seen: dict[str, Any], framework: str) -> None:
    for name, (_, _, holds, bogus) in CALLS.items():
        result = seen[framework][name]
        assert "error" not in result, f"{framework} on {name}:\n{result.get('error')}"
        assert sorted(result["tools"]) == sorted(load_environment(name).tools.names), (framework, name)
        assert holds in result["ok"].replace(" ", ""), (framework, name, result["ok"][:500])
        # the argument the advertised schema no longer forbids is still refused, with the same message
        refused = f"Invalid arguments for tool {bogus!r}: unexpected argument 'bogus'. Check the tool's inputSchema."
        assert refused in result["bogus"], (framework, name, result["bogus"])


@installs
def test_what_each_framework_still_degrades(seen: dict[str, Any]) -> None:
    """The frameworks' own choices, pinned so a change (theirs or ours) shows: none of them fails a tool."""
    without_parameters = {bogus for _, _, _, bogus in CALLS.values()} - {"search_nodes"}
    for name in CALLS:
        # openai-agents will not close an object with no properties that does not say so itself: tools without
        # parameters are sent non-strict (harmless: there is nothing to constrain)
        assert set(seen["openai-agents"][name]["notes"]["non_strict"]) <= without_parameters
        # llama-index and google-genai hand the model the whole result, _meta included: no reward or done in it
        for framework in ("llama-index", "google-genai"):
            shown = seen[framework][name]["notes"]["meta_shown"]
            assert not {"openenv-mcp/reward", "openenv-mcp/done", "openenv-mcp/scores"} & set(shown), (framework, shown)
