"""The one binding of sessions to episodes, seen through each door: the mode check, a session's episodes closed when
it ends, and what idle reaping takes; and the runtime's one lifecycle (``Runtime.run``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from websockets.sync.client import connect

from openenv_mcp.errors import ConfigError
from openenv_mcp.servers.sql import environment as sql_environment
from openenv_mcp.settings import Settings
from tests.support import LiveServer, live_server
from tests.support.sums import sum_tasks, sums_environment

EPISODE = "openenv-mcp/episode_id"
OPENENV_HEADERS = {"accept": "*/*", "content-type": "application/json"}  # what OpenEnv's MCPToolClient posts


def rpc(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}


def until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # bounded poll
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def reaping() -> Iterator[LiveServer]:
    """A sim server that reaps an episode idle for 0.3 s (MCP sessions idle as long are closed too)."""
    with live_server(sql_environment, mode="sim", idle_timeout=0.3, reap_interval=0.05) as server:
        yield server


# the mode check ---------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_prod_mcp_session_opens_no_episode_and_an_episode_id_reaches_none() -> None:
    with live_server(sums_environment(sum_tasks(3)), mode="prod") as server:
        async with (
            httpx2.AsyncClient(headers={"X-Episode-Id": "default"}) as http,
            Client(streamable_http_client(server.mcp_url, http_client=http), mode="legacy") as client,  # type: ignore[arg-type]
        ):
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert not result.is_error and result.structured_content == {"result": 5}
            assert result.meta is None or EPISODE not in result.meta  # prod shows no episode
            assert len(server.runtime.episodes) == 0 and len(server.runtime.sessions) == 0


def test_prod_refuses_the_episode_messages_of_every_socket() -> None:
    with live_server(sums_environment(sum_tasks(3)), mode="prod") as server, connect(ws_url(server)) as ws:
        for message in ({"op": "reset"}, {"op": "close", "episode_id": "x"}, {"type": "reset"}):
            ws.send(json.dumps(message))
            answer = json.loads(ws.recv(timeout=30))
            code = answer["error"]["code"] if "op" in message else answer["data"]["code"]
            assert code == "not_in_this_mode", answer
        assert len(server.runtime.sessions) == 0


# a session's episodes close when it ends --------------------------------------------------------------------------


def ws_url(server: LiveServer) -> str:
    return server.url.replace("http://", "ws://") + "/ws"


def test_an_openenv_socket_closes_its_episode_before_a_reset_and_the_rest_when_it_ends(sim_server: LiveServer) -> None:
    runtime, before = sim_server.runtime, len(sim_server.runtime.episodes)
    with connect(ws_url(sim_server)) as ws:
        opened = []
        for _ in range(2):
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            opened.append(json.loads(ws.recv(timeout=30))["data"]["metadata"]["episode_id"])
        assert opened[0] not in runtime.episodes and opened[1] in runtime.episodes
    until(lambda: len(runtime.episodes) == before, "the socket's episode to close")


def test_an_openenv_session_closes_its_episode_and_is_forgotten(sim_server: LiveServer) -> None:
    url, runtime = f"{sim_server.url}/mcp", sim_server.runtime
    created = httpx.post(url, json=rpc("openenv/session/create"), headers=OPENENV_HEADERS, timeout=30).json()
    session = created["result"]["session_id"]
    call = rpc("tools/call", name="list_tables", arguments={}, session_id=session)
    episode = httpx.post(url, json=call, headers=OPENENV_HEADERS, timeout=30).json()["result"]
    assert episode["_meta"]["done"] is False
    (opened,) = [s.current for s in [runtime.sessions.find(("openenv", session))] if s is not None]
    assert opened is not None and opened in runtime.episodes
    httpx.post(url, json=rpc("openenv/session/close", session_id=session), headers=OPENENV_HEADERS, timeout=30)
    assert opened not in runtime.episodes and runtime.sessions.find(("openenv", session)) is None
    again = httpx.post(url, json=call, headers=OPENENV_HEADERS, timeout=30).json()
    assert "No OpenEnv session" in again["error"]["message"]


# idle reaping --------------------------------------------------------------------------------------------------


def test_an_openenv_session_whose_episode_was_reaped_is_gone_and_says_so(reaping: LiveServer) -> None:
    url, runtime = f"{reaping.url}/mcp", reaping.runtime
    created = httpx.post(url, json=rpc("openenv/session/create"), headers=OPENENV_HEADERS, timeout=30).json()
    session = created["result"]["session_id"]
    until(lambda: runtime.sessions.find(("openenv", session)) is None, "the idle session to be reaped")
    call = rpc("tools/call", name="list_tables", arguments={}, session_id=session)
    answer = httpx.post(url, json=call, headers=OPENENV_HEADERS, timeout=30).json()
    assert "No OpenEnv session" in answer["error"]["message"] and "reaped after 0.3 s" in answer["error"]["message"]


def test_a_socket_whose_episode_was_reaped_is_told_so_and_leaves_nothing(reaping: LiveServer) -> None:
    runtime = reaping.runtime
    with connect(ws_url(reaping)) as ws:
        ws.send(json.dumps({"op": "reset", "seed": 2}))
        episode = json.loads(ws.recv(timeout=30))["result"]["episode_id"]
        until(lambda: episode not in runtime.episodes, "the idle episode to be reaped")
        ws.send(json.dumps({"op": "step", "action": {"tool": "list_tables", "arguments": {}}}))
        answer = json.loads(ws.recv(timeout=30))
        assert answer["status"] == 404 and "reaped after 0.3 s" in answer["error"]["message"]  # not a fresh one
    until(lambda: len(runtime.sessions) == 0, "the socket's session to end")


@pytest.mark.anyio
async def test_an_mcp_session_whose_episode_was_reaped_is_told_so_not_moved_to_another(reaping: LiveServer) -> None:
    runtime = reaping.runtime
    async with Client(reaping.mcp_url, mode="legacy") as client:
        first = ((await client.call_tool("list_tables", {})).meta or {})[EPISODE]
        deadline = time.monotonic() + 10
        while first in runtime.episodes:  # bounded poll: the reaper closes it
            assert time.monotonic() < deadline, "the idle episode was not reaped"
            await client.list_tools()  # a request keeps the session open; its episode idles all the same
            await anyio.sleep(0.05)
        after = await client.call_tool("list_tables", {})
        assert after.is_error and f"Unknown episode {first!r}" in after.content[0].text  # type: ignore[union-attr]
    until(lambda: len(runtime.sessions) == 0, "the MCP session to end")


# the one lifecycle ------------------------------------------------------------------------------------------------


class Watching:
    """An observer that counts its starts and stops."""

    def __init__(self) -> None:
        self.started = self.stopped = 0

    async def start(self) -> None:
        self.started += 1

    async def stop(self) -> None:
        self.stopped += 1

    def on_reset(self, episode: Any, observation: Any) -> None:
        """Nothing to see."""

    def on_step(self, episode: Any, call: Any, outcome: Any, seconds: float) -> None:
        """Nothing to see."""

    def on_close(self, episode: Any) -> None:
        """Nothing to see."""


@pytest.mark.anyio
async def test_a_runtime_runs_once_at_a_time_and_again_after() -> None:
    from openenv_mcp.runtime import build_runtime

    runtime = build_runtime(sql_environment, Settings(mode="sim"))
    watching = Watching()
    runtime.observe(watching)
    async with runtime.run() as running:
        assert running is runtime
        with pytest.raises(RuntimeError, match="running already"):
            async with runtime.run():
                pytest.fail("entered twice")
        opened = (await runtime.reset(seed=1)).episode_id
    assert opened not in runtime.episodes and (watching.started, watching.stopped) == (1, 1)
    async with runtime.run():
        assert (await runtime.reset(seed=1)).episode_id in runtime.episodes
    assert (watching.started, watching.stopped) == (2, 2)


@pytest.mark.anyio
async def test_a_start_that_fails_stops_what_it_started() -> None:
    from openenv_mcp.runtime import build_runtime
    from openenv_mcp.trajectories import record_trajectories

    runtime = build_runtime(sql_environment, Settings(mode="sim", trajectories="nonsense"))
    watching = Watching()
    runtime.observe(watching)  # starts first; the recorder's start then fails on its store URL
    record_trajectories(runtime)
    with pytest.raises(ConfigError, match="OPENENV_TRAJECTORIES is not a usable SQLAlchemy URL"):
        async with runtime.run():
            pytest.fail("the runtime served")
    assert (watching.started, watching.stopped) == (1, 1)
