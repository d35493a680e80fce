"""The chat policy: an OpenAI-compatible chat model plays the episode through tool calls (``--policy openai``).

The server's MCP tools go to the model as OpenAI function schemas, the server's description as the system
message and the task as the user message. Each model call (a **turn**) is read for its calls: those the
endpoint parsed (``tool_calls``), else those a parser reads out of the reply's text (``tool_parser``:
:mod:`~openenv_mcp.rollout.parsers`), since many models write their calls as text. Each call runs through
``/step`` and its observation goes back as a ``tool`` message; a call that cannot run (an unknown tool, arguments
that are not JSON or are the tool's schema, a call the server refuses) gets the reason instead, so the model can
correct itself, and is not a step. A reply without any call is never taken as a final answer: the model is
reminded to call a tool (``reminders`` times), and the next such reply ends the episode as ``text_only``.

The episode ends, and says why (:data:`~openenv_mcp.rollout.runner.END_REASONS`), when the environment is done
(``done``, ``step_limit``), after ``max_turns`` model calls (``turn_limit``), after a reply without a call
(``text_only``, or ``length`` when the reply was cut at the token limit), or when the conversation no longer
fits the model's context (``context_full``). Every turn is kept (:class:`~openenv_mcp.trajectories.turns.Turn`:
the text, the calls and what became of them, the reminders, the tokens when captured) and sent to ``sink`` when
the episode ends, also when it failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Self

import httpx

from openenv_mcp.errors import EpisodeFinished, OpenEnvError, ToolError
from openenv_mcp.rollout.endings import ending_for
from openenv_mcp.rollout.endpoint import ChatEndpoint, ChatModel, Completion, ContextFull, Sampling
from openenv_mcp.rollout.parsers import PARSERS, check_arguments, parse_text
from openenv_mcp.rollout.runner import PolicyError, RolloutEpisode
from openenv_mcp.trajectories.chat import ChatMessage, tool_result_message
from openenv_mcp.trajectories.turns import Turn, TurnSink

__all__ = ["OpenAIPolicy"]

_SKIPPED = "Not run: the episode had ended before this call"
_HOW = {
    "auto": 'or write the call as <tool_call>{"name": TOOL, "arguments": {...}}</tool_call>',
    "hermes": 'or write the call as <tool_call>{"name": TOOL, "arguments": {...}}</tool_call>',
    "json": 'or write the call as a JSON object {"name": TOOL, "arguments": {...}}',
    "mistral": 'or write the call as [TOOL_CALLS][{"name": TOOL, "arguments": {...}}]',
}


@dataclass(slots=True)
class _Call:
    """One call of a reply, and what became of it."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    written: str
    source: str
    problem: str | None = None
    note: str | None = None
    step: int | None = None
    answer: str | None = None

    def record(self) -> dict[str, Any]:
        found: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.sent, "source": self.source}
        found.update({"step": self.step, "answer": self.answer, "note": self.note})
        return found

    @property
    def sent(self) -> str:
        """The arguments as the conversation keeps them: as the model wrote them (so the next prompt extends this
        one token for token), or ``{}`` where a schema copied as arguments was read as none."""
        return "{}" if self.note is not None else self.written


@dataclass(slots=True)
class _Reply:
    text: str | None
    content: str | None
    calls: list[_Call] = field(default_factory=list)
    parse: dict[str, Any] | None = None


