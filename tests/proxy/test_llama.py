"""The capture proxy in front of a real llama.cpp server with a real small model (Qwen2.5-Coder-0.5B-Instruct,
from the package index): an sql episode played through the OpenAI SDK, and every recorded turn checked against the
server token by token.

It runs where a llama.cpp build exists (``tests/support/llama.py`` says where it looks) and skips, saying so,
where none does, CI included when nothing built one: ``scripts/llama_server.py`` compiles it (once per machine,
cached by its pin).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest

from openenv_mcp.proxy import CaptureProxy
from openenv_mcp.proxy.template import ChatTemplate
from openenv_mcp.rollout import discover
from openenv_mcp.servers.sql import environment
from tests.support import live_server
from tests.support.llama import llama_server, llama_server_binary, small_model
from tests.support.token_model import ProxyStack

BINARY = llama_server_binary()
pytestmark = [
    pytest.mark.skipif(
        BINARY is None,
        reason="no llama.cpp build here (python scripts/llama_server.py builds llama-server from the pinned source, "
        "or set OPENENV_LLAMA_SERVER)",
    ),
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyStack]:
    assert BINARY is not None
    directory = tmp_path_factory.mktemp("llama")
    store = f"sqlite:///{directory / 'runs.db'}"
    model = small_model()
    with (
        llama_server(BINARY, model, log=directory / "llama.log") as upstream,
        live_server(environment, record=True, mode="sim", trajectories=store) as server,
        CaptureProxy(upstream, store=store, timeout=600) as proxy,
    ):
        yield ProxyStack(None, upstream, server.url, proxy, store)  # type: ignore[arg-type]


def play(stack: ProxyStack, episode: str, *, turns: int = 3) -> int:
    """Play up to ``turns`` model turns as a harness would (greedy), stepping each call; the steps taken."""
    system, tools = first_conversation(stack, episode)
    messages: list[Any] = list(system)
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0, timeout=600)
    steps = 0
    for _ in range(turns):
        reply = client.chat.completions.create(
            model="qwen", messages=messages, tools=tools, temperature=0, max_tokens=96
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.function.arguments)
            except json.JSONDecodeError:
                arguments = {}
            answer = httpx.post(
                f"{stack.env_url}/step",
                json={"action": {"tool": call.function.name, "arguments": arguments}},
                headers={"X-Episode-Id": episode},
                timeout=30,
            )
            steps += answer.status_code == 200
            body = answer.json()
            text = body["observation"]["content"][0]["text"] if answer.status_code == 200 else json.dumps(body)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            if answer.status_code == 200 and body["done"]:
                return steps
    return steps


def test_a_real_model_plays_through_the_proxy_and_every_recorded_token_is_the_servers(stack: ProxyStack) -> None:
    episode = stack.episode()
    steps = play(stack, episode)
    rows = [row for row in stack.proxy.turns(episode) if not row["side"]]
    assert rows, "the model made no turn"
    assert [row["segment"] for row in rows] == [0] * len(rows)  # it read its own replies again: one sequence
    props = httpx.get(f"{stack.upstream}/props", timeout=30).json()
    with httpx.Client(base_url=stack.upstream, timeout=600) as server:
        # Replay the turns on the server in the order they were made, from a cleared cache (the server keeps no
        # prompt cache in RAM: --cache-ram 0): each prompt is then evaluated in the same pieces as when it was
        # sampled (llama.cpp's numbers depend on them: the same ids evaluated from a cached prefix or whole differ
        # by up to 0.1 in log-probability), so the greedy ids and their log-probabilities come back as recorded.
        server.post("/completion", json={"prompt": [0], "n_predict": 1, "cache_prompt": False}).raise_for_status()
        for row in rows:
            prompt, completion, logprobs = row["prompt_ids"], row["completion_ids"], row["logprobs"]
            assert len(logprobs) == len(completion) > 0 and all(value <= 0 for value in logprobs)
            text = server.post("/detokenize", json={"tokens": prompt}).json()["content"]
            assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
            body = {"prompt": prompt, "n_predict": len(completion), "temperature": 0, "n_probs": 1}
            again = server.post("/completion", json={**body, "return_tokens": True, "cache_prompt": True}).json()
            ids = [entry["id"] for entry in again["completion_probabilities"]]
            assert ids == completion, f"turn {row['turn']}: the server's greedy ids differ from the recorded ones"
            rescored = [entry["logprob"] for entry in again["completion_probabilities"]]
            assert max(abs(a - b) for a, b in zip(rescored, logprobs, strict=True)) < 1e-6, (rescored, logprobs)
    first = rows[0]
    rendered = ChatTemplate(props["chat_template"], bos_token=props.get("bos_token") or "").render(
        *first_conversation(stack, episode)
    )
    whole = httpx.post(
        f"{stack.upstream}/tokenize", json={"content": rendered, "add_special": False, "parse_special": True}
    ).json()["tokens"]
    assert first["prompt_ids"] == whole
    record = stack.exported(episode, steps=steps)
    assert [turn["completion_ids"] for turn in record["turns"]] == [row["completion_ids"] for row in rows]
    assert len(record["rewards"]) == steps and record["segments"][0]["prompt_ids"] == first["prompt_ids"]


def first_conversation(stack: ProxyStack, episode: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The episode's opening messages (the server's description, the task) and the server's tools."""
    info = anyio.run(discover, stack.env_url)
    system = {"role": "system", "content": info.description}
    return [system, {"role": "user", "content": stack.prompts[episode]}], info.openai_tools


def test_the_anthropic_wire_works_on_the_real_model(stack: ProxyStack, tmp_path: Path) -> None:
    import anthropic

    episode = stack.episode()
    claude = anthropic.Anthropic(
        base_url=stack.proxy.base_url(episode, v1=False), api_key="x", max_retries=0, timeout=600
    )
    tools = [{"name": "list_tables", "description": "List the tables.", "input_schema": {"type": "object"}}]
    with claude.messages.stream(
        model="qwen", max_tokens=48, tools=tools,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "Which tables are there? Call list_tables."}],
    ) as stream:  # fmt: skip
        final = stream.get_final_message()
    row = stack.proxy.turns(episode)[-1]
    assert row["wire"] == "messages" and len(row["completion_ids"]) == final.usage.output_tokens
    assert final.stop_reason in ("tool_use", "end_turn", "max_tokens")
