"""The capture proxy's wire formats, driven by the real OpenAI and Anthropic SDKs (Gemini's over raw HTTP): the
replies, the SSE event sequences, tool calls there and back, and what the model was shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.support.token_model import ProxyStack, detokenize, proxy_stack

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_tables",
            "description": "List the tables.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]
MESSAGES = [{"role": "system", "content": "Answer with the tools."}, {"role": "user", "content": "How many customers?"}]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyStack]:
    with proxy_stack(tmp_path_factory.mktemp("wires")) as made:
        yield made


def shown(stack: ProxyStack) -> str:
    """The prompt of the model's last generation, as text."""
    return detokenize(stack.model.served[-1]["prompt_ids"])


def events(response: httpx.Response) -> list[tuple[str | None, dict[str, Any] | str]]:
    """The (event, data) pairs of an SSE body."""
    found: list[tuple[str | None, dict[str, Any] | str]] = []
    for block in response.text.split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = lines["data"]
        found.append((lines.get("event"), data if data == "[DONE]" else json.loads(data)))
    return found


def test_chat_completions_answer_a_call_and_take_it_back_with_its_result(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    first = client.chat.completions.create(model="qwen", messages=MESSAGES, tools=TOOLS)  # type: ignore[arg-type]
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "list_tables" and json.loads(call.function.arguments) == {}
    assert first.model == "qwen" and first.usage is not None
    assert first.usage.completion_tokens == len(stack.model.served[-1]["completion_ids"])
    history = [
        *MESSAGES,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "customers, orders"},
    ]
    second = client.chat.completions.create(model="qwen", messages=history, tools=TOOLS)  # type: ignore[arg-type]
    assert second.choices[0].message.content == "The answer is in the tool's result."
    assert second.choices[0].finish_reason == "stop"
    prompt = shown(stack)
    reply = '<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call>'
    assert f"<|im_start|>assistant\n{reply}<|im_end|>\n<|im_start|>user\n<tool_response>" in prompt
    assert "<tool_response>\ncustomers, orders\n</tool_response>" in prompt


