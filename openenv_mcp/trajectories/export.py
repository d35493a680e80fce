"""Recorded episodes as chat-format records: one JSON object per episode, ready for SFT or GRPO.

{"messages": [{"role": "system", ...}, {"role": "user", "content": PROMPT},
              {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": TOOL, "arguments": "{...}"}}]},
              {"role": "tool", "tool_call_id": "call_1", "content": OBSERVATION TEXT}, ...],
 "tools": [OpenAI function schemas], "reward": TOTAL, "rewards": [PER STEP], "done": true,
 "scores": [PER STEP: [{"name": NAME, "value": VALUE}, ...]] (the reward's named parts: docs/rewards.md;
            a list of pairs, not a mapping, so every record has one schema whatever the names),
 "reasons": [PER STEP: [{"name": NAME, "reason": TEXT}, ...]] (why, for the parts that say: an LLM judge's reason),
 "task_id": ..., "split": ..., "seed": ..., "episode_id": ..., "server": ..., "id": ...}

An episode a capturing policy played also carries ``turns`` (per model call: prompt_ids,
completion_ids, logprobs, model, finish_reason) and ``tokens`` (the turns as one sequence with a
mask of the model's tokens): see :func:`openenv_mcp.trajectories.turns.token_fields`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from openenv_mcp.trajectories.chat import openai_tools, tool_call_message, tool_result_message
from openenv_mcp.trajectories.turns import token_fields

if TYPE_CHECKING:
    from openenv_mcp.trajectories.store import EpisodeFilter, StoredEpisode

__all__ = ["chat_record", "export_jsonl", "iter_records"]


def chat_record(stored: StoredEpisode) -> dict[str, Any]:
    """One episode as a chat-format record (see the module docstring)."""
    episode, toolset = stored.episode, stored.toolset
    messages: list[dict[str, Any]] = []
    if toolset["description"]:
        messages.append({"role": "system", "content": toolset["description"]})
    messages.append({"role": "user", "content": episode["prompt"]})
    for step in stored.steps:
        call_id = f"call_{step['step']}"
        messages.append(tool_call_message(call_id, step["tool"], step["arguments"]))
        text = "\n".join(block["text"] for block in step["content"] if block.get("type") == "text")
        messages.append(tool_result_message(call_id, text))
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
    return record


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
                if stored.turns:
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
