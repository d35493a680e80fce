"""OpenAI Responses: ``POST /v1/responses``, streamed (the whole event sequence) or whole.

Read: ``instructions``; ``input`` as text or items (``message`` of any role, ``function_call``,
``function_call_output``, ``custom_tool_call``, ``custom_tool_call_output``; ``reasoning`` items are skipped, since
the proxy never writes any); ``tools`` of type ``function``, ``custom`` (free text: shown as a function of one
string ``input``, called back as a ``custom_tool_call``) and ``namespace`` (Codex puts MCP tools in a namespace
such as ``mcp__sql``: each inner tool is shown to the model as ``NAMESPACE__NAME``, and its call item carries
``namespace`` and the inner ``name`` back);
``tool_choice``, ``max_output_tokens``, ``temperature``, ``top_p``. ``reasoning``, ``include``, ``store``,
``prompt_cache_key``, ``parallel_tool_calls``, ``text`` and the rest are accepted and left alone; other tool types
(built-in web search, shells) are not shown to the model. An input item of another type is refused by name.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from openenv_mcp.proxy.conversation import Conversation, Reply, arguments_object, field_of, new_id, text_of
from openenv_mcp.proxy.errors import RequestInvalid
from openenv_mcp.proxy.upstream import Sampling
from openenv_mcp.proxy.wires.common import number, openai_error, sse, whole

__all__ = ["NAME", "answer", "error", "read", "stream"]

NAME = "responses"
error = openai_error
_SKIPPED_ITEMS = ("reasoning",)
_FREE_TEXT = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's input, as free text"}},
    "required": ["input"],
}


def read(body: Mapping[str, Any]) -> Conversation:
    """A Responses request as a conversation."""
    tools, names, custom = _tools(field_of(body, "tools", list, default=[]) or [])
    messages: list[dict[str, Any]] = []
    instructions = field_of(body, "instructions", str)
    if instructions:
        messages.append({"role": "system", "content": instructions})
    given = body.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        for item in given:
            _item(item, messages)
    else:
        raise RequestInvalid("The field 'input' must be text or a list of input items")
    choice = body.get("tool_choice", "auto")
    if isinstance(choice, dict):
        choice = str(choice.get("name") or "required")
    return Conversation(
        messages=messages,
        tools=tools,
        sampling=Sampling(
            max_tokens=whole(body, "max_output_tokens"),
            temperature=number(body, "temperature"),
            top_p=number(body, "top_p"),
        ),
        model=str(body.get("model") or ""),
        tool_choice=choice if isinstance(choice, str) else "auto",
        stream=bool(field_of(body, "stream", bool, default=False)),
        names=names,
        custom=custom,
    )


def _tools(given: list[Any]) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]], frozenset[str]]:
    tools: list[dict[str, Any]] = []
    names: dict[str, tuple[str, str]] = {}
    custom: set[str] = set()
    for tool in given:
        if not isinstance(tool, dict):
            raise RequestInvalid("Each tool must be an object")
        if tool.get("type") in ("function", "custom"):
            tools.append(_declared(tool, None, names, custom))
        elif tool.get("type") == "namespace":
            namespace = tool.get("name")
            if not isinstance(namespace, str) or not isinstance(tool.get("tools"), list):
                raise RequestInvalid("A namespace tool must have a 'name' and a list of 'tools'")
            for inner in tool["tools"]:
                if isinstance(inner, dict) and inner.get("type", "function") in ("function", "custom"):
                    tools.append(_declared(inner, namespace, names, custom))
    return tools, names, frozenset(custom)


def _declared(
    tool: Mapping[str, Any], namespace: str | None, names: dict[str, tuple[str, str]], custom: set[str]
) -> dict[str, Any]:
    """A function or custom tool (in ``namespace``) as the function the model is shown."""
    flat = _flat(namespace, tool.get("name")) if namespace else tool.get("name")
    if not isinstance(flat, str):
        raise RequestInvalid("Each function tool must have a 'name'")
    if namespace:
        names[flat] = (namespace, str(tool["name"]))
    if tool.get("type") == "custom":
        custom.add(flat)
        return _function({**tool, "parameters": _FREE_TEXT}, flat)
    return _function(tool, flat)


def _flat(namespace: str, name: Any) -> str:
    if not isinstance(name, str):
        raise RequestInvalid("Each function tool must have a 'name'")
    return f"{namespace}__{name}"


def _function(tool: Mapping[str, Any], name: Any) -> dict[str, Any]:
    if not isinstance(name, str):
        raise RequestInvalid("Each function tool must have a 'name'")
    function: dict[str, Any] = {"name": name, "parameters": tool.get("parameters") or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _item(item: Any, messages: list[dict[str, Any]]) -> None:
    if not isinstance(item, dict):
        raise RequestInvalid("Each input item must be an object")
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            raise RequestInvalid(f"An input message has the role {role!r}; roles: user, system, developer, assistant")
        messages.append({"role": "system" if role == "developer" else role, "content": text_of(item.get("content"))})
    elif kind in ("function_call", "custom_tool_call"):
        name = item.get("name")
        namespace = item.get("namespace")
        flat = _flat(namespace, name) if isinstance(namespace, str) else name
        if not isinstance(flat, str):
            raise RequestInvalid(f"A {kind} item must have a 'name'")
        arguments = {"input": item.get("input")} if kind == "custom_tool_call" else item.get("arguments")
        call = {"id": item.get("call_id"), "type": "function"}
        call["function"] = {"name": flat, "arguments": arguments_object(arguments)}
        if not messages or messages[-1]["role"] != "assistant":
            messages.append({"role": "assistant", "content": ""})
        messages[-1].setdefault("tool_calls", []).append(call)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        text = output if isinstance(output, str) else text_of(output)
        messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
    elif kind not in _SKIPPED_ITEMS:
        raise RequestInvalid(
            f"The proxy does not take input items of type {kind!r}; it takes message, function_call, "
            "function_call_output, custom_tool_call, custom_tool_call_output and reasoning"
        )


def _output(reply: Reply, conversation: Conversation) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.content or not reply.calls:
        part = {"type": "output_text", "text": reply.content, "annotations": [], "logprobs": []}
        items.append(
            {"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant", "content": [part]}
        )
    for call in reply.calls:
        if call.name in conversation.custom:
            given = call.arguments_object.get("input")
            item = {"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": call.id, "name": call.name}
            item.update(input=given if isinstance(given, str) else call.arguments, status="completed")
        else:
            item = {"type": "function_call", "id": new_id("fc_"), "call_id": call.id, "name": call.name}
            item.update(arguments=call.arguments, status="completed")
        if call.name in conversation.names:
            item["namespace"], item["name"] = conversation.names[call.name]
        items.append(item)
    return items


def _response(reply: Reply, conversation: Conversation, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    usage = {
        "input_tokens": reply.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    return {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": reply.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": conversation.tool_choice,
        "tools": [],
        "error": None,
        "incomplete_details": incomplete,
        "usage": usage if status != "in_progress" else None,
    }


def answer(reply: Reply, conversation: Conversation) -> dict[str, Any]:
    """The whole ``response`` object."""
    status = "incomplete" if reply.finish_reason == "length" else "completed"
    return _response(reply, conversation, _output(reply, conversation), status)


def stream(reply: Reply, conversation: Conversation, body: Mapping[str, Any]) -> Iterator[bytes]:
    """The Responses event sequence, from ``response.created`` to ``response.completed``."""
    counter = iter(range(1 << 30))
    final = answer(reply, conversation)
    started = {**final, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(counter), **fields}, kind)

    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(final["output"]):
        yield from _item_events(event, index, item)
    yield event("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)


def _item_events(event: Any, index: int, item: dict[str, Any]) -> Iterator[bytes]:
    if item["type"] == "message":
        part = item["content"][0]
        yield event(
            "response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []}
        )
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        yield event("response.content_part.added", **where, part={**part, "text": ""})
        if part["text"]:
            yield event("response.output_text.delta", **where, delta=part["text"], logprobs=[])
        yield event("response.output_text.done", **where, text=part["text"], logprobs=[])
        yield event("response.content_part.done", **where, part=part)
    elif item["type"] == "custom_tool_call":
        yield event(
            "response.output_item.added", output_index=index, item={**item, "status": "in_progress", "input": ""}
        )
        where = {"item_id": item["id"], "output_index": index}
        yield event("response.custom_tool_call_input.delta", **where, delta=item["input"])
        yield event("response.custom_tool_call_input.done", **where, input=item["input"])
    else:
        yield event(
            "response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""}
        )
        where = {"item_id": item["id"], "output_index": index}
        yield event("response.function_call_arguments.delta", **where, delta=item["arguments"])
        yield event("response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"])
    yield event("response.output_item.done", output_index=index, item=item)