def test_chat_completions_stream_their_chunks_then_usage_then_done(stack: ProxyStack) -> None:
    episode = stack.episode()
    body = {"model": "qwen", "messages": MESSAGES, "tools": TOOLS, "stream": True}
    body["stream_options"] = {"include_usage": True}
    answer = httpx.post(f"{stack.proxy.base_url(episode)}/chat/completions", json=body, timeout=30)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    chunks = events(answer)
    assert chunks[-1] == (None, "[DONE]")
    data = [chunk for _, chunk in chunks[:-1] if isinstance(chunk, dict)]
    assert data[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert data[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "list_tables"
    assert data[2]["choices"][0]["finish_reason"] == "tool_calls"
    assert data[3]["choices"] == [] and data[3]["usage"]["prompt_tokens"] == len(stack.model.served[-1]["prompt_ids"])
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    streamed = client.chat.completions.create(model="qwen", messages=MESSAGES, tools=TOOLS, stream=True)  # type: ignore[call-overload]
    calls = [call for chunk in streamed for choice in chunk.choices for call in choice.delta.tool_calls or []]
    assert [call.function.name for call in calls] == ["list_tables"]


def test_stop_words_and_tool_choice_none_reach_the_model_and_the_reply(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    stack.model.script.append("Thought: list them\nObservation: tables")
    cut = client.chat.completions.create(model="q", messages=MESSAGES, tools=TOOLS, stop=["Observation:"])  # type: ignore[arg-type]
    assert cut.choices[0].message.content == "Thought: list them\n" and cut.choices[0].finish_reason == "stop"
    stack.model.script.append('<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call>')
    kept = client.chat.completions.create(model="q", messages=MESSAGES, tools=TOOLS, tool_choice="none")  # type: ignore[arg-type]
    assert kept.choices[0].message.tool_calls is None
    assert kept.choices[0].message.content == '<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call>'
    stack.model.script.append("a" * 50)
    short = client.chat.completions.create(model="q", messages=MESSAGES, tools=TOOLS, max_tokens=5)  # type: ignore[arg-type]
    assert short.choices[0].finish_reason == "length" and short.choices[0].message.content == "aaaaa"


NAMESPACE_TOOLS = [
    {
        "type": "namespace",
        "name": "mcp__sql",
        "description": "The sql server's tools",
        "tools": [{"type": "function", "name": "list_tables", "parameters": {"type": "object", "properties": {}}}],
    },
    {"type": "web_search"},
]


def test_responses_stream_the_whole_event_sequence_with_the_namespace_on_the_call(stack: ProxyStack) -> None:
    episode = stack.episode()
    body = {
        "model": "qwen",
        "instructions": "Answer with the tools.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "How many?"}]}],
        "tools": NAMESPACE_TOOLS,
        "stream": True,
        "store": False,
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "abc",
        "parallel_tool_calls": False,
    }
    answer = httpx.post(f"{stack.proxy.base_url(episode)}/responses", json=body, timeout=30)
    sequence = events(answer)
    assert [name for name, _ in sequence] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in sequence if isinstance(data, dict)] == list(range(7))
    item = sequence[5][1]["item"]  # type: ignore[index]
    assert (item["type"], item["namespace"], item["name"], item["arguments"]) == (
        "function_call",
        "mcp__sql",
        "list_tables",
        "{}",
    )
    assert '"name": "mcp__sql__list_tables"' in shown(stack) and "web_search" not in shown(stack)
    completed = sequence[-1][1]["response"]  # type: ignore[index]
    assert completed["status"] == "completed" and completed["output"] == [item]
    history = [
        *body["input"],  # type: ignore[list-item]
        {k: item[k] for k in ("type", "call_id", "name", "namespace", "arguments")},
        {"type": "function_call_output", "call_id": item["call_id"], "output": "customers"},
        {"type": "reasoning", "summary": [], "encrypted_content": "x"},
    ]
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    with client.responses.stream(model="qwen", input=history, tools=NAMESPACE_TOOLS) as stream:  # type: ignore[arg-type]
        final = stream.get_final_response()
    assert final.output_text == "The answer is in the tool's result."
    assert '{"name": "mcp__sql__list_tables", "arguments": {}}' in shown(stack)


def test_responses_without_streaming_answer_a_response_object(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    stack.model.script.append("Just text.")
    answer = client.responses.create(model="qwen", input="Say it.", tools=NAMESPACE_TOOLS)  # type: ignore[arg-type]
    assert answer.status == "completed" and answer.output_text == "Just text."
    assert answer.usage is not None and answer.usage.output_tokens == len(stack.model.served[-1]["completion_ids"])


CLAUDE_TOOLS = [
    {"name": "mcp__sql__list_tables", "description": "List the tables.", "input_schema": {"type": "object"}},
    {"type": "web_search_20250305", "name": "web_search"},
]


def test_messages_stream_anthropics_event_sequence_and_tolerate_claude_codes_fields(stack: ProxyStack) -> None:
    episode = stack.episode()
    body = {
        "model": "claude-x",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "system", "content": "Reminder: be brief."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "How many?", "cache_control": {"type": "ephemeral"}}],
            },
        ],
        "tools": CLAUDE_TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "output_config": {"effort": "low"},
        "metadata": {"user_id": "u"},
    }
    answer = httpx.post(f"{stack.proxy.base_url(episode, v1=False)}/v1/messages?beta=true", json=body, timeout=30)
    sequence = events(answer)
    assert [name for name, _ in sequence] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(isinstance(data, dict) and data["type"] == name for name, data in sequence)
    block = sequence[1][1]["content_block"]  # type: ignore[index]
    assert block["type"] == "tool_use" and block["name"] == "mcp__sql__list_tables" and block["input"] == {}
    assert sequence[3][1]["delta"] == {"type": "input_json_delta", "partial_json": "{}"}  # type: ignore[index]
    assert sequence[5][1]["delta"]["stop_reason"] == "tool_use"  # type: ignore[index]
    prompt = shown(stack)
    assert prompt.startswith("<|im_start|>system\nYou are Claude Code.\n\n# Tools")
    assert "<|im_start|>system\nReminder: be brief.<|im_end|>" in prompt and "web_search" not in prompt


