"""The HTTP contract (DESIGN.md) over a real socket: every route, both modes, every documented error."""

from __future__ import annotations

import gc

import httpx
import pytest

from openenv_mcp.runtime import Collector
from openenv_mcp.servers.sql import environment as sql_environment
from tests.support import LiveServer, live_server


def reset(client: httpx.Client, **body: object) -> str:
    response = client.post("/reset", json=body)
    assert response.status_code == 200, response.text
    return str(response.json()["episode_id"])


def step(client: httpx.Client, episode: str, tool: str, arguments: dict[str, object] | None = None) -> httpx.Response:
    return client.post(
        "/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": tool, "arguments": arguments or {}}}
    )


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["message"]


@pytest.fixture
def client(sim_server: LiveServer) -> httpx.Client:
    with httpx.Client(base_url=sim_server.url, timeout=10) as c:
        yield c


def test_health_names_server_and_mode(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "mode": "sim", "server": "sql"}


def test_ready_when_backend_answers(client: httpx.Client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["backends"] == {"sql": "ok", "mcp": "ok"}  # the MCP door is up too


def test_reset_returns_task_prompt_and_seed(client: httpx.Client) -> None:
    body = client.post("/reset", json={"seed": 11}).json()
    assert set(body) == {"episode_id", "observation", "reward", "done", "info"}
    assert body["reward"] == 0.0 and body["done"] is False
    assert body["info"]["seed"] == 11
    assert body["observation"]["structured_content"]["task_id"] == body["info"]["task_id"]
    assert "submit_answer" in body["observation"]["content"][0]["text"]


def test_reset_without_body_picks_a_random_seed(client: httpx.Client) -> None:
    body = client.post("/reset").json()
    assert isinstance(body["info"]["seed"], int)


def test_reset_by_task_id_and_split(client: httpx.Client) -> None:
    assert client.post("/reset", json={"task_id": "sql-030"}).json()["info"]["task_id"] == "sql-030"
    assert client.post("/reset", json={"split": "test", "seed": 1}).json()["info"]["split"] == "test"


def test_reset_with_unknown_task_or_split_is_rejected(client: httpx.Client) -> None:
    status, code, message = error_of(client.post("/reset", json={"task_id": "nope"}))
    assert (status, code) == (400, "episode_error") and "GET /tasks" in message
    status, _, message = error_of(client.post("/reset", json={"split": "validation"}))
    assert status == 400 and "train" in message


def test_step_runs_tool_and_counts(client: httpx.Client) -> None:
    episode = reset(client, seed=1)
    response = step(client, episode, "run_query", {"sql": "SELECT COUNT(*) AS n FROM customers"})
    assert response.status_code == 200
    body = response.json()
    assert body["observation"]["structured_content"]["rows"] == [[60]]
    assert body["observation"]["is_error"] is False
    assert body["info"]["step_count"] == 1
    assert client.get("/state", headers={"X-Episode-Id": episode}).json()["step_count"] == 1


def test_submit_gives_reward_and_done(client: httpx.Client) -> None:
    episode = reset(client, task_id="sql-001")
    body = step(client, episode, "submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}).json()
    assert (body["reward"], body["done"]) == (1.0, True)
    state = client.get("/state", headers={"X-Episode-Id": episode}).json()
    assert state["done"] is True and state["total_reward"] == 1.0


def test_step_after_done_is_409(client: httpx.Client) -> None:
    episode = reset(client, task_id="sql-001")
    step(client, episode, "submit_answer", {"rows": [[1]]})
    status, code, message = error_of(step(client, episode, "list_tables"))
    assert (status, code) == (409, "episode_finished") and "POST /reset" in message


def test_malformed_json_is_400(client: httpx.Client) -> None:
    episode = reset(client)
    response = client.post(
        "/step", headers={"X-Episode-Id": episode, "content-type": "application/json"}, content=b'{"action": '
    )
    status, code, message = error_of(response)
    assert (status, code) == (400, "malformed_request") and "JSON" in message


def test_missing_action_is_400(client: httpx.Client) -> None:
    episode = reset(client)
    status, code, message = error_of(client.post("/step", headers={"X-Episode-Id": episode}, json={"tool": "x"}))
    assert (status, code) == (400, "malformed_request") and "action" in message


def test_missing_episode_header_is_400(client: httpx.Client) -> None:
    status, code, message = error_of(client.post("/step", json={"action": {"tool": "list_tables"}}))
    assert (status, code) == (400, "reset_needed") and "X-Episode-Id" in message
    assert client.get("/state").status_code == 400


def test_unknown_episode_is_404(client: httpx.Client) -> None:
    status, code, message = error_of(step(client, "no-such-episode", "list_tables"))
    assert (status, code) == (404, "episode_not_found") and "POST /reset" in message
    assert client.get("/state", headers={"X-Episode-Id": "no-such-episode"}).status_code == 404
    assert client.delete("/episodes/no-such-episode").status_code == 404


def test_unknown_tool_is_404_and_lists_tools(client: httpx.Client) -> None:
    episode = reset(client)
    status, code, message = error_of(step(client, episode, "drop_everything"))
    assert (status, code) == (404, "tool_not_found")
    assert "available: describe_table, list_tables, run_query, submit_answer" in message


def test_wrong_argument_types_are_422(client: httpx.Client) -> None:
    episode = reset(client)
    status, code, message = error_of(step(client, episode, "run_query", {"sql": 42}))
    assert (status, code) == (422, "invalid_arguments") and "sql" in message
    status, _, message = error_of(step(client, episode, "run_query", {"query": "SELECT 1"}))
    assert status == 422 and "unexpected argument 'query'" in message and "missing required argument 'sql'" in message
    # rejected calls are not steps
    assert client.get("/state", headers={"X-Episode-Id": episode}).json()["step_count"] == 0


def test_tool_failure_is_an_observation_not_an_http_error(client: httpx.Client) -> None:
    episode = reset(client)
    response = step(client, episode, "run_query", {"sql": "SELECT nope FROM customers"})
    assert response.status_code == 200
    observation = response.json()["observation"]
    assert observation["is_error"] is True and "no such column" in observation["content"][0]["text"]


def test_errors_leave_other_episodes_untouched(client: httpx.Client) -> None:
    good = reset(client, seed=5)
    step(client, good, "list_tables")
    bad = reset(client, seed=6)
    for response in (
        step(client, bad, "nope"),
        step(client, bad, "run_query", {"sql": 1}),
        step(client, "ghost", "list_tables"),
        client.post("/step", headers={"X-Episode-Id": bad}, content=b"{{{"),
    ):
        assert response.status_code >= 400
    assert step(client, good, "list_tables").status_code == 200
    assert client.get("/state", headers={"X-Episode-Id": good}).json()["step_count"] == 2


def test_delete_closes_episode(client: httpx.Client) -> None:
    episode = reset(client)
    closed = client.delete(f"/episodes/{episode}")
    assert closed.status_code == 200 and closed.json()["episode_id"] == episode
    assert step(client, episode, "list_tables").status_code == 404


def test_tasks_lists_splits_and_difficulties_without_answers(client: httpx.Client) -> None:
    body = client.get("/tasks").json()
    assert sum(body["splits"].values()) == sum(body["difficulties"].values()) == len(body["tasks"]) == body["total"]
    assert set(body["splits"]) == {"train", "test"} and {"easy", "medium", "hard"} <= set(body["difficulties"])
    assert all(set(task) == {"id", "split", "prompt", "difficulty"} for task in body["tasks"])
    assert {t["split"] for t in client.get("/tasks", params={"split": "test"}).json()["tasks"]} == {"test"}


def test_tasks_filter_by_split_difficulty_and_text_and_come_in_pages(client: httpx.Client) -> None:
    whole = client.get("/tasks", params={"split": "test", "difficulty": "hard"}).json()
    assert {(t["split"], t["difficulty"]) for t in whole["tasks"]} == {("test", "hard")}
    total = whole["total"]
    assert total == len(whole["tasks"]) > 0 and whole["splits"]["test"] > total  # the counts are the whole set's
    pages = [
        client.get("/tasks", params={"split": "test", "difficulty": "hard", "offset": offset, "limit": 7}).json()
        for offset in range(0, total, 7)
    ]
    assert [t for page in pages for t in page["tasks"]] == whole["tasks"]
    assert {page["total"] for page in pages} == {total} and [page["offset"] for page in pages][:2] == [0, 7]
    assert client.get("/tasks", params={"offset": 10**6}).json()["tasks"] == []
    found = client.get("/tasks", params={"q": "SQL-03"}).json()  # id or prompt, any case
    assert {"sql-030", "sql-031"} <= {t["id"] for t in found["tasks"]} and found["total"] == len(found["tasks"])
    words = client.get("/tasks", params={"q": "never placed an order"}).json()["tasks"]
    assert words and all("never placed an order" in t["prompt"].casefold() for t in words)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"split": "dev"}, "No split 'dev'; splits: train, test"),
        ({"difficulty": "brutal"}, "No difficulty 'brutal'; difficulties: "),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
    ],
)
def test_bad_task_filters_are_clear_errors(client: httpx.Client, params: dict[str, object], message: str) -> None:
    status, _, text = error_of(client.get("/tasks", params=params))
    assert status == 400 and message in text


