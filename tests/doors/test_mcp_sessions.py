"""Sessions that are episodes (sim): two clients without ids share nothing; a session's episodes close with it."""

from __future__ import annotations

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support import LiveServer, wait_for

pytestmark = pytest.mark.anyio

EPISODE, STEPS = "openenv-mcp/episode_id", "openenv-mcp/step_count"


async def test_two_sessions_without_ids_act_on_episodes_of_their_own(sim_server: LiveServer) -> None:
    runtime = sim_server.runtime
    async with Client(sim_server.mcp_url, mode="legacy") as one, Client(sim_server.mcp_url, mode="legacy") as two:
        first = await one.call_tool("list_tables", {})
        other = await two.call_tool("list_tables", {})
        mine, theirs = (first.meta or {})[EPISODE], (other.meta or {})[EPISODE]
        assert len({mine, theirs, "default"}) == 3
        task = runtime.episodes.get(theirs).task.id
        finished = await one.call_tool("submit_answer", {"rows": [[0]]})  # ends one's episode, not two's
        assert not finished.is_error and runtime.episodes.get(mine).done
        going_on = await two.call_tool("list_tables", {})
        assert not going_on.is_error and (going_on.meta or {})[STEPS] == 2
        assert runtime.episodes.get(theirs).task.id == task and not runtime.episodes.get(theirs).done
        after = await one.call_tool("list_tables", {})  # the session's episode is over: it says so
        assert after.is_error and f"Episode {mine!r} is done" in after.content[0].text
    # both sessions ended (the client sends DELETE): their episodes close as the server's session tasks unwind, which
    # the DELETE's answer does not wait for
    wait_for(lambda: mine not in runtime.episodes and theirs not in runtime.episodes, "the sessions' episodes to close")


async def test_a_prompt_moves_the_session_to_a_new_episode_and_closes_the_one_before(sim_server: LiveServer) -> None:
    runtime = sim_server.runtime
    async with Client(sim_server.mcp_url, mode="legacy") as client:
        before = (await client.call_tool("list_tables", {})).meta or {}
        opened = await client.get_prompt("sql-002")
        episode = (opened.meta or {})[EPISODE]
        assert before[EPISODE] not in runtime.episodes and runtime.episodes.get(episode).task.id == "sql-002"
        assert ((await client.call_tool("list_tables", {})).meta or {})[EPISODE] == episode
    wait_for(lambda: episode not in runtime.episodes, "the session's episode to close")


async def test_sessionless_clients_are_isolated_by_the_handle_a_prompt_mints(sim_server: LiveServer) -> None:
    runtime = sim_server.runtime
    async with Client(sim_server.mcp_url) as one, Client(sim_server.mcp_url) as two:  # 2026-07-28: no session
        handles = [((await c.get_prompt("sql-003")).meta or {})[EPISODE] for c in (one, two)]
        for client, handle in zip((one, two), handles, strict=True):
            result = await client.call_tool("list_tables", {}, meta={EPISODE: handle})
            assert (result.meta or {})[EPISODE] == handle and (result.meta or {})[STEPS] == 1
        unbound = await one.call_tool("list_tables", {})  # no handle, no session: the shared default episode
        assert (unbound.meta or {})[EPISODE] == "default"
    assert handles[0] != handles[1] and all(runtime.episodes.get(h).step_count == 1 for h in handles)
    for handle in handles:
        await runtime.close_episode(handle)


async def test_a_session_that_asks_for_the_default_episode_gets_it(sim_server: LiveServer) -> None:
    async with (
        httpx2.AsyncClient(headers={"X-Episode-Id": "default"}) as http,
        Client(streamable_http_client(sim_server.mcp_url, http_client=http), mode="legacy") as client,
    ):
        result = await client.call_tool("list_tables", {})
    assert (result.meta or {})[EPISODE] == "default"
