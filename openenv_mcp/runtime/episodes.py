"""Episodes: isolated sim instances living in one process, with a cap and idle reaping."""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from openenv_mcp.environment.backend import Backend
from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Grade, Task
from openenv_mcp.errors import CapacityExceeded, EpisodeNotFound
from openenv_mcp.models import EpisodeState, Observation, StepResult, TextBlock, construct

__all__ = [
    "Episode",
    "EpisodeTable",
    "LoggedStep",
    "Outcome",
    "first_observation",
    "observation_digest",
    "task_observation",
]

log = logging.getLogger(__name__)


def observation_digest(observation: Observation) -> bytes:
    """A 16-byte BLAKE2b digest of what an observation shows: every content block and the error flag.

    Structured content is rendered into the text block, so it is covered too. Stable across processes. It hashes
    one string, the blocks joined by NUL (JSON text never holds a raw NUL; a tool's own error text could, which at
    worst makes two such observations compare equal).
    """
    parts = [
        block.text if type(block) is TextBlock else f"image:{block.mime_type}:{block.data}"  # type: ignore[union-attr]
        for block in observation.content
    ]
    parts.append("E" if observation.is_error else "-")
    return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).digest()


class LoggedStep(NamedTuple):
    """One step an episode took: the action, what it showed, and what it was graded.

    The log is what makes an episode data (its task, seed and these steps): forks replay it, snapshots carry it.
    ``result`` is the observation's one text block when that is all it shows (a string the step made anyway:
    keeping it costs no copy and no garbage-collector work, and its digest is computed only when a fork or a
    snapshot needs it, off the step path), else the observation's digest (an image, an error, several blocks;
    and every step restored from a snapshot).
    """

    tool: str
    arguments: Mapping[str, Any]
    result: str | bytes
    reward: float
    done: bool

    def digest(self) -> bytes:
        result = self.result
        if isinstance(result, bytes):
            return result
        return hashlib.blake2b((result + "\0-").encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(eq=False, slots=True)
class Episode:
    """One isolated sim instance: its own backend, counters, lock, and the log of its steps."""

    id: str
    task: Task
    seed: int
    backend: Any
    max_steps: int
    step_count: int = 0
    total_reward: float = 0.0
    done: bool = False
    created_at: float = field(default_factory=time.time)
    last_active_at: float = field(default_factory=time.time)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False
    log: list[LoggedStep] = field(default_factory=list)
    last_observation: Observation | None = None
    forked_from: str | None = None
    pending: tuple[Any, Observation, float] | None = None  # a step that ran but whose grade failed (runtime)

    def touch(self) -> None:
        """Mark the episode active now (idle reaping counts from here)."""
        self.last_active_at = time.time()

    def record(self, tool: str, arguments: Mapping[str, Any], observation: Observation, grade: Grade) -> bool:
        """Count one step that ran and was graded (the episode's lock held): its reward, its place in the log, and
        whether the episode is now done. True when the step limit ended it (truncated) rather than the task."""
        self.pending = None
        self.step_count += 1
        # rounded past any reward's meaning, so a run of shaped rewards that adds up to 1 is 1, not 0.9999999999999999
        self.total_reward = round(self.total_reward + grade.reward, 12)
        truncated = not grade.done and self.step_count >= self.max_steps
        self.done = grade.done or truncated
        # What the log keeps of the observation (LoggedStep): its one text block, or its digest. Built with
        # tuple.__new__ (not the NamedTuple's Python-level __new__): this runs on every step.
        content = observation.content
        if len(content) == 1 and not observation.is_error and type(block := content[0]) is TextBlock:
            result: str | bytes = block.text
        else:
            result = observation_digest(observation)
        self.log.append(tuple.__new__(LoggedStep, (tool, arguments, result, grade.reward, self.done)))
        self.last_observation = observation
        self.last_active_at = time.time()
        return truncated

    def adopt(self, log: list[LoggedStep]) -> None:
        """Take ``log`` as the steps so far of this episode, whose backend was copied in the state they left
        (a fork by the environment's fast path): the counters follow from the log."""
        self.log = log
        self.step_count = len(log)
        total = 0.0
        for step in log:
            total = round(total + step.reward, 12)  # as record() sums
        self.total_reward = total
        self.done = bool(log and log[-1].done)

    def state(self) -> EpisodeState:
        return EpisodeState(
            episode_id=self.id,
            task_id=self.task.id,
            split=self.task.split,
            seed=self.seed,
            step_count=self.step_count,
            max_steps=self.max_steps,
            total_reward=self.total_reward,
            done=self.done,
            created_at=self.created_at,
            last_active_at=self.last_active_at,
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one tool call did: its observation and, in sim mode, the episode's reward and done flag."""

    observation: Observation
    episode: Episode | None
    reward: float
    done: bool
    truncated: bool = False  # done because the step limit ran out, not because the task ended
    scores: Mapping[str, float] | None = None  # the grade's named parts (a rubric's components), if it has any
    reasons: Mapping[str, str] | None = None  # why, for the parts that say (an LLM judge's reason)

    def as_step(self) -> StepResult:
        episode = self.episode
        assert episode is not None, "prod calls have no step result"
        info = {
            "step_count": episode.step_count,
            "total_reward": episode.total_reward,
            "task_id": episode.task.id,
            "truncated": self.truncated,
        }
        if self.scores is not None:
            info["scores"] = self.scores
        if self.reasons is not None:
            info["reasons"] = self.reasons
        return construct(
            StepResult,
            episode_id=episode.id,
            observation=self.observation,
            reward=self.reward,
            done=self.done,
            info=info,
        )


class EpisodeTable:
    """The open episodes of one server: a cap (clear 503 when full), idle reaping, explicit close."""

    def __init__(
        self, *, capacity: int, idle_timeout: float, on_close: Callable[[Episode], None] | None = None
    ) -> None:
        self.capacity = capacity
        self.idle_timeout = idle_timeout
        self._on_close = on_close
        self._episodes: dict[str, Episode] = {}
        self._opening = 0
        self._closed_since_trim = 0

    def __len__(self) -> int:
        return len(self._episodes)

    def __contains__(self, episode_id: str) -> bool:
        return episode_id in self._episodes

    async def open(
        self,
        task: Task,
        seed: int,
        backend_factory: Callable[[], Awaitable[Backend]],
        *,
        max_steps: int,
        episode_id: str | None = None,
    ) -> Episode:
        """Open an episode; the slot is reserved before its backend is built, so the cap is exact."""
        if len(self._episodes) + self._opening >= self.capacity:
            raise CapacityExceeded(
                f"{self.capacity} episodes are open, the most this server holds; close finished ones "
                "(DELETE /episodes/{id}) or raise OPENENV_MAX_EPISODES"
            )
        self._opening += 1
        try:
            backend = await backend_factory()
        finally:
            self._opening -= 1
        episode = Episode(id=episode_id or uuid.uuid4().hex, task=task, seed=seed, backend=backend, max_steps=max_steps)
        self._episodes[episode.id] = episode
        return episode

    def get(self, episode_id: str) -> Episode:
        try:
            return self._episodes[episode_id]
        except KeyError:
            raise self.not_found(episode_id) from None

    def not_found(self, episode_id: str) -> EpisodeNotFound:
        return EpisodeNotFound(
            f"Unknown episode {episode_id!r}: it was closed, reaped after {self.idle_timeout:g} s idle, "
            "or never existed; POST /reset to start one"
        )

    async def close(self, episode_id: str) -> Episode:
        """Close one episode and free its backend, after the step running on it (if any) ends.

        It leaves the table at once, so no new step starts on it; steps already waiting for its
        lock find it closed.
        """
        episode = self.get(episode_id)
        del self._episodes[episode_id]
        self._closed_since_trim += 1
        try:
            async with episode.lock:
                episode.closed = True
                await episode.backend.aclose()
        finally:  # gone from the table either way: observers must hear of it even if the backend failed to close
            if self._on_close is not None:
                self._on_close(episode)
        return episode

    async def close_all(self) -> None:
        for episode_id in list(self._episodes):
            await self.close(episode_id)

    async def reap(self, *, now: float | None = None) -> list[str]:
        """Close the episodes idle for longer than the timeout; return their ids."""
        cutoff = (time.time() if now is None else now) - self.idle_timeout
        idle = [e.id for e in self._episodes.values() if e.last_active_at < cutoff and not e.lock.locked()]
        for episode_id in idle:
            if episode_id in self._episodes:
                try:
                    await self.close(episode_id)
                except Exception:  # one backend that fails to close must not keep the others open
                    log.exception("reaping episode %s: its backend failed to close", episode_id)
        if idle:
            log.info("reaped %d idle episode(s)", len(idle))
        return idle

    async def reap_forever(self, interval: float) -> None:
        """Sweep idle episodes every ``interval`` seconds until cancelled, then hand freed memory back."""
        while True:
            await asyncio.sleep(interval)
            await self.reap()
            self.release_memory()

    def release_memory(self) -> None:
        """After episodes closed, give the heap pages they freed back to the OS (glibc's ``malloc_trim``).

        glibc keeps freed memory for reuse, so without this a server's RSS stays at the high-water mark
        of its busiest moment; a trim after a burst of 1,000 episodes takes about 15 ms. A no-op where
        the C library has no ``malloc_trim`` (musl, macOS).
        """
        if self._closed_since_trim and _MALLOC_TRIM is not None:
            self._closed_since_trim = 0
            _MALLOC_TRIM(0)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_MALLOC_TRIM = _malloc_trim()


def task_observation(task: Task, tools: list[str], opening: Observation | None = None) -> Observation:
    """The first observation of an episode: the task's prompt, then ``opening`` (what the world shows first)."""
    text = task.prompt
    structured: dict[str, Any] = {"task_id": task.id, "split": task.split, "prompt": task.prompt, "tools": tools}
    if opening is not None:
        text = "\n\n".join([text, *(block.text for block in opening.content if type(block) is TextBlock)])
        structured["opening"] = opening.structured_content
    return construct(
        Observation,
        content=[construct(TextBlock, type="text", text=text)],
        structured_content=structured,
        is_error=False,
    )


def first_observation(env: Environment[Any, Any], episode: Episode, tools: list[str]) -> Observation:
    """An episode's first observation: its task's prompt, then what its backend shows at the start, if anything
    (``Environment.opening``: a text game's first room)."""
    opening = env.opening(episode.backend) if env.opening is not None else None
    return task_observation(episode.task, tools, opening)
