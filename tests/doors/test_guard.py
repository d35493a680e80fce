"""Security of the doors (docs/security.md): what prod exposes, the bearer token, Host and Origin checks.

Also here: SQL prod read-only against the real PostgreSQL (attacks beyond tests/servers/test_sql.py)
and the sandbox's view of the server's secrets. Cross-episode isolation is tests/test_isolation.py.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import psycopg
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.routing import Route, WebSocketRoute
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from openenv_mcp import EnvClient, OpenEnvError, Settings
from openenv_mcp.cli import main
from openenv_mcp.client.discovery import discover
from openenv_mcp.deploy.pool import EnvPool
from openenv_mcp.doors import guard as security_module
from openenv_mcp.doors.guard import PAGES, AccessPolicy, Tokens
from openenv_mcp.doors.http import build_app
from openenv_mcp.errors import ConfigError, Unauthorized
from openenv_mcp.runtime import Runtime, build_runtime
from openenv_mcp.servers.sql import environment as sql_environment
from tests.support import IN_CI, LiveServer, as_role, free_port, live_server, wait_http

TOKEN = "test-token-0123456789-abcdefghij"
REPO = Path(__file__).resolve().parents[2]
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def sim_only_routes() -> list[tuple[str, str]]:
    """(kind, path) of every route a sim server has beyond what prod serves; kind is "http" or "ws"."""
    sim = build_app(Runtime(sql_environment, Settings(mode="sim"), None))
    prod = build_app(Runtime(sql_environment, Settings(mode="prod"), None))
    prod_paths = {getattr(route, "path", "") for route in prod.routes}
    found = []
    for route in _flat(sim.routes):
        if isinstance(route, Route | WebSocketRoute) and route.path not in prod_paths:
            path = route.path.replace("{env_name}", "sql").replace("{episode_id}", "0" * 32)
            found.append(("ws" if isinstance(route, WebSocketRoute) else "http", path))
    return found


def _flat(routes: list[Any]) -> Iterator[Any]:
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI >= 0.160 keeps included routers whole
        yield from _flat(included.routes) if included is not None else [route]


def ws_url(server: LiveServer, path: str = "/ws") -> str:
    return server.url.replace("http://", "ws://") + path


def error_code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


def refused_handshake(url: str, **options: Any) -> int:
    """The HTTP status a WebSocket handshake was refused with."""
    with pytest.raises(InvalidStatus) as refused, connect(url, open_timeout=10, **options):
        pass
    return int(refused.value.response.status_code)


# prod exposes no episode ---------------------------------------------------------------------------


def test_the_sim_only_routes_are_the_episode_doors() -> None:
    paths = {path for _, path in sim_only_routes()}
    assert {"/reset", "/step", "/step_batch", "/state", "/tasks", "/create_session", "/sql/call"} <= paths
    # /ws is served in prod too (OpenEnv's MCP client opens it there); its episode messages are refused below
    assert "/ws" not in paths
    assert {"/episodes/" + "0" * 32, "/call", "/create", "/delete"} <= paths


@pytest.mark.prod
def test_prod_answers_404_on_every_sim_route_whatever_the_method(prod_server: LiveServer) -> None:
    routes = sim_only_routes()
    with httpx.Client(base_url=prod_server.url, timeout=10) as client:
        for _, path in routes:
            for method in METHODS:
                response = client.request(method, path, headers={"X-Episode-Id": "default"}, json={})
                assert response.status_code == 404, (method, path, response.status_code)
                if method != "HEAD":
                    assert error_code(response) in ("not_in_this_mode", "http_404"), (method, path)
        assert set(client.get("/openapi.json").json()["paths"]) == {"/healthz", "/readyz", "/metrics"}
    with connect(ws_url(prod_server), open_timeout=10) as ws:
        for kind in ("reset", "state"):
            ws.send(json.dumps({"type": kind, "data": {}}))
            answer = json.loads(ws.recv(timeout=10))
            assert answer["type"] == "error" and answer["data"]["code"] == "not_in_this_mode", answer
    assert len(prod_server.runtime.episodes) == 0


@pytest.mark.prod
@pytest.mark.anyio
async def test_prod_mcp_offers_the_tools_and_nothing_about_episodes(prod_server: LiveServer) -> None:
    async with Client(prod_server.mcp_url) as client:
        tools = await client.list_tools()
        capabilities = client.server_capabilities
        prompts = await client.list_prompts()  # tasks are prompts in sim; prod has no tasks
        with pytest.raises(MCPError, match="prod mode"):
            await client.get_prompt("sql-001")
        with pytest.raises(MCPError):
            await client.list_resources()
    assert [tool.name for tool in tools.tools] == sql_environment.tools.names
    assert prompts.prompts == [] and capabilities.resources is None


@pytest.mark.prod
@pytest.mark.anyio
@pytest.mark.parametrize("episode", ["default", "0" * 32])
async def test_prod_mcp_ignores_episode_ids_in_headers_and_meta(prod_server: LiveServer, episode: str) -> None:
    async with httpx2.AsyncClient(headers={"X-Episode-Id": episode}) as http:
        transport = streamable_http_client(prod_server.mcp_url, http_client=http)
        async with Client(transport) as client:  # type: ignore[arg-type]
            result = await client.call_tool(
                "run_query", {"sql": "SELECT COUNT(*) FROM orders"}, meta={"openenv-mcp/episode_id": episode}
            )
    assert not result.is_error and result.structured_content["rows"] == [[300]]
    assert not any(key.startswith("openenv-mcp/") for key in (result.meta or {}))
    assert len(prod_server.runtime.episodes) == 0


# the bearer token -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded() -> Iterator[LiveServer]:
    with live_server(sql_environment, mode="sim", auth_token=TOKEN) as server:
        yield server


BEARER = {"Authorization": f"Bearer {TOKEN}"}


def test_every_route_but_the_probes_and_the_page_files_needs_the_token(guarded: LiveServer) -> None:
    paths = [path for kind, path in sim_only_routes() if kind == "http" and path not in PAGES]
    assert "/web/tools" in paths  # the page's data needs the token; only its static files do not
    paths += ["/mcp", "/metrics", "/openapi.json", "/docs", "/no-such-route"]
    with httpx.Client(base_url=guarded.url, timeout=10) as client:
        for path in paths:
            for method in ("GET", "POST", "DELETE"):
                response = client.request(method, path, json={})
                assert response.status_code == 401, (method, path)
                assert response.headers["www-authenticate"] == 'Bearer realm="openenv-mcp"'
                assert error_code(response) == "unauthorized" and "OPENENV_AUTH_TOKEN" in response.text
        assert client.get("/healthz").json()["status"] == "ok"
        assert client.get("/readyz").status_code == 200
        assert client.get("/metrics", headers=BEARER).status_code == 200
        for path in PAGES:
            assert client.get(path).status_code == 200, path
            assert client.post(path, json={}).status_code == 405, path
    assert refused_handshake(ws_url(guarded)) == 401


@pytest.mark.parametrize(
    "authorization",
    [f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Bearer {TOKEN.upper()}", f"Basic {TOKEN}", f"Bearer  {TOKEN} x"],
)
def test_a_wrong_token_is_refused_as_invalid(guarded: LiveServer, authorization: str) -> None:
    response = httpx.post(f"{guarded.url}/reset", headers={"Authorization": authorization}, json={})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="openenv-mcp", error="invalid_token"'
    assert "not valid" in response.json()["error"]["message"]


def test_the_token_is_not_taken_from_the_query_string(guarded: LiveServer) -> None:
    for name in ("access_token", "token"):
        assert httpx.post(f"{guarded.url}/reset?{name}={TOKEN}", json={}).status_code == 401


def test_the_typed_clients_and_the_pool_send_the_token(guarded: LiveServer) -> None:
    with EnvClient(guarded.url, token=TOKEN) as env:
        env.reset(task_id="sql-001")
        assert env.step("list_tables").observation.structured_content is not None
        assert env.state().step_count == 1
    with EnvClient(guarded.url) as env, pytest.raises(Unauthorized, match="bearer token"):
        env.reset()
    with EnvPool([guarded.url], token=TOKEN) as pool:
        first = pool.reset(seed=1)
        assert pool.step(first.episode_id, "list_tables").info["step_count"] == 1
        pool.close_episode(first.episode_id)


def test_the_websocket_takes_the_token_in_its_handshake(guarded: LiveServer) -> None:
    with connect(ws_url(guarded), additional_headers=BEARER, open_timeout=10) as ws:
        ws.send(json.dumps({"op": "reset", "seed": 3}))
        assert json.loads(ws.recv(timeout=10))["ok"] is True
    assert refused_handshake(ws_url(guarded), additional_headers={"Authorization": "Bearer nope"}) == 401


def test_ors_sessions_need_the_token(guarded: LiveServer) -> None:
    accept = {"Accept": "application/json"}
    assert httpx.post(f"{guarded.url}/create_session", headers=accept).status_code == 401
    assert "sid" in httpx.post(f"{guarded.url}/create_session", headers={**accept, **BEARER}).json()


@pytest.mark.anyio
async def test_mcp_and_rollout_discovery_need_the_token(guarded: LiveServer) -> None:
    async with (
        httpx2.AsyncClient(headers=BEARER) as http,
        Client(streamable_http_client(guarded.mcp_url, http_client=http)) as client,  # type: ignore[arg-type]
    ):
        result = await client.call_tool("run_query", {"sql": "SELECT COUNT(*) FROM regions"})
    assert result.structured_content["rows"] == [[5]]
    assert [tool["name"] for tool in (await discover(guarded.url, token=TOKEN)).tools] == sql_environment.tools.names
    with pytest.raises(OpenEnvError, match="HTTP 401"):
        await discover(guarded.url)
    async with httpx.AsyncClient() as http:
        response = await http.post(guarded.mcp_url, headers=MCP_HEADERS, json=MCP_INIT)
    assert response.status_code == 401 and error_code(response) == "unauthorized"


@pytest.mark.anyio
async def test_readyz_says_why_a_backend_failed_only_to_token_holders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", f"postgresql://reader@127.0.0.1:{free_port()}/shop")
    app = build_app(build_runtime(sql_environment, Settings(mode="prod", auth_token=TOKEN)))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
    ):
        anonymous = await http.get("/readyz")
        holder = await http.get("/readyz", headers=BEARER)
    assert anonymous.status_code == holder.status_code == 503
    assert anonymous.json()["backends"]["sql"] == "unavailable" and "127.0.0.1" not in anonymous.text
    assert set(anonymous.json()["backends"].values()) <= {"ok", "unavailable"}  # the MCP door's state too
    assert "PostgreSQL at postgresql+psycopg://reader@127.0.0.1" in holder.json()["backends"]["sql"]


def test_a_token_file_rotates_without_a_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(security_module, "_RELOAD_EVERY", 0.0)
    old, new, newer = "old-token-aaaaaaaaaaaa", "new-token-bbbbbbbbbbbb", "newer-token-cccccccccc"
    path = tmp_path / "tokens"
    path.write_text(f"# the tokens\n{old}\n")
    tokens = Tokens(path=path)
    assert tokens.accepts(old) and not tokens.accepts(new)
    path.write_text(f"{old}\n{new}\n")  # rotation: both while clients move over
    assert tokens.accepts(old) and tokens.accepts(new)
    path.write_text(f"{new}\n{newer}\n")
    assert not tokens.accepts(old) and tokens.accepts(new) and tokens.accepts(newer)
    path.unlink()  # unreadable for a moment (a Secret being replaced): the last tokens stay
    assert tokens.accepts(new)
    path.write_text("\n")
    assert not tokens.accepts(new)  # an emptied file revokes every token
    path.write_text(f"{new}\n")
    with live_server(sql_environment, mode="sim", auth_token_file=str(path)) as server:
        assert httpx.post(f"{server.url}/reset", headers={"Authorization": f"Bearer {new}"}, json={}).status_code == 200
        assert httpx.post(f"{server.url}/reset", json={}).status_code == 401


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("OPENENV_AUTH_TOKEN", "short", "at least 16 characters"),
        ("OPENENV_AUTH_TOKEN_FILE", "/nonexistent/tokens", "cannot be read"),
        ("OPENENV_ALLOWED_HOSTS", '["ev*il"]', "OPENENV_ALLOWED_HOSTS has 'ev*il'"),
        ("OPENENV_ALLOWED_ORIGINS", '["app.example.com"]', "OPENENV_ALLOWED_ORIGINS has 'app.example.com'"),
    ],
)
def test_bad_security_settings_stop_the_start_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["serve", "sql", "--port", "0"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("openenv-mcp: ") and message in error and variable in error


def test_an_empty_token_file_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("# none yet\n")
    with pytest.raises(ConfigError, match="holds no token"):
        build_app(build_runtime(sql_environment, Settings(auth_token_file=tmp_path / "tokens")))


@pytest.mark.anyio
async def test_stdio_needs_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    command = ["-m", "openenv_mcp.cli", "serve", "sql", "--transport", "stdio", "--log-level", "warning"]
    params = StdioServerParameters(
        command=sys.executable, args=command, env={**os.environ, "OPENENV_AUTH_TOKEN": TOKEN}
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            result = await client.call_tool("list_tables", {})
    assert not result.is_error and "orders" in result.structured_content["result"]


# Host and Origin ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("localhost", True),
        ("LocalHost.:8000", True),
        ("[::1]:8000", True),
        ("10.1.2.3:8000", True),  # an IP: a rebinding attack needs a name
        ("[fd00::7]", True),
        ("box-1:8000", True),  # the machine's own hostname
        ("sql", True),
        ("sql:9999", True),
        ("a.b.svc.example", True),
        ("svc.example", False),
        ("evilsvc.example", False),
        ("sql.evil.example", False),
        ("evil.example", False),
        ("localhost.evil.example", False),
        ("127.0.0.1.nip.io", False),
        ("", False),
        ("sql:80:80", False),
        ("[::1", False),
        ("sql:abc", False),
    ],
)
def test_the_host_rule(host: str, allowed: bool) -> None:
    policy = AccessPolicy(allowed_hosts=["sql", "*.svc.example"], hostname="box-1")
    assert policy.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
        ("http://localhost:5173", "127.0.0.1:8000", True),  # a local page, as the SDK allows
        ("http://[::1]:3000", "127.0.0.1:8000", True),
        ("https://10.0.0.5:8000", "10.0.0.5:8000", True),  # the server's own page
        ("http://10.0.0.5:8000", "127.0.0.1:8000", False),  # an IP page is not ours
        ("http://10.0.0.5:9000", "10.0.0.5:8000", False),
        ("https://sql", "sql:8000", True),  # an allowed host's page
        ("https://app.example.com", "sql", True),
        ("https://app.example.com:8443", "sql", False),
        ("https://app.example.com.evil.example", "sql", False),
        ("http://app.example.com", "sql", False),
        ("https://evil.example", "evil.example", False),  # the Host check refused it first anyway
        ("https://evil.example", "127.0.0.1:8000", False),
        ("null", "127.0.0.1:8000", False),
        ("file://", "127.0.0.1:8000", False),
        ("chrome-extension://abc", "127.0.0.1:8000", True),
        ("chrome-extension://abd", "127.0.0.1:8000", False),
        ("http://localhost:notaport", "127.0.0.1:8000", False),
    ],
)
def test_the_origin_rule(origin: str, host: str, allowed: bool) -> None:
    policy = AccessPolicy(
        allowed_hosts=["sql"], allowed_origins=["https://app.example.com", "chrome-extension://abc"], hostname="box-1"
    )
    assert policy.origin_allowed(origin, host) is allowed


def test_wildcards_accept_any_host_or_origin_when_asked() -> None:
    policy = AccessPolicy(allowed_hosts=["*"], allowed_origins=["*"])
    assert policy.host_allowed("evil.example") and policy.origin_allowed("https://evil.example", "x")


def test_a_foreign_host_is_refused_on_every_door(sim_server: LiveServer) -> None:
    evil = {"Host": "evil.example"}
    with httpx.Client(base_url=sim_server.url, timeout=10) as client:
        for method, path in [
            ("GET", "/healthz"),
            ("GET", "/readyz"),
            ("GET", "/metrics"),
            ("POST", "/reset"),
            ("GET", "/tasks"),
            ("POST", "/step_batch"),
            ("GET", "/list_environments"),
            ("POST", "/create_session"),
        ]:
            response = client.request(method, path, headers=evil, json={})
            assert (response.status_code, error_code(response)) == (421, "host_not_allowed"), path
            assert "OPENENV_ALLOWED_HOSTS" in response.json()["error"]["message"]
        refused = client.post("/mcp", headers={**MCP_HEADERS, **evil}, json=MCP_INIT)
    assert (refused.status_code, error_code(refused)) == (421, "host_not_allowed")  # our body, not the SDK's
    port = int(sim_server.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    assert refused_handshake(f"ws://evil.example:{port}/ws", sock=sock) == 421


def test_localhost_ips_and_the_own_hostname_are_accepted_on_every_door(sim_server: LiveServer) -> None:
    port = sim_server.url.rsplit(":", 1)[1]
    with httpx.Client(base_url=sim_server.url, timeout=10) as client:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "[::1]", "10.20.30.40:8000", socket.gethostname()):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
            assert client.post("/reset", headers={"Host": host}, json={}).status_code == 200, host
            # one rule on /mcp too: the SDK's own check would refuse an IP that is not loopback
            assert client.post("/mcp", headers={**MCP_HEADERS, "Host": host}, json=MCP_INIT).status_code == 200


def test_allowed_hosts_add_names() -> None:
    names = ["env.example.com", "*.corp.example", "pinned.example:8443"]
    with live_server(sql_environment, mode="sim", allowed_hosts=names) as server:
        for host, status in [
            ("env.example.com", 200),
            ("env.example.com:9999", 200),
            ("a.b.corp.example", 200),
            ("pinned.example:8443", 200),
            ("pinned.example:8444", 421),
            ("corp.example", 421),
            ("evilcorp.example", 421),
            ("env.example.com.evil.example", 421),
        ]:
            assert httpx.get(f"{server.url}/healthz", headers={"Host": host}).status_code == status, host


def test_browser_pages_from_other_origins_are_refused(sim_server: LiveServer) -> None:
    with httpx.Client(base_url=sim_server.url, timeout=10) as client:
        for origin in ("https://evil.example", "null", "http://10.9.9.9", "http://127.0.0.1.evil.example"):
            for method, path in [("POST", "/reset"), ("GET", "/healthz"), ("GET", "/tasks")]:
                response = client.request(method, path, headers={"Origin": origin}, json={})
                assert (response.status_code, error_code(response)) == (403, "origin_not_allowed"), (origin, path)
            mcp = client.post("/mcp", headers={**MCP_HEADERS, "Origin": origin}, json=MCP_INIT)
            assert (mcp.status_code, error_code(mcp)) == (403, "origin_not_allowed")
    # a WebSocket is not subject to CORS: the Origin check is what stops a page from driving episodes
    assert refused_handshake(ws_url(sim_server), origin="https://evil.example") == 403


def test_the_servers_own_pages_and_local_pages_are_accepted(sim_server: LiveServer) -> None:
    with httpx.Client(base_url=sim_server.url, timeout=10) as client:
        for origin in (sim_server.url, "http://localhost:3000", "http://[::1]:5173"):
            assert client.post("/reset", headers={"Origin": origin}, json={}).status_code == 200, origin
    with connect(ws_url(sim_server), origin=sim_server.url, open_timeout=10) as ws:
        ws.send(json.dumps({"op": "reset"}))
        assert json.loads(ws.recv(timeout=10))["ok"] is True


def test_allowed_origins_add_pages() -> None:
    with live_server(
        sql_environment, mode="sim", allowed_origins=["https://app.example.com"], allowed_hosts=["env.example.com"]
    ) as server:
        for origin, status in [
            ("https://app.example.com", 200),
            ("https://env.example.com", 200),
            ("https://app.example.com.evil.example", 403),
            ("https://evil.example", 403),
        ]:
            assert httpx.get(f"{server.url}/healthz", headers={"Origin": origin}).status_code == status, origin


def deployment_environment(kind: str) -> dict[str, str]:
    """The sql server's environment as the generated compose file or Kubernetes manifest sets it."""
    if kind == "compose":
        doc = yaml.safe_load((REPO / "compose" / "docker-compose.sim.yml").read_text())
        variables = doc["services"]["sql"]["environment"]
        return {key: str(value) for key, value in variables.items() if value is not None}
    for doc in yaml.safe_load_all((REPO / "compose" / "k8s" / "openenv-sim.yaml").read_text()):
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "openenv-sql":
            return {e["name"]: e["value"] for e in doc["spec"]["template"]["spec"]["containers"][0]["env"]}
    raise AssertionError("no openenv-sql Deployment")


