"""What the text formats share: the stretches of a reply that hold calls, and reading one call out of JSON.

A format module (:mod:`~openenv_mcp.rollout.parsers.hermes`, ...) finds :class:`Block` s in a reply: where a
call is written and its JSON, decoded. :func:`read_calls` turns a block's JSON into :class:`TextCall` s, in
whichever of the shapes models write:

- ``{"name": TOOL, "arguments": {...}}`` (Qwen and Hermes; ``arguments`` may also be a JSON string),
- ``{"name": TOOL, "parameters": {...}}`` (Llama 3),
- ``{"type": "function", "function": {"name": TOOL, "arguments": ...}}`` (the OpenAI shape),
- a list of any of these (parallel calls).

:func:`check_arguments` catches the one failure mode that is the model's confusion rather than its choice:
arguments that are the tool's own JSON schema (``{"type": "object", "properties": {...}}``) copied from the
tool list. For a tool that needs no argument that is read as ``{}`` (and noted); otherwise the call is refused
with a message that shows the values to send.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SCHEMA_ECHO", "Block", "TextCall", "check_arguments", "json_values", "read_calls"]

SCHEMA_ECHO = "schema_echo"
_SCHEMA_WORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "description", "title", "$schema", "$defs", "items"}
)
_NAME_KEYS = ("name", "tool")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


@dataclass(frozen=True, slots=True)
class Block:
    """A stretch ``text[start:end]`` of a reply that holds calls, or looks as if it meant to.

    Attributes:
        value: The decoded JSON (``None`` with ``problem``).
        problem: Why the stretch could not be read (its JSON is broken, say).
        declared: The text says it is a call (a ``<tool_call>`` tag, ``[TOOL_CALLS]``): JSON in it that is not
            call-shaped is a problem. Undeclared JSON (a code fence, an object in prose) that is not call-shaped
            is just text.
    """

    start: int
    end: int
    value: Any = None
    problem: str | None = None
    declared: bool = False


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call read out of a reply: ``arguments`` to send, or the ``problem`` that keeps it from running.

    ``note`` says how it was read when that took more than decoding (``schema_echo``: the tool's schema stood
    where its empty arguments belong).
    """

    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None
    note: str | None = None
    written: str = "{}"  # the arguments as the model wrote them, as JSON text


def read_calls(value: Any, tools: Mapping[str, Mapping[str, Any]]) -> list[TextCall] | None:
    """The calls in a block's JSON; ``None`` when it is not call-shaped at all."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, dict) and _shaped(item, tools) for item in items):
        return None
    calls = []
    for item in items:
        body = item["function"] if isinstance(item.get("function"), dict) else item
        name = next(str(body[key]) for key in _NAME_KEYS if isinstance(body.get(key), str))
        raw = next((body[key] for key in _ARGUMENT_KEYS if key in body), None)
        calls.append(check_arguments(name, raw, tools))
    return calls


def _shaped(item: dict[str, Any], tools: Mapping[str, Mapping[str, Any]]) -> bool:
    """A name and arguments; or a tool's name alone (a call that takes no arguments)."""
    body = item["function"] if isinstance(item.get("function"), dict) else item
    names = [body[key] for key in _NAME_KEYS if isinstance(body.get(key), str)]
    if not names:
        return False
    return any(key in body for key in _ARGUMENT_KEYS) or (len(body) == 1 and names[0] in tools)


def check_arguments(name: str, raw: Any, tools: Mapping[str, Mapping[str, Any]]) -> TextCall:
    """``raw`` (an object, a JSON string, or nothing) as ``name``'s arguments, or the problem with them."""
    if raw is None or raw == "":
        return TextCall(name, {})
    written = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            problem = f"The arguments of {name!r} are not valid JSON ({exc}); send a JSON object"
            return TextCall(name, None, problem, written=written)
    if not isinstance(raw, dict):
        problem = f"The arguments of {name!r} must be a JSON object, not {type(raw).__name__}"
        return TextCall(name, None, problem, written=written)
    schema = tools.get(name)
    if schema is None or not _echoes_schema(raw, schema):
        return TextCall(name, raw, written=written)
    required = [str(key) for key in schema.get("required") or []]
    if not required:
        return TextCall(name, {}, note=SCHEMA_ECHO, written=written)
    example = json.dumps({key: "..." for key in required})
    problem = f"The arguments of {name!r} are its JSON schema, not values: send the values themselves, e.g. {example}"
    return TextCall(name, None, problem, written=written)


def _echoes_schema(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    """Whether ``arguments`` look like a JSON schema rather than values for ``schema``'s parameters."""
    parameters = set((schema.get("properties") or {}).keys())
    keys = set(arguments)
    return (
        bool(keys)
        and keys <= _SCHEMA_WORDS
        and not keys & parameters
        and ("properties" in keys or arguments.get("type") == "object")
    )


def json_values(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, Any]]:
    """Each JSON object or array in ``text[start:end]`` that decodes, as ``(start, end, value)``, left to right."""
    decoder = json.JSONDecoder()
    stop = len(text) if end is None else end
    window = text[:stop]
    at = start
    while at < stop:
        found = [i for i in (window.find("{", at), window.find("[", at)) if i >= 0]
        if not found:
            return
        begin = min(found)
        try:
            value, finish = decoder.raw_decode(window, begin)
        except json.JSONDecodeError:
            at = begin + 1
            continue
        yield begin, finish, value
        at = finish
