"""Qwen's and Hermes' format: each call as JSON between ``<tool_call>`` and ``</tool_call>``.

    <tool_call>
    {"name": "run_query", "arguments": {"sql": "SELECT 1"}}
    </tool_call>

A tag left open at the end of the reply (cut by the token limit) holds what follows it. JSON wrapped in a code
fence inside the tag, or several objects in one tag, are read too.
"""

from __future__ import annotations

import json
import re

from openenv_mcp.rollout.parsers.calls import Block, json_values

__all__ = ["blocks"]

_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^```[A-Za-z_-]*\s*|\s*```$")


def blocks(text: str) -> list[Block]:
    """Every ``<tool_call>`` block of ``text``."""
    found = []
    for match in _TAG.finditer(text):
        body = _FENCE.sub("", match.group(1).strip())
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            values = [value for _, _, value in json_values(body)]
            if not values:
                problem = f"A <tool_call> block is not JSON ({exc})"
                found.append(Block(match.start(), match.end(), problem=problem, declared=True))
                continue
            value = values if len(values) > 1 else values[0]
        found.append(Block(match.start(), match.end(), value=value, declared=True))
    return found
