"""A local model server as the real ones answer: an OpenAI-compatible ``/v1/chat/completions`` whose model writes
its tool calls in the formats small instruction-tuned models were seen to write (Qwen2.5-Coder 0.5B and 1.5B
under llama.cpp's ``llama-server --jinja``), and fails in the ways those servers fail.

The model plays the sql environment and always ends by submitting the task's gold query (reward 1), so what a
test sees is the format's doing, not the model's skill. The request's ``model`` names the style:

- ``tool_calls``: structured calls (a server whose own parser caught them);
- ``fence``: each call as JSON in a ```` ```json ```` fence after a sentence of prose;
- ``json``: each call as a JSON object in the prose, no fence;
- ``echo``: the first call's arguments are the tool's own JSON schema, twice (a tool without arguments,
  then one with), then fenced calls;
- ``plan``: one reply, a numbered plan in prose with both calls fenced in it;
- ``hermes``: Qwen's and Hermes' ``<tool_call>`` tags;
- ``prose``: never calls a tool (an answer in words);
- ``length``: a reply cut at the token limit (``finish_reason: length``) inside an open ``<tool_call>``;
- ``context``: a fenced call, then llama.cpp's 400 ``exceed_context_size_error`` on the next request;
- ``slow``: answers only when :meth:`LocalModel.release` is called (after the client's timeout).

``tokens`` picks which server's token shape the answers have when ids are asked for: ``llama`` (completion ids in
``logprobs.content[].id``; prompt ids only through ``/apply-template`` + ``/tokenize``), ``sglang``
(``choices[0].prompt_token_ids`` and ``choices[0].meta_info.output_token_logprobs``), or ``None`` (log-probs
without any ids, and no ``/tokenize``). The template and tokenizer are miniatures (a token per byte), kept in
``served`` exactly as the chat route used them, to compare captures with.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.support.model import TASKS, gold

__all__ = ["CONTEXT_ERROR", "STYLES", "LocalModel", "template", "tokenize"]

STYLES = ("tool_calls", "fence", "json", "echo", "plan", "hermes", "prose", "length", "context", "slow")
CONTEXT_ERROR = {
    "error": {
        "code": 400,
        "message": "request (8888 tokens) exceeds the available context size (8192 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 8888,
        "n_ctx": 8192,
    }
}
BOS, EOS = 1, 2
LIST_TABLES_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def template(body: dict[str, Any]) -> str:
    """The chat template in miniature: the tools, then each message, then the assistant's turn."""
    parts = [f"<tools>{json.dumps(body.get('tools') or [], sort_keys=True)}</tools>"]
    for message in body["messages"]:
        calls = json.dumps(message.get("tool_calls") or [], sort_keys=True)
        parts.append(f"<|{message['role']}|>{message.get('content') or ''}{calls}<|end|>")
    return "".join(parts) + "<|assistant|>"


def tokenize(text: str, *, add_special: bool = False) -> list[int]:
    """One token per byte (1000 + byte), after a BOS when ``add_special``."""
    return [BOS] * add_special + [1000 + byte for byte in text.encode()]


def _fenced(name: str, arguments: Any) -> str:
    return f"```json\n{json.dumps({'name': name, 'arguments': arguments})}\n```"


