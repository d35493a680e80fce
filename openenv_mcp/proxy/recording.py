"""Where the proxy's turns go: the episode's rows in the trajectory store, in segments.

An episode is the one the environment's server recorded (``trajectory_episodes``, in the store both write to);
the proxy learns its server's name from there, so the exporter joins the turns to its steps. A request naming an
episode that is not there yet is looked up again for ``wait`` seconds (the server's recorder writes in batches),
then refused as unknown.

**Segments.** Within an episode the proxy keeps, per segment, the tail of its last turn: the prompt and the
completion, as text and as ids. A new prompt whose text begins with a tail's text is that segment's next turn:
its ids are the tail's ids (the very ids the model read and sampled) followed by the rest of the text tokenized,
so a training sequence of the segment never re-tokenizes an earlier turn. Otherwise the prompt is tokenized whole;
when its ids still begin with a tail's, it continues that segment; when they do not, the harness rewrote its
history, and the turn opens a new segment with the reason (the segment's first prompt differs: another
conversation, a sub-agent or a restart: ``new_conversation``; an earlier message changed or was dropped:
``history_rewritten``; only the last reply reads differently, as the harness or the template wrote it back:
``reply_rerendered``), and where the ids parted.

**Side requests** (no tools: a title, a memory summary) are recorded with ``side`` set and touch no segment.

Rows are written one turn at a time, in a thread, before the reply goes out; SQLite's busy timeout (30 s) and WAL
let the server's writer process and the proxy share one file.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from openenv_mcp.proxy.errors import BackendUnavailable, EpisodeNotFound, RecordFailed
from openenv_mcp.trajectories.store import TrajectoryStore

__all__ = ["EpisodeTurns", "Placement", "TurnLog", "TurnRecord"]

_POLL = 0.1


@dataclass(slots=True)
class _Tail:
    segment: int
    text: str | None  # None: read back from the store, where the prompt's text is not kept (its ids are)
    ids: list[int]
    first_prompt: int  # the length of the segment's first conversation (its prompt without the generation prompt)
    prompt: int  # the length of the last prompt, in ids


@dataclass(slots=True)
class EpisodeTurns:
    """What the proxy keeps of one episode: its server, its turn count, each segment's tail, and the text of each
    reply that made calls, by call id (what the model wrote, to show it again in place of the template's
    rendering of the calls)."""

    episode_id: str
    server: str
    turns: int
    segments: int
    tails: list[_Tail] = field(default_factory=list)
    replies: dict[str, tuple[int, str]] = field(default_factory=dict)  # call id -> (its turn, the turn's text)
    lock: anyio.Lock = field(default_factory=anyio.Lock)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a prompt goes: its ids, its segment, and why that segment is new (``None``: it continues one)."""

    ids: list[int]
    segment: int
    reason: str | None
    text: str
    first_prompt: int


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn to store (the row's fields the proxy fills)."""

    wire: str
    model: str
    side: bool
    placement: Placement
    completion_ids: list[int]
    logprobs: list[float]
    raw: str
    content: str
    calls: list[dict[str, Any]]
    finish_reason: str
    seconds: float


class TurnLog:
    """The episodes the proxy has seen, their segments, and the store their turns are written to."""

    def __init__(self, store: TrajectoryStore, *, wait: float = 5.0, keep: int = 1024) -> None:
        self.store = store
        self.wait = wait
        self.keep = keep
        self._episodes: OrderedDict[str, EpisodeTurns] = OrderedDict()
        self._opening = anyio.Lock()

    async def episode(self, episode_id: str) -> EpisodeTurns:
        """``episode_id``'s state: its server looked up in the store (for up to ``wait`` seconds) on first sight.

        The ``keep`` most recently used episodes stay in memory; one read again (after it was let go, or by a
        restarted proxy) gets its turn count and its segments' tails back from the store, so its next turns
        continue it.
        """
        known = self._episodes.get(episode_id)
        if known is not None:
            self._episodes.move_to_end(episode_id)
            return known
        server = await self._lookup(episode_id)
        async with self._opening:
            if episode_id not in self._episodes:
                rows = await anyio.to_thread.run_sync(lambda: self.store.episode_turns(episode_id, server=server))
                self._episodes[episode_id] = _restored(episode_id, server, rows)
                while len(self._episodes) > self.keep:
                    self._episodes.popitem(last=False)
            return self._episodes[episode_id]

    async def _lookup(self, episode_id: str) -> str:
        deadline = time.monotonic() + self.wait
        while True:
            server = await anyio.to_thread.run_sync(self.store.episode_server, episode_id)
            if server is not None:
                return server
            if time.monotonic() >= deadline:
                raise EpisodeNotFound(
                    f"No episode {episode_id!r} in the trajectory store {self.store.url!r} (looked for "
                    f"{self.wait:g} s): open it on the environment's server first (POST /reset, recording into the "
                    "same OPENENV_TRAJECTORIES), then put its id in the base URL (http://PROXY/ep/EPISODE_ID/v1) "
                    "or send it as the API key"
                )
            await anyio.sleep(_POLL)

    async def place(
        self,
        state: EpisodeTurns,
        text: str,
        tokenize: Callable[[str], Awaitable[list[int]]],
        *,
        side: bool,
        opening: int = 0,
    ) -> Placement:
        """The ids of the prompt ``text`` and the segment it belongs to (a side request's is its own).

        ``opening``: how many ids the template's generation prompt (the assistant's header) takes at the end of a
        prompt; what comes before it is the conversation a later prompt must keep to be the same one.
        """
        tails = [] if side else sorted(state.tails, key=lambda tail: len(tail.ids), reverse=True)
        for tail in tails:
            if tail.text is not None and text.startswith(tail.text):
                ids = tail.ids + (await tokenize(text[len(tail.text) :]) if len(text) > len(tail.text) else [])
                return Placement(ids, tail.segment, None, text, tail.first_prompt)
        ids = await tokenize(text)
        if side:
            return Placement(ids, -1, None, text, len(ids))
        for tail in tails:
            if ids[: len(tail.ids)] == tail.ids:
                return Placement(ids, tail.segment, None, text, tail.first_prompt)
        return Placement(ids, -1, _reason(ids, state.tails), text, max(len(ids) - opening, 0))

    async def record(self, state: EpisodeTurns, turn: TurnRecord) -> int:
        """Write ``turn`` into the store; return its number in the episode."""
        async with state.lock:
            placement = turn.placement
            segment, reason = placement.segment, placement.reason
            if not turn.side and segment < 0:
                segment = state.segments
                if reason is None and segment > 0:
                    reason = "new_conversation: the episode's earlier segments left no tail to continue"
            number = state.turns + 1
            row = _row(state.server, state.episode_id, number, segment, reason, turn)
            try:
                await anyio.to_thread.run_sync(self.store.write_turns, [row])
            except BackendUnavailable as exc:
                raise RecordFailed(
                    f"{exc.message}; the reply was not sent (a turn not recorded cannot be trained on)"
                ) from exc
            state.turns = number
            if not turn.side:
                for call in turn.calls:
                    state.replies[call["id"]] = (number, turn.raw)
                state.segments = max(state.segments, segment + 1)
                state.tails = [tail for tail in state.tails if tail.segment != segment]
                state.tails.append(
                    _Tail(
                        segment,
                        placement.text + turn.raw,
                        placement.ids + turn.completion_ids,
                        placement.first_prompt,
                        len(placement.ids),
                    )
                )
            return number

    def turns(self, episode_id: str) -> list[dict[str, Any]]:
        """The turns stored for ``episode_id`` so far, side requests included, in order."""
        return self.store.episode_turns(episode_id)


def _restored(episode_id: str, server: str, rows: Sequence[Mapping[str, Any]]) -> EpisodeTurns:
    """An episode's state from its stored turns: the count, and each segment's last prompt and completion."""
    state = EpisodeTurns(episode_id, server, max((row["turn"] for row in rows), default=0), 0)
    policy = [row for row in rows if not row.get("side") and row.get("segment") is not None]
    for row in policy:
        for call in row.get("calls") or []:
            state.replies[call["id"]] = (row["turn"], row.get("text") or "")
    state.segments = max((row["segment"] for row in policy), default=-1) + 1
    for segment in range(state.segments):
        members = [row for row in policy if row["segment"] == segment]
        if members:
            last = members[-1]
            ids = [*last["prompt_ids"], *last["completion_ids"]]
            state.tails.append(_Tail(segment, None, ids, len(members[0]["prompt_ids"]), len(last["prompt_ids"])))
    return state


def _reason(ids: Sequence[int], tails: Sequence[_Tail]) -> str | None:
    """Why ``ids`` continue none of ``tails`` (``None``: the episode's first segment)."""
    if not tails:
        return None
    best = max(tails, key=lambda tail: _common(ids, tail.ids))
    common = _common(ids, best.ids)
    if common < best.first_prompt:
        kind = "new_conversation"
    elif common < best.prompt:
        kind = "history_rewritten"
    else:
        kind = "reply_rerendered"
    return f"{kind}: parted from segment {best.segment} at token {common} of {len(best.ids)}"


def _common(left: Sequence[int], right: Sequence[int]) -> int:
    """How many leading ids ``left`` and ``right`` share (by halving: list slices compare in C)."""
    size = min(len(left), len(right))
    if left[:size] == right[:size]:
        return size
    low, high = 0, size  # left[:low] == right[:low]; left[:high] != right[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if left[:middle] == right[:middle]:
            low = middle
        else:
            high = middle
    return low


def _row(
    server: str, episode_id: str, number: int, segment: int, reason: str | None, turn: TurnRecord
) -> dict[str, Any]:
    return {
        "server": server,
        "episode_id": episode_id,
        "turn": number,
        "model": turn.model,
        "finish_reason": turn.finish_reason,
        "prompt_ids": turn.placement.ids,
        "completion_ids": turn.completion_ids,
        "logprobs": turn.logprobs,
        "captured": True,
        "text": turn.raw,
        "content": turn.content,
        "calls": turn.calls,
        "seconds": turn.seconds,
        "at": time.time(),
        "wire": turn.wire,
        "side": turn.side,
        "segment": None if turn.side else segment,
        "segment_reason": None if turn.side else reason,
    }
