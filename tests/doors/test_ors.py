"""ORS (the Open Reward Standard) in sim mode: the reference client drives whole episodes; raw HTTP pins the framing.

The reference client (`openreward` from the package index) lives in a venv of its own, `.venv/ors-client`,
made here on first use: it pins sse-starlette 2.x while the MCP SDK needs 3.x, so the two cannot share one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_settings import BaseSettings

from openenv_mcp import Environment, Grade, Settings, Task, TaskSet, Toolbox
from openenv_mcp.doors.http import build_app
from openenv_mcp.doors.ors.streams import CHUNK_SIZE, frame, pieces
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.sql import environment as sql_environment
from tests.support import LiveServer, live_server, peer_venv

INTEROP = Path(__file__).resolve().parents[1] / "interop"
DRIVER = INTEROP / "ors_client.py"
REQUIREMENTS = INTEROP / "ors-requirements.txt"
CLIENT_VENV = Path(__file__).resolve().parents[2] / ".venv" / "ors-client"

SPLITS = sql_environment.tasks().splits
# a task and its gold SQL, from servers/sql/data/tasks.json
GOLD = {"task_id": "sql-001", "split": "train", "gold_sql": "SELECT COUNT(*) FROM customers"}
# 60 rows padded with runs of spaces: about 17,000 characters of JSON, so chunk cuts fall inside the runs
BIG_SQL = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60) "
    "SELECT i, 'row ' || i || printf('%-120s', ':') || 'end' AS padded FROM n"
)
reference_client = pytest.mark.timeout(900)  # the first use installs the client (about 30 s here)


# a tiny environment whose tools take time or raise -------------------------------------------


class Idle:
    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


slow_tools: Toolbox[Idle] = Toolbox("slow")


@slow_tools.tool
async def wait(backend: Idle, seconds: float) -> str:
    """Wait, then say so.

    Args:
        seconds: How long to wait.
    """
    await asyncio.sleep(seconds)
    return f"waited {seconds:g}"


@slow_tools.tool
async def explode(backend: Idle) -> str:
    """Raise, as a tool with a bug does."""
    raise RuntimeError("boom")


class SlowSettings(BaseSettings):
    pass


async def open_idle(*_: Any) -> Idle:
    return Idle()


async def grade_nothing(task: Task, backend: Idle, call: Any, observation: Any) -> Grade:
    return Grade()


slow_environment: Environment[Idle, Task] = Environment(
    name="slow",
    description="Tools that take their time, or raise.",
    tools=slow_tools,
    tasks=lambda: TaskSet([Task("slow-1", "train", "Wait a little."), Task("slow-2", "test", "Wait more.")]),
    settings=SlowSettings,
    sim_backend=open_idle,
    prod_backend=open_idle,
    grade=grade_nothing,
)


# helpers ---------------------------------------------------------------------------------------


def events(text: str) -> list[tuple[str, str]]:
    """SSE events in order as (event, data); a comment line is (":", its text)."""
    out: list[tuple[str, str]] = []
    event, data = "", []
    for line in text.split("\n"):
        if line.startswith(":"):
            out.append((":", line[1:].strip()))
        elif line.startswith("event:"):
            event = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data: ") :])
        elif not line and event:
            out.append((event, "\n".join(data)))
            event, data = "", []
    return out


def new_session(client: httpx.Client, **body: Any) -> dict[str, str]:
    """POST /create_session and /create; the headers that name the session."""
    created = events(client.post("/create_session", headers={"accept": "text/event-stream"}).text)
    assert [name for name, _ in created] == ["task_id", "end"]
    headers = {"X-Session-ID": created[0][1]}
    response = client.post("/create", headers=headers, json=body or {"split": "train", "index": 0})
    assert response.status_code == 200, response.text
    return headers


def call(client: httpx.Client, headers: dict[str, str], name: str, input: dict[str, Any], **extra: Any) -> list:
    response = client.post("/call", headers=headers, json={"name": name, "input": input, **extra})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    return events(response.text)


def result(stream: list[tuple[str, str]]) -> dict[str, Any]:
    """The JSON result of a call stream: the chunk and end pieces joined."""
    assert stream[0][0] == "task_id" and stream[-1][0] == "end", stream
    return json.loads("".join(data for name, data in stream if name in ("chunk", "end")))


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    assert body["detail"] == body["error"]["message"]
    return response.status_code, body["error"]["code"], body["detail"]


@pytest.fixture(scope="module")
def slow_server() -> Iterator[LiveServer]:
    with live_server(slow_environment, mode="sim", ors_keepalive=0.05, ors_result_ttl=0.5) as server:
        yield server


@pytest.fixture
def client(sim_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim_server.url, timeout=10) as c:
        yield c


@pytest.fixture
def slow(slow_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=slow_server.url, timeout=10) as c:
        yield c


# the reference client ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def reference_python() -> Path:
    """The Python of a venv holding the reference ORS client, installed once per requirements file."""
    return peer_venv(
        CLIENT_VENV, REQUIREMENTS, "the reference ORS client (pip install openreward)", project=False, timeout=600
    )


@pytest.fixture(scope="module")
def reference(reference_python: Path, sim_server: LiveServer, slow_server: LiveServer) -> dict[str, Any]:
    """Every reference-client scenario, run in one process (importing the client takes about 2 s)."""
    sql, slow = {"url": sim_server.url, "env": "sql"}, {"url": slow_server.url, "env": "slow"}
    errors = [
        ["drop_everything", {}],
        ["run_query", {"sql": 42}],
        ["run_query", {"query": "SELECT 1"}],
        ["run_query", ["SELECT 1"]],
        ["run_query", {"sql": "DELETE FROM orders"}],
        ["list_tables", {}],
    ]
    runs = {
        "discovery": {"scenario": "discovery", **sql},
        "episode": {"scenario": "episode", **sql, **GOLD},
        "variant": {"scenario": "by_index", **sql, "variant": "sql", "split": "test", "index": 3}
        | {"tool": "describe_table", "input": {"table": "orders"}},
        "chunked": {"scenario": "by_index", **sql, "split": "train", "index": 4}
        | {"tool": "run_query", "input": {"sql": BIG_SQL}},
        "errors": {"scenario": "calls", **sql, "split": "train", "index": 1, "calls": errors},
        "raising": {"scenario": "calls", **slow, "split": "test", "index": 0}
        | {"calls": [["wait", {"seconds": 0.2}], ["explode", {}], ["wait", {"seconds": 0}]]},
    }
    open_before = len(sim_server.runtime.episodes), len(slow_server.runtime.episodes)
    env = {**os.environ, "OPENREWARD_DISABLE_UPDATE_CHECK": "1", "NO_PROXY": "127.0.0.1,localhost"}
    started = time.perf_counter()
    done = subprocess.run(
        [str(reference_python), str(DRIVER)],
        input=json.dumps({"runs": list(runs.values())}),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = dict(zip(runs, json.loads(done.stdout), strict=True))
    results["seconds"] = time.perf_counter() - started
    results["open_before"] = open_before
    results["open_after"] = len(sim_server.runtime.episodes), len(slow_server.runtime.episodes)
    return results


def ok(outcome: dict[str, Any]) -> Any:
    assert "ok" in outcome, outcome
    return outcome["ok"]


@reference_client
def test_reference_client_discovers_splits_tasks_and_tools(reference: dict[str, Any]) -> None:
    found = ok(reference["discovery"])
    assert found["splits"] == ["train", "test"]
    assert [t["id"] for t in found["train"]][:2] == ["sql-001", "sql-002"] and len(found["train"]) == SPLITS["train"]
    assert all(set(t) == {"id", "split", "prompt", "difficulty"} for t in found["train"])  # never the gold answer
    assert found["env_names"] == ["sql"]
    assert found["num_test"] == SPLITS["test"] and found["test_2"]["split"] == "test"
    assert found["last_two"] == [t["id"] for t in found["train"][-2:]]
    assert [t["name"] for t in found["tools"]] == ["list_tables", "describe_table", "run_query", "submit_answer"]
    run_query = next(t for t in found["tools"] if t["name"] == "run_query")
    assert run_query["input_schema"]["required"] == ["sql"]
    assert next(t for t in found["openai_tools"] if t["name"] == "run_query")["parameters"]["properties"]["sql"]
    assert found["bad_split"]["status"] == 400 and "train, test" in found["bad_split"]["message"]


@reference_client
def test_reference_client_plays_an_episode_to_its_reward(reference: dict[str, Any]) -> None:
    played = ok(reference["episode"])
    assert "How many customers" in played["prompt"][0]["text"]
    assert played["tools"] == ["list_tables", "describe_table", "run_query", "submit_answer"]
    look = ok(played["look"])
    assert "orders" in look["metadata"]["structured_content"]["result"]
    assert (look["reward"], look["finished"], look["metadata"]["step_count"]) == (0.0, False, 1)
    submit = ok(played["submit"])
    assert (submit["reward"], submit["finished"]) == (1.0, True)
    assert submit["metadata"]["structured_content"]["rows"] == [[60]]
    # finished: further calls are refused with the ORS reason, and run nothing
    assert played["after"]["raised"] == "ToolCallError" and played["after"]["reason"] == "episode_finished"
    assert "delete the session" in played["after"]["message"]
    # leaving the session deleted it, and our episode with it
    assert played["after_delete"]["status"] == 404
    assert reference["open_after"] == reference["open_before"]


@reference_client
def test_reference_client_reassembles_a_chunked_result(reference: dict[str, Any], client: httpx.Client) -> None:
    output = ok(ok(reference["chunked"])["call"])
    episode = client.post("/reset", json={}).json()["episode_id"]
    step = client.post(
        "/step",
        headers={"X-Episode-Id": episode},
        json={"action": {"tool": "run_query", "arguments": {"sql": BIG_SQL}}},
    ).json()
    assert len(json.dumps(output)) > 3 * CHUNK_SIZE
    assert output["blocks"][0]["text"] == step["observation"]["content"][0]["text"]
    assert output["metadata"]["structured_content"] == step["observation"]["structured_content"]
    assert output["metadata"]["structured_content"]["rows"][59][1].endswith(" " * 100 + "end")


@reference_client
def test_reference_client_gets_tool_errors_with_reasons(reference: dict[str, Any]) -> None:
    unknown, wrong_type, wrong_name, not_an_object, refused, after = ok(reference["errors"])["calls"]
    assert (unknown["raised"], unknown["reason"]) == ("ToolCallError", "not_found")
    assert "available: describe_table, list_tables, run_query, submit_answer" in unknown["message"]
    assert (wrong_type["reason"], wrong_name["reason"]) == ("input_validation", "input_validation")
    assert "unexpected argument 'query'" in wrong_name["message"]
    assert not_an_object["reason"] == "bad_input_shape"  # refused by the client itself
    # a tool that refuses is a result (an observation with is_error), and a step
    refused = ok(refused)
    assert refused["metadata"]["is_error"] is True and "read-only" in refused["blocks"][0]["text"]
    assert ok(after)["metadata"]["step_count"] == 2  # rejected calls were not steps; the session lives on


@reference_client
def test_reference_client_uses_the_spec_paths_with_a_variant(reference: dict[str, Any]) -> None:
    played = ok(reference["variant"])
    assert played["splits"] == ["train", "test"]
    assert ok(played["call"])["metadata"]["structured_content"]["table"] == "orders"


@reference_client
def test_reference_client_sees_a_raising_tool_as_failed(reference: dict[str, Any]) -> None:
    waited, exploded, after = ok(reference["raising"])["calls"]
    assert ok(waited)["blocks"][0]["text"] == '{"result":"waited 0.2"}'
    assert exploded["raised"] == "ToolFailed" and "RuntimeError: boom" in exploded["message"]
    assert after["raised"] == "SessionTerminatedError"  # the client gives the session up, then deletes it
    assert reference["open_after"][1] == reference["open_before"][1]


# raw HTTP: discovery, sessions, errors ----------------------------------------------------------------


def test_discovery_routes_answer_at_the_spec_paths_and_the_bare_ones(client: httpx.Client) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    assert client.get("/list_environments").json() == ["sql"]
    for prefix in ("/sql", ""):
        assert client.get(f"{prefix}/splits").json() == [
            {"name": "train", "type": "train"},
            {"name": "test", "type": "test"},
        ]
        assert client.post(f"{prefix}/num_tasks", json={"split": "test"}).json() == {"num_tasks": SPLITS["test"]}
        assert client.post(f"{prefix}/task", json={"split": "train", "index": 0}).json()["task"]["id"] == "sql-001"
        ranged = client.post(f"{prefix}/task_range", json={"split": "train", "start": 1, "stop": 3}).json()
        assert [t["id"] for t in ranged["tasks"]] == ["sql-002", "sql-003"] and ranged["env_name"] == "sql"
        assert set(client.get(f"{prefix}/tools").json()["tools"][0]) == {"name", "description", "input_schema"}
    # ORS's POST /tasks sits beside our GET /tasks
    assert len(client.post("/tasks", json={"split": "train"}).json()["tasks"]) == SPLITS["train"]
    assert set(client.get("/tasks").json()) == {"tasks", "splits", "difficulties", "total", "offset", "curriculum"}


def test_create_session_answers_sse_unless_json_is_asked_for(client: httpx.Client) -> None:
    streamed = client.post("/create_session", headers={"accept": "text/event-stream"})
    assert streamed.headers["content-type"].startswith("text/event-stream")
    (name, sid), end = events(streamed.text)
    assert name == "task_id" and sid and end == ("end", "")
    assert set(client.post("/create_session", headers={"accept": "application/json"}).json()) == {"sid"}


def test_session_by_task_spec_has_its_prompt_and_tools(client: httpx.Client) -> None:
    spec = client.post("/sql/task", json={"split": "test", "index": 1}).json()["task"]
    headers = new_session(client, task_spec=spec, env_name="sql")
    prompt = client.get("/sql/prompt", headers=headers).json()
    assert prompt == [{"type": "text", "text": spec["prompt"]}]
    assert client.get("/task_tools", headers=headers).json() == client.get("/tools").json()
    assert result(call(client, headers, "list_tables", {}))["output"]["metadata"]["step_count"] == 1


def test_create_is_idempotent_for_its_task_and_refuses_another(client: httpx.Client, sim_server: LiveServer) -> None:
    headers = new_session(client, split="train", index=2)
    open_now = len(sim_server.runtime.episodes)
    assert client.post("/create", headers=headers, json={"split": "train", "index": 2}).json() == {
        "sid": headers["X-Session-ID"]
    }
    assert len(sim_server.runtime.episodes) == open_now  # a retried /create opens no second episode
    status, code, message = error_of(client.post("/create", headers=headers, json={"split": "train", "index": 3}))
    assert (status, code) == (400, "episode_error") and "already on task 'sql-003'" in message


def test_ors_errors_say_what_to_do(client: httpx.Client) -> None:
    status, code, message = error_of(client.post("/create", json={"split": "train", "index": 0}))
    assert (status, code) == (400, "reset_needed") and "X-Session-ID" in message
    status, code, message = error_of(client.post("/call", headers={"X-Session-ID": "ghost"}, json={"name": "x"}))
    assert (status, code) == (404, "episode_not_found") and "POST /create_session" in message
    status, code, message = error_of(client.get("/mail/tools"))
    assert (status, code) == (404, "environment_not_found") and "'sql'" in message
    status, code, message = error_of(client.post("/sql/tasks", json={"split": "validation"}))
    assert (status, code) == (400, "episode_error") and "splits: train, test" in message
    last = SPLITS["test"] - 1
    status, code, message = error_of(client.post("/sql/task", json={"split": "test", "index": last + 1}))
    assert status == 400 and f"0 to {last}" in message
    headers = {"X-Session-ID": "s-1"}
    both = {"split": "train", "index": 0, "task_spec": {"id": "sql-001"}}
    status, code, message = error_of(client.post("/create", headers=headers, json=both))
    assert (status, code) == (400, "malformed_request") and "either task_spec, or split and index" in message
    status, _, message = error_of(client.post("/create", headers=headers, json={"task_spec": {"id": "sql-999"}}))
    assert status == 400 and "No task 'sql-999'" in message
    status, _, message = error_of(client.post("/create", headers=headers, json={"task_spec": {"task": 1}}))
    assert status == 400 and "task_spec needs the string 'id'" in message
    toolset = {"split": "train", "index": 0, "toolset_name": "claude-code"}
    status, _, message = error_of(client.post("/create", headers=headers, json=toolset))
    assert status == 400 and "Toolsets" in message
    status, code, _ = error_of(
        client.post("/sql/num_tasks", content=b"{", headers={"content-type": "application/json"})
    )
    assert (status, code) == (400, "malformed_request")


def test_delete_closes_the_episode_and_is_idempotent(client: httpx.Client, sim_server: LiveServer) -> None:
    headers = new_session(client)
    episode = result(call(client, headers, "list_tables", {}))["output"]["metadata"]["episode_id"]
    assert episode in sim_server.runtime.episodes
    for path in ("/delete", "/delete", "/delete_session"):
        assert client.post(path, headers=headers).json() == {"sid": headers["X-Session-ID"]}
    assert episode not in sim_server.runtime.episodes
    assert client.post("/call", headers=headers, json={"name": "list_tables", "input": {}}).status_code == 404
    assert client.post("/ping", headers=headers).status_code == 404


def test_ping_keeps_the_episode_from_idling(client: httpx.Client) -> None:
    headers = new_session(client)
    episode = result(call(client, headers, "list_tables", {}))["output"]["metadata"]["episode_id"]
    before = client.get("/state", headers={"X-Episode-Id": episode}).json()["last_active_at"]
    assert client.post("/ping", headers=headers).json() == {"status": "ok"}
    assert client.get("/state", headers={"X-Episode-Id": episode}).json()["last_active_at"] > before


def test_idle_sessions_are_reaped_with_their_episodes() -> None:
    with (
        live_server(sql_environment, mode="sim", idle_timeout=0.2, reap_interval=0.05) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        headers = new_session(client)
        episode = result(call(client, headers, "list_tables", {}))["output"]["metadata"]["episode_id"]
        deadline = time.monotonic() + 10
        while client.get("/state", headers={"X-Episode-Id": episode}).status_code == 200:  # bounded poll
            assert time.monotonic() < deadline, "the idle session was not reaped"
            time.sleep(0.05)
        status, _, message = error_of(client.get("/prompt", headers=headers))
        assert status == 404 and "reaped after 0.2 s" in message
        assert len(server.runtime.episodes) == 0


# raw HTTP: the /call stream ------------------------------------------------------------------


def test_call_stream_is_task_id_then_4k_chunks_then_end(client: httpx.Client) -> None:
    headers = new_session(client)
    stream = call(client, headers, "run_query", {"sql": BIG_SQL})
    names = [name for name, _ in stream]
    assert names[0] == "task_id" and names[-1] == "end" and set(names[1:-1]) == {"chunk"} and len(names) >= 5
    pieces_sent = [data for name, data in stream[1:]]
    assert all(len(piece) <= CHUNK_SIZE for piece in pieces_sent)
    assert all(not piece[0].isspace() for piece in pieces_sent)  # the reference client strips leading blanks
    assert sum(len(piece) == CHUNK_SIZE for piece in pieces_sent) < len(pieces_sent)  # some cuts moved back
    output = result(stream)["output"]
    assert output["metadata"]["structured_content"]["row_count"] == 60


def test_small_result_is_one_end_event(client: httpx.Client) -> None:
    stream = call(client, new_session(client), "list_tables", {})
    assert [name for name, _ in stream] == ["task_id", "end"]
    assert result(stream)["ok"] is True


def test_refusals_carry_ors_reasons(client: httpx.Client) -> None:
    headers = new_session(client, task_spec={"id": GOLD["task_id"]})
    assert result(call(client, headers, "nope", {})) == {
        "ok": False,
        "error": "No tool 'nope' on server 'sql'; available: describe_table, list_tables, run_query, submit_answer",
        "reason": "not_found",
    }
    assert result(call(client, headers, "describe_table", {}))["reason"] == "input_validation"
    done = result(call(client, headers, "submit_answer", {"sql": GOLD["gold_sql"]}))["output"]
    assert (done["reward"], done["finished"]) == (1.0, True)
    assert result(call(client, headers, "list_tables", {}))["reason"] == "episode_finished"


def test_keep_alive_comments_flow_while_a_tool_runs(slow: httpx.Client) -> None:
    stream = call(slow, new_session(slow), "wait", {"seconds": 0.5})  # keep-alive every 0.05 s here
    names = [name for name, _ in stream]
    assert names[0] == "task_id" and names[-1] == "end"
    assert names.count(":") >= 3 and set(names[1:-1]) == {":"}
    assert result(stream)["output"]["blocks"][0]["text"] == '{"result":"waited 0.5"}'


def test_reconnect_by_task_id_gets_the_result_of_the_one_run(slow: httpx.Client) -> None:
    headers = new_session(slow)
    body = {"name": "wait", "input": {"seconds": 0.3}}
    with slow.stream("POST", "/call", headers=headers, json=body) as cut:
        lines = cut.iter_lines()
        assert next(lines) == "event: task_id"
        task_id = next(lines).removeprefix("data: ")
    # the connection is gone; the call runs on, and posting it again with its task_id resumes it
    resumed = call(slow, headers, **body, task_id=task_id)
    assert resumed[0] == ("task_id", task_id)
    first = result(resumed)["output"]
    assert first["metadata"]["step_count"] == 1 and first["blocks"][0]["text"] == '{"result":"waited 0.3"}'
    assert result(call(slow, headers, **body, task_id=task_id)) == result(resumed)  # kept: replayed
    # a task id is its session's own
    stream = call(slow, new_session(slow), **body, task_id=task_id)
    assert stream[0][0] == "error" and "Unknown task_id" in stream[0][1]


def test_results_are_forgotten_after_their_ttl(slow: httpx.Client) -> None:
    headers = new_session(slow)
    task_id = call(slow, headers, "wait", {"seconds": 0})[0][1]
    deadline = time.monotonic() + 10  # results are kept 0.5 s here
    while (stream := call(slow, headers, "wait", {"seconds": 0}, task_id=task_id))[0][0] != "error":
        assert stream[-1][0] == "end" and time.monotonic() < deadline, "the result was never forgotten"
        time.sleep(0.05)
    assert "kept 0.5 s after the call ends" in stream[0][1]


def test_a_raising_tool_ends_the_stream_with_an_error_event(slow: httpx.Client) -> None:
    stream = call(slow, new_session(slow), "explode", {})
    assert [name for name, _ in stream] == ["task_id", "error"]
    assert stream[1][1].startswith("Tool 'explode' crashed inside the server (RuntimeError: boom)")


# prod and framing --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_prod_serves_no_ors_route(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    app = build_app(build_runtime(sql_environment, Settings(mode="prod")))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as prod:
        for method, path in [
            ("GET", "/health"),
            ("GET", "/list_environments"),
            ("GET", "/sql/tools"),
            ("GET", "/tools"),
            ("GET", "/sql/splits"),
            ("POST", "/sql/tasks"),
            ("POST", "/tasks"),
            ("POST", "/sql/num_tasks"),
            ("POST", "/sql/task"),
            ("POST", "/sql/task_range"),
            ("POST", "/create_session"),
            ("POST", "/create"),
            ("GET", "/sql/prompt"),
            ("POST", "/sql/call"),
            ("POST", "/call"),
            ("POST", "/ping"),
            ("POST", "/delete"),
            ("POST", "/delete_session"),
        ]:
            assert (await prod.request(method, path, json={})).status_code == 404, path


def test_pieces_are_at_most_4k_and_never_start_with_whitespace() -> None:
    assert [len(p) for p in pieces("a" * 10_000)] == [4096, 4096, 1808]
    text = "x" * 4090 + "  y" + " " * 20 + "z" * 5000
    cut = pieces(text)
    assert "".join(cut) == text and all(len(p) <= CHUNK_SIZE and not p[0].isspace() for p in cut)
    assert len(cut[0]) == 4092  # moved back to just before the 'y'
    blank = " " * 9000  # no cut can avoid the blanks: cut at the size
    assert [len(p) for p in pieces(blank)] == [4096, 4096, 808]


def test_frames_split_multi_line_data() -> None:
    assert frame("error", "one\r\ntwo") == b"event: error\ndata: one\ndata: two\n\n"
    assert frame("end", "") == b"event: end\ndata: \n\n"
