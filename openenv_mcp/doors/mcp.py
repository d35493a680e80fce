"""The MCP door: the only module that imports the ``mcp`` SDK.

It serves the runtime's tool table through the SDK's low-level server, so the tool list and
every call go through the same table, validation and dispatch as the HTTP control plane.

In sim mode a call binds to an episode by the rule in :mod:`openenv_mcp.runtime.sessions` (the runtime's one
binding of sessions to episodes, which every door uses): an explicit id (the ``X-Episode-Id`` HTTP header, or
``_meta["openenv-mcp/episode_id"]`` in the request; ``default`` for the shared default episode), else the episode
of its stateful session (opened by the session's first call or its ``prompts/get``, closed when the session ends),
else the shared default episode (:data:`~openenv_mcp.runtime.DEFAULT_EPISODE`). The result's ``_meta`` carries
``openenv-mcp/episode_id`` and ``openenv-mcp/step_count``; the reward, the done flag and the reward's parts
(``openenv-mcp/reward``, ``openenv-mcp/done``, ``openenv-mcp/scores``, ``openenv-mcp/reasons``) go there too only
with ``OPENENV_MCP_REWARD_META=true``: some agent frameworks show the model the whole result, so by default they reach
the trainer's channel only (``GET /state``, trajectories).

In sim mode every task is also an MCP prompt (``prompts/list``, :data:`PROMPTS_PAGE` a page, split and difficulty
in its title and ``_meta``); ``prompts/get`` opens a fresh
episode of that task and binds it to the MCP session, so the session's later calls without an
episode id act on it (the prompt's ``_meta`` names the episode: the handle for clients without sessions).
Prod lists no prompts.
"""

from __future__ import annotations

import secrets
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.routing import BaseRoute

from openenv_mcp.environment.tasks import Task
from openenv_mcp.errors import OpenEnvError, ToolNotFound
from openenv_mcp.models import ImageBlock, Observation, TextBlock
from openenv_mcp.runtime import Runtime, SessionKey

__all__ = ["EPISODE_HEADER", "META_PREFIX", "McpDoor"]

EPISODE_HEADER = "x-episode-id"
PROMPTS_PAGE = 500  # prompts per prompts/list page; nextCursor leads to the next
META_PREFIX = "openenv-mcp/"
_SESSION = f"{META_PREFIX}session"  # the key a connection's state keeps its session under
_STDIO = "stdio"  # the one client of a stdio server
_DOOR = "mcp"  # this door's sessions in the runtime's binding: ("mcp", session id)


