"""The proxy's own vocabulary between the wire formats and the model: a conversation in, a reply out.

Each wire format (chat completions, Responses, Messages, Gemini) reads its request into a :class:`Conversation`:
messages in the shape chat templates take (``system``/``user``/``assistant``/``tool`` roles, text content,
``tool_calls`` with their arguments as objects) and tools as OpenAI function objects. The engine answers with a
:class:`Reply`, which each wire format writes back in its own shape.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.proxy.errors import RequestInvalid
from openenv_mcp.proxy.upstream import Sampling

__all__ = ["Call", "Conversation", "Reply", "arguments_object", "field_of", "new_id", "text_of"]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One request, read.

    Attributes:
        messages: The conversation as the chat template takes it.
        tools: OpenAI function objects (``{"type": "function", "function": {...}}``), flattened from namespaces.
        sampling: How to sample.
        model: The model the client asked for (echoed back).
        tool_choice: ``auto``, ``none``, ``required`` or a tool's name (``none``: calls in the text stay text).
        stream: The client asked for a stream.
        names: A flattened tool name -> ``(namespace, name)`` as the client declared it (Responses namespaces).
        custom: The tools that take free text (Responses ``custom`` tools), shown as functions of one ``input``.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    sampling: Sampling
    model: str
    tool_choice: str = "auto"
    stream: bool = False
    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    custom: frozenset[str] = frozenset()

    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        """Each tool's parameters schema by name (what the parsers check arguments against)."""
        return {tool["function"]["name"]: tool["function"].get("parameters") or {} for tool in self.tools}


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the model wrote: its id, the tool's (flattened) name, the arguments as JSON text."""

    id: str
    name: str
    arguments: str

    @property
    def arguments_object(self) -> dict[str, Any]:
        value = json.loads(self.arguments) if self.arguments else {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Reply:
    """The model's answer, read: its text without the calls, the calls, and token counts."""

    content: str
    calls: list[Call]
    finish_reason: str  # stop, length or tool_calls
    prompt_tokens: int
    completion_tokens: int
    model: str


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def field_of(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], *, default: Any = None) -> Any:
    """``body[name]`` when it has the type ``kind`` (or is absent: ``default``); else the request is invalid."""
    value = body.get(name, default)
    if value is default or name not in body:
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if value is None and default is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise RequestInvalid(f"The field {name!r} must be {names}, not {type(value).__name__}")
    return value


def text_of(content: Any, *, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts, joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in kinds and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    raise RequestInvalid(f"A message's content must be text or a list of parts, not {type(content).__name__}")


def arguments_object(arguments: Any) -> Any:
    """A call's arguments as the chat template takes them: an object (JSON text decoded where it is JSON)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return arguments
    return arguments if arguments is not None else {}