@pytest.mark.parametrize(("kind", "service_name"), [("compose", "sql"), ("kube", "openenv-sql")])
def test_serving_on_all_interfaces_keeps_the_check_and_the_deployment_settings_work(
    kind: str, service_name: str, tmp_path: Path
) -> None:
    environment = deployment_environment(kind)
    assert environment["OPENENV_HOST"] == "0.0.0.0"
    port = free_port()
    environment.update(OPENENV_PORT=str(port), OPENENV_TRAJECTORIES="off")
    log = tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENENV_", "MODE"))}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "openenv_mcp.cli", "serve", "sql"], env={**env, **environment}, stderr=sink
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/healthz")
        for host, status in [
            (f"{service_name}:8000", 200),  # how other containers reach it
            (service_name, 200),
            (f"127.0.0.1:{port}", 200),  # a published port on the host
            (socket.gethostname(), 200),  # the container's own hostname
            ("10.0.0.7:8000", 200),  # a probe or a pool by pod IP
            (f"{service_name}.evil.example", 421),
            ("evil.example", 421),
        ]:
            response = httpx.post(f"{url}/mcp", headers={**MCP_HEADERS, "Host": host}, json=MCP_INIT)
            assert response.status_code == status, (host, response.text)
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert "serving on 0.0.0.0 without OPENENV_AUTH_TOKEN" in log.read_text()


