"""MCP through the official SDK client: Streamable HTTP and stdio, both modes, sessions that are episodes, rewards."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from openenv_mcp.doors.mcp import PROMPTS_PAGE
from openenv_mcp.servers.sql import environment
from tests.support import LiveServer, live_server

pytestmark = pytest.mark.anyio

REWARD, DONE, EPISODE = "openenv-mcp/reward", "openenv-mcp/done", "openenv-mcp/episode_id"


@asynccontextmanager
async def http_client(server: LiveServer, episode: str | None = None, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"X-Episode-Id": episode} if episode else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(server.mcp_url, http_client=http)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client


@pytest.fixture(scope="module")
def rewarding_server() -> Iterator[LiveServer]:
    """A sim server that also puts rewards in results' _meta (OPENENV_MCP_REWARD_META=true)."""
    with live_server(environment, mode="sim", mcp_reward_meta=True) as server:
        yield server


def tools_as_json(result: Any) -> list[dict[str, Any]]:
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_episode_header_binds_call_and_meta_carries_reward(rewarding_server: LiveServer, protocol: str) -> None:
    sim_server = rewarding_server
    with httpx2.Client(base_url=sim_server.url) as http:
        episode = http.post("/reset", json={"task_id": "sql-001"}).json()["episode_id"]
    async with http_client(sim_server, episode, protocol) as client:
        listed = await client.call_tool("list_tables", {})
        assert listed.meta is not None
        assert listed.meta[EPISODE] == episode and listed.meta[REWARD] == 0.0 and listed.meta[DONE] is False
        assert "customers" in listed.structured_content["result"]
        answer = await client.call_tool("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})
        assert answer.meta is not None and answer.meta[REWARD] == 1.0 and answer.meta[DONE] is True
        after = await client.call_tool("list_tables", {})
        assert after.is_error and "POST /reset" in after.content[0].text
    state = sim_server.runtime.episodes.get(episode)
    assert state.step_count == 2 and state.total_reward == 1.0


async def test_call_without_header_uses_the_default_episode(sim_server: LiveServer) -> None:
    async with http_client(sim_server) as client:
        first = await client.call_tool("list_tables", {})
        second = await client.call_tool("list_tables", {})
    assert first.meta is not None and second.meta is not None
    assert first.meta[EPISODE] == second.meta[EPISODE] == "default"
    assert second.meta["openenv-mcp/step_count"] == first.meta["openenv-mcp/step_count"] + 1


async def test_rewards_stay_off_the_result_by_default_and_reach_the_trainer_by_state(sim_server: LiveServer) -> None:
    with httpx2.Client(base_url=sim_server.url) as http:
        episode = http.post("/reset", json={"task_id": "sql-001"}).json()["episode_id"]
        async with http_client(sim_server, episode) as client:
            answer = await client.call_tool("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})
        ours = {key: value for key, value in (answer.meta or {}).items() if key.startswith("openenv-mcp/")}
        assert ours == {EPISODE: episode, "openenv-mcp/step_count": 1}  # what a model may be shown
        state = http.get("/state", headers={"X-Episode-Id": episode}).json()  # the trainer's channel
    assert (state["total_reward"], state["done"]) == (1.0, True)


async def test_default_episode_starts_afresh_after_done(rewarding_server: LiveServer) -> None:
    sim_server = rewarding_server
    async with http_client(sim_server) as client:
        done = await client.call_tool("submit_answer", {"rows": [[0]]})
        assert done.meta is not None and done.meta[DONE] is True
        again = await client.call_tool("list_tables", {})
    assert again.meta is not None and again.meta["openenv-mcp/step_count"] == 1 and not again.is_error


async def test_invalid_arguments_are_a_tool_error_and_unknown_tool_a_protocol_error(sim_server: LiveServer) -> None:
    async with http_client(sim_server) as client:
        bad = await client.call_tool("run_query", {"sql": 7})
        assert bad.is_error and "Input should be a valid string" in bad.content[0].text
        with pytest.raises(MCPError, match="available: describe_table"):
            await client.call_tool("no_such_tool", {})
        still = await client.call_tool("run_query", {"sql": "SELECT 1 AS one"})
        assert still.structured_content == {
            "columns": ["one"],
            "rows": [[1]],
            "row_count": 1,
            "truncated": False,
            "note": None,
        }


async def test_unknown_episode_header_is_a_tool_error(sim_server: LiveServer) -> None:
    async with http_client(sim_server, "ghost") as client:
        result = await client.call_tool("list_tables", {})
    assert result.is_error and "Unknown episode 'ghost'" in result.content[0].text
    assert result.meta is not None and result.meta["openenv-mcp/error"] == "episode_not_found"


@pytest.mark.prod
async def test_tool_list_is_identical_in_sim_and_prod(sim_server: LiveServer, prod_server: LiveServer) -> None:
    async with http_client(sim_server) as sim, http_client(prod_server) as prod:
        sim_tools, prod_tools = tools_as_json(await sim.list_tools()), tools_as_json(await prod.list_tools())
    assert [t["name"] for t in sim_tools] == ["list_tables", "describe_table", "run_query", "submit_answer"]
    assert sim_tools == prod_tools
    assert all("inputSchema" in t and "outputSchema" in t and t["description"] for t in sim_tools)


@pytest.mark.prod
async def test_prod_call_has_no_episode_and_no_reward(prod_server: LiveServer) -> None:
    async with http_client(prod_server, "ignored-in-prod") as client:
        result = await client.call_tool("run_query", {"sql": "SELECT COUNT(*) FROM orders"})
    assert result.structured_content["rows"] == [[300]]
    assert not (result.meta or {}).get(REWARD)


def stdio_params(mode: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "openenv_mcp.cli",
            "serve",
            "sql",
            "--transport",
            "stdio",
            "--mode",
            mode,
            "--log-level",
            "warning",
        ],
        env={**os.environ, **env},
    )


async def test_stdio_lists_and_calls_in_sim() -> None:
    async with Client(stdio_params("sim")) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["list_tables", "describe_table", "run_query", "submit_answer"]
        result = await client.call_tool("describe_table", {"table": "orders"})
        again = await client.call_tool("list_tables", {})
        assert {c["name"] for c in result.structured_content["columns"]} >= {"order_id", "customer_id"}
    async with Client(stdio_params("sim")) as other:
        elsewhere = await other.call_tool("list_tables", {})
    # the one client of a stdio server is a session: its own episode, not the shared default
    mine = (result.meta or {})[EPISODE]
    assert (
        mine != "default" and (again.meta or {})[EPISODE] == mine and (again.meta or {})["openenv-mcp/step_count"] == 2
    )
    assert (elsewhere.meta or {})[EPISODE] not in (mine, "default")


@pytest.mark.prod
async def test_stdio_serves_prod_from_postgres(pg_url: str) -> None:
    async with Client(stdio_params("prod", SQL_DATABASE_URL=pg_url)) as client:
        result = await client.call_tool("run_query", {"sql": "SELECT name FROM regions ORDER BY region_id LIMIT 1"})
    assert result.structured_content["rows"] == [["Northeast"]]


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_sim_lists_its_tasks_as_prompts_in_pages_and_get_opens_one(sim_server: LiveServer, protocol: str) -> None:
    tasks = httpx2.get(f"{sim_server.url}/tasks").json()["tasks"]
    assert len(tasks) > 2 * PROMPTS_PAGE  # so the listing takes three pages or more
    async with http_client(sim_server, mode=protocol) as client:
        pages = [await client.list_prompts()]
        while pages[-1].next_cursor is not None:
            pages.append(await client.list_prompts(cursor=pages[-1].next_cursor))
        assert [len(page.prompts) for page in pages[:-1]] == [PROMPTS_PAGE] * (len(pages) - 1)
        listed = [prompt for page in pages for prompt in page.prompts]
        assert [p.name for p in listed] == [t["id"] for t in tasks]  # each once, in the task list's order
        hard = next(t for t in tasks if t["difficulty"] == "hard")
        prompt = next(p for p in listed if p.name == hard["id"])
        assert prompt.title == f"{hard['id']} ({hard['split']}, hard)"
        assert prompt.meta == {"openenv-mcp/split": hard["split"], "openenv-mcp/difficulty": "hard"}
        with pytest.raises(MCPError, match="Invalid cursor 'nope'"):
            await client.list_prompts(cursor="nope")
        task = tasks[0]
        opened = await client.get_prompt(task["id"])
        episode = (opened.meta or {})["openenv-mcp/episode_id"]
        assert task["prompt"] in opened.messages[0].content.text  # type: ignore[union-attr]
        with httpx2.Client(base_url=sim_server.url) as http:
            state = http.get("/state", headers={"X-Episode-Id": episode}).json()
        assert (state["task_id"], state["step_count"]) == (task["id"], 0)
    with httpx2.Client(base_url=sim_server.url) as http:
        after = http.get("/state", headers={"X-Episode-Id": episode})
    # a session's episode closes with the session; a sessionless client's stays open for it to send back
    assert after.status_code == (404 if protocol == "legacy" else 200)
    if protocol != "legacy":
        await sim_server.runtime.close_episode(episode)


async def test_the_episode_a_prompt_opened_is_the_sessions_own(sim_server: LiveServer) -> None:
    task = httpx2.get(f"{sim_server.url}/tasks").json()["tasks"][1]
    async with http_client(sim_server, mode="legacy") as client:
        opened = await client.get_prompt(task["id"])
        episode = (opened.meta or {})["openenv-mcp/episode_id"]
        result = await client.call_tool("list_tables", {})  # no header: the session's episode, not the default
        assert (result.meta or {})["openenv-mcp/episode_id"] == episode
        with pytest.raises(MCPError, match="No task 'no-such-task'"):
            await client.get_prompt("no-such-task")


async def test_prod_lists_no_prompts(prod_server: LiveServer) -> None:
    async with http_client(prod_server) as client:
        assert (await client.list_prompts()).prompts == []
        with pytest.raises(MCPError, match="prod mode"):
            await client.get_prompt("anything")
