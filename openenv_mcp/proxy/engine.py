"""One model turn, tokens in and tokens out: render, place, generate, read the calls, record.

Every wire format's request comes here as a :class:`~openenv_mcp.proxy.conversation.Conversation`. The engine
renders it through the model's chat template, gets its ids (and segment) from the
:class:`~openenv_mcp.proxy.recording.TurnLog`, samples from those ids upstream, reads the tool calls out of the
reply's text in the model's own format (``openenv_mcp.rollout.parsers``: Qwen's ``<tool_call>`` tags and the
others), writes the turn into the episode, and only then answers. What is stored is what the model read and
sampled; the calls handed to the harness are read from that, never the other way round.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio

from openenv_mcp.proxy.conversation import Call, Conversation, Reply, new_id
from openenv_mcp.proxy.recording import TurnLog, TurnRecord
from openenv_mcp.proxy.template import ChatTemplate
from openenv_mcp.proxy.upstream import ModelCard, Upstream
from openenv_mcp.rollout.parsers import PARSERS, parse_text

__all__ = ["Engine", "EngineOptions", "own_replies"]


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """How the engine answers.

    Attributes:
        parser: The tool-call parser for the reply's text (``auto``, ``hermes``, ``mistral``, ``json``, ``none``).
        chat_template: A Jinja chat template to use instead of the server's (its text).
        max_tokens: The most tokens a reply may have, whatever the request asks (``None``: the request's).
        episode_wait: Seconds to wait for an episode the store does not hold yet before refusing it.
        own_replies: Show the model each of its earlier replies that made calls as it wrote it (found by the ids
            the proxy gave the calls), instead of the chat template's rendering of the calls the harness sent back:
            the model reads its own tokens again, and the episode stays one segment. Off: the template renders
            the calls, and a reply it renders otherwise than the model wrote it opens a segment.
    """

    parser: str = "auto"
    chat_template: str | None = None
    max_tokens: int | None = 4096
    episode_wait: float = 5.0
    own_replies: bool = True

    def __post_init__(self) -> None:
        if self.parser not in PARSERS:
            raise ValueError(f"No tool parser {self.parser!r}; parsers: {', '.join(PARSERS)}")


class Engine:
    """Answers conversations from ``upstream`` and records them in ``log``; :meth:`start` before use."""

    def __init__(self, upstream: Upstream, log: TurnLog, options: EngineOptions) -> None:
        self.upstream = upstream
        self.log = log
        self.options = options
        self.card: ModelCard | None = None
        self._template: ChatTemplate | None = None
        self._starting = anyio.Lock()
        self._opening = 0  # ids of the template's generation prompt (the assistant's header)

    async def start(self) -> None:
        """Read the model's chat template and special tokens from the server (again until that succeeds).

        Raises:
            BackendUnavailable: the server cannot be reached or gives no chat template.
        """
        await self.template()

    async def template(self) -> ChatTemplate:
        """The chat template (read from the server on first use)."""
        if self._template is not None:
            return self._template
        async with self._starting:
            if self._template is None:
                card = await self.upstream.card()
                if self.options.chat_template is not None:
                    card = replace(card, chat_template=self.options.chat_template)
                template = ChatTemplate(card.chat_template, bos_token=card.bos_token, eos_token=card.eos_token)
                opening = template.generation_prompt()
                self._opening = len(await self.upstream.tokenize(opening)) if opening else 0
                self.card = card
                self._template = template
            return self._template

    async def count(self, conversation: Conversation) -> int:
        """How many tokens the conversation's prompt is."""
        text = (await self.template()).render(conversation.messages, conversation.tools or None)
        return len(await self.upstream.tokenize(text))

    async def answer(self, episode_id: str, conversation: Conversation, *, wire: str) -> Reply:
        """Sample the model's reply to ``conversation`` in ``episode_id`` and record it as the episode's turn."""
        state = await self.log.episode(episode_id)
        side = not conversation.tools
        template = await self.template()
        messages = conversation.messages
        if self.options.own_replies and not side:
            messages = own_replies(messages, state.replies, template.eos_token)
        text = template.render(messages, conversation.tools or None)
        placement = await self.log.place(state, text, self.upstream.tokenize, side=side, opening=self._opening)
        sampling = conversation.sampling
        if self.options.max_tokens is not None:
            wanted = sampling.max_tokens
            sampling = replace(sampling, max_tokens=min(wanted or self.options.max_tokens, self.options.max_tokens))
        started = time.perf_counter()
        generation = await self.upstream.generate(placement.ids, sampling)
        seconds = time.perf_counter() - started
        content, calls = self._read(generation.text, conversation)
        finish = "tool_calls" if calls else generation.finish_reason
        model = self.card.model if self.card is not None else conversation.model
        await self.log.record(
            state,
            TurnRecord(
                wire=wire,
                model=model,
                side=side,
                placement=placement,
                completion_ids=generation.ids,
                logprobs=generation.logprobs,
                raw=generation.raw,
                content=content,
                calls=[{"id": call.id, "name": call.name, "arguments": call.arguments} for call in calls],
                finish_reason=finish,
                seconds=seconds,
            ),
        )
        return Reply(content, calls, finish, len(placement.ids), len(generation.ids), conversation.model)

    def _read(self, text: str, conversation: Conversation) -> tuple[str, list[Call]]:
        """The reply's text without its calls, and the calls (none when the request's tool_choice is none)."""
        if not conversation.tools or conversation.tool_choice == "none":
            return text, []
        found = parse_text(text, parser=self.options.parser, tools=conversation.schemas)
        calls = []
        for call in found.calls:
            arguments: Any = call.arguments
            written = call.written if arguments is None else json.dumps(arguments, ensure_ascii=False)
            calls.append(Call(new_id("call_"), call.name, written))
        return (found.content or "") if calls else text, calls


def own_replies(
    messages: list[dict[str, Any]], replies: Mapping[str, tuple[int, str]], eos: str
) -> list[dict[str, Any]]:
    """``messages`` with each assistant message whose calls all come from one earlier reply of the model (by the
    ids the proxy gave them) replaced by that reply as the model wrote it, without its end-of-turn token.

    A template renders an assistant message of text alone as its header, the text and its end token: so the
    prompt holds the tokens the model sampled, where rendering the calls the harness sent back would write them
    in the template's own words (other spacing, other order, the calls without the prose around them). A harness
    that sends one reply's calls back as several assistant messages (each followed by its result) gets the reply
    once, in place of the first: the results then follow it in order, as they would have after the reply.
    """
    kept: list[dict[str, Any]] = []
    shown: set[int] = set()
    for message in messages:
        calls = message.get("tool_calls") or []
        reply = _reply_of(calls, replies) if message.get("role") == "assistant" and calls else None
        if reply is None:
            kept.append(message)
            continue
        turn, text = reply
        if turn not in shown:
            shown.add(turn)
            kept.append({"role": "assistant", "content": text.removesuffix(eos) if eos else text})
    return kept


def _reply_of(calls: list[dict[str, Any]], replies: Mapping[str, tuple[int, str]]) -> tuple[int, str] | None:
    """The one earlier reply all of ``calls`` came from, or ``None``."""
    found = {replies.get(_call_id(call)) for call in calls}
    return found.pop() if len(found) == 1 else None


def _call_id(call: Mapping[str, Any]) -> str:
    """A call's id as the proxy gave it (the Messages wire writes ``toolu_`` where the others write ``call_``)."""
    given = str(call.get("id") or "")
    return "call_" + given.removeprefix("toolu_") if given.startswith("toolu_") else given
