"""The trajectory recorder: an episode observer that records every sim step, off the hot path.

The ``on_*`` methods run on the server's event loop right after a step is graded. They only put a
small event on an in-memory queue (no I/O, no serialisation: about a microsecond). A writer thread
started by :meth:`TrajectoryRecorder.start` wakes every ``flush_interval`` seconds, or as soon as
``batch_size`` steps are waiting, serialises what is queued and writes it in one transaction.
:meth:`TrajectoryRecorder.stop` (server shutdown, after every episode is closed) drains the queue.

Memory is bounded: at most ``queue_size`` steps wait for the writer. When the writer falls behind
(more steps per second than it writes: a loaded machine, a slow database), a step that finds the
queue full **waits for room** (:meth:`TrajectoryRecorder.pace`, in that request only; the rest of
the server goes on), so nothing is lost and the steps go at the writer's pace. Only a step that
has waited ``max_wait`` seconds (``OPENENV_TRAJECTORIES_WAIT``: a database that hangs) is dropped.
Each drop counts in ``openenv_trajectory_steps_dropped_total{reason}`` (``queue_full``, or
``write_failed`` for a batch the database refused three times) and marks its episode
(``dropped_steps``), so the exporter leaves that episode out. Episode opens and closes are never
dropped (they are tiny, and one per episode).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge

from openenv_mcp.errors import BackendUnavailable, ConfigError
from openenv_mcp.models import Observation

if TYPE_CHECKING:
    from openenv_mcp.episodes import Episode
    from openenv_mcp.runtime import Outcome, Runtime
    from openenv_mcp.tools import BoundCall, Tool
    from openenv_mcp.trajectories.store import TrajectoryStore

__all__ = ["TrajectoryRecorder", "record_trajectories"]

log = logging.getLogger(__name__)

_WRITE_ATTEMPTS = 3
_ROOM_POLL = 0.002  # seconds between looks at a full queue (a transaction frees up to ten batches at once)


class _Open(NamedTuple):
    uid: str
    episode: Episode
    created_at: float


class _Step(NamedTuple):
    uid: str
    step: int
    tool: Tool
    arguments: dict[str, Any]
    observation: Observation
    reward: float
    done: bool
    total_reward: float
    tool_seconds: float
    at: float
    scores: Mapping[str, float] | None = None


class _Close(NamedTuple):
    uid: str
    step_count: int
    total_reward: float
    done: bool
    closed_at: float
    dropped_steps: int


class _Dropped(NamedTuple):
    uid: str


_Event = _Open | _Step | _Close | _Dropped


class TrajectoryRecorder:
    """Records every reset, step and close of a sim server into a :class:`TrajectoryStore`.

    Args:
        url: A SQLAlchemy URL (``sqlite:///trajectories.db``, ``postgresql://user@host/db``).
        server: The server's name, stored with each episode.
        description: The server's description (the exported system message).
        tools: The server's MCP tool list (name, description, inputSchema, ...).
        queue_size: Steps held in memory for the writer; beyond it steps wait for room (see ``max_wait``).
        batch_size: Steps that wake the writer before ``flush_interval`` is up (the writer wakes at most this
            often: each wake takes the interpreter from the serving thread for a while).
        flush_interval: Seconds between writes when fewer than ``batch_size`` steps wait.
        max_wait: Seconds a step waits for room in a full queue before it is dropped and counted (0: never).
        registry: Where the recorder's Prometheus metrics go (the server's registry).
        optional: The store is the default one, not one the user asked for: if it cannot be opened the
            server logs a warning and records nothing, instead of refusing to start.
    """

    def __init__(
        self,
        url: str,
        *,
        server: str,
        description: str,
        tools: Sequence[Mapping[str, Any]],
        queue_size: int = 10_000,
        batch_size: int = 1_000,
        flush_interval: float = 0.5,
        max_wait: float = 30.0,
        registry: CollectorRegistry | None = None,
        optional: bool = False,
    ) -> None:
        self.url = url
        self.optional = optional
        self.disabled = False
        self.server = server
        self.description = description
        self.tools = [dict(tool) for tool in tools]
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.max_wait = max_wait
        self.retry_delay = 0.5
        self._queue: queue.SimpleQueue[_Event] = queue.SimpleQueue()
        self._uids: dict[Episode, str] = {}
        self._dropped: dict[Episode, int] = {}
        # Each counter is written by one thread only (the loop, or the writer), so no lock is needed.
        self._enqueued_steps = 0
        self._written_steps = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        from openenv_mcp.trajectories.store import TrajectoryStore  # SQLAlchemy loads only when recording

        self._store: TrajectoryStore = TrajectoryStore(url)  # a malformed URL fails here, before serving
        self._toolset = ""
        registry = registry if registry is not None else CollectorRegistry()
        self.dropped = Counter(
            "openenv_trajectory_steps_dropped",
            "Steps not recorded: queue_full (the writer fell behind) or write_failed (the database refused)",
            ["reason"],
            registry=registry,
        )
        self.written = Counter("openenv_trajectory_steps_written", "Steps written to the store", registry=registry)
        pending = Gauge("openenv_trajectory_queue_steps", "Steps waiting for the writer", registry=registry)
        pending.set_function(lambda: float(self.pending))

    @classmethod
    def for_runtime(cls, runtime: Runtime) -> TrajectoryRecorder | None:
        """The recorder ``runtime``'s settings ask for: ``None`` in prod or when ``OPENENV_TRAJECTORIES=off``."""
        settings = runtime.settings
        url = settings.trajectories_url
        if not runtime.sim or url.lower() == "off":
            return None
        default = settings.trajectories is None or not settings.trajectories.strip()
        if default and not _usable_directory(settings.data_dir):
            log.warning(
                "Recording no trajectories: %s cannot be created or written; set OPENENV_TRAJECTORIES to a "
                "writable sqlite:///FILE or URL, or to 'off' to silence this",
                settings.data_dir,
            )
            return None
        tools = [
            {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool.input_schema,
                "outputSchema": tool.output_schema,
            }
            for tool in runtime.tools
        ]
        return cls(
            url,
            server=runtime.env.name,
            description=runtime.env.description,
            tools=tools,
            queue_size=runtime.settings.trajectories_queue,
            max_wait=runtime.settings.trajectories_wait,
            registry=runtime.metrics.registry,
            optional=default,
        )

    @property
    def pending(self) -> int:
        """Steps queued and not yet written (or given up on)."""
        return self._enqueued_steps - self._written_steps

    # observer ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create the store's tables if needed and start the writer; an unreachable store is a ConfigError."""

        def open_store() -> None:
            self._store.create()
            self._toolset = self._store.save_toolset(server=self.server, description=self.description, tools=self.tools)

        try:
            await asyncio.to_thread(open_store)
        except ConfigError as exc:
            if not self.optional:
                raise
            log.warning("Recording no trajectories: %s", exc)
            self.disabled = True
            return
        log.info("Recording trajectories to %s (OPENENV_TRAJECTORIES=off records nothing)", self.url)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="openenv-trajectories", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Write everything still queued, then stop the writer and close the store."""
        thread = self._thread
        if thread is None:
            return
        self._stopping = True
        self._wake.set()
        await asyncio.to_thread(thread.join)
        self._thread = None
        self._store.close()

    def pace(self) -> Awaitable[None] | None:
        """``None`` while the queue has room; else a wait until it has (at most ``max_wait`` seconds)."""
        if self._enqueued_steps - self._written_steps < self.queue_size or self._thread is None or not self.max_wait:
            return None
        return self._room()

    async def _room(self) -> None:
        self._wake.set()  # the writer may be asleep with less than a batch queued
        deadline = time.monotonic() + self.max_wait
        while self._enqueued_steps - self._written_steps >= self.queue_size and self._thread is not None:
            if time.monotonic() >= deadline:
                return  # on_step drops the step and counts it
            await asyncio.sleep(_ROOM_POLL)

    def on_reset(self, episode: Episode, observation: Observation) -> None:
        if self.disabled:
            return
        self._open(episode)

    def on_step(self, episode: Episode, call: BoundCall, outcome: Outcome, seconds: float) -> None:
        if self.disabled:
            return
        uid = self._uids.get(episode) or self._open(episode)
        if self._enqueued_steps - self._written_steps >= self.queue_size:
            self.dropped.labels("queue_full").inc()
            count = self._dropped.get(episode, 0)
            self._dropped[episode] = count + 1
            if count == 0:
                self._queue.put(_Dropped(uid))
            return
        self._enqueued_steps += 1
        self._queue.put(
            _Step(
                uid,
                episode.step_count,
                call.tool,
                dict(call.arguments),
                outcome.observation,
                outcome.reward,
                outcome.done,
                episode.total_reward,
                seconds,
                time.time(),
                outcome.scores,
            )
        )
        if self._enqueued_steps - self._written_steps >= self.batch_size and not self._wake.is_set():
            self._wake.set()

    def on_close(self, episode: Episode) -> None:
        uid = self._uids.pop(episode, None)
        if uid is None:
            return  # opened before this recorder was attached
        self._queue.put(
            _Close(
                uid, episode.step_count, episode.total_reward, episode.done, time.time(), self._dropped.pop(episode, 0)
            )
        )

    def _open(self, episode: Episode) -> str:
        uid = uuid.uuid4().hex
        self._uids[episode] = uid
        self._queue.put(_Open(uid, episode, episode.created_at))
        return uid

    # the writer thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            stopping = self._stopping  # read before draining: everything queued before stop() is drained
            while self._write_some():
                pass
            if stopping:
                return

    def _write_some(self) -> bool:
        """Write up to ten batches' worth of queued events (and at most the queue's size) in one transaction;
        False when none were queued. Few, large transactions: a commit costs about as much as a thousand rows."""
        events: list[_Event] = []
        most = max(1, min(self.batch_size * 10, self.queue_size))
        try:
            while len(events) < most:
                events.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        if not events:
            return False
        batch = _rows(events, self.server, self._toolset)
        for attempt in range(1, _WRITE_ATTEMPTS + 1):
            try:
                self._store.write(**batch)
                self.written.inc(len(batch["stepped"]))
                break
            except BackendUnavailable as exc:
                if attempt == _WRITE_ATTEMPTS:
                    lost = len(batch["stepped"])
                    log.error("%s (tried %d times); %d steps lost", exc.message, attempt, lost)
                    self.dropped.labels("write_failed").inc(len(batch["stepped"]))
                else:
                    time.sleep(self.retry_delay * 2 ** (attempt - 1))
        self._written_steps += len(batch["stepped"])
        return True


def _rows(events: list[_Event], server: str, toolset: str) -> dict[str, list[dict[str, Any]]]:
    """Turn queued events into the store's rows (in the writer thread)."""
    opened: list[dict[str, Any]] = []
    stepped: list[dict[str, Any]] = []
    progress: dict[str, dict[str, Any]] = {}
    marked: list[dict[str, Any]] = []
    closed: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, _Step):
            observation = event.observation
            stepped.append(
                {
                    "trajectory_id": event.uid,
                    "step": event.step,
                    "tool": event.tool.name,
                    # JSON columns: the store's serializer (pydantic-core) turns these into JSON text
                    "arguments": event.arguments,
                    "content": observation.content,
                    "structured_content": observation.structured_content,
                    "is_error": observation.is_error,
                    "reward": event.reward,
                    "done": event.done,
                    "tool_seconds": event.tool_seconds,
                    "at": event.at,
                    "scores": event.scores,
                }
            )
            progress[event.uid] = {
                "id": event.uid,
                "step_count": event.step,
                "total_reward": event.total_reward,
                "done": event.done,
            }
        elif isinstance(event, _Open):
            episode = event.episode
            opened.append(
                {
                    "id": event.uid,
                    "episode_id": episode.id,
                    "server": server,
                    "toolset_id": toolset,
                    "task_id": episode.task.id,
                    "split": episode.task.split,
                    "seed": episode.seed,
                    "prompt": episode.task.prompt,
                    "max_steps": episode.max_steps,
                    "created_at": event.created_at,
                    "step_count": 0,
                    "total_reward": 0.0,
                    "done": False,
                    "dropped_steps": 0,
                }
            )
        elif isinstance(event, _Close):
            progress.pop(event.uid, None)
            closed.append(
                {
                    "id": event.uid,
                    "step_count": event.step_count,
                    "total_reward": event.total_reward,
                    "done": event.done,
                    "closed_at": event.closed_at,
                    "dropped_steps": event.dropped_steps,
                }
            )
        else:
            marked.append({"id": event.uid, "dropped_steps": 1})  # the close sets the real count
    return {
        "opened": opened,
        "stepped": stepped,
        "progress": list(progress.values()),
        "marked": marked,
        "closed": closed,
    }


def _usable_directory(path: Path) -> bool:
    """Create ``path`` if needed; true when the server can write there."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def record_trajectories(runtime: Runtime) -> TrajectoryRecorder | None:
    """Attach the recorder ``runtime``'s settings ask for (sim mode, ``OPENENV_TRAJECTORIES`` not ``off``)."""
    recorder = TrajectoryRecorder.for_runtime(runtime)
    if recorder is not None:
        runtime.observe(recorder)
    return recorder
