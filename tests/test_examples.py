"""Every tour in the README has a script in examples/; each runs here so none can rot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.support import LiveServer

EXAMPLES = Path(__file__).parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_mcp_agent_earns_the_reward(sim_server: LiveServer) -> None:
    out = run_example("mcp_agent.py", sim_server.url)
    assert "tools: list_tables, describe_table, run_query, submit_answer" in out
    assert "reward: 1.0  done: True" in out


@pytest.mark.prod
def test_mcp_agent_runs_against_a_prod_server_too(prod_server: LiveServer) -> None:
    out = run_example("mcp_agent.py", prod_server.url)
    assert "mode: prod" in out
    assert "tools: list_tables, describe_table, run_query, submit_answer" in out
    assert "answer: [[" in out and "reward" not in out


def test_trainer_loop_runs_concurrent_episodes(sim_server: LiveServer) -> None:
    out = run_example("trainer_loop.py", sim_server.url, "--episodes", "6", "--concurrency", "3")
    assert out.count("seed ") == 6
    assert "6 episodes, mean reward" in out


@pytest.mark.prod
def test_prod_switch_shows_identical_tools_and_rows(pg_url: str) -> None:
    out = run_example("prod_switch.py", pg_url)
    assert "tool lists identical: True" in out
    sim_rows = next(line for line in out.splitlines() if line.startswith("sim rows:")).split(":", 1)[1].strip()
    prod_rows = next(line for line in out.splitlines() if line.startswith("prod rows:")).split(":", 1)[1].strip()
    assert sim_rows == prod_rows and "Northeast" in sim_rows
    assert "prod POST /reset: 404" in out


@pytest.mark.prod
@pytest.mark.anyio
async def test_desktop_config_starts_working_stdio_servers(pg_url: str) -> None:
    config = json.loads((EXAMPLES / "desktop" / "mcp-config.json").read_text())["mcpServers"]
    binary = shutil.which("openenv-mcp", path=str(Path(sys.executable).parent))
    assert binary is not None
    for name, entry in config.items():
        env = {**os.environ, **entry["env"]}
        if "SQL_DATABASE_URL" in env:
            env["SQL_DATABASE_URL"] = pg_url
        params = StdioServerParameters(command=binary, args=[*entry["args"], "--log-level", "warning"], env=env)
        with anyio.fail_after(60):
            async with Client(params) as client:
                result = await client.call_tool("run_query", {"sql": "SELECT COUNT(*) FROM regions"})
        assert result.structured_content["rows"] == [[5]], name