def test_metrics_count_calls_by_tool_and_outcome(client: httpx.Client) -> None:
    episode = reset(client)
    step(client, episode, "list_tables")
    step(client, episode, "run_query", {"sql": "DELETE FROM orders"})
    text = client.get("/metrics").text
    assert 'openenv_tool_calls_total{outcome="ok",tool="list_tables"}' in text
    assert 'openenv_tool_calls_total{outcome="tool_failed",tool="run_query"}' in text
    assert "openenv_tool_call_seconds_bucket" in text
    assert "openenv_open_episodes " in text


def test_mcp_path_answers_without_redirect(client: httpx.Client) -> None:
    response = client.post("/mcp", json={}, headers={"accept": "application/json, text/event-stream"})
    assert response.status_code not in (307, 308, 404)


def test_unknown_route_uses_the_error_shape(client: httpx.Client) -> None:
    status, code, _ = error_of(client.get("/nowhere"))
    assert (status, code) == (404, "http_404")


def test_capacity_full_is_503_and_recovers() -> None:
    with (
        live_server(sql_environment, mode="sim", max_episodes=2) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        first, second = reset(client), reset(client)
        status, code, message = error_of(client.post("/reset", json={}))
        assert (status, code) == (503, "capacity_exceeded") and "OPENENV_MAX_EPISODES" in message
        assert step(client, first, "list_tables").status_code == 200
        client.delete(f"/episodes/{second}")
        assert client.post("/reset", json={}).status_code == 200


@pytest.mark.prod
def test_prod_serves_health_ready_metrics_and_hides_sim_routes(prod_server: LiveServer) -> None:
    with httpx.Client(base_url=prod_server.url) as client:
        assert client.get("/healthz").json() == {"status": "ok", "mode": "prod", "server": "sql"}
        assert client.get("/readyz").status_code == 200
        assert client.get("/metrics").status_code == 200
        for method, path in [
            ("POST", "/reset"),
            ("POST", "/step"),
            ("GET", "/state"),
            ("GET", "/tasks"),
            ("DELETE", "/episodes/x"),
            ("POST", "/step_batch"),
            ("GET", "/ws"),
        ]:
            status, code, message = error_of(client.request(method, path, json={}))
            assert (status, code) == (404, "not_in_this_mode"), path
            assert "sim mode only" in message


def test_step_batch_answers_in_order_with_errors_per_item(client: httpx.Client) -> None:
    a, b = reset(client, task_id="sql-001"), reset(client, seed=3)
    steps = [
        {"episode_id": a, "action": {"tool": "list_tables"}},
        {"episode_id": b, "action": {"tool": "run_query", "arguments": {"sql": 1}}},
        {"episode_id": "ghost", "action": {"tool": "list_tables"}},
        {"episode_id": a, "action": {"tool": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}}},
        {"episode_id": a, "action": {"tool": "list_tables"}},
        {"episode_id": b, "action": {"tool": "list_tables"}},
    ]
    response = client.post("/step_batch", json={"steps": steps})
    assert response.status_code == 200
    items = response.json()["results"]
    assert [(i["ok"], i["status"]) for i in items] == [
        (True, 200),
        (False, 422),
        (False, 404),
        (True, 200),
        (False, 409),
        (True, 200),
    ]
    assert items[3]["result"]["reward"] == 1.0 and items[3]["result"]["info"]["step_count"] == 2
    assert items[2]["error"]["code"] == "episode_not_found"
    assert client.get("/state", headers={"X-Episode-Id": b}).json()["step_count"] == 1


