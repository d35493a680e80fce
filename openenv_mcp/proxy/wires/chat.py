"""OpenAI chat completions: ``POST /v1/chat/completions``, streamed (SSE chunks, ``stream_options.include_usage``)
or whole; ``tools`` (functions), ``tool_choice``, ``stop``, ``max_tokens``/``max_completion_tokens``,
``temperature``, ``top_p``, ``seed`` (and llama.cpp's ``top_k``). Other fields are accepted and left alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from openenv_mcp.proxy.conversation import Conversation, Reply, arguments_object, field_of, new_id, text_of
from openenv_mcp.proxy.errors import RequestInvalid
from openenv_mcp.proxy.upstream import Sampling
from openenv_mcp.proxy.wires.common import number, openai_error, sse, stops, whole

__all__ = ["NAME", "answer", "error", "read", "stream"]

NAME = "chat"
error = openai_error


def read(body: Mapping[str, Any]) -> Conversation:
    """A chat completions request as a conversation."""
    messages = field_of(body, "messages", list)
    if not messages:
        raise RequestInvalid("The field 'messages' must be a non-empty list of messages")
    tools = [_tool(tool) for tool in field_of(body, "tools", list, default=[]) or []]
    return Conversation(
        messages=[_message(message) for message in messages],
        tools=[tool for tool in tools if tool is not None],
        sampling=Sampling(
            max_tokens=whole(body, "max_completion_tokens", "max_tokens"),
            temperature=number(body, "temperature"),
            top_p=number(body, "top_p"),
            top_k=whole(body, "top_k"),
            stop=stops(body.get("stop"), "stop"),
            seed=whole(body, "seed"),
        ),
        model=str(body.get("model") or ""),
        tool_choice=_choice(body.get("tool_choice")),
        stream=bool(field_of(body, "stream", bool, default=False)),
    )


def _message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise RequestInvalid("Each message must be an object with a 'role'")
    role = message["role"]
    text = text_of(message.get("content"))
    if role in ("system", "developer"):
        return {"role": "system", "content": text}
    if role == "user":
        return {"role": "user", "content": text}
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": text}
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [_call(call) for call in calls]
        return out
    if role in ("tool", "function"):
        out = {"role": "tool", "content": text}
        for key in ("tool_call_id", "name"):
            if isinstance(message.get(key), str):
                out[key] = message[key]
        return out
    raise RequestInvalid(f"A message has the role {role!r}; roles: system, developer, user, assistant, tool")


def _call(call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise RequestInvalid("Each of an assistant message's tool_calls must have function.name")
    arguments = arguments_object(function.get("arguments"))
    return {"id": call.get("id"), "type": "function", "function": {"name": function["name"], "arguments": arguments}}


def _tool(tool: Any) -> dict[str, Any] | None:
    if not isinstance(tool, dict):
        raise RequestInvalid("Each tool must be an object")
    if tool.get("type", "function") != "function":
        return None
    function = tool.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise RequestInvalid("Each function tool must have function.name")
    return {"type": "function", "function": function}


def _choice(value: Any) -> str:
    if value is None:
        return "auto"
    if isinstance(value, str) and value in ("auto", "none", "required"):
        return value
    if isinstance(value, dict) and isinstance((value.get("function") or {}).get("name"), str):
        return str(value["function"]["name"])
    raise RequestInvalid("The field 'tool_choice' must be auto, none, required or {'type': 'function', ...}")


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in reply.calls
    ]


def _usage(reply: Reply) -> dict[str, int]:
    total = reply.prompt_tokens + reply.completion_tokens
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens, "total_tokens": total}


def answer(reply: Reply, conversation: Conversation) -> dict[str, Any]:
    """The whole ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.calls:
        message["tool_calls"] = _calls(reply)
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}],
        "usage": _usage(reply),
    }


def stream(reply: Reply, conversation: Conversation, body: Mapping[str, Any]) -> Iterator[bytes]:
    """The ``chat.completion.chunk`` events, ``[DONE]`` last; a usage chunk before it when asked."""
    head = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time())}
    head["model"] = reply.model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.content:
        yield chunk({"content": reply.content})
    for index, call in enumerate(_calls(reply)):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, reply.finish_reason)
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        yield sse({**head, "choices": [], "usage": _usage(reply)})
    yield sse("[DONE]")
