"""Faults: a real backend goes away mid-run and comes back; clients vanish mid-call. Nothing is lost or leaked.

- PostgreSQL stopped under a prod SQL server and a prod search server (on a private cluster this test starts,
  so the shared one is untouched), with a query in flight: the call in flight and every call after it are
  tool errors saying the backend is unavailable, ``/readyz`` is 503 naming it, and when PostgreSQL is back
  both servers recover by themselves, without a restart. Both a clean stop (``fast``) and a crash
  (``immediate``).
- The same for the mail servers under a prod email server: Dovecot (IMAP) and aiosmtpd (SMTP) stopped, then
  started again on the same ports.
- A client that disconnects in the middle of a call, at each door (HTTP, MCP, WebSocket), leaves no task and no
  file handle behind; the WebSocket door closes the connection's episodes, and an HTTP episode whose client
  vanished stays until the idle reaper frees it.
- A backend that fails to close does not stop the reaper.
- An environment whose code raises (a bug in a tool, its sim backend, its fork, a replayed step) gets one clear
  error at every door: the HTTP connection is kept, the WebSocket goes on, a batch answers its other steps, MCP
  gets a tool error; a fork that fails leaves no half-made episode.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from socket import SHUT_RDWR
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from aiosmtpd.controller import Controller
from websockets.sync.client import connect

from openenv_mcp.environment.tasks import Task
from openenv_mcp.runtime.episodes import EpisodeTable
from openenv_mcp.servers.email import environment as email_environment
from openenv_mcp.servers.search import environment as search_environment
from openenv_mcp.servers.search.load import load_corpus
from openenv_mcp.servers.sql import environment as sql_environment
from openenv_mcp.servers.sql.load import load
from tests.support import LiveServer, buggy_env, live_server, mcp_call, record, wait_for
from tests.support.buggy_env import buggy
from tests.support.email import Dovecot, SmtpServer, _dovecot_binary, _Recorder, _wait_for_port, dovecot, smtp_server
from tests.support.postgres import PgCluster, pg_cluster

READER = "reader"
SLEEPING = "SELECT pg_sleep(30)"


@dataclass
class Answer:
    error: bool
    text: str
    code: str | None
    data: Any


def mcp(server: LiveServer, tool: str, arguments: dict[str, Any], *, episode: str | None = None) -> Answer:
    """One tools/call through the official SDK client, over Streamable HTTP."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def call() -> Answer:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(headers={"X-Episode-Id": episode} if episode else {}) as http:
                transport = streamable_http_client(server.mcp_url, http_client=http)
                async with Client(transport) as client:
                    result = await client.call_tool(tool, arguments)
        text = getattr(result.content[0], "text", "") if result.content else ""
        code = (result.meta or {}).get("openenv-mcp/error")
        return Answer(result.is_error, text, code, result.structured_content)

    return anyio.run(call)


def ready(server: LiveServer) -> httpx.Response:
    return httpx.get(f"{server.url}/readyz", timeout=30)


