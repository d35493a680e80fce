"""The chat format of a trajectory: OpenAI-style messages with tool calls, and tools as function schemas.

It is what TRL's trainers and most SFT tooling read, and what an OpenAI-compatible chat endpoint
takes, so the exporter and the rollout runner's ``openai`` policy build their messages here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ChatMessage", "openai_tools", "tool_call_message", "tool_result_message"]

ChatMessage = dict[str, Any]


def openai_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """MCP tool descriptions (``tools/list`` entries: name, description, inputSchema) as OpenAI function schemas."""
    return [
        {
            "type": "function",
            "function": {
                "name": str(tool["name"]),
                "description": str(tool.get("description") or ""),
                "parameters": dict(tool.get("inputSchema") or {"type": "object", "properties": {}}),
            },
        }
        for tool in tools
    ]


def tool_call_message(call_id: str, tool: str, arguments: Mapping[str, Any]) -> ChatMessage:
    """The assistant turn that calls one tool (arguments as a JSON string, as the OpenAI API sends them)."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        ],
    }


def tool_result_message(call_id: str, text: str) -> ChatMessage:
    """The tool turn answering ``call_id`` with the observation's text."""
    return {"role": "tool", "tool_call_id": call_id, "content": text}
