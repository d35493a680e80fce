"""Anthropic Messages: ``POST /v1/messages`` (``?beta=true`` too), streamed or whole, and
``POST /v1/messages/count_tokens``.

Read: ``system`` (text or text blocks), ``messages`` whose content is text or blocks (``text``, ``tool_use``,
``tool_result``; ``thinking`` blocks are skipped, since the proxy never writes any), a ``system`` message inside
``messages`` (Claude Code sends one), ``tools`` with an ``input_schema`` (server tools, which carry a dated
``type``, are not shown to the model), ``tool_choice``, ``max_tokens``, ``temperature``, ``top_p``, ``top_k``,
``stop_sequences``. ``thinking``, ``context_management``, ``output_config``, ``metadata`` and ``cache_control`` on
any block are accepted and left alone. A block of another type (an image, a document) is refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.proxy.conversation import Conversation, Reply, field_of, new_id, text_of
from openenv_mcp.proxy.errors import RequestInvalid, http_status
from openenv_mcp.proxy.upstream import Sampling
from openenv_mcp.proxy.wires.common import number, sse, stops, whole

__all__ = ["NAME", "answer", "error", "read", "stream"]

NAME = "messages"
_STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}
_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 413: "request_too_large"}
_SKIPPED_BLOCKS = ("thinking", "redacted_thinking")


def error(failure: OpenEnvError) -> dict[str, Any]:
    """Anthropic's error body."""
    status = http_status(failure)
    kind = _ERRORS.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": failure.message}}


def read(body: Mapping[str, Any]) -> Conversation:
    """A Messages request as a conversation."""
    given = field_of(body, "messages", list)
    if not given:
        raise RequestInvalid("The field 'messages' must be a non-empty list of messages")
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _system(system)})
    for message in given:
        messages += _message(message)
    tools = [_tool(tool) for tool in field_of(body, "tools", list, default=[]) or []]
    return Conversation(
        messages=messages,
        tools=[tool for tool in tools if tool is not None],
        sampling=Sampling(
            max_tokens=whole(body, "max_tokens"),
            temperature=number(body, "temperature"),
            top_p=number(body, "top_p"),
            top_k=whole(body, "top_k"),
            stop=stops(body.get("stop_sequences"), "stop_sequences"),
        ),
        model=str(body.get("model") or ""),
        tool_choice=_choice(body.get("tool_choice")),
        stream=bool(field_of(body, "stream", bool, default=False)),
    )


def _system(system: Any) -> str:
    if isinstance(system, str | list):
        return text_of(system, kinds=("text",))
    raise RequestInvalid("The field 'system' must be text or a list of text blocks")


def _message(message: Any) -> list[dict[str, Any]]:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
        raise RequestInvalid("Each message must be an object whose role is user or assistant")
    role, content = message["role"], message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise RequestInvalid("A message's content must be text or a list of content blocks")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use" and role == "assistant":
            arguments = block.get("input") if isinstance(block.get("input"), dict) else {}
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {"name": block.get("name"), "arguments": arguments},
                }
            )
        elif kind == "tool_result" and role == "user":
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": _result(block)})
        elif kind not in _SKIPPED_BLOCKS:
            raise RequestInvalid(
                f"The proxy does not take {role} content blocks of type {kind!r}; it takes text, tool_use "
                "(assistant), tool_result (user) and thinking"
            )
    if role == "assistant":
        reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
        if calls:
            reply["tool_calls"] = calls
        return [reply]
    return [*results, *([{"role": role, "content": "\n".join(texts)}] if texts or not results else [])]


def _result(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    text = content if isinstance(content, str) else text_of(content, kinds=("text",))
    return f"Error: {text}" if block.get("is_error") is True and not text.startswith("Error") else text


def _tool(tool: Any) -> dict[str, Any] | None:
    if not isinstance(tool, dict):
        raise RequestInvalid("Each tool must be an object")
    if tool.get("type") not in (None, "custom"):
        return None  # a server tool (web search, a text editor...): not the model's to call here
    if not isinstance(tool.get("name"), str):
        raise RequestInvalid("Each tool must have a 'name'")
    function = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _choice(value: Any) -> str:
    if value is None:
        return "auto"
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(value.get("name"), str):
        return str(value["name"])
    raise RequestInvalid("The field 'tool_choice' must be {'type': auto|any|tool|none}")


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.content or not reply.calls:
        blocks.append({"type": "text", "text": reply.content})
    blocks += [
        {
            "type": "tool_use",
            "id": call.id.replace("call_", "toolu_", 1),
            "name": call.name,
            "input": call.arguments_object,
        }
        for call in reply.calls
    ]
    return blocks


def _usage(reply: Reply, output: int) -> dict[str, int]:
    return {
        "input_tokens": reply.prompt_tokens,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def answer(reply: Reply, conversation: Conversation) -> dict[str, Any]:
    """The whole ``message`` object."""
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": _blocks(reply),
        "stop_reason": _STOP_REASONS[reply.finish_reason],
        "stop_sequence": None,
        "usage": _usage(reply, reply.completion_tokens),
    }


def stream(reply: Reply, conversation: Conversation, body: Mapping[str, Any]) -> Iterator[bytes]:
    """``message_start``, each block's start, deltas and stop, ``message_delta``, ``message_stop``."""
    whole_message = answer(reply, conversation)
    started = {**whole_message, "content": [], "stop_reason": None, "usage": _usage(reply, 1)}
    yield sse({"type": "message_start", "message": started}, "message_start")
    for index, block in enumerate(whole_message["content"]):
        head: dict[str, Any]
        if block["type"] == "text":
            head, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            head = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}
        yield sse({"type": "content_block_start", "index": index, "content_block": head}, "content_block_start")
        if index == 0:
            yield sse({"type": "ping"}, "ping")
        yield sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    end = {"stop_reason": whole_message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": reply.completion_tokens}
    yield sse({"type": "message_delta", "delta": end, "usage": usage}, "message_delta")
    yield sse({"type": "message_stop"}, "message_stop")


def counted(tokens: int) -> dict[str, Any]:
    """The ``count_tokens`` answer."""
    return {"input_tokens": tokens}