class OpenAIPolicy:
    """Any OpenAI-compatible chat endpoint with tool calling, as a policy (``async with`` it, or ``aclose``).

    Args:
        model: Which model answers, and where (:class:`~openenv_mcp.rollout.endpoint.ChatModel`).
        sampling: How each reply is asked for: temperature, token limit, ``tool_choice``, and whether token ids
            and log-probabilities come back (:class:`~openenv_mcp.rollout.endpoint.Sampling`; an answer without
            them then fails the episode, and the turns carry them).
        max_turns: Model calls per episode at most (default: the episode's step limit).
        tool_parser: How calls written as text are read: one of :data:`~openenv_mcp.rollout.parsers.PARSERS`.
        reminders: Replies without a call answered with a reminder to call a tool, per episode; the next one
            ends the episode (``text_only``).
        sink: Where each episode's turns go when it ends (a :class:`~openenv_mcp.trajectories.turns.TurnRecorder`,
            say).
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        sampling: Sampling | None = None,
        max_turns: int | None = None,
        tool_parser: str = "auto",
        reminders: int = 1,
        sink: TurnSink | None = None,
    ) -> None:
        if tool_parser not in PARSERS:
            raise ValueError(f"No tool parser {tool_parser!r}; parsers: {', '.join(PARSERS)}")
        self.endpoint = ChatEndpoint(model, sampling)
        self.model = model.model
        self.sampling = self.endpoint.sampling
        self.max_turns = max_turns
        self.tool_parser = tool_parser
        self.reminders = reminders
        self.sink = sink

    def identity(self) -> dict[str, Any]:
        """What makes two runs of this policy comparable: the model, where it is served, how it is asked."""
        sampling = self.sampling
        return {
            "model": self.model,
            "base_url": self.endpoint.base_url,
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
            "max_turns": self.max_turns,
            "tool_choice": sampling.tool_choice,
            "tool_parser": self.tool_parser,
            "reminders": self.reminders,
        }

    async def check(self, tools: Sequence[dict[str, Any]]) -> str:
        """The endpoint's pre-flight check (:meth:`~openenv_mcp.rollout.endpoint.ChatEndpoint.check`)."""
        return await self.endpoint.check(tools)

    async def __call__(self, episode: RolloutEpisode) -> None:
        turns: list[Turn] = []
        try:
            await self._play(episode, turns)
        except (OpenEnvError, httpx.HTTPError) as exc:
            reason = ending_for(exc)
            if turns and turns[-1].end_reason is None:
                turns[-1] = replace(turns[-1], end_reason=reason)
            await self._send(episode, turns)
            raise
        await self._send(episode, turns)

    async def _send(self, episode: RolloutEpisode, turns: list[Turn]) -> None:
        if self.sink is not None and turns:
            await self.sink(episode.server.name, episode.episode_id, turns)

    async def complete(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> Completion:
        """One model call: the loop's only one, so a subclass that asks another client (Atropos' server manager)
        overrides this."""
        return await self.endpoint.complete(messages, tools)

    async def _play(self, episode: RolloutEpisode, turns: list[Turn]) -> None:
        messages: list[ChatMessage] = list(episode.history)
        if not messages:
            if episode.server.description:
                messages.append({"role": "system", "content": episode.server.description})
            messages.append({"role": "user", "content": episode.prompt})
        tools = episode.server.openai_tools
        schemas = {tool["function"]["name"]: tool["function"].get("parameters") or {} for tool in tools}
        reminded = 0
        for number in range(1, (self.max_turns or episode.max_steps) + 1):
            try:
                completion = await self.complete(messages, tools)
            except PolicyError as exc:
                failed = "context_full" if isinstance(exc, ContextFull) else "model_error"
                turns.append(Turn(model=self.model, error=exc.message, end_reason=failed))
                episode.model.turns += 1
                if failed == "model_error":
                    raise
                episode.end_reason = failed
                return
            reply = self._read(completion, schemas, number)
            episode.model.replied(reply.text, completion.seconds)
            episode.model.parsed_calls += sum(1 for call in reply.calls if call.source != "tool_calls")
            assistant: ChatMessage = {"role": "assistant", "content": reply.content}
            if not reply.calls:
                episode.model.text_replies += 1
                messages.append(assistant)
                ending = self._ending(completion, reminded)
                reminder = None if ending else self._reminder(reply, schemas)
                turns.append(_turn(completion, reply, reminder=reminder, end_reason=ending))
                if ending:
                    episode.end_reason = ending
                    return
                reminded += 1
                messages.append({"role": "user", "content": reminder})
                continue
            assistant["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.sent}}
                for call in reply.calls
            ]
            messages.append(assistant)
            try:
                for call in reply.calls:
                    messages.append(tool_result_message(call.id, await self._run(episode, call)))
            finally:
                turns.append(_turn(completion, reply))
            if episode.done:
                episode.end_reason = "step_limit" if episode.last.info.get("truncated") else "done"
                turns[-1] = replace(turns[-1], end_reason=episode.end_reason)
                return
        episode.end_reason = "turn_limit"
        if turns:
            turns[-1] = replace(turns[-1], end_reason="turn_limit")

    def _ending(self, completion: Completion, reminded: int) -> str | None:
        """Why a reply without a call ends the episode: cut at the token limit, or no reminders left."""
        if completion.finish_reason == "length":
            return "length"
        return "text_only" if reminded >= self.reminders else None

    def _reminder(self, reply: _Reply, schemas: Mapping[str, Any]) -> str:
        problems = (reply.parse or {}).get("problems") or []
        said = (
            f"Your reply tried to call a tool, but: {problems[0]}."
            if problems
            else "Your reply called no tool, so nothing happened in the environment."
        )
        how = _HOW.get(self.tool_parser)
        return f"{said} To act, call one of the tools ({', '.join(schemas)}){', ' + how if how else ''}."

    def _read(self, completion: Completion, schemas: Mapping[str, Mapping[str, Any]], number: int) -> _Reply:
        """The calls of a reply: the endpoint's ``tool_calls``, else those ``tool_parser`` reads in its text."""
        message = completion.message
        text = message.get("content") if isinstance(message.get("content"), str) else None
        structured = message.get("tool_calls") or []
        if structured:
            calls = []
            for index, call in enumerate(structured, start=1):
                function = call.get("function") or {}
                read = check_arguments(str(function.get("name", "")), function.get("arguments"), schemas)
                call_id = str(call.get("id") or f"call_{number}_{index}")
                calls.append(
                    _Call(call_id, read.name, read.arguments, read.written, "tool_calls", read.problem, read.note)
                )
            return _Reply(text, text, calls)
        parsed = parse_text(text, parser=self.tool_parser, tools=schemas)
        calls = [
            _Call(
                f"call_{number}_{index}",
                read.name,
                read.arguments,
                read.written,
                parsed.parser or "",
                read.problem,
                read.note,
            )
            for index, read in enumerate(parsed.calls, start=1)
        ]
        found = {"parser": parsed.parser, "problems": parsed.problems} if parsed.parser else None
        return _Reply(text, parsed.content if calls else text, calls, found)

    async def _run(self, episode: RolloutEpisode, call: _Call) -> str:
        """Play one call; what goes back to the model (the observation, or why it did not run)."""
        if episode.done:
            call.answer = _SKIPPED
        elif call.problem is not None or call.arguments is None:
            call.answer = call.problem or f"The arguments of {call.name!r} could not be read"
        else:
            try:
                result = await episode.step(call.name, call.arguments)
            except (ToolError, EpisodeFinished) as exc:
                call.answer = exc.message
            else:
                call.step = episode.steps
                return result.observation.text
        episode.model.refused_calls += 1
        return call.answer

    async def aclose(self) -> None:
        await self.endpoint.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _turn(completion: Completion, reply: _Reply, **ending: Any) -> Turn:
    return Turn(
        model=completion.model,
        finish_reason=completion.finish_reason,
        text=reply.text,
        content=reply.content if reply.calls else reply.text,
        calls=[call.record() for call in reply.calls],
        parse=reply.parse,
        seconds=round(completion.seconds, 6),
        prompt_ids=completion.prompt_ids,
        completion_ids=completion.completion_ids,
        logprobs=completion.logprobs,
        **ending,
    )
