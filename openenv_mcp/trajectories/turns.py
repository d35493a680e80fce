"""Model turns: what a chat model was asked and answered on each call, and what became of its answer.

A chat policy (``openenv-mcp rollout --policy openai``) keeps one :class:`Turn` per model call: the reply's
text, the calls in it (those the endpoint parsed, and those read out of the text) and what became of each (the
environment step it was, or the refusal the model got instead), the reminder a reply without a call got, a call
that failed, and on the episode's last turn why the episode ended. With ``--capture-tokens`` a turn also holds
its prompt and completion token ids and log-probabilities, exactly as the inference server counted them. The
policy hands an episode's turns to a :data:`TurnSink` when the episode ends. :class:`TurnRecorder` is the sink
the command line uses: it writes them into the trajectory store, beside the steps the server records, keyed by
the server's name and the episode's id. The exporter rebuilds the conversation from them (the model's own text
and call ids) and adds the tokens (:func:`token_fields`), so a trainer never re-tokenizes a transcript.
docs/capture.md shows the shape.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio

if TYPE_CHECKING:
    from openenv_mcp.trajectories.store import TrajectoryStore

__all__ = ["Turn", "TurnRecorder", "TurnSink", "token_fields"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One model call.

    Attributes:
        model: The model that answered (the response's ``model``), else the one asked.
        finish_reason: Why it stopped (``tool_calls``, ``stop``, ``length``...).
        text: The reply's text as the model wrote it.
        content: The assistant message's text as the conversation went on with it: ``text`` without the calls a
            parser read out of it (as a server-side parser leaves it).
        calls: The calls, in order, each ``{"id", "name", "arguments"}`` (arguments as JSON text), ``source``
            (``tool_calls``, or the parser that read it from the text), then ``step`` (the environment step it
            became) or ``answer`` (what the model was told instead: the server's refusal, a problem with the
            arguments, or that the episode had ended), and ``note`` (``schema_echo``) when reading it took more.
        parse: When the text was parsed and something was found: ``{"parser": NAME, "problems": [...]}``.
        reminder: What the model was told after a reply without a call.
        error: The call failed: the endpoint's answer (a full context, a timeout...).
        end_reason: On the episode's last turn: why the episode ended after it.
        seconds: How long the model call took.
        prompt_ids: The whole prompt as the server tokenized it (chat template applied); ``None``: not captured.
        completion_ids: The tokens the model sampled; ``None``: not captured.
        logprobs: The log-probability of each sampled token; ``None``: not captured.
    """

    model: str
    finish_reason: str | None = None
    text: str | None = None
    content: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    parse: dict[str, Any] | None = None
    reminder: str | None = None
    error: str | None = None
    end_reason: str | None = None
    seconds: float = 0.0
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None

    @property
    def captured(self) -> bool:
        """Whether the turn carries its tokens."""
        return self.prompt_ids is not None and self.completion_ids is not None and self.logprobs is not None


TurnSink = Callable[[str, str, Sequence[Turn]], Awaitable[None]]
"""Where a chat policy sends an episode's turns when it ends: ``await sink(server_name, episode_id, turns)``."""


class TurnRecorder:
    """A :data:`TurnSink` writing into the trajectory store at ``url`` (``async with`` it).

    Point it at the store the server records into (``OPENENV_TRAJECTORIES``): the exporter joins the
    turns to the server's episode by server name and episode id.
    """

    def __init__(self, url: str) -> None:
        from openenv_mcp.trajectories.store import TrajectoryStore  # SQLAlchemy loads only when capturing

        self.url = url
        self.episodes = 0
        self.turns = 0
        self.captured = 0  # turns with their tokens
        self._store: TrajectoryStore = TrajectoryStore(url)  # a malformed URL fails here

    async def __call__(self, server: str, episode_id: str, turns: Sequence[Turn]) -> None:
        """Write one episode's turns in one transaction (a refused write raises BackendUnavailable)."""
        at = time.time()
        rows = [
            {
                "server": server,
                "episode_id": episode_id,
                "turn": index,
                "model": turn.model,
                "finish_reason": turn.finish_reason,
                "prompt_ids": turn.prompt_ids or [],
                "completion_ids": turn.completion_ids or [],
                "logprobs": turn.logprobs or [],
                "captured": turn.captured,
                "text": turn.text,
                "content": turn.content,
                "calls": turn.calls,
                "parse": turn.parse,
                "reminder": turn.reminder,
                "error": turn.error,
                "end_reason": turn.end_reason,
                "seconds": turn.seconds,
                "at": at,
            }
            for index, turn in enumerate(turns, start=1)
        ]
        if rows:
            await anyio.to_thread.run_sync(self._store.write_turns, rows)
        self.episodes += 1
        self.turns += len(rows)
        self.captured += sum(1 for turn in turns if turn.captured)

    async def __aenter__(self) -> Self:
        await anyio.to_thread.run_sync(self._store.create)  # an unreachable store is a ConfigError, before any episode
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._store.close()