# SQL prod: read-only in fact, against the real PostgreSQL -----------------------------------------------

SIDE_EFFECTS = [
    "SELECT * INTO stolen FROM orders",  # SELECT INTO creates a table; the guard lets SELECT through
    "SELECT * INTO TEMP stolen FROM orders",
    "SELECT * FROM orders FOR UPDATE",  # row locks other sessions would wait on
    "SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, true, '')",  # a write inside a function
    "SELECT query_to_xml('UPDATE products SET unit_price = 0 RETURNING 1', true, true, '')",
    "WITH x AS (SELECT 1) UPDATE products SET unit_price = 0",
    "WITH x AS (SELECT 1) INSERT INTO regions VALUES (99, 'x')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT pg_ls_dir('.')",
    "SELECT pg_read_binary_file('/etc/passwd')",
    "SELECT rolpassword FROM pg_authid",
    "SELECT pg_reload_conf()",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT set_config('session_authorization', 'postgres', false)",
    "SELECT set_config('transaction_read_only', 'off', true)",
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'postgres'",
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'postgres'",
    "SET ROLE postgres",
    "RESET ROLE",
    "COPY orders TO STDOUT",
    "COPY (SELECT 1) TO PROGRAM 'id'",
    "DO $$ BEGIN DELETE FROM orders; END $$",
    "TRUNCATE orders",
    "GRANT ALL ON orders TO PUBLIC",
    "LOCK TABLE orders",
    "VACUUM orders",
    "sElEcT 1; dElEtE fRoM orders",
    "(SELECT 1); DELETE FROM orders",
    "SELECT 1 --\n; DELETE FROM orders",
    "SELECT 1 /* /* nested */ ; DELETE FROM orders; */",  # one statement to PostgreSQL, refused anyway
    "SELECT E'\\'; DELETE FROM orders; --'",
    "SELECT $a1$;$a1$; DELETE FROM orders",
    "SELECT U&'\\0027'; DROP TABLE orders",
    "VALUES (1); UPDATE products SET unit_price = 0",
    "SELECT * FROM orders WHERE 1=1 OR ''=''; DROP TABLE orders; --",
    "select 1 \u037e delete from orders",  # a Greek question mark is not a semicolon
]
ROLLED_BACK = ["SELECT lo_create(0)", "SELECT lo_from_bytea(0, 'x')", "SELECT pg_notify('c', 'x')"]


