"""verl: our BaseTool loaded by verl's own tool registry and driven by its ToolAgentLoop, against a sim server
started here; the tool config and MCP config the CLI writes.

verl lives in a venv of its own, ``.venv/verl`` (see tests/interop/verl-requirements.txt: verl 0.9.1 with
--no-deps, torch 2.13.0 CPU, transformers, tensordict, Ray), made on first use and reused while that file is
unchanged; examples/verl_tools.py is what runs there. The config files need no verl and are tested here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml

from openenv_mcp.client.discovery import discover
from openenv_mcp.environment.catalog import load_environment, server_names
from openenv_mcp.servers.sql import environment as sql
from openenv_mcp.training.verl_config import TOOL_CLASS, mcp_config, tool_config, verl_tool_schema
from tests.support import ClosedEpisodes, LiveServer, live_server, peer_venv

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "interop" / "verl-requirements.txt"
VERL = "verl==0.9.1"  # with --no-deps: its full set pulls ray[default], wandb, tensorboard... (see REQUIREMENTS)
VENV = ROOT / ".venv" / "verl"
installs_verl = pytest.mark.timeout(900)  # the first use installs verl, torch, Ray (about 1.5-2.5 min here)


@pytest.fixture(scope="session")
def verl_python() -> Path:
    return peer_venv(VENV, REQUIREMENTS, f"verl ({VERL})", no_deps=VERL, timeout=700)


@pytest.fixture(scope="module")
def sql_server() -> Iterator[LiveServer]:
    with live_server(sql, mode="sim", mcp_reward_meta=True) as server:
        yield server


@pytest.fixture(scope="module")
def closed(sql_server: LiveServer) -> ClosedEpisodes:
    observer = ClosedEpisodes()
    sql_server.runtime.observe(observer)
    return observer


@pytest.fixture(scope="module")
def report(verl_python: Path, sql_server: LiveServer, closed: ClosedEpisodes) -> dict[str, Any]:
    done = subprocess.run(
        [str(verl_python), str(ROOT / "examples" / "verl_tools.py"), sql_server.url],
        capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": "/usr/bin:/bin", "NO_PROXY": "127.0.0.1", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert len(sql_server.runtime.episodes) == 0  # every episode the tools opened was closed
    return dict(json.loads(done.stdout))


# with verl -----------------------------------------------------------------------------------------------


@installs_verl
def test_verls_registry_makes_our_tool_for_every_server_tool_with_its_schema(report: dict[str, Any]) -> None:
    tools = report["tools"]
    assert [t["name"] for t in tools] == [t.name for t in sql.tools]
    assert {t["class"] for t in tools} == {TOOL_CLASS}
    declared = {t["name"]: t for t in sql.tools.listing()}
    for tool in tools:  # what verl renders for the model is what we wrote: nothing dropped by its schema model
        assert tool["schema"] == verl_tool_schema(declared[tool["name"]])


@installs_verl
def test_create_opens_the_task_execute_steps_calc_reward_totals_release_closes(report: dict[str, Any]) -> None:
    life = report["lifecycle"]
    assert life["prompt"].startswith("How many customers are there in total?")
    listed, wrong, solved, after = life["steps"]
    assert '"customers"' in listed["text"] and (listed["reward"], listed["metrics"]["step_count"]) == (0.0, 1)
    assert wrong["text"].startswith("Only read-only queries are allowed") and wrong["reward"] == 0.0
    assert (solved["reward"], solved["metrics"]["done"]) == (1.0, True)
    assert after["metrics"]["error"] == "episode_finished" and "is done after 3 steps" in after["text"]
    assert life["calc_reward"] == 1.0
    assert life["open_after_first_release"] == [listed["metrics"]["episode_id"]]  # the other tool still holds it
    assert life["open_after_last_release"] == []


@installs_verl
def test_tool_agent_loop_binds_each_rollout_to_one_episode_and_reports_its_reward(report: dict[str, Any]) -> None:
    solved, refused, down, unknown = report["rollouts"]
    assert solved["reward_score"] == 1.0 and solved["extra_fields"]["tool_rewards"] == [0.0, 1.0, 0.0]
    assert "is over (done: True): no more tool calls count" in solved["response"]  # a call after the end
    assert solved["extra_fields"]["openenv_mcp_done"] is True
    assert '<tool_response>{"columns":["count"],"rows":[[60]]' in solved["response"]
    assert refused["reward_score"] == 0.0 and refused["extra_fields"]["openenv_mcp_done"] is False
    assert "Unknown function 'drop_everything'" in refused["response"]  # verl's own refusal; never a step
    assert solved["extra_fields"]["openenv_mcp_episode_id"] != refused["extra_fields"]["openenv_mcp_episode_id"]
    assert solved["open"] == refused["open"] == report["open_at_end"] == []  # unfinished episodes closed too
    assert down["error"].startswith("BackendUnavailable: Cannot reach the openenv-mcp server at http://127.0.0.1:9")
    assert "refused the row's task: " in unknown["error"] and "sql-999" in unknown["error"]
    rows = report["rows"]
    assert [r["extra_info"]["tools_kwargs"]["submit_answer"]["create_kwargs"]["seed"] for r in rows] == [5, 6]


@installs_verl
def test_a_tiny_model_generating_on_the_cpu_plays_rollouts_whose_rewards_are_the_servers(
    report: dict[str, Any], closed: ClosedEpisodes
) -> None:
    rollouts = report["model_rollouts"]
    assert len(rollouts) == 6 and all("error" not in r for r in rollouts)
    played = [r for r in rollouts if r["extra_fields"]["openenv_mcp_episode_id"]]
    assert played, "the model called no tool in any rollout"
    for rollout in rollouts:
        fields = rollout["extra_fields"]
        episode = fields["openenv_mcp_episode_id"]
        server_total = closed.rewards[episode] if episode else 0.0  # no call, no episode: reward 0
        assert rollout["reward_score"] == fields["openenv_mcp_reward"] == server_total
        assert sum(fields["tool_rewards"]) == server_total  # the step rewards verl keeps add up to it
        assert rollout["open"] == []


@installs_verl
def test_refusals_are_answered_with_the_servers_message(report: dict[str, Any]) -> None:
    assert report["lacking"].startswith("No tool 'drop_everything' on server 'sql'; available:")
    assert report["down"].startswith("BackendUnavailable: Cannot reach the openenv-mcp server at http://127.0.0.1:9")


@installs_verl
def test_verls_schema_model_takes_every_shipped_servers_tools_unchanged(verl_python: Path) -> None:
    schemas = [verl_tool_schema(t) for name in server_names() for t in load_environment(name).tools.listing()]
    code = (
        "import json, sys\nfrom verl.tools.schemas import OpenAIFunctionToolSchema as S\n"
        "given = json.load(sys.stdin)\n"
        "print(json.dumps([S.model_validate(s).model_dump(exclude_unset=True, exclude_none=True) for s in given]))"
    )
    done = subprocess.run([str(verl_python), "-c", code], input=json.dumps(schemas), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == schemas


@installs_verl
def test_an_mcp_servers_file_binds_fastmcps_client_to_its_episode(
    report: dict[str, Any], closed: ClosedEpisodes
) -> None:
    mcp = report["mcp"]
    assert mcp["tools"] == [t.name for t in sql.tools]
    listed, submitted = mcp["calls"]  # each call its own MCP session, as verl's MCP client makes them
    assert '"customers"' in listed["text"] and listed["meta"]["openenv-mcp/step_count"] == 1
    assert submitted["meta"]["openenv-mcp/episode_id"] == mcp["episode_id"]
    assert (submitted["meta"]["openenv-mcp/reward"], submitted["meta"]["openenv-mcp/done"]) == (1.0, True)
    assert closed.rewards[mcp["episode_id"]] == 1.0


# the config files, without verl --------------------------------------------------------------------------


def test_schemas_keep_optional_types_and_show_structure_verl_would_drop() -> None:
    submit = next(t for t in sql.tools.listing() if t["name"] == "submit_answer")
    rows = verl_tool_schema(submit)["function"]["parameters"]["properties"]["rows"]
    assert rows["type"] == ["array", "null"]
    assert rows["description"].startswith("The answer's rows") and '"items"' in rows["description"]
    search = next(t for t in load_environment("search").tools.listing() if t["name"] == "search")
    category = verl_tool_schema(search)["function"]["parameters"]["properties"]["category"]
    assert category["enum"] == ["person", "place", "organization", "product", "event", "news"]


def test_the_cli_writes_the_tool_config_and_an_episode_bound_mcp_config(sql_server: LiveServer, tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "openenv_mcp.cli", "verl"]
    done = subprocess.run([*cli, "tools", sql_server.url, "-o", str(tmp_path / "tools.yaml")], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load((tmp_path / "tools.yaml").read_text())
    assert written == tool_config(anyio.run(discover, sql_server.url))
    assert written["tools"][0]["config"] == {"type": "native", "server_url": sql_server.url, "timeout": 30.0}
    shown = (ROOT / "docs" / "verl.md").read_text().split("```yaml\n")[1].split("```")[0]
    assert yaml.safe_load(shown.replace("http://127.0.0.1:8000", sql_server.url)) == {"tools": written["tools"][:1]}

    done = subprocess.run([*cli, "mcp", sql_server.url, "--task", "sql-001", "--seed", "4", "--name", "sql"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    episode = config["mcpServers"]["sql"]["headers"]["X-Episode-Id"]
    assert config == mcp_config(sql_server.url, name="sql", episode_id=episode)
    state = sql_server.runtime.episode(episode)
    assert (state.task.id, state.seed, state.step_count) == ("sql-001", 4, 0)

    # any MCP client given the file is bound to that episode: a call over /mcp is its step
    entry = config["mcpServers"]["sql"]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_tables", "arguments": {}}}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    accept = {"Accept": "application/json, text/event-stream", **entry["headers"]}
    with httpx.Client(timeout=10) as http:
        opened = http.post(entry["url"], json=init, headers=accept)
        session = {"Mcp-Session-Id": opened.headers.get("mcp-session-id", ""), "MCP-Protocol-Version": "2025-06-18"}
        answer = http.post(entry["url"], json=call, headers={**accept, **session}).json()
    assert answer["result"]["_meta"]["openenv-mcp/episode_id"] == episode
    assert sql_server.runtime.episode(episode).step_count == 1
    anyio.run(sql_server.runtime.close_episode, episode)


def test_the_cli_names_a_server_that_is_down() -> None:
    done = subprocess.run([sys.executable, "-m", "openenv_mcp.cli", "verl", "tools", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and "Cannot reach the MCP endpoint http://127.0.0.1:9/mcp" in done.stderr


def test_only_the_verl_module_imports_verl() -> None:
    sources = [*(ROOT / "openenv_mcp").rglob("*.py"), *(ROOT / "servers").rglob("*.py")]
    importers = sorted(str(p.relative_to(ROOT)) for p in sources
                       if "import verl" in p.read_text() or "from verl" in p.read_text())  # fmt: skip
    assert importers == ["openenv_mcp/training/verl.py"]
