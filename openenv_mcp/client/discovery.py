"""The server a rollout runs against: what it offers (found over MCP), and starting one by name.

:func:`discover` asks a running server for its name, description and MCP tool list with three
JSON-RPC requests over Streamable HTTP (``initialize``, ``notifications/initialized``,
``tools/list``), so the tools a policy sees are exactly those an MCP agent sees.
:class:`ServerProcess` runs ``openenv-mcp serve NAME --mode sim`` on a free port for the
length of a rollout; on Linux the server is also told to stop when the process that started it dies,
however it dies (``PR_SET_PDEATHSIG``), so not even a ``kill -9`` of a rollout leaves it serving.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import httpx

from openenv_mcp.client import auth_headers
from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.trajectories.chat import openai_tools

__all__ = ["ServerInfo", "ServerProcess", "discover"]

_PROTOCOL = "2025-06-18"
_JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What a server offers: its name, its description, and its MCP tool list (``tools/list`` entries)."""

    url: str
    name: str
    description: str
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function schemas."""
        return openai_tools(self.tools)


async def discover(url: str, *, http: httpx.AsyncClient | None = None, token: str | None = None) -> ServerInfo:
    """Ask the server at ``url`` (its base URL; MCP is at ``/mcp``) for its name, description and tools.

    ``token`` is the server's bearer token, if it has one (for a client of one's own, set its headers).
    """
    own = http is None
    client = http or httpx.AsyncClient(timeout=30, headers=auth_headers(token))
    endpoint = url.rstrip("/") + "/mcp"
    try:
        init = await _rpc(client, endpoint, {}, "initialize", {
            "protocolVersion": _PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "openenv-mcp-rollout", "version": "0.1.0"},
        })  # fmt: skip
        headers = {"MCP-Protocol-Version": str(init["result"].get("protocolVersion", _PROTOCOL))}
        if init["session"]:
            headers["Mcp-Session-Id"] = init["session"]
        await client.post(
            endpoint, headers={**_JSON_RPC, **headers}, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await _rpc(client, endpoint, headers, "tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page["result"].get("tools", []))
            cursor = page["result"].get("nextCursor")
            if not cursor:
                break
        if init["session"]:
            await client.delete(endpoint, headers=headers)
    except httpx.HTTPError as exc:
        raise OpenEnvError(f"Cannot reach the MCP endpoint {endpoint}: {exc!r}; is the server running?") from None
    finally:
        if own:
            await client.aclose()
    info = init["result"]
    server = info.get("serverInfo", {})
    description = str(info.get("instructions") or server.get("description") or "")
    return ServerInfo(url=url, name=str(server.get("name", "")), description=description, tools=tools)


async def _rpc(
    client: httpx.AsyncClient, endpoint: str, headers: dict[str, str], method: str, params: dict[str, Any]
) -> dict[str, Any]:
    response = await client.post(
        endpoint, headers={**_JSON_RPC, **headers}, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    )
    if response.status_code >= 400:
        raise OpenEnvError(f"MCP {method} at {endpoint} answered HTTP {response.status_code}: {response.text[:200]}")
    message = _message(response)
    if "error" in message:
        raise OpenEnvError(f"MCP {method} at {endpoint} failed: {message['error'].get('message')}")
    return {"result": message.get("result", {}), "session": response.headers.get("mcp-session-id")}


def _message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer, whether the server sent JSON or one SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                found: dict[str, Any] = json.loads(line[5:])
                if "id" in found:
                    return found
        raise OpenEnvError(f"No JSON-RPC answer in the event stream from {response.request.url}")
    answer: dict[str, Any] = response.json()
    return answer


class ServerProcess:
    """``openenv-mcp serve NAME --mode sim`` on a free local port, for the length of a ``with`` block.

    The server inherits this process's environment, so it records trajectories where
    ``OPENENV_TRAJECTORIES`` says, as any sim server does; ``trajectories`` names another store.
    """

    def __init__(self, name: str, *, startup_timeout: float = 60.0, trajectories: str | None = None) -> None:
        self.name = name
        self.startup_timeout = startup_timeout
        self.trajectories = trajectories
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (the server's stderr, closed in __aexit__)

    async def __aenter__(self) -> ServerProcess:
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "openenv_mcp.cli", "serve", self.name, "--mode", "sim", "--port", str(port)]
        self._process = subprocess.Popen(
            [*command, "--log-level", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=self._env(),
            preexec_fn=_dies_with_parent(),  # runs only prctl, getppid and kill: safe between fork and exec
        )
        deadline = time.monotonic() + self.startup_timeout
        async with httpx.AsyncClient(timeout=2) as client:
            while True:
                if self._process.poll() is not None:
                    reason = self._stderr()
                    await self.__aexit__(None, None, None)
                    raise ConfigError(f"'openenv-mcp serve {self.name}' exited at start-up: {reason}")
                try:
                    if (await client.get(f"{self.url}/healthz")).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    await self.__aexit__(None, None, None)
                    waited = f"{self.startup_timeout:g} s"
                    raise ConfigError(f"'openenv-mcp serve {self.name}' did not answer within {waited}")
                await anyio.sleep(0.05)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)  # a clean stop: the server writes its last trajectories
            with anyio.CancelScope(shield=True):  # a run stopped by a signal is cancelled: wait all the same
                try:
                    await anyio.to_thread.run_sync(lambda: process.wait(30))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self._log.close()

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.trajectories is not None:
            env["OPENENV_TRAJECTORIES"] = self.trajectories
        return env

    def _stderr(self) -> str:
        self._log.seek(0)
        lines = self._log.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "(no output)"


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _dies_with_parent() -> Callable[[], None] | None:
    """What the child runs before ``exec`` so that it gets SIGTERM when this process dies (Linux; elsewhere
    nothing: a stopped run still stops its server, a killed one cannot)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
