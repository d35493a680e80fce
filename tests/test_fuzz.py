"""Bad input, through every door of a real server: each answer is a clear error or a valid result, never a 5xx.

- The control plane, fuzzed by schemathesis from the ``/openapi.json`` the server itself serves: positive and
  negative cases for every operation; no 5xx, every status, content type and body as documented.
- MCP over Streamable HTTP, fuzzed with hypothesis: arguments for every tool of ``sql`` and ``search`` generated
  from the tool's own ``inputSchema`` (valid ones must never be refused as invalid; invalid ones must be, by name),
  arbitrary JSON as arguments, malformed JSON-RPC, wrong content types, oversized bodies.
- The WebSocket door with malformed text and binary frames.

After each batch a fresh client makes a normal call, which must succeed: the server keeps serving.
Generation is derandomized (the same cases on every run), so CI is deterministic; the figures are in
``docs/reliability.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import httpx
import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_mcp.doors.http import build_app
from openenv_mcp.environment.spec import Environment
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.search import environment as search_environment
from openenv_mcp.servers.sql import environment as sql_environment
from openenv_mcp.settings import Settings
from tests.support import LiveServer, live_server, wait_for

ENVIRONMENTS: dict[str, Environment[Any, Any]] = {"sql": sql_environment, "search": search_environment}
MAX_MCP_BODY = 4 * 1024 * 1024  # the MCP SDK's default max_request_body_size
ERROR_STATUSES = {400, 404, 409, 422, 503}


def fuzz_settings(examples: int) -> Callable[[Any], Any]:
    """Bounded, derandomized hypothesis runs that write no example database into the repository."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


# JSON of every shape, small: what a confused or hostile client might put anywhere.
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


def record(request: pytest.FixtureRequest, name: str, value: int) -> None:
    """Keep a figure with the test's report (``-o junit_family=legacy --junitxml=...`` writes it out)."""
    request.node.user_properties.append((name, value))


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


# the control plane: schemathesis from the server's own OpenAPI ----------------------------------------------

_OPENAPI = build_app(build_runtime(sql_environment, Settings(mode="sim"))).openapi()
OPERATIONS = [(method.upper(), path) for path, methods in _OPENAPI["paths"].items() for method in methods]
# Only operations with a body or a query string have inputs a negative case can break (headers and path
# parameters are plain strings here: every value is valid).
NEGATABLE = {
    (method.upper(), path)
    for path, methods in _OPENAPI["paths"].items()
    for method, operation in methods.items()
    if "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", []))
}
# positive_data_acceptance is off: it expects any schema-valid request to succeed, but ids (task, episode,
# session, split) are plain strings in the schema, and unknown ones are refused by design (400/404/422).
_SCHEMATHESIS_CONFIG = schemathesis.Config.from_dict({"checks": {"positive_data_acceptance": {"enabled": False}}})


@pytest.fixture(scope="module")
def sim_sql() -> Iterator[LiveServer]:
    with live_server(sql_environment, mode="sim", max_episodes=4096) as server:
        yield server


@pytest.fixture(scope="module")
def sim_search() -> Iterator[LiveServer]:
    with live_server(search_environment, mode="sim", max_episodes=4096) as server:
        yield server


@pytest.fixture
def servers(sim_sql: LiveServer, sim_search: LiveServer) -> dict[str, LiveServer]:
    return {"sql": sim_sql, "search": sim_search}


@pytest.fixture(scope="module")
def served_schema(sim_sql: LiveServer) -> Any:
    """The schema as the server serves it at /openapi.json (what clients and schemathesis read)."""
    return schemathesis.openapi.from_url(f"{sim_sql.url}/openapi.json", config=_SCHEMATHESIS_CONFIG)


def assert_control_plane_serves(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        episode = http.post("/reset", json={"seed": 1})
        assert episode.status_code == 200, episode.text
        step = http.post(
            "/step",
            headers={"X-Episode-Id": episode.json()["episode_id"]},
            json={"action": {"tool": "list_tables", "arguments": {}}},
        )
        assert step.status_code == 200 and not step.json()["observation"]["is_error"], step.text
        assert http.delete(f"/episodes/{episode.json()['episode_id']}").status_code == 200


def fuzz_operation(operation: Any, mode: GenerationMode, base_url: str) -> int:
    """Send schemathesis' cases for one operation and check every answer against the schema; how many were sent."""
    sent = 0

    @given(case=operation.as_strategy(generation_mode=mode))
    @fuzz_settings(40)
    def run(case: schemathesis.Case[Any]) -> None:
        nonlocal sent
        sent += 1
        case.call_and_validate(base_url=base_url, timeout=30)

    run()
    return sent


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_the_control_plane_answers_fuzzed_requests_as_its_schema_says(
    sim_sql: LiveServer, served_schema: Any, method: str, path: str, request: pytest.FixtureRequest
) -> None:
    operation = served_schema[path][method]
    modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if (method, path) in NEGATABLE else [])
    sent = [fuzz_operation(operation, mode, sim_sql.url) for mode in modes]
    record(request, "requests", sum(sent))
    assert all(sent), sent  # the fuzzer really ran (an operation without inputs has one case)
    assert_control_plane_serves(sim_sql)


