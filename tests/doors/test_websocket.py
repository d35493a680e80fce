"""The WebSocket door over a real socket: the same episodes, errors and shapes as HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from openenv_mcp.doors.openenv import OpenEnvSocket
from openenv_mcp.runtime.episodes import Episode
from openenv_mcp.servers.sql import environment
from tests.support import LiveServer, live_server


def ask(ws: ClientConnection, **message: Any) -> dict[str, Any]:
    ws.send(json.dumps(message))
    return dict(json.loads(ws.recv(timeout=10)))


def ws_url(server: LiveServer) -> str:
    return server.url.replace("http://", "ws://") + "/ws"


def test_a_whole_episode_over_one_connection(sim_server: LiveServer) -> None:
    with connect(ws_url(sim_server)) as ws:
        first = ask(ws, op="reset", task_id="sql-001", id=1)
        assert first["ok"] and first["id"] == 1 and first["result"]["info"]["task_id"] == "sql-001"
        step = ask(ws, op="step", action={"tool": "run_query", "arguments": {"sql": "SELECT COUNT(*) FROM orders"}})
        assert step["result"]["observation"]["structured_content"]["rows"] == [[300]]
        done = ask(ws, op="step", action={"tool": "submit_answer", "arguments": {"rows": [[60]]}})
        assert (done["result"]["reward"], done["result"]["done"]) == (1.0, True)
        state = ask(ws, op="state")
        assert (state["result"]["step_count"], state["result"]["total_reward"]) == (2, 1.0)
        after = ask(ws, op="step", action={"tool": "list_tables"}, id="x")
        assert (after["ok"], after["status"], after["error"]["code"], after["id"]) == (
            False,
            409,
            "episode_finished",
            "x",
        )


def test_a_step_or_batch_sent_again_with_its_id_is_answered_not_applied_twice(sim_server: LiveServer) -> None:
    with connect(ws_url(sim_server)) as ws:
        episode = ask(ws, op="reset", task_id="sql-001")["result"]["episode_id"]
        count = {"tool": "run_query", "arguments": {"sql": "SELECT COUNT(*) FROM orders"}}
        first = ask(ws, op="step", action=count, step_id="s-1")
        assert ask(ws, op="step", action=count, step_id="s-1") == first  # sent again: its recorded answer
        batch = [{"episode_id": episode, "action": {"tool": "list_tables"}, "step_id": "s-2"}]
        items = ask(ws, op="step_batch", steps=batch)
        assert ask(ws, op="step_batch", steps=batch) == items
        assert items["result"][0]["result"]["info"]["step_count"] == 2
        assert ask(ws, op="state")["result"]["step_count"] == 2
        assert ask(ws, op="step", action=count, step_id="")["error"]["code"] == "malformed_request"


def test_errors_answer_and_the_connection_keeps_serving(sim_server: LiveServer) -> None:
    with connect(ws_url(sim_server)) as ws:
        before_reset = ask(ws, op="step", action={"tool": "list_tables"})
        assert (before_reset["status"], before_reset["error"]["code"]) == (400, "reset_needed")
        ws.send("{not json")
        assert json.loads(ws.recv(timeout=10))["error"]["code"] == "malformed_request"
        assert ask(ws, op="dance")["error"]["code"] == "malformed_request"
        ask(ws, op="reset", seed=2)
        assert ask(ws, op="step", action={"tool": "nope"})["status"] == 404
        assert ask(ws, op="step", action={"tool": "run_query", "arguments": {"sql": 3}})["status"] == 422
        assert ask(ws, op="state", episode_id="ghost")["status"] == 404
        assert ask(ws, op="step", action={"tool": "list_tables"})["ok"]


def test_episodes_of_a_connection_close_when_it_ends() -> None:
    with live_server(environment, mode="sim") as server:
        with connect(ws_url(server)) as ws:
            ids = [ask(ws, op="reset", seed=s)["result"]["episode_id"] for s in range(3)]
            assert len(server.runtime.episodes) == 3
            assert ask(ws, op="close", episode_id=ids[0])["result"]["episode_id"] == ids[0]
        with httpx.Client(base_url=server.url) as http:
            for episode_id in ids:
                assert http.get("/state", headers={"X-Episode-Id": episode_id}).status_code == 404
        assert len(server.runtime.episodes) == 0


def test_step_batch_over_the_socket(sim_server: LiveServer) -> None:
    with connect(ws_url(sim_server)) as ws:
        a = ask(ws, op="reset", task_id="sql-001")["result"]["episode_id"]
        b = ask(ws, op="reset", seed=9)["result"]["episode_id"]
        batch = ask(
            ws,
            op="step_batch",
            steps=[
                {
                    "episode_id": a,
                    "action": {"tool": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}},
                },
                {"episode_id": b, "action": {"tool": "nope"}},
                {"episode_id": b, "action": {"tool": "list_tables"}},
            ],
        )
        items = batch["result"]
        assert [i["ok"] for i in items] == [True, False, True]
        assert items[0]["result"]["reward"] == 1.0 and items[1]["status"] == 404


def test_a_failure_inside_the_server_is_answered_and_the_connection_keeps_its_episodes(
    sim_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Episode) -> None:
        raise RuntimeError("a bug in the state")

    with connect(ws_url(sim_server)) as ws:
        first = ask(ws, op="reset", task_id="sql-001")["result"]["episode_id"]
        monkeypatch.setattr(Episode, "state", broken)  # stands for any bug of ours behind an op
        failed = ask(ws, op="state", id=7)
        assert (failed["ok"], failed["status"], failed["error"]["code"], failed["id"]) == (
            False,
            500,
            "internal_error",
            7,
        )
        assert (
            "The server failed on this 'state' message (RuntimeError: a bug in the state)"
            in (failed["error"]["message"])
        )
        monkeypatch.undo()
        step = ask(ws, op="step", action={"tool": "list_tables", "arguments": {}})
        assert step["ok"] and step["result"]["episode_id"] == first and step["result"]["info"]["step_count"] == 1

    def broken_openenv_state(self: OpenEnvSocket) -> None:
        raise RuntimeError("a bug in OpenEnv's state")

    with connect(ws_url(sim_server)) as ws:  # OpenEnv's messages on the same door
        ws.send(json.dumps({"type": "reset", "data": {"task_id": "sql-001"}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
        monkeypatch.setattr(OpenEnvSocket, "_state", broken_openenv_state)
        ws.send(json.dumps({"type": "state"}))
        failed = json.loads(ws.recv(timeout=10))
        assert failed["type"] == "error" and failed["data"]["code"] == "internal_error"
        assert "(RuntimeError: a bug in OpenEnv's state)" in failed["data"]["message"]
        monkeypatch.undo()
        ws.send(
            json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "list_tables", "arguments": {}}})
        )
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
