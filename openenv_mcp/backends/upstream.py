"""Prod from an upstream MCP server: the client side of the ``mcp`` SDK, in one module.

A prod backend may be an existing MCP server (an official reference or vendor server), reached
over stdio (a command this process starts) or Streamable HTTP (a URL, with headers such as an
``Authorization`` from the server's settings). The environment's tool table stays ours and
declares the schemas; :meth:`UpstreamServer.open` compares the upstream's ``tools/list`` with
it and refuses to start on drift, with a readable diff.

    upstream = await UpstreamServer.open(
        name="memory", command=["mcp-server-memory"], declared=tools,
        install_hint="npm install @modelcontextprotocol/server-memory",
    )
    result = await upstream.call("read_graph", {})   # the structured content
    await upstream.ping()                           # BackendUnavailable when it is gone

Only this module (client side) and :mod:`openenv_mcp.doors.mcp` (server side) import the SDK.

A lost upstream never hangs a call: every request has a time limit; a call that finds the
connection gone is answered :class:`~openenv_mcp.errors.BackendUnavailable` (a 503 naming the
upstream) and the connection is rebuilt in the background (a stdio command is started again),
so the next call or ``/readyz`` sees it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from openenv_mcp.environment.schemas import advertised
from openenv_mcp.environment.tools import Toolbox
from openenv_mcp.errors import BackendUnavailable, ConfigError, ToolFailed

__all__ = ["UpstreamServer", "tool_drift"]

log = logging.getLogger(__name__)

_COMPARED = ("title", "description", "inputSchema")


class UpstreamServer:
    """One live connection to an upstream MCP server, rebuilt when it is lost.

    Build it with :meth:`open`; use :meth:`call`, :meth:`list_tools`, :meth:`ping` and :meth:`aclose`.
    """

    def __init__(
        self,
        *,
        name: str,
        command: Sequence[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        install_hint: str = "",
        timeout: float = 30.0,
    ) -> None:
        if (command is None) == (url is None):
            raise ConfigError(f"Upstream {name!r}: give either a command (stdio) or a URL (Streamable HTTP)")
        if command is not None and not command:
            raise ConfigError(f"Upstream {name!r}: the command is empty")
        self.name = name
        self.command = list(command) if command is not None else None
        self.url = url
        self.headers = dict(headers or {})
        self.env = dict(env or {})
        self.install_hint = install_hint
        self.timeout = timeout
        self.restarts = 0
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._problem: str | None = None
        self._reconnect: asyncio.Task[None] | None = None

    @property
    def where(self) -> str:
        """The command or URL, for messages."""
        return " ".join(self.command) if self.command is not None else str(self.url)

    @classmethod
    async def open(
        cls,
        *,
        name: str,
        command: Sequence[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        declared: Toolbox[Any] | None = None,
        install_hint: str = "",
        timeout: float = 30.0,
    ) -> UpstreamServer:
        """Connect, and check the upstream lists exactly the ``declared`` tools.

        Raises:
            ConfigError: The command is not installed (the message says how to install it), or the
                upstream's tools differ from the declared ones (the message is the diff).
            BackendUnavailable: The upstream did not answer.
        """
        upstream = cls(
            name=name, command=command, url=url, headers=headers, env=env, install_hint=install_hint, timeout=timeout
        )
        if upstream.command is not None and shutil.which(upstream.command[0]) is None:
            hint = f"; install it: {install_hint}" if install_hint else ""
            raise ConfigError(f"Upstream MCP server {name!r}: command {upstream.command[0]!r} not found{hint}")
        await upstream._connect()
        if declared is not None:
            try:
                drift = tool_drift(declared, await upstream.list_tools())
            except BaseException:
                await upstream.aclose()
                raise
            if drift:
                await upstream.aclose()
                raise ConfigError(
                    f"Upstream MCP server {name!r} ({upstream.where}) does not list the declared tools; "
                    "refusing to start:\n" + "\n".join(f"  {line}" for line in drift)
                )
        return upstream

    # connection ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _new_client(self) -> AsyncIterator[Client]:
        if self.command is not None:
            params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env or None)
            async with Client(params) as client:
                yield client
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=self.timeout) as http,
            Client(streamable_http_client(str(self.url), http_client=http)) as client,
        ):
            yield client

    async def _connect(self) -> None:
        ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._problem = None

        async def hold() -> None:
            try:
                async with self._new_client() as client:
                    self._client = client
                    ready.set()
                    await self._stop.wait()
            except Exception as exc:  # the SDK raises many kinds (OSError, MCPError, groups): keep the reason
                self._problem = _reason(exc)
            finally:
                self._client = None
                ready.set()

        self._holder = asyncio.create_task(hold(), name=f"upstream-{self.name}")
        try:
            with anyio.fail_after(self.timeout):
                await ready.wait()
        except TimeoutError:
            await self._disconnect()
            raise self._unavailable(f"no answer to the handshake within {self.timeout:g} s") from None
        if self._client is None:
            await self._disconnect()
            raise self._unavailable(self._problem or "the connection closed during the handshake")

    async def _disconnect(self) -> None:
        self._stop.set()
        holder, self._holder = self._holder, None
        if holder is not None:
            try:
                with anyio.fail_after(5):
                    await asyncio.shield(holder)
            except TimeoutError:
                holder.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await holder
        self._client = None

    def _lost(self, reason: str) -> BackendUnavailable:
        """Note the connection is gone, start rebuilding it, and return the error for the caller."""
        self._problem = reason
        if self._reconnect is None or self._reconnect.done():
            self._reconnect = asyncio.create_task(self._rebuild(), name=f"upstream-{self.name}-restart")
        return self._unavailable(f"{reason}; reconnecting")

    async def _rebuild(self) -> None:
        await self._disconnect()
        try:
            await self._connect()
        except (BackendUnavailable, ConfigError) as exc:
            log.warning("upstream %s: restart failed: %s", self.name, exc.message)
            return
        self.restarts += 1
        log.warning("upstream %s: connection rebuilt (restart %d)", self.name, self.restarts)

    def _unavailable(self, reason: str) -> BackendUnavailable:
        return BackendUnavailable(f"Upstream MCP server {self.name!r} ({self.where}): {reason}")

    async def _ready_client(self) -> Client:
        if self._reconnect is not None and not self._reconnect.done():
            with contextlib.suppress(TimeoutError), anyio.fail_after(self.timeout):
                await asyncio.shield(self._reconnect)
        client = self._client
        if client is None:
            raise self._lost(self._problem or "not connected")
        return client

    # requests ------------------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        """The upstream's tools as ``tools/list`` sends them (camelCase JSON), every page."""
        client = await self._ready_client()
        try:
            with anyio.fail_after(self.timeout):
                listed = await client.list_tools()
        except TimeoutError:
            raise self._lost(f"tools/list got no answer within {self.timeout:g} s") from None
        except MCPError as exc:
            raise self._lost(f"tools/list failed: {exc}") from None
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call ``tool``; return its structured content (or its text when it has none).

        Raises:
            ToolFailed: The upstream answered with an error result (its text is the message).
            BackendUnavailable: The upstream is gone or did not answer in time.
        """
        client = await self._ready_client()
        try:
            with anyio.fail_after(self.timeout):
                result = await client.call_tool(tool, dict(arguments))
        except TimeoutError:
            raise self._lost(f"{tool} got no answer within {self.timeout:g} s") from None
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                raise self._lost("the connection closed (the process exited?)") from None
            raise ToolFailed(f"{tool}: the upstream refused the call: {exc.error.message}") from None
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise self._lost(_reason(exc)) from None
        text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
        if result.is_error:
            raise ToolFailed(text or f"{tool} failed upstream")
        return result.structured_content if result.structured_content is not None else text

    async def ping(self) -> None:
        """Raise :class:`BackendUnavailable` unless the upstream answers ``tools/list`` within 5 s.

        (``tools/list`` rather than ``ping``, which the 2026-07-28 protocol removed.)
        """
        client = await self._ready_client()
        try:
            with anyio.fail_after(min(self.timeout, 5.0)):
                await client.list_tools()
        except TimeoutError:
            raise self._lost("no answer within 5 s") from None
        except (MCPError, OSError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise self._lost(_reason(exc)) from None

    async def aclose(self) -> None:
        """Close the connection (a stdio upstream's process ends)."""
        if self._reconnect is not None:
            self._reconnect.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconnect
        await self._disconnect()


def tool_drift(declared: Toolbox[Any], upstream: Sequence[Mapping[str, Any]]) -> list[str]:
    """How the upstream's tools differ from the declared table (names, titles, descriptions, input schemas).

    Each line reads ``- name`` (declared, missing upstream), ``+ name`` (upstream only) or
    ``~ name.field: ...`` (both, different); an empty list means they match.
    """
    ours = {tool["name"]: tool for tool in declared.listing()}
    theirs = {str(tool["name"]): tool for tool in upstream}
    lines = [f"- {name}: declared here, not listed by the upstream" for name in sorted(set(ours) - set(theirs))]
    lines += [f"+ {name}: listed by the upstream, not declared here" for name in sorted(set(theirs) - set(ours))]
    for name in sorted(set(ours) & set(theirs)):
        for field in _COMPARED:
            given = theirs[name].get(field)
            if field == "inputSchema" and isinstance(given, Mapping):
                given = advertised(given)  # as ours is advertised: no $schema, no additionalProperties: false
            lines += [f"~ {name}.{field}{where}" for where in _differences(ours[name].get(field), given)]
    return lines


def _differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in sorted(set(ours) | set(theirs), key=str):
            if key not in theirs:
                found.append(f".{key}: declared {_short(ours[key])}, upstream has none")
            elif key not in ours:
                found.append(f".{key}: upstream {_short(theirs[key])}, declared has none")
            else:
                found += [f".{key}{rest}" for rest in _differences(ours[key], theirs[key])]
        return found
    if ours != theirs:
        return [f": declared {_short(ours)}, upstream {_short(theirs)}"]
    return []


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
