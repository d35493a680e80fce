"""Mistral's format: calls after a ``[TOOL_CALLS]`` marker.

    [TOOL_CALLS][{"name": "run_query", "arguments": {"sql": "SELECT 1"}}]      (tokenizer v3)
    [TOOL_CALLS]run_query[ARGS]{"sql": "SELECT 1"}                               (tokenizer v11 and later)

The later form may carry a ``[CALL_ID]`` before ``[ARGS]``; each call repeats the marker.
"""

from __future__ import annotations

import json
import re

from openenv_mcp.rollout.parsers.calls import Block

__all__ = ["blocks"]

_MARKER = "[TOOL_CALLS]"
_NAMED = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[CALL_ID\]\s*[A-Za-z0-9]+\s*)?\[ARGS\]\s*")


def blocks(text: str) -> list[Block]:
    """Every call after a ``[TOOL_CALLS]`` marker in ``text``."""
    decoder = json.JSONDecoder()
    found = []
    at = text.find(_MARKER)
    while at >= 0:
        after = at + len(_MARKER)
        named = _NAMED.match(text, after)
        begin = named.end() if named else len(text) - len(text[after:].lstrip())
        try:
            value, end = decoder.raw_decode(text, begin)
        except json.JSONDecodeError as exc:
            following = text.find(_MARKER, after)
            end = len(text) if following < 0 else following
            found.append(Block(at, end, problem=f"The calls after {_MARKER} are not JSON ({exc})", declared=True))
        else:
            if named:
                value = {"name": named.group(1), "arguments": value}
            found.append(Block(at, end, value=value, declared=True))
        at = text.find(_MARKER, end)
    return found
