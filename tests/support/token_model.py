"""A token-level stand-in for llama.cpp's ``llama-server``: the routes the capture proxy drives, answered as the
real server answers them, with a deterministic model.

- ``GET /props``: Qwen 2.5's chat template (tools in ``<tools>``, calls in ``<tool_call>`` tags) and its tokens;
- ``POST /tokenize`` (``parse_special``: the special tokens are one id each, else every byte is one) and
  ``POST /detokenize``;
- ``POST /completion`` with a prompt of ids: the sampled ids (``tokens``), ``completion_probabilities`` (an
  ``id``, ``token``, ``bytes`` and ``logprob`` per sampled token, the end-of-turn token included with an empty
  ``token`` and no ``bytes``), ``content`` (without it), ``stop_type`` (``eos``, ``limit``, ``word``); a stop
  word's tokens are in ``tokens`` but not in ``content`` nor the probabilities; a prompt longer than the context
  is llama.cpp's 400 ``exceed_context_size_error``. (All as llama.cpp's build 11434 answers.)

The model reads its prompt back as text and answers by :attr:`TokenModel.script` when one is queued, else: the
first tool listed (or the first whose name ends with :attr:`TokenModel.tool`), called without arguments, when no
tool has answered yet (a ``tool_search`` for it where only that is listed, as Qwen Code defers its MCP tools, and
the tool once found); a sentence after a tool answered (a ``final_answer`` call where that tool is listed, as
smolagents needs); a title when the prompt has no tools. ``served`` keeps every generation (prompt ids, completion
ids, log-probs) to compare a capture with; ``delay`` makes each answer wait (a slow server); ``n_ctx`` is the
context (a byte is a token here, so a harness's 20k-token prompt needs about 100k).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

__all__ = [
    "QWEN_TEMPLATE",
    "SPECIAL",
    "ProxyStack",
    "TokenModel",
    "detokenize",
    "logprob",
    "proxy_stack",
    "stored_episode",
    "tokenize",
]

# Qwen 2.5 Instruct's chat template (as its tokenizer_config.json and its GGUF files carry it)
QWEN_TEMPLATE = (Path(__file__).parent / "qwen2_5_chat_template.jinja").read_text()

SPECIAL = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
_PIECES = {token: text for text, token in SPECIAL.items()}
_SPLIT = re.compile("(" + "|".join(re.escape(text) for text in SPECIAL) + ")")
EOS = SPECIAL["<|im_end|>"]
N_CTX = 8192


def tokenize(text: str, *, parse_special: bool = True) -> list[int]:
    """A special token is one id; every other byte is one (1000 + the byte)."""
    ids: list[int] = []
    for part in _SPLIT.split(text) if parse_special else [text]:
        if part in SPECIAL and parse_special:
            ids.append(SPECIAL[part])
        else:
            ids += [1000 + byte for byte in part.encode()]
    return ids


def _piece(token: int) -> bytes:
    return _PIECES[token].encode() if token in _PIECES else bytes([token - 1000])


def detokenize(ids: list[int]) -> str:
    return b"".join(_piece(token) for token in ids).decode("utf-8", errors="replace")


def logprob(token: int, position: int) -> float:
    """The stand-in's log-probability of sampling ``token`` at ``position`` of a reply."""
    return -(((token * 7 + position) % 97) / 13.0) - 0.001


