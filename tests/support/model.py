"""A scripted model behind a real OpenAI-compatible ``/v1/chat/completions`` (the protocol is real, the model is
not), for the tests of rollouts, eval and the trainer adapters."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from openenv_mcp.servers.sql import environment
from openenv_mcp.servers.sql.tasks import SqlTask
from tests.support import even_task

__all__ = [
    "TASKS",
    "WRONG",
    "ScriptedModel",
    "call",
    "expected_reward",
    "gold",
    "message_tokens",
    "prompt_tokens",
    "reply",
]

TASKS = environment.tasks()
WRONG = "SELECT 1 WHERE 1 = 0"  # no rows: earns 0 on every task


def gold(task_id: str) -> str:
    task = TASKS.get(task_id)
    assert isinstance(task, SqlTask)
    return task.gold_sql


def expected_reward(seed: int) -> float:
    """What the scripted model earns: the gold answer on even-numbered tasks, nothing on odd ones."""
    task = TASKS.pick(task_id=None, split=None, seed=seed)
    return 1.0 if even_task(task.id) else 0.0


class ScriptedModel:
    """``POST /v1/chat/completions`` with tool calls chosen by script: the protocol is real, the model is not.

    Turn 1 calls a tool that does not exist, turn 2 lists the tables, turn 3 submits (the gold query
    on even-numbered tasks, a wrong one on odd ones), then it answers in words. ``fail_task`` makes
    the endpoint answer 500 for that task. With ``tokens``, a request asking for token ids and
    logprobs (as vLLM takes them) gets them, from :func:`prompt_tokens`' template, as vLLM answers;
    ``captured`` keeps each (prompt_ids, completion_ids, logprobs) answered.
    """

    def __init__(self, fail_task: str | None = None, *, tokens: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.checks: list[dict[str, Any]] = []
        self.fail_task = fail_task
        self.tokens = tokens
        self.captured: list[dict[str, Any]] = []
        by_prompt: dict[str, Any] = {task.prompt: task for task in TASKS}
        self.app = FastAPI()

        @self.app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            messages = body["messages"]
            task = by_prompt.get(next(m["content"] for m in messages if m["role"] == "user"))
            if task is not None and task.id == self.fail_task:
                return JSONResponse({"error": {"message": "the model is overloaded"}}, status_code=500)
            sent = {"authorization": request.headers.get("authorization"), **body}
            if task is None:  # the policy's pre-flight check, before any episode
                self.checks.append(sent)
                message: dict[str, Any] = {"role": "assistant", "content": "OK"}
            else:
                self.requests.append(sent)
                message = scripted_turn(task, sum(1 for m in messages if m["role"] == "assistant"))
            if not (self.tokens and body.get("logprobs") and body.get("return_token_ids")):
                return reply(message)
            ids = [*message_tokens(message), END]
            logprobs = [-((token * 2654435761 + i) % 100003) / 7919.0 for i, token in enumerate(ids)]
            logprobs[-1] = -9999.0  # vLLM's stand-in for minus infinity
            self.captured.append({"prompt_ids": prompt_tokens(messages), "completion_ids": ids, "logprobs": logprobs})
            return reply(message, tokens=self.captured[-1])


def scripted_turn(task: SqlTask, turn: int) -> dict[str, Any]:
    """The scripted model's reply on ``turn`` (0, 1, ...) of ``task``."""
    if turn == 0:
        return call(turn, "drop_everything", "{}")
    if turn == 1:
        return call(turn, "list_tables", "{}")
    if turn == 2:
        sql = gold(task.id) if even_task(task.id) else WRONG
        return call(turn, "submit_answer", json.dumps({"sql": sql}))
    return {"role": "assistant", "content": "I have answered."}


# a chat template in miniature: START role body END per message, then START assistant to generate
START, END, ROLES = 1, 2, {"system": 3, "user": 4, "assistant": 5, "tool": 6}


def message_tokens(message: dict[str, Any]) -> list[int]:
    """The body of a message: its text's bytes and its tool calls' JSON, each byte as one token (1000 + byte)."""
    text = (message.get("content") or "") + json.dumps(message.get("tool_calls") or [], sort_keys=True)
    return [1000 + byte for byte in text.encode()]


def prompt_tokens(messages: list[dict[str, Any]]) -> list[int]:
    ids = [token for m in messages for token in (START, ROLES[m["role"]], *message_tokens(m), END)]
    return [*ids, START, ROLES["assistant"]]


def call(turn: int, name: str, arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def reply(message: dict[str, Any], *, tokens: dict[str, Any] | None = None) -> JSONResponse:
    """A chat completion; with ``tokens``, in vLLM's shape for ``return_token_ids`` and ``logprobs``."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [choice],
    }
    if tokens is not None:
        body["prompt_token_ids"] = tokens["prompt_ids"]
        choice["token_ids"] = tokens["completion_ids"]
        choice["logprobs"] = {
            "content": [
                {"token": f"token_id:{token}", "logprob": logprob, "bytes": None, "top_logprobs": []}
                for token, logprob in zip(tokens["completion_ids"], tokens["logprobs"], strict=True)
            ]
        }
    return JSONResponse(body)