def token_fields(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """An episode's stored turns with tokens as the export's ``turns`` and ``tokens`` fields (docs/capture.md).

    Turns without tokens (a policy that did not capture, a call that failed) are left out, and so are a capture
    proxy's side requests (a title, a memory: not the policy's turns); ``{}`` when none is left. A row written
    before turns could be uncaptured (``captured`` unset) has its tokens.

    ``turns`` lists each model call: ``prompt_ids``, ``completion_ids``, ``logprobs``, ``model``,
    ``finish_reason``. ``tokens`` is the episode as one sequence for a trainer that concatenates
    turns: the first prompt, then every token after it with ``completion_mask`` 1 where the model
    sampled it (its log-probability in ``completion_logprobs``) and 0 where the environment and the
    chat template put it (log-probability 0.0). It is ``None`` when a turn's prompt does not start
    with the previous prompt and completion (a chat template that rewrites earlier turns, such as one
    dropping past reasoning): then only the per-turn form is exact.

    Turns the capture proxy recorded carry their ``segment``; the record then also has ``segments``, one
    sequence as ``tokens`` is for each segment (with its ``reason``: why its first prompt did not continue the
    episode's earlier ones), and ``tokens`` is the whole episode only when it is one segment.
    """
    kept = [turn for turn in turns if turn.get("captured") is not False and not turn.get("side")]
    listed = []
    for turn in kept:
        entry = {
            "prompt_ids": list(turn["prompt_ids"]),
            "completion_ids": list(turn["completion_ids"]),
            "logprobs": list(turn["logprobs"]),
            "model": turn["model"],
            "finish_reason": turn["finish_reason"],
        }
        if turn.get("segment") is not None:
            entry["segment"] = turn["segment"]
        listed.append(entry)
    if not listed:
        return {}
    fields: dict[str, Any] = {"turns": listed, "tokens": _concatenated(listed)}
    if any("segment" in entry for entry in listed):
        segments = []
        for number in sorted({entry.get("segment", 0) for entry in listed}):
            members = [entry for entry in listed if entry.get("segment", 0) == number]
            first = next(turn for turn in kept if (turn.get("segment") or 0) == number)
            segments.append(
                {"segment": number, "reason": first.get("segment_reason"), **(_concatenated(members) or {})}
            )
        fields["segments"] = segments
        if len(segments) > 1:
            fields["tokens"] = None
    return fields


def _concatenated(turns: list[dict[str, Any]]) -> dict[str, list[Any]] | None:
    if not turns:
        return None
    prompt: list[int] = turns[0]["prompt_ids"]
    ids: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    for turn in turns:
        seen = len(prompt) + len(ids)
        if turn["prompt_ids"][: len(prompt)] != prompt or turn["prompt_ids"][len(prompt) : seen] != ids:
            return None
        added = turn["prompt_ids"][seen:]
        ids += added
        mask += [0] * len(added)
        logprobs += [0.0] * len(added)
        ids += turn["completion_ids"]
        mask += [1] * len(turn["completion_ids"])
        logprobs += turn["logprobs"]
    return {"prompt_ids": prompt, "completion_ids": ids, "completion_mask": mask, "completion_logprobs": logprobs}
