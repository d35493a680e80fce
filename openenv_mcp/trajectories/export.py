"""Recorded episodes as chat-format records: one JSON object per episode, ready for SFT or GRPO.

{"messages": [{"role": "system", ...}, {"role": "user", "content": PROMPT},
              {"role": "assistant", "content": TEXT, "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": TOOL, "arguments": "{...}"}}]},
              {"role": "tool", "tool_call_id": "call_1", "content": OBSERVATION TEXT}, ...],
 "tools": [OpenAI function schemas], "reward": TOTAL, "rewards": [PER STEP], "done": true,
 "scores": [PER STEP: [{"name": NAME, "value": VALUE}, ...]] (the reward's named parts: docs/rewards.md;
            a list of pairs, not a mapping, so every record has one schema whatever the names),
 "reasons": [PER STEP: [{"name": NAME, "reason": TEXT}, ...]] (why, for the parts that say: an LLM judge's reason),
 "task_id": ..., "split": ..., "seed": ..., "episode_id": ..., "server": ..., "id": ...}

The conversation is the one the model had when a chat policy recorded its turns (``openenv-mcp rollout
--policy openai``): each assistant message carries the model's own text and call ids, a call the server refused
is followed by the refusal it got, a reply without a call by the reminder it got, and the record also has
``model_turns`` (each call's reply, parse, calls, timing) and ``end_reason``. An episode without recorded turns
(a scripted or user policy, an MCP agent) gets one assistant message per step, with ids ``call_1``,
``call_2``... and no text: the server never sees a model's text. An episode a capturing policy played also
carries ``turns`` (per model call: prompt_ids, completion_ids, logprobs, model, finish_reason) and ``tokens``
(the turns as one sequence with a mask of the model's tokens): see
:func:`openenv_mcp.trajectories.turns.token_fields`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from openenv_mcp.trajectories.chat import ChatMessage, openai_tools, tool_call_message, tool_result_message
from openenv_mcp.trajectories.turns import token_fields

if TYPE_CHECKING:
    from openenv_mcp.trajectories.store import EpisodeFilter, StoredEpisode

__all__ = ["chat_record", "export_jsonl", "iter_records"]

_MODEL_TURN_FIELDS = ("model", "finish_reason", "text", "calls", "parse", "reminder", "error", "end_reason", "seconds")


def chat_record(stored: StoredEpisode) -> dict[str, Any]:
    """One episode as a chat-format record (see the module docstring)."""
    episode, toolset = stored.episode, stored.toolset
    messages: list[ChatMessage] = []
    if toolset["description"]:
        messages.append({"role": "system", "content": toolset["description"]})
    messages.append({"role": "user", "content": episode["prompt"]})
    # a capture proxy's turns (``wire`` set) carry tokens only: the conversation is the harness's own
    model_turns = [turn for turn in stored.turns if turn.get("calls") is not None and not turn.get("wire")]
    if model_turns and _covers(model_turns, stored.steps):
        messages += _conversation(model_turns, stored.steps)
    else:
        for step in stored.steps:
            call_id = f"call_{step['step']}"
            messages.append(tool_call_message(call_id, step["tool"], step["arguments"]))
            messages.append(tool_result_message(call_id, _text(step)))
    record = {
        "messages": messages,
        "tools": openai_tools(toolset["tools"]),
        "reward": episode["total_reward"],
        "rewards": [step["reward"] for step in stored.steps],
        "done": episode["done"],
        "task_id": episode["task_id"],
        "split": episode["split"],
        "seed": episode["seed"],
        "episode_id": episode["episode_id"],
        "server": episode["server"],
        "id": episode["id"],
    }
    record["scores"] = [
        [{"name": name, "value": value} for name, value in (step.get("scores") or {}).items()] for step in stored.steps
    ]
    record["reasons"] = [
        [{"name": name, "reason": reason} for name, reason in (step.get("reasons") or {}).items()]
        for step in stored.steps
    ]
    if model_turns:
        record["end_reason"] = model_turns[-1].get("end_reason")
        record["model_turns"] = [{name: turn.get(name) for name in _MODEL_TURN_FIELDS} for turn in model_turns]
    return record


def _covers(turns: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every recorded step is a call of the turns (not so when something else also stepped the episode)."""
    called = {call.get("step") for turn in turns for call in turn["calls"]} - {None}
    return called == {step["step"] for step in steps}


def _conversation(turns: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """The messages after the prompt, as the model had them: its replies, the tools' answers, the reminders."""
    by_number = {step["step"]: step for step in steps}
    messages: list[ChatMessage] = []
    for turn in turns:
        if turn.get("error") and not turn.get("text") and not turn["calls"]:
            continue  # the call failed: nothing came back into the conversation
        reply: ChatMessage = {"role": "assistant", "content": turn.get("content")}
        if turn["calls"]:
            reply["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for call in turn["calls"]
            ]
        messages.append(reply)
        for call in turn["calls"]:
            step = by_number.get(call.get("step"))
            answer = _text(step) if step is not None else str(call.get("answer") or "")
            messages.append(tool_result_message(call["id"], answer))
        if turn.get("reminder"):
            messages.append({"role": "user", "content": turn["reminder"]})
    return messages


def _text(step: Mapping[str, Any]) -> str:
    return "\n".join(block["text"] for block in step["content"] if block.get("type") == "text")


def iter_records(url: str, where: EpisodeFilter | None = None) -> Iterator[dict[str, Any]]:
    """The chat-format records of the episodes in the store at ``url`` that ``where`` selects, oldest first."""
    from openenv_mcp.trajectories.store import EpisodeFilter, TrajectoryStore

    where = where or EpisodeFilter()

    store = TrajectoryStore(url)
    try:
        store.check_readable()
        for stored in store.read(where):
            complete = [step["step"] for step in stored.steps] == list(range(1, len(stored.steps) + 1))
            if complete or where.include_incomplete:
                record = chat_record(stored)
                record.update(token_fields(stored.turns))
                yield record
    finally:
        store.close()


def export_jsonl(url: str, output: TextIO, where: EpisodeFilter | None = None) -> int:
    """Write one JSON line per selected episode to ``output``; return how many were written."""
    count = 0
    for record in iter_records(url, where):
        output.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