# Answers the schema does not describe, to be declared in app.py (responses=...): /readyz's bodies
# (status, backends, error) and /metrics' text/plain. When app.py declares them, empty this set.
UNDOCUMENTED: set[tuple[str, str, str]] = set()


def test_the_openapi_describes_every_answer_but_the_known_gaps() -> None:
    gaps = set()
    for path, methods in _OPENAPI["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            for status in ERROR_STATUSES:
                assert str(status) in responses, f"{method.upper()} {path} does not document {status}"
            for status, response in responses.items():
                if "content" not in response:
                    gaps.add((method.upper(), path, status))
                elif status in {str(s) for s in ERROR_STATUSES}:
                    shape = response["content"]["application/json"]["schema"].get("$ref", "")
                    named = shape.rsplit("/", 1)[-1]
                    assert named in ("ErrorBody", "OrsErrorBody", "Readiness"), (method, path, status, shape)
    assert gaps == UNDOCUMENTED


def test_a_body_that_is_not_utf8_is_a_malformed_request(sim_sql: LiveServer) -> None:
    answer = httpx.post(
        f"{sim_sql.url}/reset", content=b"\x80\x81", headers={"content-type": "application/json"}, timeout=10
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "malformed_request"


def test_the_ors_routes_answer_an_unreadable_body_in_their_own_error_shape(sim_sql: LiveServer) -> None:
    answer = httpx.post(
        f"{sim_sql.url}/sql/tasks", content=b"\x80\x81", headers={"content-type": "application/json"}, timeout=10
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "malformed_request" and "detail" in answer.json()


def test_the_control_plane_refuses_an_oversized_body_with_413(sim_sql: LiveServer) -> None:
    body = dumps({"action": {"tool": "run_query", "arguments": {"sql": "x" * (16 * 1024 * 1024)}}})
    answer = httpx.post(f"{sim_sql.url}/step", content=body, headers={"X-Episode-Id": "any"}, timeout=30)
    assert answer.status_code == 413


# MCP over Streamable HTTP: raw JSON-RPC, so the fuzzer can send what no SDK would ------------------------------


class RawMcp:
    """One MCP session (2025-06-18 era) spoken by hand over Streamable HTTP."""

    HEADERS: ClassVar[dict[str, str]] = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }

    def __init__(self, server: LiveServer) -> None:
        self.http = httpx.Client(base_url=server.url, timeout=30)
        hello = self.http.post(
            "/mcp",
            headers=self.HEADERS,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "1"},
                },
            },
        )
        assert hello.status_code == 200, hello.text
        self.headers = {
            **self.HEADERS,
            "mcp-session-id": hello.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        assert self.post(dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202

    def post(self, content: bytes | Iterator[bytes], headers: dict[str, str] | None = None) -> httpx.Response:
        return self.http.post("/mcp", content=content, headers={**self.headers, **(headers or {})})

    def call(self, tool: str, arguments: Any) -> dict[str, Any]:
        """A tools/call; the JSON-RPC answer (``result`` or ``error``)."""
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        answer = self.post(dumps(message))
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        assert body["id"] == 1 and ("result" in body) != ("error" in body), body
        return body

    def close(self) -> None:
        self.http.delete("/mcp", headers=self.headers)
        self.http.close()


def assert_mcp_serves(server: LiveServer, environment: str) -> None:
    """A fresh session calls a harmless tool and gets its result."""
    client = RawMcp(server)
    try:
        tool = {"sql": "list_tables", "search": "collection_info"}[environment]
        result = client.call(tool, {})["result"]
        assert not result["isError"], result
    finally:
        client.close()


def tool_cases() -> list[tuple[str, str]]:
    return [(name, tool.name) for name, env in ENVIRONMENTS.items() for tool in env.tools]


def argument_schema(environment: str) -> Any:
    """Each tool's inputSchema as the request body of ``POST /{tool}``, for schemathesis to generate from."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for tool in ENVIRONMENTS[environment].tools:
        # what the server validates (extra arguments forbidden): the advertised schema leaves that out
        schema = json.loads(json.dumps(tool.validation_schema).replace('"#/$defs/', '"#/components/schemas/'))
        definitions.update(schema.pop("$defs", {}))
        body = {"required": True, "content": {"application/json": {"schema": schema}}}
        paths[f"/{tool.name}"] = {"post": {"requestBody": body, "responses": {"200": {"description": "ok"}}}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": f"{environment} tool arguments", "version": "1"},
        "paths": paths,
        "components": {"schemas": definitions},
    }
    return schemathesis.openapi.from_dict(document)


def json_body(case: schemathesis.Case[Any]) -> Any:
    """The generated arguments, when they are JSON (a negative case may be raw bytes: skipped)."""
    try:
        json.dumps(case.body)
    except TypeError:
        assume(False)
    return case.body


@pytest.mark.parametrize(("environment", "tool"), tool_cases(), ids=[f"{e}-{t}" for e, t in tool_cases()])
def test_schema_valid_arguments_are_never_refused_as_invalid(
    servers: dict[str, LiveServer], environment: str, tool: str, request: pytest.FixtureRequest
) -> None:
    server = servers[environment]
    operation = argument_schema(environment)[f"/{tool}"]["POST"]
    client = RawMcp(server)
    seen: list[str] = []

    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    @fuzz_settings(40)
    def run(case: schemathesis.Case[Any]) -> None:
        arguments = json_body(case)
        answer = client.call(tool, arguments)
        assert "result" in answer, f"{tool}({arguments!r}) was a protocol error: {answer}"
        result = answer["result"]
        meta = result.get("_meta") or {}
        assert meta.get("openenv-mcp/error") != "invalid_arguments", f"{tool}({arguments!r}): {result['content']}"
        if result["isError"]:  # the tool refused (no such table, SQL error...): it says why
            assert result["content"][0]["text"].strip()
        seen.append("refused" if result["isError"] else "ok")

    try:
        run()
    finally:
        client.close()
    record(request, "requests", len(seen))
    assert seen
    assert_mcp_serves(server, environment)


@pytest.mark.parametrize(("environment", "tool"), tool_cases(), ids=[f"{e}-{t}" for e, t in tool_cases()])
def test_schema_invalid_arguments_are_refused_naming_the_problem(
    servers: dict[str, LiveServer], environment: str, tool: str, request: pytest.FixtureRequest
) -> None:
    server = servers[environment]
    declared = next(t for t in ENVIRONMENTS[environment].tools if t.name == tool).validation_schema
    validator = jsonschema.Draft202012Validator(declared)
    operation = argument_schema(environment)[f"/{tool}"]["POST"]
    client = RawMcp(server)
    sent = 0

    @given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    @fuzz_settings(40)
    def run(case: schemathesis.Case[Any]) -> None:
        nonlocal sent
        arguments = json_body(case)
        # null arguments mean none at all in MCP (so {} for a tool without parameters): not malformed
        assume(arguments is not None and not validator.is_valid(arguments))
        sent += 1
        answer = client.call(tool, arguments)
        if "error" in answer:  # not an object at all: the SDK refuses the request's params
            assert answer["error"]["code"] == -32602 and answer["error"]["message"], answer
            assert not isinstance(arguments, dict)
            return
        result = answer["result"]
        assert result["isError"], f"{tool}({arguments!r}) was accepted: {result}"
        assert result["_meta"]["openenv-mcp/error"] == "invalid_arguments"
        text = result["content"][0]["text"]
        assert text.startswith(f"Invalid arguments for tool {tool!r}: ") and len(text) < 4000, text

    try:
        run()
    finally:
        client.close()
    record(request, "requests", sent)
    assert sent
    assert_mcp_serves(server, environment)


@pytest.mark.parametrize("environment", list(ENVIRONMENTS))
def test_arbitrary_json_arguments_get_a_result_or_a_clear_error(
    servers: dict[str, LiveServer], environment: str, request: pytest.FixtureRequest
) -> None:
    server = servers[environment]
    names = [tool.name for tool in ENVIRONMENTS[environment].tools]
    client = RawMcp(server)
    sent = 0

    @given(tool=st.sampled_from(names) | st.text(max_size=12), arguments=json_values)
    @fuzz_settings(150)
    def run(tool: str, arguments: Any) -> None:
        nonlocal sent
        sent += 1
        answer = client.call(tool, arguments)
        if "error" in answer:
            assert answer["error"]["code"] == -32602 and answer["error"]["message"], answer
            return
        result = answer["result"]
        if result["isError"]:
            assert result["content"][0]["text"].strip(), result

    try:
        run()
    finally:
        client.close()
    record(request, "requests", sent)
    assert_mcp_serves(server, environment)


_METHODS = st.sampled_from(
    [
        *("tools/call", "tools/list", "initialize", "ping", "notifications/initialized", "notifications/cancelled"),
        *("resources/list", "resources/read", "prompts/get", "completion/complete", "logging/setLevel"),
    ]
) | st.text(max_size=16)
_IDS = st.integers() | st.text(max_size=8) | st.none() | json_values
_TOOL_PARAMS = st.fixed_dictionaries(
    {"name": st.sampled_from(["list_tables", "run_query", "describe_table"]) | st.text(max_size=8)},
    optional={"arguments": json_values, "_meta": json_values},
)
_MESSAGES = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0") | json_values,
        "id": _IDS,
        "method": _METHODS,
        "params": _TOOL_PARAMS | json_values,
        "result": json_values,
        "error": json_values,
    },
)
_BODIES = st.one_of(
    st.binary(max_size=200),
    json_values.map(dumps),
    _MESSAGES.map(dumps),
    _MESSAGES.map(dumps).flatmap(lambda body: st.integers(0, len(body)).map(lambda cut: body[:cut])),
)


def assert_clear_http_answer(answer: httpx.Response) -> None:
    """A status that says what happened, and a body that explains it: JSON-RPC, or a short text."""
    assert answer.status_code in {200, 202, 400, 404, 406, 413, 415}, (answer.status_code, answer.text)
    if answer.status_code == 202:  # a notification or a response from the client: accepted, nothing to say
        assert not answer.content
        return
    if answer.headers.get("content-type", "").startswith("application/json"):
        body = answer.json()
        assert body["jsonrpc"] == "2.0" and ("result" in body) != ("error" in body), body
        if "error" in body:
            assert isinstance(body["error"]["code"], int) and body["error"]["message"], body
    else:
        assert answer.text.strip(), answer


def test_malformed_json_rpc_gets_a_clear_error_and_the_server_keeps_serving(
    sim_sql: LiveServer, request: pytest.FixtureRequest
) -> None:
    client = RawMcp(sim_sql)
    statuses: list[int] = []

    @given(body=_BODIES)
    @fuzz_settings(300)
    def run(body: bytes) -> None:
        answer = client.post(body)
        assert_clear_http_answer(answer)
        statuses.append(answer.status_code)

    try:
        run()
    finally:
        client.close()
    record(request, "requests", len(statuses))
    assert len(statuses) >= 100
    assert_mcp_serves(sim_sql, "sql")


_FRAMED = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers(-(2**53), 2**53) | st.text(max_size=8), "method": _METHODS},
    optional={"params": _TOOL_PARAMS | st.dictionaries(st.text(max_size=8), json_values, max_size=4)},
)


def test_well_framed_requests_are_answered_under_their_own_id(
    sim_sql: LiveServer, request: pytest.FixtureRequest
) -> None:
    """Any method, any params object: a JSON-RPC answer to that id, never an internal error (-32603)."""
    client = RawMcp(sim_sql)
    codes: list[int] = []

    @given(message=_FRAMED)
    @fuzz_settings(200)
    def run(message: dict[str, Any]) -> None:
        answer = client.post(dumps(message))
        assert answer.status_code == 200, (message, answer.text)
        body = answer.json()
        assert body["jsonrpc"] == "2.0" and body["id"] == message["id"], (message, body)
        if "error" in body:
            assert body["error"]["code"] in (-32600, -32601, -32602) and body["error"]["message"], (message, body)
        codes.append(body["error"]["code"] if "error" in body else 0)

    try:
        run()
    finally:
        client.close()
    record(request, "requests", len(codes))
    assert 0 in codes and -32601 in codes and -32602 in codes  # results, unknown methods and bad params all met
    assert_mcp_serves(sim_sql, "sql")


@pytest.mark.parametrize(
    ("content_type", "accept", "status"),
    [
        ("text/plain", None, 400),
        ("application/x-www-form-urlencoded", None, 400),
        ("multipart/form-data; boundary=x", None, 400),
        ("", None, 400),
        ("application/json", "text/html", 406),
        ("application/json", "", 406),
    ],
)
def test_wrong_content_types_are_refused(
    sim_sql: LiveServer, content_type: str, accept: str | None, status: int
) -> None:
    client = RawMcp(sim_sql)
    headers = {"content-type": content_type}
    if accept is not None:
        headers["accept"] = accept
    try:
        answer = client.post(dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}), headers=headers)
        assert answer.status_code == status, answer.text
        assert answer.text.strip()
    finally:
        client.close()
    assert_mcp_serves(sim_sql, "sql")


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_an_oversized_mcp_body_is_refused_with_413(sim_sql: LiveServer, framing: str) -> None:
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
    message["params"] = {"name": "run_query", "arguments": {"sql": "x" * MAX_MCP_BODY}}
    body = dumps(message)
    client = RawMcp(sim_sql)
    try:
        if framing == "chunked":
            answer = client.post(iter([body[i : i + 65536] for i in range(0, len(body), 65536)]))
        else:
            answer = client.post(body)
        assert answer.status_code == 413 and "too large" in answer.text.lower()
    finally:
        client.close()
    assert_mcp_serves(sim_sql, "sql")


def test_an_overlong_argument_is_refused_without_echoing_it_back(sim_sql: LiveServer) -> None:
    client = RawMcp(sim_sql)
    try:
        result = client.call("run_query", {"sql": "SELECT 1 -- " + "x" * (3 * 1024 * 1024)})["result"]
    finally:
        client.close()
    assert result["isError"] and result["_meta"]["openenv-mcp/error"] == "invalid_arguments"
    text = result["content"][0]["text"]
    assert "at most 20000 characters" in text and len(text) < 1000


# the WebSocket door ------------------------------------------------------------------------------------------

_WS_MESSAGES = st.fixed_dictionaries(
    {"op": st.sampled_from(["reset", "step", "step_batch", "state", "close"]) | st.text(max_size=8)},
    optional={
        "id": _IDS,
        "action": st.fixed_dictionaries({"tool": st.text(max_size=10)}, optional={"arguments": json_values})
        | json_values,
        "episode_id": st.text(max_size=10) | json_values,
        "seed": st.integers() | json_values,
        "task_id": st.text(max_size=10),
        "steps": st.lists(json_values, max_size=3),
    },
)
_FRAMES = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200),
    json_values.map(json.dumps),
    _WS_MESSAGES.map(json.dumps),
    _WS_MESSAGES.map(dumps),  # the same, as binary frames
)


def ws_url(server: LiveServer) -> str:
    return server.url.replace("http://", "ws://") + "/ws"


def test_malformed_websocket_frames_are_answered_one_by_one_and_the_connection_lives(
    sim_sql: LiveServer, request: pytest.FixtureRequest
) -> None:
    before = len(sim_sql.runtime.episodes)
    sent = 0
    with connect(ws_url(sim_sql), open_timeout=10, close_timeout=10) as socket:

        @given(frame=_FRAMES)
        @fuzz_settings(300)
        def run(frame: str | bytes) -> None:
            nonlocal sent
            sent += 1
            socket.send(frame)
            answer = json.loads(socket.recv(timeout=10))
            assert isinstance(answer["ok"], bool), answer
            if not answer["ok"]:
                assert answer["status"] in ERROR_STATUSES, answer
                assert answer["error"]["code"] and answer["error"]["message"], answer

        run()
        record(request, "frames", sent)
        socket.send(json.dumps({"op": "reset", "seed": 3, "id": "r"}))
        reset = json.loads(socket.recv(timeout=10))
        assert reset["ok"] and reset["id"] == "r", reset
        socket.send(json.dumps({"op": "step", "action": {"tool": "list_tables", "arguments": {}}}))
        step = json.loads(socket.recv(timeout=10))
        assert step["ok"] and not step["result"]["observation"]["is_error"], step
    # <=: an earlier test's episode on this shared server may be reaped meanwhile
    wait_for(lambda: len(sim_sql.runtime.episodes) <= before, "the connection's episodes to close")


def test_a_websocket_frame_over_the_size_limit_closes_only_that_connection(sim_sql: LiveServer) -> None:
    before = len(sim_sql.runtime.episodes)
    with connect(ws_url(sim_sql), open_timeout=10, close_timeout=10, max_size=None) as socket:
        socket.send(json.dumps({"op": "reset", "seed": 1}))
        assert json.loads(socket.recv(timeout=10))["ok"]
        socket.send("x" * (17 * 1024 * 1024))  # uvicorn's ws_max_size is 16 MiB
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # "message too big"
    wait_for(lambda: len(sim_sql.runtime.episodes) <= before, "the connection's episode to close")
    assert_control_plane_serves(sim_sql)