class TokenModel:
    """The stand-in server (its FastAPI ``app``)."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.served: list[dict[str, Any]] = []
        self.delay = 0.0
        self.tool: str | None = None  # call the first listed tool whose name ends so (default: the first)
        self.n_ctx = N_CTX  # a byte is a token here: harnesses whose prompts are 20k tokens need 100k
        self.app = FastAPI()
        self.app.get("/props")(self._props)
        self.app.post("/tokenize")(self._tokenize)
        self.app.post("/detokenize")(self._detokenize)
        self.app.post("/completion")(self._completion)

    async def _props(self) -> JSONResponse:
        return JSONResponse(
            {
                "chat_template": QWEN_TEMPLATE,
                "bos_token": "<|endoftext|>",
                "eos_token": "<|im_end|>",
                "model_path": "/models/stand-in-qwen.gguf",
                "default_generation_settings": {"n_ctx": self.n_ctx},
            }
        )

    async def _tokenize(self, request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"tokens": tokenize(body["content"], parse_special=bool(body.get("parse_special")))})

    async def _detokenize(self, request: Request) -> JSONResponse:
        return JSONResponse({"content": detokenize((await request.json())["tokens"])})

    async def _completion(self, request: Request) -> JSONResponse:
        body = await request.json()
        prompt = body["prompt"]
        if self.delay:
            await anyio.sleep(self.delay)
        if len(prompt) > self.n_ctx:
            message = f"request ({len(prompt)} tokens) exceeds the available context size ({self.n_ctx} tokens)"
            error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
            return JSONResponse({"error": error}, status_code=400)
        text = self.script.pop(0) if self.script else self._reply(detokenize(prompt))
        return JSONResponse(self._generate(prompt, text, body))

    def _reply(self, prompt: str) -> str:
        listed = list(re.finditer(r'^\{"type": "function", "function": \{"name": "([^"]+)"', prompt, re.MULTILINE))
        if not listed:  # (the template writes one tool a line; a harness's own prompt may hold <tools> too)
            return "A short title"
        names = [match.group(1) for match in listed]
        wanted = [name for name in names if self.tool is not None and name.endswith(self.tool)]
        conversation = prompt[listed[-1].end() :]
        last_turn = prompt.rsplit("<|im_start|>", 2)[-2]
        if "<tool_response>" in last_turn or "Observation:" in last_turn:  # smolagents writes results as text
            if wanted and not re.search(rf"[\"']name[\"']: [\"']{re.escape(wanted[0])}[\"']", conversation):
                return _call(wanted[0], {})  # found by a tool search (Qwen Code defers MCP tools behind one)
            if "final_answer" in names:  # smolagents' agent ends only through its final_answer tool
                return _call("final_answer", {"answer": "In the result."})
            return "The answer is in the tool's result."
        if not wanted and self.tool is not None and "tool_search" in names:
            return _call("tool_search", {"query": self.tool})
        return _call((wanted or names)[0], {})

    def _generate(self, prompt: list[int], text: str, body: dict[str, Any]) -> dict[str, Any]:
        stop_type, word, cut = "eos", "", []
        for stop in body.get("stop") or []:
            if stop in text:
                cut = tokenize(stop, parse_special=False)  # sampled, then cut from the text and the probabilities
                text, stop_type, word = text[: text.index(stop)], "word", stop
        ids = tokenize(text, parse_special=False)
        limit = body.get("n_predict", -1)
        if 0 <= limit < len(ids) + (stop_type == "eos"):
            ids, stop_type = ids[:limit], "limit"
        elif stop_type == "eos":
            ids = [*ids, EOS]
        logprobs = [logprob(token, position) for position, token in enumerate(ids)]
        self.served.append({"prompt_ids": list(prompt), "completion_ids": ids, "logprobs": logprobs, "at": time.time()})
        entries = [
            {  # as llama.cpp gives them: a special token (the end of the turn) without its text or bytes
                "id": token,
                "token": "" if token in _PIECES else _piece(token).decode("utf-8", errors="replace"),
                "bytes": [] if token in _PIECES else list(_piece(token)),
                "logprob": value,
                "top_logprobs": [{"id": token, "token": "", "bytes": [], "logprob": value}],
            }
            for token, value in zip(ids, logprobs, strict=True)
        ]
        content = detokenize([token for token in ids if token != EOS])
        return {
            "content": content,
            "tokens": ids + cut,
            "stop": True,
            "stop_type": stop_type,
            "stopping_word": word,
            "tokens_evaluated": len(prompt),
            "tokens_predicted": len(ids),
            "completion_probabilities": entries,
        }


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def standin_app() -> FastAPI:
    """A fresh stand-in's app (``uvicorn --factory tests.support.token_model:standin_app``: the benchmark's)."""
    return TokenModel().app


@dataclass
class ProxyStack:
    """A capture proxy in front of a :class:`TokenModel`, beside a recording sql server, sharing one store."""

    model: TokenModel
    upstream: str
    env_url: str
    proxy: Any  # openenv_mcp.proxy.CaptureProxy
    store: str
    prompts: dict[str, str] = field(default_factory=dict)  # each episode's task prompt

    def episode(self) -> str:
        """A new episode of the sql server (its id), once the server's recorder has stored it."""
        answer = httpx.post(f"{self.env_url}/reset", json={"seed": 1}, timeout=30)
        answer.raise_for_status()
        episode = str(answer.json()["episode_id"])
        self.prompts[episode] = answer.json()["observation"]["content"][0]["text"]
        from openenv_mcp.trajectories.store import TrajectoryStore

        store = TrajectoryStore(self.store)  # the server's recorder writes the episode within its flush interval
        try:
            deadline = time.monotonic() + 10
            while store.episode_server(episode) is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the server did not record episode {episode} within 10 s")
                time.sleep(0.05)
        finally:
            store.close()
        return episode

    def step(self, episode_id: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        action = {"action": {"tool": tool, "arguments": arguments or {}}}
        answer = httpx.post(f"{self.env_url}/step", json=action, headers={"X-Episode-Id": episode_id}, timeout=30)
        answer.raise_for_status()
        return dict(answer.json())

    def exported(self, episode_id: str, *, steps: int = 0) -> dict[str, Any]:
        """The episode's record from ``openenv-mcp trajectories export``, once its ``steps`` are stored (10 s)."""
        from openenv_mcp.cli import main

        deadline = time.monotonic() + 10
        while True:
            output = io.StringIO()
            with contextlib.redirect_stdout(output):
                assert main(["trajectories", "export", "--url", self.store]) == 0
            records = [json.loads(line) for line in output.getvalue().splitlines()]
            found = [record for record in records if record["episode_id"] == episode_id]
            if found and len(found[0]["rewards"]) >= steps:
                return found[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"episode {episode_id} with {steps} steps not exported within 10 s: {found}")
            time.sleep(0.1)


def stored_episode(store: str, episode_id: str) -> None:
    """An episode row in ``store``, as a recording server's reset writes it (for stores no server runs on)."""
    from openenv_mcp.trajectories.store import TrajectoryStore

    opened = TrajectoryStore(store)
    opened.create()
    toolset = opened.save_toolset(server="sql", description="d", tools=[])
    row = {"id": episode_id[:32], "episode_id": episode_id, "server": "sql", "toolset_id": toolset, "task_id": "x"}
    row.update(split="test", seed=0, prompt="p", max_steps=5, created_at=time.time())
    opened.write(opened=[{**row, "step_count": 0, "total_reward": 0.0, "done": False, "dropped_steps": 0}])
    opened.close()


@contextlib.contextmanager
def proxy_stack(directory: Path, **options: Any) -> Iterator[ProxyStack]:
    """The stand-in model, a recording sql server and a capture proxy (``options``: :class:`EngineOptions`)."""
    from openenv_mcp.proxy import CaptureProxy, EngineOptions
    from openenv_mcp.servers.sql import environment
    from tests.support import live_server, serve_app

    store = f"sqlite:///{directory / 'runs.db'}"
    model = TokenModel()
    with (
        serve_app(model.app) as upstream,
        live_server(environment, record=True, mode="sim", trajectories=store) as server,
        CaptureProxy(upstream, store=store, options=EngineOptions(**options), timeout=2.0) as proxy,
    ):
        yield ProxyStack(model, upstream, server.url, proxy, store)
