"""Training examples, token ids with a loss mask (1 on the model's own tokens), from exported conversations.

Reference solutions (played by the scripted policy, exported by ``openenv-mcp trajectories export``) are rendered
with the chat template the llama-server serves (``GET /props``) by the same renderer the capture proxy uses, and
tokenized by that server (``POST /tokenize``): the ids are those the model reads at evaluation. The loss covers
each assistant turn from the end of the template's generation prompt through its end-of-turn token. A reply is
tokenized as the text the model writes, in ordinary tokens: its markup (``<tool_call>``) spelled out, only its
end-of-turn token the special token it is. A model can only write a special token whose output row was trained: in
Qwen2.5-Coder-0.5B-Instruct the rows of ``<tool_call>`` and ``</tool_call>`` are all but the same vector as eleven
unused tokens', so after 200 steps it still gave them a log-probability of -8.2, and the loss spent on them spoiled
the distribution there (it sampled stray tokens in their place). The text is what every tool-call parser reads anyway.
:func:`check_format` proves the renderer agrees with the server's own rendering (``POST /apply-template``) of
the first prompt, system message and tools included.

Sampled episodes (``--capture-tokens``) already carry the ids the model read and wrote: as one sequence
(``tokens``) when each prompt extends the last prompt and reply, else per model call (``turns``); the mask is the
sampled tokens.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import httpx

from openenv_mcp.proxy.conversation import arguments_object
from openenv_mcp.proxy.template import ChatTemplate

__all__ = ["Renderer", "captured_examples", "check_format"]


class Renderer:
    """The served model's chat template and tokenizer, reached over HTTP."""

    def __init__(self, url: str, *, markup: Sequence[str] = ()) -> None:
        self.markup = list(markup)  # the model's added tokens' texts (llama.added_tokens)
        self.client = httpx.Client(base_url=url, timeout=120)
        props = self.client.get("/props").raise_for_status().json()
        self.template = ChatTemplate(props["chat_template"], bos_token=props.get("bos_token") or "")

    def close(self) -> None:
        self.client.close()

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """``text``'s ids; with ``special`` false a control token's markup (``<|im_end|>``) is read as plain text,
        though llama.cpp still matches a user-defined token's (``<tool_call>``): :meth:`spelled` cuts those."""
        body = {"content": text, "add_special": False, "parse_special": special}
        tokens: list[int] = self.client.post("/tokenize", json=body).raise_for_status().json()["tokens"]
        return tokens

    def piece(self, token: int) -> str:
        """The text of one token."""
        answer = self.client.post("/detokenize", json={"tokens": [token]}).raise_for_status().json()
        return str(answer["content"])

    def reply(self, text: str) -> list[int]:
        """A reply's ids as the model writes them: ordinary tokens, then the end-of-turn token it closes with."""
        ids = self.tokenize(text)
        end = self.piece(ids[-1]) if ids else ""
        if not end or not text.endswith(end) or len(self.tokenize(end, special=False)) == 1:
            return self.spelled(text)  # no special token at the end
        return [*self.spelled(text[: -len(end)]), ids[-1]]

    def spelled(self, text: str) -> list[int]:
        """``text`` in ordinary tokens only: cut inside every added token's text, which a llama.cpp tokenizer
        matches even when told to parse no special tokens (``<tool_call>`` is user-defined in Qwen's vocabulary)."""
        cuts = sorted(
            {at + len(token) - 1 for token in self.markup if len(token) > 1 for at in _occurrences(text, token)}
        )
        pieces = [text[start:stop] for start, stop in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        return [token for piece in pieces if piece for token in self.tokenize(piece, special=False)]

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, opened: bool) -> str:
        return self.template.render(_templated(messages), tools, add_generation_prompt=opened)

    def example(self, record: Mapping[str, Any], *, max_length: int) -> dict[str, Any]:
        """``record``'s conversation as ids and mask, cut at ``max_length`` tokens."""
        messages, tools = list(record["messages"]), list(record.get("tools") or [])
        pieces: list[tuple[str, int]] = []  # (text, 1 when the model wrote it)
        done = ""
        for index, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            prompt = self.render(messages[:index], tools, opened=True)
            whole = self.render(messages[: index + 1], tools, opened=False)
            if not (prompt.startswith(done) and whole.startswith(prompt)):
                raise ValueError(f"The template rewrites earlier turns of {record.get('task_id')}: no exact mask")
            reply = whole[len(prompt) :]
            kept = reply.rstrip("\n")  # the newline after the end-of-turn token opens the next turn's header
            pieces += [(prompt[len(done) :], 0), (kept, 1)]
            done = prompt + kept
        ids: list[int] = []
        mask: list[int] = []
        for text, trained in pieces:
            if text:
                tokens = self.reply(text) if trained else self.tokenize(text)
                ids += tokens
                mask += [trained] * len(tokens)
        return {
            "task_id": record.get("task_id"),
            "seed": record.get("seed"),
            "ids": ids[:max_length],
            "mask": mask[:max_length],
            "tokens": len(ids),
        }


def _occurrences(text: str, token: str) -> list[int]:
    found, at = [], text.find(token)
    while at >= 0:
        found.append(at)
        at = text.find(token, at + 1)
    return found


def _templated(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as a chat template takes them: tool-call arguments as objects, as llama.cpp passes them."""
    shaped = []
    for message in messages:
        copied = copy.deepcopy(dict(message))
        for call in copied.get("tool_calls") or []:
            call["function"]["arguments"] = arguments_object(call["function"].get("arguments"))
        shaped.append(copied)
    return shaped


def check_format(renderer: Renderer, record: Mapping[str, Any]) -> None:
    """Raise when the server renders the record's first prompt (system, task, tools) otherwise than we do."""
    opening = [m for m in record["messages"] if m["role"] in ("system", "user")][:2]
    tools = list(record.get("tools") or [])
    ours = renderer.render(opening, tools, opened=True)
    answer = renderer.client.post("/apply-template", json={"messages": opening, "tools": tools})
    theirs = answer.raise_for_status().json()["prompt"]
    if ours != theirs:
        at = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs))
        )
        raise ValueError(
            f"The training format differs from the served one at character {at}: "
            f"{ours[at - 40 : at + 40]!r} against {theirs[at - 40 : at + 40]!r}"
        )


def captured_examples(record: Mapping[str, Any], *, max_length: int) -> list[dict[str, Any]]:
    """A sampled episode's own tokens (``--capture-tokens``) as ids and mask: the episode as one sequence where it
    has that form, else one example per model call, its prompt as read and its reply as sampled (docs/capture.md).
    """
    tokens = record.get("tokens")
    if tokens:
        sequences = [(list(tokens["prompt_ids"]), list(tokens["completion_ids"]), list(tokens["completion_mask"]))]
    else:
        sequences = [
            (list(turn["prompt_ids"]), list(turn["completion_ids"]), [1] * len(turn["completion_ids"]))
            for turn in record.get("turns") or []
            if turn.get("completion_ids")
        ]
    made = []
    for prompt, completion, trained in sequences:
        ids, mask = prompt + completion, [0] * len(prompt) + trained
        made.append(
            {
                "task_id": record.get("task_id"),
                "seed": record.get("seed"),
                "ids": ids[:max_length],
                "mask": mask[:max_length],
                "tokens": len(ids),
            }
        )
    return made