class McpDoor:
    """An MCP server over one runtime, for Streamable HTTP (mounted in the app) or stdio."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        env = runtime.env
        self._tools = types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in runtime.tools.listing()])
        self.server: Server[Any] = Server(
            env.name,
            version=env.version,
            description=env.description,
            instructions=env.description,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )
        self.session_manager: StreamableHTTPSessionManager | None = None
        self.sessions = runtime.sessions  # the runtime's binding of sessions to episodes
        self._stdio = False  # serving stdio: one client, one session whatever its protocol era
        self._prompts: list[types.Prompt] | None = None

    def tool_list(self) -> list[dict[str, Any]]:
        """The tools exactly as ``tools/list`` sends them (camelCase JSON)."""
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in self._tools.tools]

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return self._tools

    async def _list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        if not self.runtime.sim:
            return types.ListPromptsResult(prompts=[])
        if self._prompts is None:  # the tasks never change: build the listing once
            self._prompts = [_prompt(task) for task in self.runtime.tasks]
        cursor = params.cursor if params is not None else None
        start = _page_start(cursor, len(self._prompts))
        end = start + PROMPTS_PAGE
        return types.ListPromptsResult(
            prompts=self._prompts[start:end], next_cursor=str(end) if end < len(self._prompts) else None
        )

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if not self.runtime.sim:
            raise MCPError(types.INVALID_PARAMS, "This server runs in prod mode: it has no tasks and lists no prompts")
        key = self._session_key(ctx)
        try:
            if key is not None:  # the session moves to the new episode; the one before closes
                opened = await self.sessions.open(key, task_id=params.name, replace=True)
                assert opened is not None  # only an exclusive open gives way
            else:
                opened = await self.runtime.reset(task_id=params.name)
        except OpenEnvError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from None
        where = "opened for this session" if key is not None else "send its id as X-Episode-Id or in _meta"
        text = "\n".join(block.text for block in opened.observation.content if isinstance(block, TextBlock))
        return types.GetPromptResult(
            description=f"Task {params.name}: episode {opened.episode_id}, {where}",
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
            _meta={f"{META_PREFIX}episode_id": opened.episode_id, f"{META_PREFIX}task_id": params.name},
        )

    def _session_key(self, ctx: Any) -> SessionKey | None:
        """The stateful session a request belongs to (its episode closes when it ends), or ``None`` if sessionless."""
        connection = getattr(getattr(ctx, "session", None), "_connection", None)  # the SDK's per-client Connection
        if connection is not None and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            key = connection.state.get(_SESSION)
            if key is None:  # the connection's first call: its episodes close when its exit stack unwinds
                key = connection.state[_SESSION] = (_DOOR, str(connection.session_id or secrets.token_hex(16)))
                connection.exit_stack.push_async_callback(self.sessions.end, key)
            return key  # type: ignore[no-any-return]  # the connection's state is untyped
        return (_DOOR, _STDIO) if self._stdio else None

    def _session_id(self, ctx: Any) -> str | None:
        """The MCP session id a prod call came in on, for session recording (``None``: a sessionless request)."""
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        session_id = getattr(connection, "session_id", None)
        return str(session_id) if session_id else (_STDIO if self._stdio else None)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:  # which episode: the binding's rule (runtime/sessions.py), mode check included
            episode_id = await self.sessions.episode_of_call(self._session_key(ctx), _episode_id(ctx, params))
            session = None if self.runtime.sim else self._session_id(ctx)
            outcome = await self.runtime.call(params.name, params.arguments, episode_id, session=session)
        except ToolNotFound as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from None
        except OpenEnvError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=exc.message)],
                is_error=True,
                _meta={f"{META_PREFIX}error": exc.code},
            )
        meta = None
        if outcome.episode is not None and self.runtime.sim:  # prod shows no episode, let alone a reward
            meta = {
                f"{META_PREFIX}episode_id": outcome.episode.id,
                f"{META_PREFIX}step_count": outcome.episode.step_count,
            }
            if self.runtime.settings.mcp_reward_meta:  # off: the model never sees them (GET /state has them)
                meta[f"{META_PREFIX}reward"] = outcome.reward
                meta[f"{META_PREFIX}done"] = outcome.done
                if outcome.scores is not None:
                    meta[f"{META_PREFIX}scores"] = dict(outcome.scores)
                if outcome.reasons is not None:
                    meta[f"{META_PREFIX}reasons"] = dict(outcome.reasons)
        return _to_mcp(outcome.observation, meta)

    def http_routes(
        self, *, session_idle_timeout: float, max_sessions: int, json_response: bool = True
    ) -> list[BaseRoute]:
        """The exact ``/mcp`` route for the app (no redirect); enter :attr:`session_manager` in its lifespan.

        The SDK's own Host/Origin check is off: the app's :class:`~openenv_mcp.doors.guard.Guard`
        applies one rule to every route, ``/mcp`` included (the SDK's would cover ``/mcp`` only,
        and only for a localhost bind).

        Stateful sessions (the 2025 protocol era) are bounded like episodes: one with no request in
        flight for ``session_idle_timeout`` seconds is closed with its server task (a client that
        vanished sends no DELETE), and at ``max_sessions`` open a new one is refused with 503.
        """
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=json_response,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            session_idle_timeout=session_idle_timeout,
            max_sessions=max_sessions,
        )
        self.session_manager = self.server.session_manager
        return list(app.routes)

    def open_sessions(self) -> int:
        """Stateful MCP sessions open now (the SDK's table of them; 0 before the HTTP routes are built)."""
        return len(getattr(self.session_manager, "_server_instances", ()))

    async def serve_stdio(self) -> None:
        """Serve MCP over this process's stdin and stdout until the client closes them."""
        self._stdio = True
        try:
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        finally:
            await self.sessions.end((_DOOR, _STDIO))


def _prompt(task: Task) -> types.Prompt:
    """A task as an MCP prompt: its id, split and difficulty in the title (and ``_meta``), its first line."""
    meta = {f"{META_PREFIX}split": task.split}
    if task.difficulty:
        meta[f"{META_PREFIX}difficulty"] = task.difficulty
    return types.Prompt(
        name=task.id,
        title=f"{task.id} ({', '.join(meta.values())})",
        description=task.prompt.splitlines()[0][:200] if task.prompt else task.id,
        _meta=meta,
    )


def _page_start(cursor: str | None, total: int) -> int:
    """Where the page a ``prompts/list`` cursor names starts (the cursor is the ``nextCursor`` we sent)."""
    if cursor is None:
        return 0
    if not cursor.isdigit() or int(cursor) >= total:
        raise MCPError(types.INVALID_PARAMS, f"Invalid cursor {cursor[:40]!r}: pass the nextCursor of the last page")
    return int(cursor)


def _episode_id(ctx: Any, params: types.CallToolRequestParams) -> str | None:
    request = getattr(ctx, "request", None)
    if request is not None:
        header = request.headers.get(EPISODE_HEADER)
        if header:
            return str(header)
    value = (params.meta or {}).get(f"{META_PREFIX}episode_id")
    return str(value) if value else None


def _to_mcp(observation: Observation, meta: dict[str, Any] | None) -> types.CallToolResult:
    content: list[types.ContentBlock] = []
    for block in observation.content:
        if isinstance(block, TextBlock):
            content.append(types.TextContent(type="text", text=block.text))
        elif isinstance(block, ImageBlock):
            content.append(types.ImageContent(type="image", data=block.data, mime_type=block.mime_type))
    return types.CallToolResult(
        content=content,
        structured_content=observation.structured_content,
        is_error=observation.is_error,
        _meta=meta,
    )
