"""OpenEnv: drive a server with OpenEnv's own clients (package ``openenv``), unmodified; print what they saw.

    .venv/openenv/bin/python examples/openenv_clients.py '[[URL, "sim"|"prod", TOOL, ARGUMENTS], ...]'

sim: ``GenericEnvClient`` resets (with a seed), steps TOOL (our action shape), steps it as OpenEnv's MCP action
(``call_tool``), lists the tools through a step (``list_tools``), reads the state; then ``MCPToolClient`` (HTTP
JSON-RPC at /mcp, its WebSocket bound to the same session) lists the tools and calls TOOL. prod: only
``MCPToolClient``. Prints one JSON object per server, in a list (one process: importing openenv takes seconds).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient


def drive(url: str, mode: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    if mode == "sim":
        with GenericEnvClient(base_url=url).sync() as env:
            first = env.reset(seed=3)
            seen["reset"] = {"observation": first.observation, "reward": first.reward, "done": first.done}
            ours = env.step({"tool": tool, "arguments": arguments})
            seen["step"] = {"observation": ours.observation, "reward": ours.reward, "done": ours.done}
            mcp = env.step({"type": "call_tool", "tool_name": tool, "arguments": arguments})
            seen["call_tool_step"] = {"observation": mcp.observation, "reward": mcp.reward, "done": mcp.done}
            listed = env.step({"type": "list_tools"})
            seen["list_tools_step"] = [t["name"] for t in listed.observation["tools"]]
            seen["state"] = env.state()
            try:
                env.step({"tool": "drop_everything", "arguments": {}})
            except RuntimeError as exc:
                seen["unknown_tool"] = str(exc)
    with MCPToolClient(base_url=url).sync() as client:
        tools = client.list_tools()
        seen["mcp_tools"] = {t.name: t.input_schema for t in tools}
        seen["mcp_call"] = client.call_tool(tool, **arguments)
        try:
            client.call_tool("drop_everything")
        except RuntimeError as exc:
            seen["mcp_unknown_tool"] = str(exc)
    return seen


if __name__ == "__main__":
    print(json.dumps([drive(*spec) for spec in json.loads(sys.argv[1])], default=str))