def test_messages_take_tool_results_back_through_the_anthropic_sdk(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = anthropic.Anthropic(base_url=stack.proxy.base_url(episode, v1=False), api_key="unused", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "How many?"}]
    with client.messages.stream(model="c", max_tokens=100, messages=messages, tools=CLAUDE_TOOLS) as stream:  # type: ignore[arg-type]
        first = stream.get_final_message()
    use = first.content[0]
    assert first.stop_reason == "tool_use" and use.type == "tool_use" and use.name == "mcp__sql__list_tables"
    messages += [
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": ""}, use.model_dump()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "customers"}]},
    ]
    second = client.messages.create(model="c", max_tokens=100, messages=messages, tools=CLAUDE_TOOLS)  # type: ignore[arg-type]
    assert second.stop_reason == "end_turn" and second.content[0].text == "The answer is in the tool's result."  # type: ignore[union-attr]
    assert "<tool_response>\ncustomers\n</tool_response>" in shown(stack)
    counted = client.messages.count_tokens(model="c", messages=messages, tools=CLAUDE_TOOLS)  # type: ignore[arg-type]
    assert counted.input_tokens == len(stack.model.served[-1]["prompt_ids"])


def test_gemini_streams_its_candidates_and_takes_function_responses_back(stack: ProxyStack) -> None:
    episode = stack.episode()
    url = f"{stack.proxy.base_url(episode, v1=False)}/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    body: dict[str, Any] = {
        "systemInstruction": {"parts": [{"text": "Answer with the tools."}]},
        "contents": [{"role": "user", "parts": [{"text": "How many?"}]}],
        "tools": [
            {"functionDeclarations": [{"name": "mcp_sql_list_tables", "parametersJsonSchema": {"type": "object"}}]}
        ],
        "generationConfig": {"temperature": 0, "maxOutputTokens": 200},
    }
    sequence = events(httpx.post(url, json=body, timeout=30))
    assert len(sequence) == 1
    candidate = sequence[0][1]["candidates"][0]  # type: ignore[index]
    (part,) = candidate["content"]["parts"]
    assert part["functionCall"]["name"] == "mcp_sql_list_tables" and part["functionCall"]["args"] == {}
    assert part["functionCall"]["id"].startswith("call_")  # echoed back, it shows the model its own reply again
    assert candidate["finishReason"] == "STOP"
    body["contents"] += [
        candidate["content"],
        {"role": "user", "parts": [{"functionResponse": {"name": "mcp_sql_list_tables", "response": {"output": "t"}}}]},
    ]
    whole = httpx.post(url.replace(":streamGenerateContent?alt=sse", ":generateContent"), json=body, timeout=30)
    assert whole.json()["candidates"][0]["content"]["parts"] == [{"text": "The answer is in the tool's result."}]
    assert '<tool_response>\n{"output": "t"}\n</tool_response>' in shown(stack)
    assert [row["segment"] for row in stack.proxy.turns(episode)] == [0, 0]
    counted = httpx.post(url.replace(":streamGenerateContent?alt=sse", ":countTokens"), json=body, timeout=30)
    assert counted.json() == {"totalTokens": len(stack.model.served[-1]["prompt_ids"])}


def test_models_are_listed_for_clients_that_ask_first(stack: ProxyStack) -> None:
    listed = httpx.get(f"{stack.proxy.url}/v1/models", timeout=30).json()
    assert [model["id"] for model in listed["data"]] == ["stand-in-qwen.gguf"]


def test_responses_custom_tools_take_free_text_and_come_back_as_custom_tool_calls(stack: ProxyStack) -> None:
    episode = stack.episode()
    tools = [{"type": "custom", "name": "apply_patch", "description": "Edit files.", "format": {"type": "text"}}]
    stack.model.script.append(
        '<tool_call>\n{"name": "apply_patch", "arguments": {"input": "*** Begin Patch\\n*** End Patch"}}\n</tool_call>'
    )
    body = {"model": "qwen", "input": "Fix it.", "tools": tools, "stream": True}
    sequence = events(httpx.post(f"{stack.proxy.base_url(episode)}/responses", json=body, timeout=30))
    assert [name for name, _ in sequence][2:6] == [
        "response.output_item.added",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.output_item.done",
    ]
    item = sequence[5][1]["item"]  # type: ignore[index]
    assert (item["type"], item["name"], item["input"]) == (
        "custom_tool_call",
        "apply_patch",
        "*** Begin Patch\n*** End Patch",
    )
    assert '"required": ["input"]' in shown(stack)
    history = [
        {"type": "message", "role": "user", "content": "Fix it."},
        {"type": "custom_tool_call", "call_id": item["call_id"], "name": "apply_patch", "input": item["input"]},
        {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "Done!"},
    ]
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    client.responses.create(model="qwen", input=history, tools=tools)  # type: ignore[arg-type]
    assert '"arguments": {"input": "*** Begin Patch\\n*** End Patch"}}' in shown(stack)
    assert "<tool_response>\nDone!\n</tool_response>" in shown(stack)