def mcp_call(server: LiveServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        async with Client(server.mcp_url) as client:
            result = await client.call_tool(name, arguments)
        return {"error": result.is_error, "text": result.content[0].text, "data": result.structured_content}

    return anyio.run(call)


def fingerprint(admin_url: str) -> dict[str, Any]:
    """Everything an attack could change: each table's rows, the relations, large objects, roles, grants."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        found: dict[str, Any] = {
            table: conn.execute(f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM \"{table}\" t").fetchone()
            for table in tables
        }
        found["relations"] = conn.execute(
            "SELECT string_agg(relname || ':' || coalesce(relacl::text, ''), ',' ORDER BY relname) FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace OR relpersistence = 't'"
        ).fetchone()
        found["large_objects"] = conn.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()
        found["roles"] = conn.execute(
            "SELECT string_agg(rolname || rolsuper::text, ',' ORDER BY rolname) FROM pg_roles"
        ).fetchone()
    return found


@pytest.fixture(scope="module")
def pristine(pg_url: str) -> dict[str, Any]:
    return fingerprint(as_role(pg_url, "postgres"))


@pytest.mark.prod
@pytest.mark.parametrize("sql", SIDE_EFFECTS)
def test_prod_sql_refuses_side_effects_and_the_database_is_unchanged(
    prod_server: LiveServer, pg_url: str, pristine: dict[str, Any], sql: str
) -> None:
    refused = mcp_call(prod_server, "run_query", {"sql": sql})
    assert refused["error"], f"{sql!r} ran: {refused['data']}"
    expected = (
        r"read-only|read-write|one SQL statement|permission denied|must be a superuser|non-volatile|syntax error"
        r"|data-modifying|not allowed"
    )
    assert re.search(expected, refused["text"]), refused["text"]
    assert fingerprint(as_role(pg_url, "postgres")) == pristine
    assert mcp_call(prod_server, "run_query", {"sql": "SELECT COUNT(*) FROM orders"})["data"]["rows"] == [[300]]


@pytest.mark.prod
@pytest.mark.parametrize("sql", ROLLED_BACK)
def test_prod_sql_calls_that_run_leave_nothing_behind(
    prod_server: LiveServer, pg_url: str, pristine: dict[str, Any], sql: str
) -> None:
    mcp_call(prod_server, "run_query", {"sql": sql})  # PostgreSQL allows these in a read-only transaction
    assert fingerprint(as_role(pg_url, "postgres")) == pristine  # every query's transaction is rolled back


# the sandbox cannot find the server's secrets ----------------------------------------------------------


@pytest.mark.skipif(
    not (os.geteuid() == 0 and os.path.exists("/proc/self/ns/net")) and not IN_CI,
    reason="the sandbox needs root and Linux namespaces; CI runs this as root",
)
def test_sandboxed_code_cannot_find_the_servers_token(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_mcp.servers.coding import environment as coding_environment

    monkeypatch.setenv("OPENENV_AUTH_TOKEN", TOKEN)  # in the server's own environment, as a deployment sets it
    code = (
        "import os, glob\n"
        "seen = [repr(dict(os.environ))]\n"
        f"for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline') + ['/proc/{os.getpid()}/environ']:\n"
        "    try:\n"
        "        seen.append(open(path, 'rb').read().decode('utf-8', 'replace'))\n"
        "    except OSError as exc:\n"
        "        seen.append(type(exc).__name__)\n"
        "print('\\n'.join(seen))\n"
    )
    with live_server(coding_environment, mode="sim") as server, EnvClient(server.url, token=TOKEN) as env:
        env.reset(seed=1)
        observation = env.step("run_python", {"code": code}).observation
    assert observation.structured_content is not None and observation.structured_content["exit_code"] == 0
    output = observation.structured_content["stdout"]
    assert "PYTHONHASHSEED" in output and output.endswith("FileNotFoundError\n")  # the server's pid is not there
    assert TOKEN not in output and TOKEN not in observation.structured_content["stderr"]
