"""Token-exact turns: what a model was given and what it produced on each call, as token ids and log-probabilities.

A chat policy asked to capture (``openenv-mcp rollout --policy openai --capture-tokens``) keeps one
:class:`Turn` per model call, exactly as the inference server counted it, and hands an episode's
turns to a :data:`TurnSink` when the episode ends. :class:`TurnRecorder` is the sink the command
line uses: it writes them into the trajectory store, beside the steps the server records, keyed
by the server's name and the episode's id. The exporter adds them to that episode's record
(:func:`token_fields`), so a trainer never re-tokenizes a transcript. docs/capture.md shows the shape.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio

if TYPE_CHECKING:
    from openenv_mcp.trajectories.store import TrajectoryStore

__all__ = ["Turn", "TurnRecorder", "TurnSink", "token_fields"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One model call, in the model's tokens.

    Attributes:
        prompt_ids: The whole prompt as the server tokenized it (chat template applied).
        completion_ids: The tokens the model sampled.
        logprobs: The log-probability of each sampled token (one per ``completion_ids`` entry).
        model: The model that answered (the response's ``model``).
        finish_reason: Why it stopped (``tool_calls``, ``stop``, ``length``...).
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    model: str
    finish_reason: str | None = None


TurnSink = Callable[[str, str, Sequence[Turn]], Awaitable[None]]
"""Where a capturing policy sends an episode's turns: ``await sink(server_name, episode_id, turns)``."""


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
                "prompt_ids": turn.prompt_ids,
                "completion_ids": turn.completion_ids,
                "logprobs": turn.logprobs,
                "at": at,
            }
            for index, turn in enumerate(turns, start=1)
        ]
        if rows:
            await anyio.to_thread.run_sync(self._store.write_turns, rows)
        self.episodes += 1
        self.turns += len(rows)

    async def __aenter__(self) -> Self:
        await anyio.to_thread.run_sync(self._store.create)  # an unreachable store is a ConfigError, before any episode
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._store.close()


def token_fields(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """An episode's stored turns as the export's ``turns`` and ``tokens`` fields (docs/capture.md).

    ``turns`` lists each model call: ``prompt_ids``, ``completion_ids``, ``logprobs``, ``model``,
    ``finish_reason``. ``tokens`` is the episode as one sequence for a trainer that concatenates
    turns: the first prompt, then every token after it with ``completion_mask`` 1 where the model
    sampled it (its log-probability in ``completion_logprobs``) and 0 where the environment and the
    chat template put it (log-probability 0.0). It is ``None`` when a turn's prompt does not start
    with the previous prompt and completion (a chat template that rewrites earlier turns, such as one
    dropping past reasoning): then only the per-turn form is exact.
    """
    listed = [
        {
            "prompt_ids": list(turn["prompt_ids"]),
            "completion_ids": list(turn["completion_ids"]),
            "logprobs": list(turn["logprobs"]),
            "model": turn["model"],
            "finish_reason": turn["finish_reason"],
        }
        for turn in turns
    ]
    return {"turns": listed, "tokens": _concatenated(listed)}


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
