"""Bodies too big or nested too deeply, at every door: 413 and 400, and the server goes on.

The answers are our error body, except a 400 to an MCP client's request, which the MCP SDK reads and answers with
its JSON-RPC parse error (the OpenEnv wire at /mcp leaves MCP requests unread: tests/doors/test_openenv.py).
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from websockets.sync.client import connect

from tests.support import LiveServer

DEEP = b"[" * 5000 + b"]" * 5000  # past Python's recursion limit for json.loads, within the body limit
BIG = 5 * 1024 * 1024  # over the default OPENENV_MAX_BODY_BYTES (4 MiB)
MCP_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# every door that reads a JSON body over HTTP, with the headers it needs to get as far as reading it
DOORS = {
    "/mcp": MCP_ACCEPT,
    "/mcp 2026-07-28": {**MCP_ACCEPT, "mcp-protocol-version": "2026-07-28"},
    "/mcp OpenEnv": {"accept": "*/*", "content-type": "application/json"},  # what OpenEnv's MCPToolClient sends
    "/reset": {"content-type": "application/json"},
    "/step": {"content-type": "application/json", "x-episode-id": "any"},
    "/step_batch": {"content-type": "application/json"},
    "/sql/call": {"content-type": "application/json", "x-session-id": "any"},  # ORS
}


def post_raw(server: LiveServer, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    """POST ``body`` whole, then read the answer, on a connection the client closes after it (``Connection: close``).

    A server that answers without reading the body and closes resets the connection, and this client then loses
    the answer: what an httpx client saw as the connection dropping.
    """
    url = urlparse(server.url)
    lines = [f"POST {path} HTTP/1.1", f"host: {url.hostname}:{url.port}", "connection: close",
             f"content-length: {len(body)}", *(f"{name}: {value}" for name, value in headers.items())]  # fmt: skip
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(payload)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_body_over_the_limit_is_answered_413_to_a_client_that_closes(sim_server: LiveServer, door: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "a" * BIG}}).encode()
    status, answer = post_raw(sim_server, door.split()[0], DOORS[door], body)
    assert status == 413 and answer["error"]["code"] == "body_too_large"
    assert "OPENENV_MAX_BODY_BYTES" in answer["error"]["message"]


@pytest.mark.parametrize("door", sorted(DOORS))
def test_json_nested_too_deeply_is_a_400_at_every_http_door(sim_server: LiveServer, door: str) -> None:
    answer = httpx.post(f"{sim_server.url}{door.split()[0]}", content=DEEP, headers=DOORS[door], timeout=30)
    assert answer.status_code == 400, answer.text
    if door in ("/mcp", "/mcp 2026-07-28"):  # the SDK's answer to an MCP client
        assert answer.json()["error"]["code"] == -32700  # JSON-RPC's parse error
    else:
        assert answer.json()["error"]["code"] == "malformed_request"
    served = httpx.post(f"{sim_server.url}/reset", json={"task_id": "sql-001"}, timeout=30)
    assert served.status_code == 200


def test_a_websocket_frame_too_big_or_too_deep_is_answered_and_the_connection_goes_on(sim_server: LiveServer) -> None:
    with connect(sim_server.url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        for frame, status in [
            (json.dumps({"op": "reset", "task_id": "x" * BIG}), 413),
            (DEEP.decode(), 400),
            ('{"op": "step", "action": ' + DEEP.decode() + "}", 400),
            ('{"type": "step", "data": ' + DEEP.decode() + "}", 400),  # OpenEnv's message shape
        ]:
            ws.send(frame)
            answer = json.loads(ws.recv(timeout=30))
            assert (answer["ok"], answer["status"]) == (False, status), answer
            assert answer["error"]["code"] == ("body_too_large" if status == 413 else "malformed_request")
        ws.send(json.dumps({"op": "reset", "task_id": "sql-001"}))
        assert json.loads(ws.recv(timeout=30))["ok"]
