"""Tool calls a model wrote as text, read by a chosen parser (``--tool-parser``).

An OpenAI-compatible server returns a call in ``tool_calls`` when its own parser recognised it (vLLM with
``--tool-call-parser``, llama.cpp with ``--jinja``, SGLang with ``--tool-call-parser``). Models often write the
call as text instead, in a format of their family or none; the chat policy then reads the reply's text with
one of these parsers, so the call is played rather than taken for a final answer:

- ``hermes``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen 2.5 and 3, Hermes, many
  fine-tunes; :mod:`.hermes`);
- ``mistral``: ``[TOOL_CALLS][{...}]`` or ``[TOOL_CALLS]name[ARGS]{...}`` (:mod:`.mistral`);
- ``json``: a call-shaped JSON object in a code fence or in the prose (:mod:`.json_text`);
- ``auto`` (the default): the first of hermes, mistral, json that finds a call, or a block that tried to be one;
- ``none``: only ``tool_calls`` count.

What a parse found is kept (:class:`TextParse`): which format, the calls, the reply without them (the
assistant message the conversation goes on with, as a server-side parser leaves it), and the blocks that looked
like calls but could not be read, whose problem goes back to the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.rollout.parsers import hermes, json_text, mistral
from openenv_mcp.rollout.parsers.calls import SCHEMA_ECHO, Block, TextCall, check_arguments, read_calls

__all__ = ["PARSERS", "SCHEMA_ECHO", "TextCall", "TextParse", "check_arguments", "parse_text"]

_FORMATS: dict[str, Callable[[str], list[Block]]] = {
    "hermes": hermes.blocks,
    "mistral": mistral.blocks,
    "json": json_text.blocks,
}
PARSERS = ("auto", "none", *_FORMATS)
"""The parsers ``--tool-parser`` takes."""

_BLANK_LINES = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class TextParse:
    """What a parser found in a reply's text.

    Attributes:
        parser: The format the calls (or problems) were found in; ``None`` when the text holds none.
        calls: The calls, in the order written.
        content: The text without the calls' blocks (``None`` when nothing else is left).
        problems: Why blocks that meant to be calls could not be read.
    """

    parser: str | None
    calls: list[TextCall] = field(default_factory=list)
    content: str | None = None
    problems: list[str] = field(default_factory=list)


def parse_text(text: str | None, *, parser: str, tools: Mapping[str, Mapping[str, Any]]) -> TextParse:
    """The calls in ``text`` by ``parser`` (one of :data:`PARSERS`).

    Args:
        tools: Each tool's name and its parameters' JSON schema (to tell a schema copied as arguments).
    """
    if parser not in PARSERS:
        raise ValueError(f"No tool parser {parser!r}; parsers: {', '.join(PARSERS)}")
    if not text or parser == "none":
        return TextParse(None, content=text or None)
    for name in _FORMATS if parser == "auto" else (parser,):
        calls: list[TextCall] = []
        problems: list[str] = []
        spans: list[tuple[int, int]] = []
        for block in _FORMATS[name](text):
            found = None if block.problem else read_calls(block.value, tools)
            if found:
                calls += found
                spans.append((block.start, block.end))
            elif block.declared:
                problems.append(block.problem or 'A tool-call block names no tool (write {"name": TOOL, ...})')
        if calls or problems:
            return TextParse(name, calls, _without(text, spans), problems)
    return TextParse(None, content=text)


def _without(text: str, spans: list[tuple[int, int]]) -> str | None:
    kept, at = [], 0
    for start, end in spans:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    rest = _BLANK_LINES.sub("\n\n", "".join(kept)).strip()
    return rest or None