def test_step_batch_rejects_an_empty_or_malformed_batch(client: httpx.Client) -> None:
    assert error_of(client.post("/step_batch", json={"steps": []}))[:2] == (400, "malformed_request")
    assert error_of(client.post("/step_batch", json={"steps": [{"action": {}}]}))[:2] == (400, "malformed_request")


def test_mcp_answers_503_naming_the_cause_when_its_door_cannot_be_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_mcp.doors import mcp as mcp_adapter

    def broken(self: object, **options: object) -> list[object]:
        raise RuntimeError("no transport today")

    monkeypatch.setattr(mcp_adapter.McpDoor, "http_routes", broken)
    with live_server(sql_environment, mode="sim") as server, httpx.Client(base_url=server.url, timeout=30) as http:
        answer = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "mcp_unavailable"
        assert "RuntimeError: no transport today" in answer.json()["error"]["message"]
        ready = http.get("/readyz")  # the control plane serves on, and says it is not ready without the MCP door
        assert ready.status_code == 503 and "no transport today" in ready.json()["backends"]["mcp"]
        assert http.get("/healthz").status_code == 200


def test_a_server_collects_garbage_again_once_its_start_is_over() -> None:
    """``serve`` holds the collector for the start (issue 27); the MCP door, once up, turns it back on: a server
    that never collected would keep every reference cycle its steps make."""
    Collector.hold()
    try:
        assert not gc.isenabled()
        with live_server(sql_environment) as server, httpx.Client(base_url=server.url, timeout=10) as client:
            assert client.get("/readyz").status_code == 200  # the door is up
            assert gc.isenabled()
    finally:
        gc.enable()
