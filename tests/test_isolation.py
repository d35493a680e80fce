"""One episode never reads or changes another's state, through any door, on every shipped server (sim).

Each test runs once per server: what episode A does to its world is invisible to B, and no door
(HTTP ``/step``, ``/state``, ``DELETE``, ``/step_batch``, ``/ws``, MCP by header or ``_meta``, ORS
sessions) reaches an episode without its id. Ids are uuid4 hex: 122 random bits, not guessable.
The default episode (MCP calls without an id) is shared by design; it is none of these.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from websockets.sync.client import ClientConnection, connect

from openenv_mcp.environment.catalog import load_environment
from tests.support import IN_CI, LiveServer, live_server, require_service

Step = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Plan:
    """How to act on one server: a harmless step, what A changes, and a step that shows the change."""

    cheap: Step
    writes: list[Step]
    look: Step | None = None  # None: the server's world is read-only; A's change is its reward and done flag


PLANS = {
    "sql": Plan(("list_tables", {}), [("submit_answer", {"rows": [[0]]})]),
    "search": Plan(("collection_info", {}), [("submit_answer", {"answer": "Velmora"})]),
    "email": Plan(
        ("list_folders", {}),
        [
            ("send_email", {"to": ["someone@example.com"], "subject": "from A", "body": "only A sent this"}),
            ("read_email", {"message_id": "INBOX/12"}),
        ],
        ("list_emails", {"folder": "Sent", "limit": 100}),
    ),
    "coding": Plan(
        ("describe_sandbox", {}),
        [("run_python", {"code": "open('secret.txt', 'w').write('A was here')"})],
        ("run_python", {"code": "import os\nprint(sorted(os.listdir('.')), os.path.exists('secret.txt'))"}),
    ),
    "desktop": Plan(("screenshot", {}), [("type_text", {"text": "typed in A"})], ("screenshot", {})),
}


def _can_serve(name: str) -> None:
    if name == "coding" and not (os.geteuid() == 0 and os.path.exists("/proc/self/ns/net")) and not IN_CI:
        pytest.skip("the coding sandbox needs root and Linux namespaces; CI runs this as root")
    if name == "desktop":
        missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
        if missing:
            require_service("The X tools " + ", ".join(missing), FileNotFoundError("apt-get install xvfb xdotool"))


@pytest.fixture(scope="module", params=list(PLANS))
def served(request: pytest.FixtureRequest) -> Iterator[tuple[LiveServer, Plan]]:
    name = str(request.param)
    _can_serve(name)
    with live_server(load_environment(name), mode="sim", max_episodes=32) as server:
        yield server, PLANS[name]


def reset(http: httpx.Client, seed: int = 5) -> str:
    response = http.post("/reset", json={"seed": seed})
    assert response.status_code == 200, response.text
    return str(response.json()["episode_id"])


def step(http: httpx.Client, episode: str, action: Step) -> httpx.Response:
    tool, arguments = action
    return http.post(
        "/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": tool, "arguments": arguments}}
    )


def observed(http: httpx.Client, episode: str, action: Step) -> Any:
    response = step(http, episode, action)
    assert response.status_code == 200, response.text
    observation = response.json()["observation"]
    assert not observation["is_error"], observation
    return observation


def state(http: httpx.Client, episode: str) -> dict[str, Any]:
    response = http.get("/state", headers={"X-Episode-Id": episode})
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture
def http(served: tuple[LiveServer, Plan]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[0].url, timeout=60) as client:
        yield client


def open_ids(server: LiveServer) -> set[str]:
    return set(server.runtime.episodes._episodes)  # white-box: which episodes exist


def eventually(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``condition`` (a server-side effect of a closed connection), bounded by ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.02)


# what A does is invisible to B ---------------------------------------------------------------------------


def test_what_one_episode_does_is_invisible_to_another(served: tuple[LiveServer, Plan], http: httpx.Client) -> None:
    server, plan = served
    a, b = reset(http), reset(http)  # the same seed: the same task and starting world
    assert state(http, a)["task_id"] == state(http, b)["task_id"]
    for action in plan.writes:
        observed(http, a, action)
    after_a, before_b = state(http, a), state(http, b)
    assert after_a["step_count"] == len(plan.writes)
    assert (before_b["step_count"], before_b["total_reward"], before_b["done"]) == (0, 0.0, False)
    if plan.look is None:
        assert after_a["done"] is True  # A's change to its world is that it finished
        observed(http, b, plan.cheap)  # B goes on
        assert state(http, b)["done"] is False
    else:
        fresh = reset(http)
        seen_by_a, seen_by_b, seen_fresh = (observed(http, e, plan.look) for e in (a, b, fresh))
        assert seen_by_b == seen_fresh  # B's world is as a new episode's
        assert seen_by_a != seen_fresh  # and A's change was real
    for episode in (a, b):
        http.delete(f"/episodes/{episode}")
    assert not {a, b} & open_ids(server)


# no door reaches an episode without its id ------------------------------------------------------------------


def test_episode_ids_are_random_uuid4(http: httpx.Client) -> None:
    ids = [reset(http, seed) for seed in range(8)]
    assert len(set(ids)) == len(ids)
    for episode in ids:
        assert uuid.UUID(hex=episode).version == 4 and uuid.UUID(hex=episode).hex == episode
        http.delete(f"/episodes/{episode}")


def test_http_reaches_an_episode_only_by_its_exact_id(served: tuple[LiveServer, Plan], http: httpx.Client) -> None:
    server, plan = served
    a = reset(http)
    observed(http, a, plan.cheap)
    for guess in [uuid.uuid4().hex, a.upper(), a[:-1], a + "0", a[:8], "*", "%25", "-"]:
        assert step(http, guess, plan.cheap).status_code == 404, guess
        assert http.get("/state", headers={"X-Episode-Id": guess}).status_code == 404, guess
        assert http.delete(f"/episodes/{guess}").status_code == 404, guess
    assert state(http, a)["step_count"] == 1 and a in open_ids(server)
    b = reset(http)
    assert http.delete(f"/episodes/{b}").json()["episode_id"] == b  # B closes itself, and only itself
    assert a in open_ids(server) and b not in open_ids(server)
    http.delete(f"/episodes/{a}")


def test_step_batch_acts_only_on_the_ids_it_names(served: tuple[LiveServer, Plan], http: httpx.Client) -> None:
    _, plan = served
    a, b = reset(http), reset(http)
    tool, arguments = plan.cheap
    steps = [{"episode_id": e, "action": {"tool": tool, "arguments": arguments}} for e in (b, uuid.uuid4().hex, b)]
    items = http.post("/step_batch", json={"steps": steps}).json()["results"]
    assert [(item["ok"], item["status"]) for item in items] == [(True, 200), (False, 404), (True, 200)]
    assert all(item["result"]["episode_id"] == b for item in items if item["ok"])
    assert (state(http, a)["step_count"], state(http, b)["step_count"]) == (0, 2)
    for episode in (a, b):
        http.delete(f"/episodes/{episode}")


def ask(ws: ClientConnection, **message: Any) -> dict[str, Any]:
    ws.send(json.dumps(message))
    return dict(json.loads(ws.recv(timeout=60)))


def test_a_websocket_defaults_only_to_its_own_episodes(served: tuple[LiveServer, Plan], http: httpx.Client) -> None:
    server, plan = served
    tool, arguments = plan.cheap
    url = server.url.replace("http://", "ws://") + "/ws"
    with connect(url, open_timeout=30) as owner:
        a = ask(owner, op="reset", seed=5)["result"]["episode_id"]
        with connect(url, open_timeout=30) as other:
            for op in ("step", "state", "close"):
                message: dict[str, Any] = {"op": op}
                if op == "step":
                    message["action"] = {"tool": tool, "arguments": arguments}
                answer = ask(other, **message)
                assert (answer["ok"], answer["status"], answer["error"]["code"]) == (False, 400, "reset_needed")
            guessed = ask(other, op="state", episode_id=uuid.uuid4().hex)
            assert (guessed["ok"], guessed["status"]) == (False, 404)
            b = ask(other, op="reset", seed=5)["result"]["episode_id"]
            assert ask(other, op="step", action={"tool": tool, "arguments": arguments})["result"]["episode_id"] == b
        eventually(lambda: b not in open_ids(server), "the other connection's episode closes with it")
        assert a in open_ids(server)  # and only its own
        assert ask(owner, op="state")["result"]["step_count"] == 0
    eventually(lambda: a not in open_ids(server), "the owner's episode closes with its connection")


@pytest.mark.anyio
async def test_mcp_binds_a_call_only_to_the_episode_it_names(served: tuple[LiveServer, Plan]) -> None:
    server, plan = served
    tool, arguments = plan.cheap
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        a, b = [(await http.post("/reset", json={"seed": 5})).json()["episode_id"] for _ in range(2)]

        async def call(header: str | None, meta: str | None) -> Any:
            headers = {"X-Episode-Id": header} if header else {}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as transport_http,
                Client(streamable_http_client(server.mcp_url, http_client=transport_http)) as client,  # type: ignore[arg-type]
            ):
                return await client.call_tool(tool, arguments, meta={"openenv-mcp/episode_id": meta} if meta else None)

        by_header, by_meta, both = await call(b, None), await call(None, b), await call(b, a)
        assert [r.meta["openenv-mcp/episode_id"] for r in (by_header, by_meta, both)] == [b, b, b]  # the header wins
        before = open_ids(server)
        for header, meta in [(uuid.uuid4().hex, None), (None, uuid.uuid4().hex), (a.upper(), None)]:
            guessed = await call(header, meta)
            assert guessed.is_error and guessed.meta["openenv-mcp/error"] == "episode_not_found"
        assert open_ids(server) == before  # a wrong id opens nothing
        anonymous = await call(None, None)
        assert anonymous.meta["openenv-mcp/episode_id"] == "default"  # the shared default episode, not A or B
        steps = [(await http.get("/state", headers={"X-Episode-Id": e})).json()["step_count"] for e in (a, b)]
        assert steps == [0, 3]
        for episode in (a, b):
            await http.delete(f"/episodes/{episode}")


def test_an_ors_session_reaches_only_its_own_episode(served: tuple[LiveServer, Plan], http: httpx.Client) -> None:
    server, plan = served
    tool, arguments = plan.cheap
    task = next(iter(server.runtime.tasks)).id
    sessions, episodes = [], []
    for _ in range(2):
        sid = http.post("/create_session", headers={"Accept": "application/json"}).json()["sid"]
        assert uuid.UUID(hex=sid).version == 4
        before = open_ids(server)
        assert http.post("/create", headers={"X-Session-ID": sid}, json={"task_spec": {"id": task}}).status_code == 200
        [episode] = open_ids(server) - before
        sessions.append(sid)
        episodes.append(episode)
    (sid_a, sid_b), (a, b) = sessions, episodes
    called = http.post("/call", headers={"X-Session-ID": sid_b}, json={"name": tool, "input": arguments})
    assert called.status_code == 200 and "event: end" in called.text
    assert (state(http, a)["step_count"], state(http, b)["step_count"]) == (0, 1)
    for guess in (a, uuid.uuid4().hex, sid_a.upper()):  # an episode id is not a session id
        refused = http.post("/call", headers={"X-Session-ID": guess}, json={"name": tool, "input": arguments})
        assert (refused.status_code, refused.json()["error"]["code"]) == (404, "episode_not_found")
        assert http.post("/ping", headers={"X-Session-ID": guess}).status_code == 404
    assert http.post("/delete", headers={"X-Session-ID": sid_b}).status_code == 200
    assert b not in open_ids(server) and a in open_ids(server)
    assert state(http, a)["step_count"] == 0
    http.post("/delete", headers={"X-Session-ID": sid_a})
    assert a not in open_ids(server)
