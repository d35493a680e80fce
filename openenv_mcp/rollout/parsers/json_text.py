"""Calls written as plain JSON: in a code fence, or as an object in the prose.

    I'll look at the tables first.
    ```json
    {"name": "list_tables", "arguments": {}}
    ```

Small instruction-tuned models do this when the chat template's call format does not take (Qwen2.5-Coder
0.5B and 1.5B under llama.cpp wrote every call so). Only call-shaped JSON counts (see
:func:`~openenv_mcp.rollout.parsers.calls.read_calls`): an answer written as JSON stays text. Llama 3's
``<|python_tag|>{"name": ..., "parameters": ...}`` is read the same way.
"""

from __future__ import annotations

import json
import re

from openenv_mcp.rollout.parsers.calls import Block, json_values

__all__ = ["blocks"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z_-]*)[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_CALL_FENCES = frozenset({"tool_call", "tool_calls", "tool_code", "function_call"})
_PYTHON_TAG = "<|python_tag|>"  # Llama 3's marker before a call


def blocks(text: str) -> list[Block]:
    """The JSON of every code fence in ``text``, then every JSON value outside them."""
    found = []
    outside: list[tuple[int, int]] = []
    at = 0
    for match in _FENCE.finditer(text):
        outside.append((at, match.start()))
        at = match.end()
        body = match.group(2).strip()
        declared = match.group(1).lower() in _CALL_FENCES
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            values = [value for _, _, value in json_values(body)]
            if values:
                value = values if len(values) > 1 else values[0]
            elif declared or '"name"' in body:
                problem = f"A code fence holds a call that is not JSON ({exc})"
                found.append(Block(match.start(), match.end(), problem=problem, declared=True))
                continue
            else:
                continue
        found.append(Block(match.start(), match.end(), value=value, declared=declared))
    outside.append((at, len(text)))
    for start, end in outside:
        for begin, finish, value in json_values(text, start, end):
            tagged = text[:begin].rstrip().endswith(_PYTHON_TAG)
            found.append(Block(text.rindex(_PYTHON_TAG, 0, begin) if tagged else begin, finish, value=value))
    return sorted(found, key=lambda block: block.start)
