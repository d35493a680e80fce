"""The trajectory recorder: an episode observer that records every sim step, off the hot path.

The ``on_*`` methods run on the server's event loop right after a step is graded. Each appends its event to a
batch as plain values: a step is one tuple of references to what the step already made (its arguments, its
content's text, its structured result), with nothing serialised. A batch of ``batch_size`` steps, or whatever
is waiting every ``flush_interval`` seconds, is marshalled and appended to the **journal**
(:mod:`openenv_mcp.trajectories.journal`), a folder of files the recorder makes at start, and a byte on a pipe
wakes the **writer process** (:mod:`openenv_mcp.trajectories.writer`, started by :meth:`TrajectoryRecorder.start`
at a lower priority). The writer opens the store (creating its tables, saving the server's tool list), reads the
journal at its own pace, makes the rows (their JSON columns) and writes several batches per transaction, and
answers how many steps it stored; so the database's work runs beside the serving loop instead of taking the
server's interpreter from it, the server never imports SQLAlchemy to record, and a writer that falls behind
leaves its backlog on disk. :meth:`TrajectoryRecorder.stop` (server shutdown, after every episode is closed)
journals what is left, closes the pipe and waits for the writer to write it all and exit. The writer also
finishes when the server dies without stopping (its pipe ends): it writes what the journal holds and exits.

The backlog is bounded: at most ``queue_size`` steps are journaled and not yet written. When the writer falls
that far behind (a slow database, a machine busy for minutes), a step **waits for room**
(:meth:`TrajectoryRecorder.pace`, in that request only; the rest of the server goes on), so nothing is lost and
the steps go at the writer's pace. Only a step that has waited ``max_wait`` seconds
(``OPENENV_TRAJECTORIES_WAIT``: a database that hangs) is dropped. Each drop counts in
``openenv_trajectory_steps_dropped_total{reason}`` (``queue_full``, or ``write_failed`` for a batch the database
refused three times or the journal could not take, or that a writer which died took with it) and marks its
episode (``dropped_steps``), so the exporter leaves that episode out. Episode opens and closes are never dropped
(they are tiny, and one per episode).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import marshal
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic_core import to_json

from openenv_mcp.errors import ConfigError
from openenv_mcp.models import Observation, TextBlock
from openenv_mcp.trajectories.journal import PREFIX, JournalAppender
from openenv_mcp.trajectories.pipe import ACK, FRAME, read_hello, step_as_json, widen

if TYPE_CHECKING:
    from openenv_mcp.environment.tools import BoundCall
    from openenv_mcp.runtime import Outcome, Runtime
    from openenv_mcp.runtime.episodes import Episode

__all__ = ["TrajectoryRecorder", "record_trajectories"]

log = logging.getLogger(__name__)

_ROOM_POLL = 0.002  # seconds between looks at a full pipeline (a transaction frees up to ten batches at once)
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # where the writer process imports this package from
# the writer, from this installation even when the working directory holds another openenv_mcp (``-m`` would look
# there first); it keeps the server's working directory, which a relative sqlite:/// URL is relative to
_RUN_WRITER = (
    f"import runpy, sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
    "runpy.run_module('openenv_mcp.trajectories.writer', run_name='__main__', alter_sys=True)"
)


class TrajectoryRecorder:
    """Records every reset, step and close of a sim server into a :class:`TrajectoryStore`.

    Args:
        url: A SQLAlchemy URL (``sqlite:///trajectories.db``, ``postgresql://user@host/db``).
        server: The server's name, stored with each episode.
        description: The server's description (the exported system message).
        tools: The server's MCP tool list (name, description, inputSchema, ...).
        queue_size: Steps in flight to the writer at most; beyond it steps wait for room (see ``max_wait``).
        batch_size: Steps that make a batch go to the writer before ``flush_interval`` is up.
        flush_interval: Seconds between batches when fewer than ``batch_size`` steps wait.
        max_wait: Seconds a step waits for room in a full queue before it is dropped and counted (0: never).
        registry: Where the recorder's Prometheus metrics go (the server's registry).
        optional: The store is the default one, not one the user asked for: if it cannot be opened the
            server logs a warning and records nothing, instead of refusing to start.
        journal: The directory in which the recorder makes its journal's folder (the system's temporary
            directory when ``None``): the batches on their way to the writer (:mod:`~.journal`).
    """

    # slots: on_step reads a dozen of these per step, faster from slots than from an instance dict of 32 keys
    __slots__ = (
        "_closed", "_dropped", "_enqueued_steps", "_journal", "_journaled", "_marked", "_opened", "_pipe", "_process",
        "_progress", "_restarts", "_stepped", "_stopping", "_tasks", "_toolset", "_uids", "_written_steps",
        "batch_size", "description", "disabled", "dropped", "flush_interval", "journal_root", "max_wait", "optional",
        "queue_size", "restarts", "retry_delay", "server", "tools", "url", "written",
    )  # fmt: skip

    def __init__(
        self,
        url: str,
        *,
        server: str,
        description: str,
        tools: Sequence[Mapping[str, Any]],
        queue_size: int = 200_000,
        batch_size: int = 1_000,
        flush_interval: float = 0.5,
        max_wait: float = 30.0,
        registry: CollectorRegistry | None = None,
        optional: bool = False,
        journal: Path | None = None,
    ) -> None:
        self.url = url
        self.journal_root = journal
        self.optional = optional
        self.disabled = False
        self.server = server
        self.description = description
        self.tools = [dict(tool) for tool in tools]
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.max_wait = max_wait
        self.retry_delay = 0.5  # the writer's wait before its 2nd attempt at a refused batch (doubled for the 3rd)
        self._uids: dict[Episode, str] = {}
        self._dropped: dict[Episode, int] = {}
        # the batch being filled, in the pipe's format (openenv_mcp.trajectories.pipe)
        self._opened: list[dict[str, Any]] = []
        self._stepped: list[tuple[Any, ...]] = []
        self._progress: dict[str, Episode] = {}  # the episodes stepped in the batch being filled, by uid
        self._marked: list[dict[str, Any]] = []
        self._closed: list[dict[str, Any]] = []
        self._enqueued_steps = 0  # steps batched so far
        self._written_steps = 0  # steps the writer has answered for (stored, or lost)
        self._stopping = False
        self._process: asyncio.subprocess.Process | None = None
        self._pipe: asyncio.StreamWriter | None = None  # wakes the writer; its end tells the writer to finish
        self._journal: JournalAppender | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._journaled: deque[tuple[int, int, int]] = deque()  # each batch journaled and not answered for: where
        # it ends (segment, offset) and its steps
        self.restarts = 3  # writers started again after one dies, before recording stops
        self._restarts = 0
        self._toolset = ""  # the store's id of the server's tool list, from the writer's hello
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
        usable = _usable_directory(settings.data_dir)  # the default store's folder, and the journal's
        if default and not usable:
            log.warning(
                "Recording no trajectories: %s cannot be created or written; set OPENENV_TRAJECTORIES to a "
                "writable sqlite:///FILE or URL, or to 'off' to silence this",
                settings.data_dir,
            )
            return None
        tools = runtime.tools.listing()
        return cls(
            url,
            server=runtime.env.name,
            description=runtime.env.description,
            tools=tools,
            queue_size=runtime.settings.trajectories_queue,
            max_wait=runtime.settings.trajectories_wait,
            registry=runtime.metrics.registry,
            optional=default,
            journal=settings.data_dir / "journal" if usable else None,
        )

    @property
    def pending(self) -> int:
        """Steps queued and not yet written (or given up on)."""
        return self._enqueued_steps - self._written_steps

    @property
    def writer_pid(self) -> int | None:
        """The writer process's id while it runs."""
        return self._process.pid if self._process is not None else None

    # observer ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the writer and wait until it has opened the store; a store it cannot open is a ConfigError.

        The wait is the writer's start-up (a Python process importing SQLAlchemy, creating the tables if needed)
        on another core: the server's lifespan loads the MCP SDK meanwhile (``McpMount.preload``).
        """
        try:
            if self.journal_root is not None:
                self.journal_root.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.journal_root))
            journal = JournalAppender(folder, self.url)
        except OSError as exc:
            why = f"the trajectory journal cannot be made in {self.journal_root or tempfile.gettempdir()}: {exc}"
            if not self.optional:
                raise ConfigError(f"{why}; make it writable, or set OPENENV_TRAJECTORIES=off") from exc
            log.warning("Recording no trajectories: %s", why)
            self.disabled = True
            return
        process, hello = await self._spawn(journal)
        if "toolset" not in hello:
            journal.close()
            shutil.rmtree(folder, ignore_errors=True)
            why = hello.get("error") or f"the trajectory writer exited ({process.returncode}) before opening {self.url}"
            if not self.optional:
                raise ConfigError(why)
            log.warning("Recording no trajectories: %s", why)
            self.disabled = True
            return
        self._toolset = hello["toolset"]
        self._journal = journal
        self._stopping = False
        self._tasks = [asyncio.create_task(self._answers(process)), asyncio.create_task(self._tick())]
        log.info("Recording trajectories to %s (OPENENV_TRAJECTORIES=off records nothing)", self.url)

    async def _spawn(self, journal: JournalAppender) -> tuple[asyncio.subprocess.Process, dict[str, str]]:
        """Start a writer on ``journal`` (it inherits the journal's lock) and wait for its hello; while it runs it
        is ``self._process`` and its input ``self._pipe``."""
        path = os.environ.get("PYTHONPATH")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _RUN_WRITER,
            self.url,
            repr(self.retry_delay),
            str(journal.directory),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": _PACKAGE_ROOT + (os.pathsep + path if path else "")},
            pass_fds=(journal.lock_fd,),
        )
        assert process.stdin is not None and process.stdout is not None
        widen(process.stdin)
        toolset = to_json({"server": self.server, "description": self.description, "tools": self.tools}, fallback=repr)
        process.stdin.write(FRAME.pack(len(toolset)) + toolset)
        hello = await read_hello(process.stdout)
        if "toolset" not in hello:
            process.stdin.close()
            await process.wait()
        else:
            self._process, self._pipe = process, process.stdin
            if self._journal is not None:  # a writer started again: what the journal holds already
                process.stdin.write(b"\x01")
                if self._stopping:
                    process.stdin.close()  # it writes the journal to its end and exits
        return process, hello

    async def stop(self) -> None:
        """Send everything still batched, then wait for the writer to write it and exit."""
        if not self._tasks:
            return
        self._stopping = True
        answers, tick = self._tasks
        tick.cancel()
        self._flush()
        pipe = self._pipe
        if pipe is not None:  # None: the writer died for good (counted)
            pipe.close()
            with contextlib.suppress(ConnectionError):
                await pipe.wait_closed()
        await answers  # the writer answers for every batch, then its output ends
        if self._process is not None:
            await self._process.wait()
        if self._journal is not None:
            self._journal.close()
            shutil.rmtree(self._journal.directory, ignore_errors=True)
        self._process = self._pipe = self._journal = None
        self._tasks = []

    def pace(self) -> Awaitable[None] | None:
        """``None`` while the writer has room; else a wait until it has (at most ``max_wait`` seconds)."""
        if self._enqueued_steps - self._written_steps < self.queue_size or self.disabled or not self.max_wait:
            return None
        return self._room()

    async def _room(self) -> None:
        self._flush()  # what waits in the batch may be all that is in flight
        deadline = time.monotonic() + self.max_wait
        while self._enqueued_steps - self._written_steps >= self.queue_size and not self.disabled:
            if time.monotonic() >= deadline:
                return  # on_step drops the step and counts it
            await asyncio.sleep(_ROOM_POLL)

    def on_reset(self, episode: Episode, observation: Observation) -> None:
        if self.disabled:
            return
        self._open(episode, observation.text)

    def on_step(self, episode: Episode, call: BoundCall, outcome: Outcome, seconds: float) -> None:
        if self.disabled:
            return
        uid = self._uids.get(episode) or self._open(episode)
        if self._enqueued_steps - self._written_steps >= self.queue_size:
            self.dropped.labels("queue_full").inc()
            count = self._dropped.get(episode, 0)
            self._dropped[episode] = count + 1
            if count == 0:
                self._marked.append({"id": uid, "dropped_steps": 1})  # the close sets the real count
            return
        arguments = call.arguments
        observation = outcome.observation
        content = observation.content
        structured: dict[str, Any] | bool | None = observation.structured_content
        if len(content) == 1 and type(block := content[0]) is TextBlock:
            text: str | bytes = block.text
            if structured is not None:
                structured = True  # the text is its JSON (Tool.render): the writer stores it for both columns
        else:
            text = to_json(content)
        self._stepped.append(  # pipe.py's step format: plain values, the batch marshalled when it goes (_flush)
            (
                uid,
                episode.step_count,
                call.tool.name,
                arguments if type(arguments) is dict else dict(arguments),
                text,
                structured,
                observation.is_error,
                outcome.reward,
                outcome.done,
                seconds,
                episode.last_active_at,  # when the episode took the step in (Episode.record)
                outcome.scores,
                outcome.reasons,
            )
        )
        self._progress[uid] = episode
        self._enqueued_steps += 1
        if len(self._stepped) >= self.batch_size:
            self._flush()

    def on_close(self, episode: Episode) -> None:
        uid = self._uids.pop(episode, None)
        if uid is None:
            return  # opened before this recorder was attached
        self._progress.pop(uid, None)
        self._closed.append(
            {
                "id": uid,
                "step_count": episode.step_count,
                "total_reward": episode.total_reward,
                "done": episode.done,
                "closed_at": time.time(),
                "dropped_steps": self._dropped.pop(episode, 0),
            }
        )

    def _open(self, episode: Episode, prompt: str | None = None) -> str:
        """Start recording an episode; ``prompt`` is what its first observation showed (the task's prompt, and what
        a world shows first), the task's prompt when unknown."""
        uid = uuid.uuid4().hex
        self._uids[episode] = uid
        self._opened.append(
            {
                "id": uid,
                "episode_id": episode.id,
                "server": self.server,
                "toolset_id": self._toolset,
                "task_id": episode.task.id,
                "split": episode.task.split,
                "seed": episode.seed,
                "prompt": episode.task.prompt if prompt is None else prompt,
                "max_steps": episode.max_steps,
                "created_at": episode.created_at,
                "step_count": 0,
                "total_reward": 0.0,
                "done": False,
                "dropped_steps": 0,
            }
        )
        return uid

    # the pipe to the writer ----------------------------------------------------------------------

    def _flush(self) -> None:
        """Append the batch being filled (if any) to the journal (one ``marshal``, one write) and wake the writer
        (while a writer that died is being started again, the journal keeps the batch for the new one).

        ``marshal``, not pickle: the batch is Python's plain types only (JSON-mode values, strings, numbers), which
        it writes in a third of pickle's time, and the writer is this same interpreter (``sys.executable``)."""
        journal = self._journal
        if journal is None or self.disabled or not (self._opened or self._stepped or self._marked or self._closed):
            return
        progress = [(e.step_count, e.total_reward, e.done, uid) for uid, e in self._progress.items()]
        batch = (self._opened, self._stepped, progress, self._marked, self._closed)
        self._opened, self._stepped, self._progress, self._marked, self._closed = [], [], {}, [], []
        try:
            data = marshal.dumps(batch)
        except ValueError:  # a value marshal does not take (not one of Python's plain types): its JSON instead
            data = marshal.dumps((*batch[:1], [step_as_json(step) for step in batch[1]], *batch[2:]))
        try:
            position = journal.append(data)
        except OSError as exc:
            lost = len(batch[1])
            log.error("The trajectory journal refused a batch (%s); %d steps lost", exc, lost)
            self.dropped.labels("write_failed").inc(lost)
            self._written_steps += lost
            return
        self._journaled.append((*position, len(batch[1])))
        if self._pipe is not None:
            self._pipe.write(b"\x01")

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            self._flush()

    async def _answers(self, process: asyncio.subprocess.Process) -> None:
        """Count what the writer stored and lost, batch by batch, until its output ends; a writer that exits while
        the server records is started again on the journal (``restarts`` times), which goes on where it stopped."""
        while True:
            assert process.stdout is not None
            await self._count(process.stdout)
            code = await process.wait()
            if code == 0 and self._stopping:
                return  # done: it wrote the journal to its end
            self._process = self._pipe = None
            if self._restarts < self.restarts and self._journal is not None:
                self._restarts += 1
                log.error(
                    "The trajectory writer exited (%s); starting another on the journal (%d of %d)",
                    code,
                    self._restarts,
                    self.restarts,
                )
                try:
                    process, hello = await self._spawn(self._journal)
                except OSError as exc:  # no process at all (out of memory, no more processes)
                    hello = {"error": str(exc)}
                if "toolset" in hello:
                    continue
                log.error("The trajectory writer could not start again: %s", hello.get("error", process.returncode))
            lost = self._enqueued_steps - self._written_steps  # what no writer answered for, and what follows
            log.error("The trajectory writer exited; %d steps lost, recording stopped", lost)
            self.dropped.labels("write_failed").inc(lost)
            self._written_steps = self._enqueued_steps
            self._journaled.clear()
            self.disabled = True
            return

    async def _count(self, answers: asyncio.StreamReader) -> None:
        """Read one writer's answers: the batches journaled up to each position are done (once each, however
        many writers answer for them), of their steps ``lost`` refused by the database."""
        journaled = self._journaled
        while True:
            try:
                lost, number, offset = ACK.unpack(await answers.readexactly(ACK.size))
            except asyncio.IncompleteReadError:
                return
            done = 0
            while journaled and journaled[0][:2] <= (number, offset):
                done += journaled.popleft()[2]
            lost = min(lost, done)
            if done > lost:
                self.written.inc(done - lost)
            if lost:
                self.dropped.labels("write_failed").inc(lost)
            self._written_steps += done


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
