"""What a running server advertises over MCP, fetched with plain JSON-RPC over HTTP, and its drift from the registry.

Speaks the sessionless 2026-07-28 era (``server/discover``, then ``tools/list``, each a
self-contained POST) and, for servers that predate it, the legacy ``initialize`` handshake.
Only :mod:`openenv_mcp.doors.mcp` imports the MCP SDK, so this module speaks the wire itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx

from openenv_mcp.errors import RegistryError
from openenv_mcp.registry.entry import schema_hash
from openenv_mcp.registry.lookup import Registry

__all__ = ["Advertised", "Protocol", "fetch_advertised", "live_drift", "mcp_url"]

Protocol = Literal["auto", "2026-07-28", "legacy"]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
_CLIENT = {"name": "openenv-mcp-registry", "version": "1"}
_ACCEPT = "application/json, text/event-stream"


@dataclass(frozen=True)
class Advertised:
    """A running server's identity and tools, as it sent them."""

    url: str
    server: str | None
    version: str | None
    protocol: str
    tools: list[dict[str, Any]]


class _Rejected(Exception):
    """The server does not speak this protocol era (try the other one)."""


def mcp_url(url: str) -> str:
    """``url`` pointed at ``/mcp`` when given as a bare base URL (``http://host:port``)."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return urlunsplit(parts._replace(path="/mcp"))
    return url


def fetch_advertised(url: str, *, protocol: Protocol = "auto", timeout: float = 10.0) -> Advertised:
    """The server's name, version and ``tools/list`` (every page) at ``url``.

    Raises:
        RegistryError: the server cannot be reached or does not answer as an MCP server.
    """
    endpoint = mcp_url(url)
    try:
        with httpx.Client(timeout=timeout, headers={"Accept": _ACCEPT}) as client:
            if protocol in ("auto", MODERN):
                try:
                    return _modern(client, endpoint)
                except _Rejected as exc:
                    if protocol == MODERN:
                        raise RegistryError(f"{endpoint} does not speak MCP {MODERN}: {exc}") from None
            return _legacy(client, endpoint)
    except httpx.HTTPError as exc:
        raise RegistryError(f"Cannot fetch the tools of {endpoint}: {exc}") from None
    except _Rejected as exc:
        raise RegistryError(f"{endpoint} did not answer as an MCP server: {exc}") from None


def _modern(client: httpx.Client, url: str) -> Advertised:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": _CLIENT,
    }

    def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        return _request(client, url, method, {**params, "_meta": envelope}, headers)

    discovered = call("server/discover", {})
    info = (discovered.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") or {}
    tools = _all_tools(lambda params: call("tools/list", params))
    return Advertised(url, info.get("name"), info.get("version"), MODERN, tools)


def _legacy(client: httpx.Client, url: str) -> Advertised:
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": _CLIENT}
    response = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    initialized = _result(response, 1)
    headers = {"MCP-Protocol-Version": str(initialized.get("protocolVersion", LEGACY))}
    session = response.headers.get("mcp-session-id")
    if session:
        headers["Mcp-Session-Id"] = session
    try:
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        tools = _all_tools(lambda p: _request(client, url, "tools/list", p, headers))
    finally:
        if session:
            client.delete(url, headers=headers)
    info = initialized.get("serverInfo") or {}
    return Advertised(url, info.get("name"), info.get("version"), headers["MCP-Protocol-Version"], tools)


def _all_tools(call: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):  # a bound on pages, against a server that never stops paging
        page = call({"cursor": cursor} if cursor else {})
        tools += page.get("tools", [])
        cursor = page.get("nextCursor")
        if not cursor:
            return tools
    raise _Rejected("tools/list kept paging past 1000 pages")


def _request(
    client: httpx.Client, url: str, method: str, params: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return _result(client.post(url, json=body, headers=headers), 1)


def _result(response: httpx.Response, request_id: int) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
        message = next((m for m in messages if isinstance(m, dict) and m.get("id") == request_id), None)
    else:
        try:
            message = response.json()
        except ValueError:
            message = None
    if not isinstance(message, dict):
        raise _Rejected(f"HTTP {response.status_code}, not a JSON-RPC answer: {response.text[:200]!r}")
    if "error" in message:
        error = message["error"] or {}
        raise _Rejected(f"HTTP {response.status_code}, JSON-RPC error {error.get('code')}: {error.get('message')}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise _Rejected(f"HTTP {response.status_code}, a JSON-RPC answer without a result object")
    return result


def live_drift(registry: Registry, advertised: Advertised, *, server: str | None = None) -> list[str]:
    """Every difference between a running server's tools and its registry entry (empty: none).

    ``server`` names the entry to compare with (default: the name the server reports).
    """
    name = server or advertised.server
    if not name:
        raise RegistryError(f"{advertised.url} reports no server name; name the registry entry (--server NAME)")
    entry = registry.entry(name)
    where = f"{name} at {advertised.url}"
    problems = []
    if advertised.server is not None and advertised.server != name:
        problems.append(f"{where}: the server reports the name {advertised.server!r}")
    if advertised.version is not None and advertised.version != entry.version:
        problems.append(f"{where}: version {advertised.version}, registry has {entry.version}")
    live = {str(tool.get("name")): tool for tool in advertised.tools}
    known = {tool.name: tool for tool in entry.meta.tools}
    for missing in sorted(set(known) - set(live)):
        problems.append(f"{where}: does not advertise tool {missing!r}, which the registry lists")
    for extra in sorted(set(live) - set(known)):
        problems.append(f"{where}: advertises tool {extra!r}, which the registry does not list")
    for tool_name in sorted(set(live) & set(known)):
        advertised_hash = schema_hash(live[tool_name])
        if advertised_hash != known[tool_name].schema_hash:
            problems.append(
                f"{where}: tool {tool_name!r} advertises an input or output schema that differs from the registry "
                f"(server {advertised_hash}, registry {known[tool_name].schema_hash})"
            )
    return problems
