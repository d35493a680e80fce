"""What the capture proxy records: the ids the model read and sampled, in the episode beside its steps, in
segments where the harness rewrote its history, with side requests kept out of the training data."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from openenv_mcp.proxy import CaptureProxy, EngineOptions
from openenv_mcp.trajectories import iter_records
from openenv_mcp.trajectories.store import TrajectoryStore
from tests.support.token_model import ProxyStack, detokenize, proxy_stack, stored_episode

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "list_tables", "parameters": {"type": "object", "properties": {}}}}
]
SYSTEM = {"role": "system", "content": "Answer with the tools."}
USER = {"role": "user", "content": "How many customers?"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyStack]:
    with proxy_stack(tmp_path_factory.mktemp("recording")) as made:
        yield made


def chat(stack: ProxyStack, episode: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)


def play_two_turns(stack: ProxyStack, episode: str) -> list[dict[str, Any]]:
    """A call, its step on the server, its result back, an answer: the history the harness ends with."""
    client = chat(stack, episode)
    first = client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    observation = stack.step(episode, call.function.name, json.loads(call.function.arguments))
    result = observation["observation"]["content"][0]["text"]
    history = [
        SYSTEM,
        USER,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]
    client.chat.completions.create(model="q", messages=history, tools=TOOLS)  # type: ignore[arg-type]
    return history


def test_turns_are_the_ids_the_model_read_and_sampled_exported_beside_the_steps(stack: ProxyStack) -> None:
    episode = stack.episode()
    before = len(stack.model.served)
    play_two_turns(stack, episode)
    served = stack.model.served[before:]
    record = stack.exported(episode, steps=1)
    assert record["server"] == "sql" and record["rewards"] == [0.0]
    assert [(t["prompt_ids"], t["completion_ids"], t["logprobs"]) for t in record["turns"]] == [
        (s["prompt_ids"], s["completion_ids"], s["logprobs"]) for s in served
    ]
    assert [(t["finish_reason"], t["segment"], t["model"]) for t in record["turns"]] == [
        ("tool_calls", 0, "stand-in-qwen.gguf"),
        ("stop", 0, "stand-in-qwen.gguf"),
    ]
    first, second = served
    assert second["prompt_ids"][: len(first["prompt_ids"]) + len(first["completion_ids"])] == (
        first["prompt_ids"] + first["completion_ids"]
    )
    tokens = record["tokens"]
    added = second["prompt_ids"][len(first["prompt_ids"]) + len(first["completion_ids"]) :]
    assert tokens["prompt_ids"] == first["prompt_ids"]
    assert tokens["completion_ids"] == first["completion_ids"] + added + second["completion_ids"]
    assert tokens["completion_mask"] == [1] * len(first["completion_ids"]) + [0] * len(added) + [1] * len(
        second["completion_ids"]
    )
    assert tokens["completion_logprobs"] == first["logprobs"] + [0.0] * len(added) + second["logprobs"]
    assert record["segments"] == [{"segment": 0, "reason": None, **tokens}]
    assert "model_turns" not in record  # the harness's conversation is its own; the proxy keeps tokens


def test_side_requests_are_recorded_apart_and_never_exported(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = chat(stack, episode)
    client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
    title = client.chat.completions.create(model="q", messages=[{"role": "user", "content": "Title this chat."}])
    assert title.choices[0].message.content == "A short title"
    recorded = stack.proxy.turns(episode)
    assert [(row["turn"], row["side"], row["segment"]) for row in recorded] == [(1, False, 0), (2, True, None)]
    record = stack.exported(episode)
    assert len(record["turns"]) == 1 and record["tokens"] is not None


def compact_call_and_its_result(client: openai.OpenAI, stack: ProxyStack) -> None:
    """The model writes its call as compact JSON; the harness sends the call back, and its result."""
    stack.model.script.append('<tool_call>\n{"name":"list_tables","arguments":{}}\n</tool_call>')
    first = client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    history = [SYSTEM, USER, first.choices[0].message.model_dump(exclude_none=True)]
    history.append({"role": "tool", "tool_call_id": call.id, "content": "customers"})
    client.chat.completions.create(model="q", messages=history, tools=TOOLS)  # type: ignore[arg-type]


def test_the_model_reads_its_own_reply_again_so_the_episode_stays_one_segment(stack: ProxyStack) -> None:
    episode = stack.episode()
    compact_call_and_its_result(chat(stack, episode), stack)
    shown = detokenize(stack.model.served[-1]["prompt_ids"])
    assert '<|im_start|>assistant\n<tool_call>\n{"name":"list_tables","arguments":{}}\n</tool_call><|im_end|>' in shown
    record = stack.exported(episode)
    assert [turn["segment"] for turn in record["turns"]] == [0, 0] and record["tokens"] is not None


def test_a_reply_the_template_writes_otherwise_opens_a_segment_saying_so(stack: ProxyStack) -> None:
    episode = stack.episode()
    with CaptureProxy(stack.upstream, store=stack.store, options=EngineOptions(own_replies=False)) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url(episode), api_key="unused", max_retries=0)
        compact_call_and_its_result(client, stack)
    shown = detokenize(stack.model.served[-1]["prompt_ids"])
    assert '<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call><|im_end|>' in shown
    record = stack.exported(episode)
    assert [turn["segment"] for turn in record["turns"]] == [0, 1] and record["tokens"] is None
    reason = record["segments"][1]["reason"]
    assert reason.startswith("reply_rerendered: parted from segment 0 at token ")
    first_turn = record["turns"][0]
    parted = int(reason.split("at token ")[1].split(" ")[0])
    assert len(first_turn["prompt_ids"]) < parted < len(first_turn["prompt_ids"]) + len(first_turn["completion_ids"])


def test_compaction_and_a_sub_agent_open_segments_while_the_main_thread_goes_on(stack: ProxyStack) -> None:
    episode = stack.episode()
    history = play_two_turns(stack, episode)
    client = chat(stack, episode)
    sub_agent = [{"role": "system", "content": "You are a sub-agent."}, {"role": "user", "content": "Look."}]
    client.chat.completions.create(model="q", messages=sub_agent, tools=TOOLS)  # type: ignore[arg-type]
    compacted = [SYSTEM, USER, {"role": "user", "content": "Summary: the tables are customers and orders."}]
    client.chat.completions.create(model="q", messages=compacted, tools=TOOLS)  # type: ignore[arg-type]
    stack.model.script.append("Still here.")
    history = [*history, {"role": "assistant", "content": "The answer is in the tool's result."}]
    client.chat.completions.create(model="q", messages=[*history, {"role": "user", "content": "Go on."}], tools=TOOLS)  # type: ignore[arg-type]
    rows = stack.proxy.turns(episode)
    assert [row["segment"] for row in rows] == [0, 0, 1, 2, 0]
    reasons = [row["segment_reason"] or "" for row in rows]
    assert reasons[2].startswith("new_conversation: ") and reasons[3].startswith("history_rewritten: ")
    assert reasons[4] == ""  # the main thread continues its own segment
    record = stack.exported(episode, steps=1)
    assert [segment["segment"] for segment in record["segments"]] == [0, 1, 2]
    main = record["segments"][0]
    assert main["prompt_ids"] == rows[0]["prompt_ids"]
    assert main["prompt_ids"] + main["completion_ids"] == rows[4]["prompt_ids"] + rows[4]["completion_ids"]
    assert sum(main["completion_mask"]) == sum(len(rows[i]["completion_ids"]) for i in (0, 1, 4))


def test_the_api_key_names_the_episode_for_harnesses_that_cannot_change_paths(stack: ProxyStack) -> None:
    episode = stack.episode()
    openai_client = openai.OpenAI(base_url=f"{stack.proxy.url}/v1", api_key=episode, max_retries=0)
    openai_client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
    claude = anthropic.Anthropic(base_url=stack.proxy.url, api_key=episode, max_retries=0)
    claude.messages.create(model="c", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    assert [(row["wire"], row["side"]) for row in stack.proxy.turns(episode)] == [("chat", False), ("messages", True)]


def test_many_episodes_at_once_share_the_store_with_the_recording_server(stack: ProxyStack) -> None:
    episodes = [stack.episode() for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda episode: play_two_turns(stack, episode), episodes))
    for episode in episodes:
        record = stack.exported(episode, steps=1)
        assert len(record["turns"]) == 2 and record["tokens"] is not None and record["rewards"] == [0.0]


def test_a_restarted_proxy_goes_on_with_the_episodes_turns_and_segment(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = chat(stack, episode)
    first = client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    history = [SYSTEM, USER, first.choices[0].message.model_dump(exclude_none=True)]
    history.append({"role": "tool", "tool_call_id": call.id, "content": "customers"})
    with CaptureProxy(stack.upstream, store=stack.store) as restarted:
        again = openai.OpenAI(base_url=restarted.base_url(episode), api_key="unused", max_retries=0)
        again.chat.completions.create(model="q", messages=history, tools=TOOLS)  # type: ignore[arg-type]
    rows = stack.proxy.turns(episode)
    assert [(row["turn"], row["segment"], row["segment_reason"]) for row in rows] == [(1, 0, None), (2, 0, None)]
    assert rows[1]["prompt_ids"][: len(rows[0]["prompt_ids"]) + len(rows[0]["completion_ids"])] == (
        rows[0]["prompt_ids"] + rows[0]["completion_ids"]
    )


def test_a_store_made_before_the_proxy_gets_its_columns_and_keeps_its_rows(stack: ProxyStack, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'old.db'}"
    stored_episode(store, "old-1")
    with sqlite3.connect(tmp_path / "old.db") as database:
        for column in ("wire", "side", "segment", "segment_reason"):
            database.execute(f"ALTER TABLE trajectory_turns DROP COLUMN {column}")
        database.execute(
            "INSERT INTO trajectory_turns (server, episode_id, turn, model, finish_reason, prompt_ids, completion_ids,"
            " logprobs, at) VALUES ('sql', 'old-1', 1, 'm', 'stop', '[7, 8]', '[9]', '[-0.5]', 1.0)"
        )
    with CaptureProxy(stack.upstream, store=store) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url("old-1"), api_key="unused", max_retries=0)
        client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
        rows = proxy.turns("old-1")
    assert [(row["turn"], row["wire"], row["segment"]) for row in rows] == [(1, None, None), (2, "chat", 0)]
    (record,) = list(iter_records(store))
    assert record["turns"][0]["completion_ids"] == [9]
    assert "segment" not in record["turns"][0] and record["turns"][1]["segment"] == 0


def test_processes_opening_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    # the proxy and a server's recorder both create the tables of a store that does not exist yet
    for attempt in range(12):
        url = f"sqlite:///{tmp_path / f'new-{attempt}.db'}"
        start = threading.Barrier(6)

        def open_it(url: str = url, start: threading.Barrier = start) -> None:
            store = TrajectoryStore(url)
            start.wait(timeout=10)
            try:
                store.create()
            finally:
                store.close()

        with ThreadPoolExecutor(6) as pool:
            for done in [pool.submit(open_it) for _ in range(6)]:
                done.result(timeout=30)


def test_a_reply_whose_calls_come_back_one_message_each_is_shown_once(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = chat(stack, episode)
    call = '<tool_call>\n{{"name": "list_tables", "arguments": {}}}\n</tool_call>'
    two = call.format("{}") + "\n" + call.format('{"x": 1}')
    stack.model.script.append(two)
    first = client.chat.completions.create(model="q", messages=[SYSTEM, USER], tools=TOOLS)
    calls = first.choices[0].message.tool_calls or []
    assert len(calls) == 2
    history: list[Any] = [SYSTEM, USER]
    for number, call in enumerate(calls):  # as a harness that answers each call before writing the next
        history.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
        history.append({"role": "tool", "tool_call_id": call.id, "content": f"result {number}"})
    client.chat.completions.create(model="q", messages=history, tools=TOOLS)
    shown = detokenize(stack.model.served[-1]["prompt_ids"])
    assert shown.count(two) == 1
    assert (
        f"{two}<|im_end|>\n<|im_start|>user\n<tool_response>\nresult 0\n</tool_response>\n<tool_response>\nresult 1"
        in shown
    )
    assert [row["segment"] for row in stack.proxy.turns(episode)] == [0, 0]
