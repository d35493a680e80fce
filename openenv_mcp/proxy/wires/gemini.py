"""Gemini: ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse``, ``:generateContent`` and ``:countTokens``.

Read: ``systemInstruction``, ``contents`` (roles ``user`` and ``model``; parts ``text``, ``functionCall``,
``functionResponse``; ``thought`` parts skipped), ``tools[].functionDeclarations`` (``parameters`` or
``parametersJsonSchema``; Google Search and code execution are not shown to the model),
``toolConfig.functionCallingConfig.mode``, ``generationConfig`` (``maxOutputTokens``, ``temperature``, ``topP``,
``topK``, ``stopSequences``, ``seed``). The proxy gives each call it answers an ``id`` (Gemini's ``FunctionCall``
has the field), which shows the model its own reply again when the client sends it back; a call without one is
given one in order, and a response without one is matched to its call by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.proxy.conversation import Conversation, Reply, field_of, new_id
from openenv_mcp.proxy.errors import RequestInvalid, http_status
from openenv_mcp.proxy.upstream import Sampling
from openenv_mcp.proxy.wires.common import number, sse, stops, whole

__all__ = ["NAME", "answer", "error", "read", "stream"]

NAME = "gemini"
_STATUS = {
    400: "INVALID_ARGUMENT",
    404: "NOT_FOUND",
    413: "INVALID_ARGUMENT",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
_MODES = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "auto"}


def error(failure: OpenEnvError) -> dict[str, Any]:
    """Google's error body."""
    status = http_status(failure)
    return {"error": {"code": status, "message": failure.message, "status": _STATUS.get(status, "INTERNAL")}}


def read(body: Mapping[str, Any], *, model: str = "", stream: bool = False) -> Conversation:
    """A generateContent request as a conversation (``model`` from the path)."""
    contents = field_of(body, "contents", list)
    if not contents:
        raise RequestInvalid("The field 'contents' must be a non-empty list of contents")
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        messages.append(
            {"role": "system", "content": _text(system.get("parts") if isinstance(system, dict) else system)}
        )
    pending: dict[str, list[str]] = {}
    for content in contents:
        messages += _content(content, pending)
    config = field_of(body, "generationConfig", dict, default={}) or {}
    calling = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode", "AUTO")
    return Conversation(
        messages=messages,
        tools=_tools(field_of(body, "tools", list, default=[]) or []),
        sampling=Sampling(
            max_tokens=whole(config, "maxOutputTokens"),
            temperature=number(config, "temperature"),
            top_p=number(config, "topP"),
            top_k=whole(config, "topK"),
            stop=stops(config.get("stopSequences"), "stopSequences"),
            seed=whole(config, "seed"),
        ),
        model=model,
        tool_choice=_MODES.get(str(calling).upper(), "auto"),
        stream=stream,
    )


def _text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, dict):
        parts = [parts]
    if not isinstance(parts, list):
        raise RequestInvalid("A systemInstruction must be text or have 'parts'")
    return "".join(str(part.get("text") or "") for part in parts if isinstance(part, dict) and not part.get("thought"))


def _content(content: Any, pending: dict[str, list[str]]) -> list[dict[str, Any]]:
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        raise RequestInvalid("Each content must be an object with a list of 'parts'")
    role = "assistant" if content.get("role") == "model" else "user"
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in content["parts"]:
        if not isinstance(part, dict):
            raise RequestInvalid("Each part must be an object")
        if part.get("thought"):
            continue
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            call_id = str(call.get("id") or new_id("call_"))
            pending.setdefault(str(call.get("name")), []).append(call_id)
            arguments = call.get("args") if isinstance(call.get("args"), dict) else {}
            calls.append(
                {"id": call_id, "type": "function", "function": {"name": call.get("name"), "arguments": arguments}}
            )
        elif isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"]
            waiting = pending.get(str(response.get("name"))) or []
            answered = response.get("id") or (waiting.pop(0) if waiting else None)
            output = response.get("response")
            answer_text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            results.append(
                {"role": "tool", "tool_call_id": answered, "name": response.get("name"), "content": answer_text}
            )
        else:
            raise RequestInvalid(
                f"The proxy does not take parts with {sorted(part)}; it takes text, functionCall and functionResponse"
            )
    if role == "assistant":
        reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
        if calls:
            reply["tool_calls"] = calls
        return [reply]
    return [*results, *([{"role": "user", "content": "".join(texts)}] if texts or not results else [])]


def _tools(given: list[Any]) -> list[dict[str, Any]]:
    tools = []
    for tool in given:
        if not isinstance(tool, dict):
            raise RequestInvalid("Each tool must be an object")
        for declaration in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
            if not isinstance(declaration, dict) or not isinstance(declaration.get("name"), str):
                raise RequestInvalid("Each function declaration must have a 'name'")
            parameters = declaration.get("parametersJsonSchema") or declaration.get("parameters") or {"type": "object"}
            function = {"name": declaration["name"], "parameters": parameters}
            if isinstance(declaration.get("description"), str):
                function["description"] = declaration["description"]
            tools.append({"type": "function", "function": function})
    return tools


def answer(reply: Reply, conversation: Conversation) -> dict[str, Any]:
    """The whole ``GenerateContentResponse``."""
    parts: list[dict[str, Any]] = []
    if reply.content or not reply.calls:
        parts.append({"text": reply.content})
    parts += [
        {"functionCall": {"id": call.id, "name": call.name, "args": call.arguments_object}} for call in reply.calls
    ]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": _FINISH[reply.finish_reason], "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": reply.prompt_tokens,
            "candidatesTokenCount": reply.completion_tokens,
            "totalTokenCount": reply.prompt_tokens + reply.completion_tokens,
        },
        "modelVersion": reply.model,
        "responseId": new_id(""),
    }


def stream(reply: Reply, conversation: Conversation, body: Mapping[str, Any]) -> Iterator[bytes]:
    """One SSE chunk holding the whole candidate (Gemini's stream is a series of whole responses)."""
    yield sse(answer(reply, conversation))


def counted(tokens: int) -> dict[str, Any]:
    """The ``countTokens`` answer."""
    return {"totalTokens": tokens}