def calls(server: LiveServer, tool: str, outcome: str) -> int:
    """How many calls of ``tool`` ended with ``outcome``, from the server's own /metrics."""
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    pattern = rf'^openenv_tool_calls_total\{{(?=[^}}]*tool="{tool}")(?=[^}}]*outcome="{outcome}")[^}}]*\}} (\S+)$'
    found = re.search(pattern, metrics, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


# PostgreSQL: sql and search in prod ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    with pg_cluster() as running:
        load(running.url("shop"), create=True, reader=READER)
        with psycopg.connect(running.url(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE search")
        load_corpus(running.url("search"), grant=READER)
        yield running


def in_flight(cluster: PgCluster, query: str) -> bool:
    with psycopg.connect(cluster.url(), autocommit=True, connect_timeout=5) as admin:
        # The server fetches through a cursor: the statement running is a FETCH, the wait is the sleep's.
        assert "pg_sleep" in query
        row = admin.execute("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'").fetchone()
    return bool(row and row[0])


@pytest.mark.prod
@pytest.mark.parametrize("how", ["fast", "immediate"])
def test_postgres_stopped_mid_run_is_reported_and_recovered_from_without_a_restart(
    cluster: PgCluster, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, how: str
) -> None:
    assert cluster.running()
    monkeypatch.setenv("SQL_DATABASE_URL", cluster.url("shop", user=READER))
    monkeypatch.setenv("SQL_STATEMENT_TIMEOUT_MS", "60000")
    monkeypatch.setenv("SEARCH_DATABASE_URL", cluster.url("search", user=READER))
    where = f"PostgreSQL at postgresql+psycopg://{READER}@127.0.0.1:{cluster.port}"
    with live_server(sql_environment, mode="prod") as sql, live_server(search_environment, mode="prod") as search:
        assert ready(sql).status_code == ready(search).status_code == 200
        assert mcp(sql, "run_query", {"sql": "SELECT COUNT(*) FROM orders"}).data["rows"] == [[300]]
        assert not mcp(search, "fetch", {"doc_id": "doc-0001"}).error  # both pools now hold a connection

        # a query is running when PostgreSQL goes away
        answers: list[Answer] = []
        sleeper = threading.Thread(target=lambda: answers.append(mcp(sql, "run_query", {"sql": SLEEPING})))
        sleeper.start()
        try:
            wait_for(lambda: in_flight(cluster, SLEEPING), "the query to run on PostgreSQL")
            cluster.stop(how)  # type: ignore[arg-type]
            stopped = time.monotonic()
        finally:
            sleeper.join(timeout=30)
        [cut] = answers
        assert cut.error and cut.code == "backend_unavailable" and cut.text.startswith(where), cut
        record(request, "in_flight_call_answered_after_seconds", round(time.monotonic() - stopped, 2))

        for server, name in ((sql, "sql"), (search, "search")):
            down = ready(server)
            assert down.status_code == 503, down.text
            reason = down.json()["backends"][name]
            assert reason.startswith(where) and "unavailable" in reason, reason
            assert down.json()["error"]["code"] == "backend_unavailable"
        record(request, "unready_within_seconds", round(time.monotonic() - stopped, 2))
        for server, tool, arguments in (
            (sql, "list_tables", {}),
            (sql, "run_query", {"sql": "SELECT 1"}),
            (search, "search", {"query": "velmora"}),
            (search, "fetch", {"doc_id": "doc-0001"}),
        ):
            failed = mcp(server, tool, arguments)
            assert failed.error and failed.code == "backend_unavailable", (tool, failed)
            assert failed.text.startswith(where) and "unavailable" in failed.text, failed.text
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200  # alive, only not ready

        cluster.start()
        restarted = time.monotonic()
        wait_for(lambda: ready(sql).status_code == 200 and ready(search).status_code == 200, "readiness again")
        record(request, "ready_again_within_seconds", round(time.monotonic() - restarted, 2))
        assert mcp(sql, "run_query", {"sql": "SELECT COUNT(*) FROM orders"}).data["rows"] == [[300]]
        assert mcp(search, "fetch", {"doc_id": "doc-0001"}).data["doc_id"] == "doc-0001"
        # the same processes served before, during and after: recovered, not restarted
        assert calls(sql, "run_query", "backend_unavailable") == 2 and calls(sql, "run_query", "ok") == 2
        assert calls(search, "fetch", "backend_unavailable") == 1 and calls(search, "fetch", "ok") == 2


# SMTP and IMAP: email in prod -------------------------------------------------------------------------------


def restart_dovecot(imap: Dovecot) -> None:
    """Start Dovecot again on the same port, configuration and maildir (what a restart of the service does)."""
    command = [_dovecot_binary(), "-F", "-c", str(imap.root / "dovecot.conf")]
    with (imap.root / "stderr.log").open("ab") as log:
        imap.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
    _wait_for_port(imap, None)


def restart_smtp(smtp: SmtpServer) -> None:
    """Listen again on the same port, recording into the same list (stopped by the fixture, like the first)."""
    controller = Controller(_Recorder(smtp), hostname=smtp.host, port=smtp.port, ready_timeout=10)
    controller.start()
    smtp._controller = controller


@pytest.mark.prod
def test_the_mail_servers_going_away_mid_run_is_reported_and_recovered_from(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    with dovecot() as imap, smtp_server() as smtp:
        for name, value in {
            "EMAIL_FROM_ADDRESS": imap.user,
            "EMAIL_SMTP_HOST": smtp.host,
            "EMAIL_SMTP_PORT": str(smtp.port),
            "EMAIL_SMTP_SECURITY": "none",
            "EMAIL_IMAP_HOST": imap.host,
            "EMAIL_IMAP_PORT": str(imap.port),
            "EMAIL_IMAP_SECURITY": "none",
            "EMAIL_IMAP_USERNAME": imap.user,
            "EMAIL_IMAP_PASSWORD": imap.password,
            "EMAIL_TIMEOUT": "3",
        }.items():
            monkeypatch.setenv(name, value)
        with live_server(email_environment, mode="prod") as server:
            assert ready(server).status_code == 200
            assert mcp(server, "list_emails", {"limit": 1}).data["matched"] == 38  # the IMAP pool holds a connection
            note = {"to": ["ana@example.com"], "subject": "before", "body": "b"}
            assert not mcp(server, "send_email", note).error
            smtp.wait_for(1)

            imap.stop()
            smtp.stop()
            stopped = time.monotonic()
            down = ready(server)
            assert down.status_code == 503
            reason = down.json()["backends"]["email"]
            assert f"IMAP at 127.0.0.1:{imap.port} is unavailable" in reason
            assert f"SMTP at 127.0.0.1:{smtp.port} is unavailable" in reason
            record(request, "unready_within_seconds", round(time.monotonic() - stopped, 2))
            read = mcp(server, "list_emails", {"limit": 1})
            assert read.error and read.code == "backend_unavailable" and "IMAP at 127.0.0.1" in read.text, read
            sent = mcp(server, "send_email", {**note, "subject": "while down"})
            assert sent.error and sent.code == "backend_unavailable" and "SMTP at 127.0.0.1" in sent.text, sent

            restart_dovecot(imap)
            restart_smtp(smtp)
            restarted = time.monotonic()
            wait_for(lambda: ready(server).status_code == 200, "readiness again")
            record(request, "ready_again_within_seconds", round(time.monotonic() - restarted, 2))
            assert mcp(server, "list_emails", {"limit": 1}).data["matched"] == 38  # the same mailbox, read again
            assert not mcp(server, "send_email", {**note, "subject": "after"}).error
            assert [r.message["Subject"] for r in smtp.wait_for(2)] == ["before", "after"]  # nothing sent twice
            assert calls(server, "send_email", "backend_unavailable") == 1 and calls(server, "send_email", "ok") == 2


# clients that vanish mid-call ---------------------------------------------------------------------------------

RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT COUNT(*) FROM c"


@pytest.fixture
def reaped_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    monkeypatch.setenv("SQL_STATEMENT_TIMEOUT_MS", "1500")
    with live_server(sql_environment, mode="sim", idle_timeout=1.0, reap_interval=0.2) as server:
        yield server


def server_tasks(server: LiveServer) -> int:
    """The asyncio tasks alive on the server's event loop (the reaper's loop is uvicorn's)."""
    reaper = server.runtime._reaper
    assert reaper is not None

    async def count() -> int:
        return len(asyncio.all_tasks())

    return asyncio.run_coroutine_threadsafe(count(), reaper.get_loop()).result(timeout=10)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))  # the server runs in this process


def busy(server: LiveServer) -> bool:
    return any(e.lock.locked() for e in list(server.runtime.episodes._episodes.values()))


def test_clients_that_vanish_mid_call_leave_no_task_handle_or_episode_behind(
    reaped_server: LiveServer, request: pytest.FixtureRequest
) -> None:
    server = reaped_server
    ws_url = server.url.replace("http://", "ws://") + "/ws"
    step = {"action": {"tool": "run_query", "arguments": {"sql": RUNAWAY}}}
    # once through each door first: what is created on first use (the MCP task group, pools) is not a leak
    with httpx.Client(base_url=server.url, timeout=30) as http:
        warm = http.post("/reset", json={"seed": 1}).json()["episode_id"]
        assert http.delete(f"/episodes/{warm}").status_code == 200
    assert not mcp(server, "list_tables", {}).error
    with connect(ws_url, open_timeout=10) as socket:
        socket.send('{"op": "reset"}')
        assert '"ok":true' in socket.recv(timeout=10)
    wait_for(lambda: len(server.runtime.episodes) == 1, "the WebSocket episode to close")  # 1: MCP's default
    tasks, fds = server_tasks(server), open_fds()

    # HTTP: the client gives up during a slow step; the step ends, the episode stays until reaped
    with httpx.Client(base_url=server.url, timeout=30) as http:
        episode = http.post("/reset", json={"seed": 2}).json()["episode_id"]
        with pytest.raises(httpx.ReadTimeout):
            http.post("/step", headers={"X-Episode-Id": episode}, json=step, timeout=0.3)
    assert episode in server.runtime.episodes
    wait_for(lambda: not busy(server), "the abandoned step to end", timeout=10)
    assert episode in server.runtime.episodes  # nobody closed it: the reaper will
    took = wait_for(lambda: episode not in server.runtime.episodes, "the reaper to free it", timeout=10)
    record(request, "http_episode_reaped_within_seconds", round(took, 2))

    # MCP: the client is cancelled during the call and its connection dropped
    async def cancelled_call() -> None:
        from mcp import Client

        with anyio.move_on_after(0.3):
            async with Client(server.mcp_url) as client:
                await client.call_tool("run_query", {"sql": RUNAWAY})
        raise AssertionError("the call should have been cut off")  # pragma: no cover

    with pytest.raises(AssertionError, match="cut off"):
        anyio.run(cancelled_call)
    wait_for(lambda: not busy(server), "the abandoned MCP call to end", timeout=10)

    # WebSocket: the connection drops during a step; its episode is closed
    with connect(ws_url, open_timeout=10, close_timeout=1) as socket:
        socket.send('{"op": "reset", "seed": 3}')
        assert '"ok":true' in socket.recv(timeout=10)
        opened = set(server.runtime.episodes._episodes) - {"default"}
        socket.send(json.dumps({"op": "step", **step}))
        wait_for(lambda: busy(server), "the WebSocket step to start")
        socket.socket.shutdown(SHUT_RDWR)  # no close frame: the client is simply gone
    took = wait_for(lambda: not opened & set(server.runtime.episodes._episodes), "the WebSocket episode to close")
    record(request, "ws_episode_closed_within_seconds", round(took, 2))

    wait_for(lambda: server_tasks(server) <= tasks, f"the server's tasks back to {tasks}", timeout=10)
    wait_for(lambda: open_fds() <= fds, f"open file handles back to {fds}", timeout=10)
    assert set(server.runtime.episodes._episodes) <= {"default"}


def mcp_sessions(server: LiveServer) -> float:
    """The open stateful MCP sessions, as ``/metrics`` reports them."""
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(r"^openenv_mcp_sessions (\S+)$", text, re.MULTILINE)
    assert found is not None, "no openenv_mcp_sessions in /metrics"
    return float(found.group(1))


def vanishing_legacy_client(server: LiveServer, sql: str) -> None:
    """A 2025-era (stateful) MCP client that calls ``run_query`` and is gone 0.3 s later, without a DELETE."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def vanish() -> None:
        async with httpx2.AsyncClient() as http:
            with anyio.move_on_after(0.3):
                async with Client(streamable_http_client(server.mcp_url, http_client=http), mode="legacy") as client:
                    await client.call_tool("run_query", {"sql": sql})
                    await anyio.sleep(30)

    anyio.run(vanish)


def test_an_mcp_session_whose_client_vanished_is_closed_when_idle(
    reaped_server: LiveServer, request: pytest.FixtureRequest
) -> None:
    server = reaped_server  # OPENENV_IDLE_TIMEOUT=1
    # Once first: the first SSE stream starts sse-starlette's shutdown watcher, one task per event loop for good.
    vanishing_legacy_client(server, "SELECT 1")
    wait_for(lambda: mcp_sessions(server) == 0, "the warm-up session to close", timeout=10)
    tasks = server_tasks(server)

    vanishing_legacy_client(server, RUNAWAY)  # gone in the middle of the call
    assert mcp_sessions(server) == 1 and server_tasks(server) > tasks  # the session and its server task remain
    wait_for(lambda: not busy(server), "the abandoned call to end", timeout=10)
    took = wait_for(lambda: mcp_sessions(server) == 0, "the session to be closed", timeout=4)
    record(request, "vanished_mcp_session_closed_within_seconds", round(took, 2))
    wait_for(lambda: server_tasks(server) <= tasks, f"the server's tasks back to {tasks}", timeout=4)


def test_stateful_mcp_sessions_are_capped_and_an_idle_one_frees_its_place() -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with (
        live_server(sql_environment, mode="sim", idle_timeout=1.0, max_mcp_sessions=2) as server,
        httpx.Client(base_url=server.url, headers=headers, timeout=10) as http,
    ):
        opened = [http.post("/mcp", json=initialize) for _ in range(2)]
        assert [a.status_code for a in opened] == [200, 200] and all("mcp-session-id" in a.headers for a in opened)
        refused = http.post("/mcp", json=initialize)
        assert refused.status_code == 503 and "Too many open sessions" in refused.text
        assert mcp_sessions(server) == 2
        # Neither client says goodbye: both sessions are closed once idle for OPENENV_IDLE_TIMEOUT.
        wait_for(lambda: mcp_sessions(server) == 0, "the idle sessions to close", timeout=5)
        gone = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
            headers={"mcp-session-id": opened[0].headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"},
        )
        assert gone.status_code == 404
        assert http.post("/mcp", json=initialize).status_code == 200


# the reaper itself ----------------------------------------------------------------------------------------------


class _Backend:
    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.closed = False

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        self.closed = True
        if self.fail:
            raise OSError("the sandbox's files could not be removed")


@pytest.mark.anyio
async def test_a_backend_that_fails_to_close_does_not_stop_the_reaper(caplog: pytest.LogCaptureFixture) -> None:
    table = EpisodeTable(capacity=10, idle_timeout=0.05)
    task = Task(id="t", split="train", prompt="p")
    backends = [_Backend(fail=True), _Backend(fail=False)]
    for backend in backends:
        await table.open(task, 0, functools.partial(_ready, backend), max_steps=5)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(table.reap_forever, 0.02)
            while len(table):
                await anyio.sleep(0.02)
            late = _Backend(fail=False)  # and it keeps sweeping afterwards
            await table.open(task, 0, lambda: _ready(late), max_steps=5)
            while len(table):
                await anyio.sleep(0.02)
            group.cancel_scope.cancel()
    assert all(b.closed for b in [*backends, late])
    assert "its backend failed to close" in caplog.text


async def _ready(backend: _Backend) -> _Backend:
    return backend


CRASHED = "Tool 'poke' crashed inside the server (ZeroDivisionError: division by zero); the step does not count"


def test_a_bug_in_an_environment_is_one_clear_error_at_every_door_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with live_server(buggy, mode="sim", max_episodes=2) as server, httpx.Client(base_url=server.url) as http:
        sockets: set[Any] = set()
        http.event_hooks["response"] = [lambda r: sockets.add(r.extensions["network_stream"].get_extra_info("socket"))]
        episode = http.post("/reset", json={"seed": 1}).json()["episode_id"]
        header = {"X-Episode-Id": episode}
        crashed = http.post("/step", headers=header, json={"action": {"tool": "poke", "arguments": {"crash": True}}})
        assert crashed.status_code == 500 and crashed.headers.get("connection") != "close"
        assert crashed.json()["error"]["code"] == "environment_crashed"
        assert crashed.json()["error"]["message"].startswith(CRASHED)
        ok = http.post("/step", headers=header, json={"action": {"tool": "poke", "arguments": {}}})
        assert ok.status_code == 200 and ok.json()["info"]["step_count"] == 1  # the crashed step did not count
        assert len(sockets) == 1  # the same connection served the call after the crash

        # a sim backend that cannot open: no episode, and its slot is free again (the cap is 2)
        refused = http.post("/reset", json={"seed": 13})
        assert refused.status_code == 500 and refused.json()["error"]["code"] == "environment_crashed"
        opening = "The sim backend of task 'poke' (seed 13) crashed inside the server (KeyError: 'seed 13'); no episode"
        assert opening in refused.text
        other = http.post("/reset", json={"seed": 4}).json()["episode_id"]

        batch = http.post(
            "/step_batch",
            json={
                "steps": [
                    {"episode_id": episode, "action": {"tool": "poke", "arguments": {"crash": True}}},
                    {"episode_id": other, "action": {"tool": "poke", "arguments": {}}},
                ]
            },
        ).json()
        assert [(item["ok"], item["status"]) for item in batch["results"]] == [(False, 500), (True, 200)]
        assert batch["results"][0]["error"]["message"].startswith(CRASHED)

        assert http.delete(f"/episodes/{other}").status_code == 200  # a place for the WebSocket's episode
        with connect(server.url.replace("http://", "ws://") + "/ws") as ws:
            ws.send(json.dumps({"op": "reset", "seed": 3}))
            assert json.loads(ws.recv())["ok"]
            ws.send(json.dumps({"op": "step", "action": {"tool": "poke", "arguments": {"crash": True}}}))
            answer = json.loads(ws.recv())
            assert (answer["ok"], answer["status"], answer["error"]["code"]) == (False, 500, "environment_crashed")
            ws.send(json.dumps({"op": "step", "action": {"tool": "poke", "arguments": {}}}))
            assert json.loads(ws.recv())["result"]["info"]["step_count"] == 1

    with live_server(buggy, mode="sim") as server:
        answer = mcp_call(server, "poke", {"crash": True})
        assert answer["error"] and answer["text"].startswith(CRASHED)
        assert mcp_call(server, "poke", {})["data"] == {"result": "ok"}
    caplog.clear()
    with live_server(buggy, mode="prod") as server:
        answer = mcp_call(server, "poke", {"crash": True})
        # prod: the exception's text (a real service's may name hosts, users, data) stays in the log
        assert answer["error"] and "(ZeroDivisionError); it returned nothing" in answer["text"]
        assert "division by zero" not in answer["text"]
        assert mcp_call(server, "poke", {})["data"] == {"result": "ok"}
    incident = re.search(r"incident ([0-9a-f]{8})$", answer["text"])
    assert incident is not None, answer["text"]
    assert f"Tool 'poke' raised inside the server (incident {incident[1]})" in caplog.text
    assert "ZeroDivisionError: division by zero" in caplog.text  # the log has the whole traceback


def test_a_fork_whose_copy_or_replay_crashes_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with live_server(buggy, mode="sim") as server, httpx.Client(base_url=server.url) as http:
        seven = http.post("/reset", json={"seed": 7}).json()["episode_id"]
        step = {"action": {"tool": "poke", "arguments": {}}}
        assert http.post("/step", headers={"X-Episode-Id": seven}, json=step).status_code == 200
        copied = http.post(f"/episodes/{seven}/fork")  # the environment's fast path raises
        assert copied.status_code == 500 and copied.json()["error"]["code"] == "environment_crashed"
        assert f"The sim fork of episode {seven!r} crashed inside the server (OSError: no space" in copied.text
        assert http.post(f"/episodes/{seven}/fork", params={"via": "replay"}).status_code == 200

        monkeypatch.setattr(buggy_env, "BROKEN_SEEDS", {2, 7})  # the tool now raises where it did not
        replayed = http.post(f"/episodes/{seven}/fork", params={"via": "replay"})
        assert replayed.status_code == 500 and replayed.json()["error"]["code"] == "environment_crashed"
        message = replayed.json()["error"]["message"]
        assert message.startswith(f"Replaying step 1 (poke {{}}) of {seven} crashed inside the server (RuntimeError")
        assert len(server.runtime.episodes) == 2  # the source and the good fork; the failed ones were closed
        state = http.get("/state", headers={"X-Episode-Id": seven}).json()
        assert (state["step_count"], state["done"]) == (1, False)  # the source is as it was
