"""Agent frameworks' own MCP support against our servers, run inside a framework venv (tests/doors/test_frameworks.py).

    python agent_frameworks.py '{"frameworks": [...], "servers": {"sql": URL, ...}, "calls": {"sql": [TOOL, ARGS]},
                                 "bogus": {"sql": TOOL}}'

For each framework and server: list the tools through the framework (its tool objects, converted as it converts
them for its models), call one tool through the framework's tool object and one with an argument the tool does not
take, and note what the framework's conversion did to the schemas. No model is called: the tool objects are the
ones an agent would get. Prints one JSON object: ``{framework: {server: {"tools", "ok", "bogus", "notes"}}}``
(or ``{"error": ...}`` for a server the framework failed on, with the traceback's last line).
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

Seen = dict[str, Any]


def text_of(value: Any) -> str:
    """Whatever a framework returned, as one string (the tests look for the server's text in it)."""
    if isinstance(value, str):
        return value
    for attribute in ("raw_output", "content"):
        if hasattr(value, attribute) and not isinstance(value, dict | list):
            return text_of(getattr(value, attribute))
    if isinstance(value, dict):
        return str(value.get("text", "")) or json.dumps(value, default=str)
    if isinstance(value, list | tuple):
        return "\n".join(text_of(item) for item in value)
    return getattr(value, "text", None) or str(value)


async def langchain(url: str, call: list[Any], bogus: str) -> Seen:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"env": {"url": url, "transport": "streamable_http"}})
    tools = {tool.name: tool for tool in await client.get_tools()}  # each call opens its own session (its default)
    ok = await tools[call[0]].ainvoke(call[1])
    refused = await tools[bogus].ainvoke({"bogus": 1})
    return {"tools": list(tools), "ok": text_of(ok), "bogus": text_of(refused), "notes": {}}


async def openai_agents(url: str, call: list[Any], bogus: str) -> Seen:
    from agents.mcp import MCPServerStreamableHttp, MCPUtil
    from agents.tool_context import ToolContext

    async with MCPServerStreamableHttp(params={"url": url}, name="env") as server:
        listed = await server.list_tools()
        tools = {t.name: MCPUtil.to_function_tool(t, server, convert_schemas_to_strict=True) for t in listed}

        async def invoke(name: str, arguments: dict[str, Any]) -> Any:
            text = json.dumps(arguments)
            context = ToolContext(context=None, tool_name=name, tool_call_id="call-1", tool_arguments=text)
            return await tools[name].on_invoke_tool(context, text)

        ok, refused = await invoke(*call), await invoke(bogus, {"bogus": 1})
    non_strict = sorted(name for name, tool in tools.items() if not tool.strict_json_schema)
    return {"tools": list(tools), "ok": text_of(ok), "bogus": text_of(refused), "notes": {"non_strict": non_strict}}


async def anthropic(url: str, call: list[Any], bogus: str) -> Seen:
    from anthropic.lib._parse._transform import transform_schema
    from anthropic.lib.tools import ToolError
    from anthropic.lib.tools.mcp import async_mcp_tool
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        tools = {t.name: async_mcp_tool(t, session, strict=True) for t in listed}
        ok = await tools[call[0]].call(call[1])
        try:
            refused: Any = await tools[bogus].call({"bogus": 1})
        except ToolError as exc:  # how the SDK reports a result with isError
            refused = exc.content
    # strict tools: what the SDK's strict transform leaves in descriptions (limits the API cannot enforce)
    described = sorted(
        name for name, tool in tools.items() if transform_schema(tool.to_dict()["input_schema"]) != tool.input_schema
    )
    return {"tools": list(tools), "ok": text_of(ok), "bogus": text_of(refused), "notes": {"transformed": described}}


async def llama_index(url: str, call: list[Any], bogus: str) -> Seen:
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    tools = {t.metadata.name: t for t in await McpToolSpec(client=BasicMCPClient(url)).to_tool_list_async()}
    ok = await tools[call[0]].acall(**call[1])
    refused = await tools[bogus].acall(bogus=1)
    meta = dict(getattr(ok.raw_output, "meta", None) or {})
    notes = {"meta_shown": sorted(meta), "schemas": {name: t.metadata.fn_schema_str for name, t in tools.items()}}
    return {"tools": list(tools), "ok": text_of(ok), "bogus": text_of(refused), "notes": notes}


async def pydantic_ai(url: str, call: list[Any], bogus: str) -> Seen:
    from pydantic_ai import RunContext
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.profiles.google import GoogleJsonSchemaTransformer
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer
    from pydantic_ai.usage import RunUsage

    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    async with MCPToolset(url) as toolset:
        tools = await toolset.get_tools(context)
        ok = await toolset.call_tool(call[0], call[1], context, tools[call[0]])
        try:
            refused: Any = await toolset.call_tool(bogus, {"bogus": 1}, context, tools[bogus])
        except ModelRetry as exc:  # a tool error is handed back to the model as a retry prompt
            refused = str(exc)
    openai_strict = []
    for name, tool in tools.items():
        schema = tool.tool_def.parameters_json_schema
        GoogleJsonSchemaTransformer(schema).walk()  # raises on a schema Gemini cannot take
        transformer = OpenAIJsonSchemaTransformer(schema, strict=None)
        transformer.walk()
        if transformer.is_strict_compatible:
            openai_strict.append(name)
    return {
        "tools": list(tools),
        "ok": text_of(ok),
        "bogus": text_of(refused),
        "notes": {"openai_strict": openai_strict},
    }


async def google_genai(url: str, call: list[Any], bogus: str) -> Seen:
    from google.genai import _adapters, types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        adapter = _adapters.McpToGenAiToolAdapter(session, await session.list_tools())  # what generate_content builds
        declared = [d.name for tool in adapter.tools for d in (tool.function_declarations or [])]
        ok = await adapter.call_tool(types.FunctionCall(name=call[0], args=call[1]))
        refused = await adapter.call_tool(types.FunctionCall(name=bogus, args={"bogus": 1}))
    shown = ok.model_dump(by_alias=True, exclude_none=True) if hasattr(ok, "model_dump") else ok
    return {
        "tools": declared,
        "ok": text_of(ok),
        "bogus": text_of(refused),
        "notes": {"meta_shown": sorted(shown.get("_meta") or {})},
    }


FRAMEWORKS: dict[str, Callable[[str, list[Any], str], Awaitable[Seen]]] = {
    "langchain": langchain,
    "openai-agents": openai_agents,
    "anthropic": anthropic,
    "llama-index": llama_index,
    "pydantic-ai": pydantic_ai,
    "google-genai": google_genai,
}


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for framework in spec["frameworks"]:
        seen[framework] = {}
        for server, url in spec["servers"].items():
            try:
                run = FRAMEWORKS[framework](url, spec["calls"][server], spec["bogus"][server])
                seen[framework][server] = await asyncio.wait_for(run, 120)
            # a framework's failure (an anyio task group's may be a BaseExceptionGroup) is reported per framework
            # and server, and the test names what failed; an interrupt still stops the driver
            except (Exception, BaseExceptionGroup) as exc:
                lines = traceback.format_exception(exc)
                seen[framework][server] = {"error": "".join(lines[-12:])}
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1]))), default=str))