def _structured(turn: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": f"srv-{turn}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class LocalModel:
    """The server (its FastAPI ``app``); ``served`` keeps each answer: the style, the prompt ids the chat route
    tokenized, the completion ids and log-probabilities."""

    def __init__(self, *, tokens: str | None = "llama") -> None:
        self.tokens = tokens
        self.served: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._released = threading.Event()
        by_prompt = {task.prompt: task for task in TASKS}
        self.app = FastAPI()

        @self.app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            style = body["model"]
            task = by_prompt.get(next(m["content"] for m in body["messages"] if m["role"] == "user"))
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
            if task is None:  # the pre-flight check
                return self._answer(body, {"role": "assistant", "content": "OK"}, "stop")
            if style == "slow":
                await anyio.to_thread.run_sync(self._released.wait, 60)
            if style == "context" and turn == 1:
                return JSONResponse(CONTEXT_ERROR, status_code=400)
            message, finish = self._reply(style, turn, gold(task.id))
            return self._answer(body, message, finish)

        @self.app.post("/apply-template")
        async def apply_template(request: Request) -> JSONResponse:
            if self.tokens != "llama":
                return JSONResponse({"detail": "Not Found"}, status_code=404)
            return JSONResponse({"prompt": template(await request.json())})

        @self.app.post("/tokenize")
        async def tokenize_route(request: Request) -> JSONResponse:
            if self.tokens != "llama":
                return JSONResponse({"detail": "Not Found"}, status_code=404)
            body = await request.json()
            return JSONResponse({"tokens": tokenize(body["content"], add_special=bool(body.get("add_special")))})

    def release(self) -> None:
        """Let the ``slow`` answers go (the test is done with them)."""
        self._released.set()

    def _reply(self, style: str, turn: int, sql: str) -> tuple[dict[str, Any], str]:
        """What the model writes on ``turn`` in ``style``, and why it stopped."""
        submit = {"sql": sql}
        if style == "tool_calls":
            call = ("list_tables", {}) if turn == 0 else ("submit_answer", submit)
            return _structured(turn, *call), "tool_calls"
        if style == "prose":
            return {"role": "assistant", "content": "The shop has 60 customers, so the answer is 60."}, "stop"
        if style == "length":
            cut = '<tool_call>\n{"name": "run_query", "arguments": {"sql": "SEL'
            return {"role": "assistant", "content": cut}, "length"
        if style == "plan":
            text = (
                "1. List the tables to see what there is.\n"
                f"{_fenced('list_tables', {})}\n2. Submit the query that answers.\n{_fenced('submit_answer', submit)}"
            )
            return {"role": "assistant", "content": text}, "stop"
        if style == "hermes":
            name, arguments = ("list_tables", {}) if turn == 0 else ("submit_answer", submit)
            text = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
            return {"role": "assistant", "content": text}, "stop"
        calls = [("list_tables", {}), ("submit_answer", submit)]
        if style == "echo":  # the tool list's schemas copied as arguments, then the right calls
            query_schema = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
            calls = [("list_tables", LIST_TABLES_SCHEMA), ("run_query", query_schema), ("submit_answer", submit)]
        name, arguments = calls[min(turn, len(calls) - 1)]
        if style == "json":
            written = json.dumps({"name": name, "arguments": arguments})
            return {"role": "assistant", "content": f"Calling {written}"}, "stop"
        text = f"I will call {name} now.\n{_fenced(name, arguments)}"
        return {"role": "assistant", "content": text}, "stop"

    def _answer(self, body: dict[str, Any], message: dict[str, Any], finish: str) -> JSONResponse:
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        answer: dict[str, Any] = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [choice],
        }
        if not body.get("logprobs"):
            return JSONResponse(answer)
        written = (message.get("content") or "") + json.dumps(message.get("tool_calls") or [], sort_keys=True)
        ids = [*tokenize(written), EOS]
        logprobs = [-((token * 7 + i) % 97) / 13.0 for i, token in enumerate(ids)]
        prompt = tokenize(template(body), add_special=True)  # what the chat route fed the model
        self.served.append({"prompt_ids": prompt, "completion_ids": ids, "logprobs": logprobs})
        entries = [
            {"token": "x", "bytes": [], "logprob": logprob, "top_logprobs": []} for logprob in logprobs
        ]  # as llama.cpp, vLLM and SGLang all give them: no ids
        if self.tokens == "llama":
            for entry, token in zip(entries, ids, strict=True):
                entry["id"] = token
        if self.tokens == "sglang":
            choice["prompt_token_ids"] = prompt
            choice["meta_info"] = {
                "output_token_logprobs": [[lp, token, None] for token, lp in zip(ids, logprobs, strict=True)]
            }
        choice["logprobs"] = {"content": entries}
        return JSONResponse(answer)
