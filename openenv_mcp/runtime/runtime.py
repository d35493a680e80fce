"""The runtime: one environment bound to one mode, and the one path every call takes.

Every door (MCP, HTTP, ``/ws``, OpenEnv's wire, ORS, ``/web``) and every adapter calls :meth:`Runtime.call`: look
up and validate the tool, find the episode, run the tool on the episode's backend (or the prod backend), grade the
step, count it (:meth:`Episode.record <openenv_mcp.runtime.episodes.Episode.record>`). Forks, snapshots and restores
are in ``forks.py``, the batch's eager gather in ``_gather.py``, the collector's tuning in ``_gc.py``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Grade, Task, TaskSet, with_extra_tasks
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.errors import (
    BackendUnavailable,
    EpisodeError,
    EpisodeFinished,
    ModeError,
    OpenEnvError,
    ToolNotFound,
)
from openenv_mcp.models import (
    BatchFork,
    BatchItem,
    BatchStep,
    ErrorDetail,
    Observation,
    Snapshot,
    StepResult,
    TaskInfo,
    TaskList,
    construct,
)
from openenv_mcp.rewards.curriculum import Curriculum
from openenv_mcp.rewards.rubrics import bind_grade
from openenv_mcp.runtime._gather import eager_gather
from openenv_mcp.runtime._gc import Collector
from openenv_mcp.runtime.crashes import crashed
from openenv_mcp.runtime.episodes import Episode, EpisodeTable, Outcome, first_observation
from openenv_mcp.runtime.forks import Forks, ForkVia
from openenv_mcp.runtime.metrics import Metrics
from openenv_mcp.runtime.observers import CallRecorder, EpisodeObserver, SessionOpenings
from openenv_mcp.runtime.sessions import DEFAULT_EPISODE, Sessions
from openenv_mcp.runtime.snapshots import SnapshotSigner, toolset_digest
from openenv_mcp.runtime.steps import RecentSteps, pending_step
from openenv_mcp.settings import Settings, load_settings

__all__ = ["DEFAULT_EPISODE", "ForkVia", "Runtime", "build_runtime"]


def build_runtime(env: Environment[Any, Any], settings: Settings) -> Runtime:
    """Bind an environment to the mode in ``settings``, with its own settings read from the process environment;
    a missing prod setting raises ConfigError here, naming it. Serve it with :meth:`Runtime.run`."""
    required = env.prod_requires if settings.mode == "prod" else ()
    return Runtime(env, settings, load_settings(env.settings, required=required))


class Runtime:
    """One environment bound to one mode, with its episodes (sim) or its shared backend (prod).

    An environment with ``prod_sessions`` (a world) keeps episodes in prod too: one per MCP session, with no
    control plane and no reward shown. Build one with :func:`build_runtime`; it serves while :meth:`run` is entered;
    the doors keep their sessions in :attr:`sessions` (:class:`~openenv_mcp.runtime.sessions.Sessions`).
    """

    def __init__(self, env: Environment[Any, Any], settings: Settings, server_settings: Any) -> None:
        self.env = env
        self.settings = settings
        self.server_settings = server_settings
        self.mode = settings.mode
        self.tools = env.tools
        # a rubric's judges take their endpoint from the server's settings (a missing one: ConfigError, here)
        self.grade = bind_grade(env.grade, server_settings) if self.sim else env.grade
        self.episodic = self.sim or env.prod_sessions  # calls act on episodes (in prod: one per MCP session)
        self.tasks: TaskSet = env.tasks()
        self.max_steps = settings.max_steps or env.max_steps
        if settings.extra_tasks is not None and self.sim:
            self.tasks = with_extra_tasks(self.tasks, settings.extra_tasks)
        self.observers: list[EpisodeObserver] = []
        self.call_recorders: list[CallRecorder] = []  # prod: what else sees every call (session recording)
        self._openings = SessionOpenings(env.declares.mining.opening)  # prod: the state a recorded session starts from
        self._paces: list[Callable[[], Awaitable[None] | None]] = []  # observers' waits for room (EpisodeObserver)
        self.episodes = EpisodeTable(
            capacity=settings.max_episodes, idle_timeout=settings.idle_timeout, on_close=self._closed
        )
        self.sessions = Sessions(self)
        self.metrics = Metrics(server=env.name, mode=self.mode, open_episodes=lambda: len(self.episodes))
        self.metrics.count_judges(self.grade)
        self._backend: Any = None  # prod: the shared backend; sim: a probe backend for /readyz
        self._default_lock = asyncio.Lock()
        self._defaults_opened = 0
        self._reaper: asyncio.Task[None] | None = None
        self._running = False
        self._started: list[EpisodeObserver | CallRecorder] = []  # what _start started, for _stop to stop
        key = settings.snapshot_key.get_secret_value().encode() if settings.snapshot_key is not None else None
        self.snapshots = SnapshotSigner(env.name, toolset_digest(env.tools), key)
        self.forks = Forks(self)
        self.recent = RecentSteps(self.call)  # the answers of recent step ids, for every door (runtime/steps.py)
        self.curriculum = Curriculum.from_settings(self.tasks, settings) if settings.curriculum and self.sim else None
        if self.curriculum is not None:
            self.metrics.registry.register(self.curriculum)

    @property
    def sim(self) -> bool:
        return self.mode == "sim"

    # lifecycle -----------------------------------------------------------------------------

    def observe(self, observer: EpisodeObserver) -> None:
        """Show ``observer`` every reset, step and close from now on (sim mode)."""
        self.observers.append(observer)
        if (pace := getattr(observer, "pace", None)) is not None:
            self._paces.append(pace)

    def record_calls(self, recorder: CallRecorder) -> None:
        """Show ``recorder`` every prod call on the shared backend from now on (with the calling session)."""
        self.call_recorders.append(recorder)

    def _closed(self, episode: Episode) -> None:
        self.sessions.closed(episode.id)
        for observer in self.observers:
            observer.on_close(episode)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[Runtime]:
        """Serve: start the observers and the prod backend (or, where calls act on episodes, a probe that proves a
        sim backend can be built), yield this runtime, and on the way out (however the body ended) close every
        episode, the backend and the observers. The one lifecycle: every caller enters this, once at a time
        (``async with build_runtime(env, settings).run() as runtime: ...``).

        Raises:
            RuntimeError: The runtime is running already (entered twice at once).
        """
        if self._running:
            raise RuntimeError(f"The {self.env.name} runtime is running already: enter run() once at a time")
        self._running = True
        try:
            await self._start()
            yield self
        finally:
            self._running = False
            await self._stop()

    async def _start(self) -> None:
        starting: list[EpisodeObserver | CallRecorder] = [*self.observers, *self.call_recorders]
        for observer in starting:
            await observer.start()
            self._started.append(observer)
        if self.episodic:
            if self.settings.prod_task is not None and not self.sim:
                self.tasks.get(self.settings.prod_task)  # an unknown OPENENV_PROD_TASK stops the start, naming it
            task = next(iter(self.tasks))
            self._backend = await self.env.sim_backend(task, 0, self.server_settings)
            self._reaper = asyncio.get_running_loop().create_task(
                self.episodes.reap_forever(self.settings.reap_interval)
            )
        else:
            assert self.env.prod_backend is not None  # Environment requires one without prod_sessions
            self._backend = await self.env.prod_backend(self.server_settings)
        Collector.started(self)

    async def _stop(self) -> None:
        """Undo what :meth:`_start` did, also when it failed part way."""
        Collector.stopped(self)
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        await self.episodes.close_all()
        self.sessions.clear()
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None
        started, self._started = self._started, []
        for observer in started:
            await observer.stop()

    async def readiness(self) -> dict[str, str]:
        """Each backend's ping: ``"ok"`` or why it failed."""
        if self._backend is None:
            return {self.env.name: "not started"}
        try:
            await self._backend.ping()
        except BackendUnavailable as exc:
            return {self.env.name: exc.message}
        return {self.env.name: "ok"}

    # the one path ------------------------------------------------------------------------------

    async def call(
        self, tool: str, arguments: Mapping[str, Any] | None, episode_id: str | None, *, session: str | None = None
    ) -> Outcome:
        """Validate and run one tool call; in sim mode, on an episode (the default one when ``None``); in prod, on
        the shared backend, or on the calling session's episode for an environment with ``prod_sessions``.

        ``session`` names the MCP session a prod call came in on, for the call recorders (:meth:`record_calls`).
        """
        started = time.perf_counter()
        outcome = "crashed"  # what the metrics say if a tool raises something unexpected
        try:
            bound = self.tools.bind(tool, arguments)
            if not self.episodic:
                await self._openings.open(session, self.tools, self._backend, self.call_recorders)
                observation = await bound.run(self._backend)
                result = Outcome(observation, None, 0.0, False)
                for recorder in self.call_recorders:
                    recorder.on_call(session, bound, observation)
            else:
                episode = self.episodes.get(episode_id) if episode_id else await self._default_episode()
                # an observer whose writer is behind: wait for it before the step runs rather than lose the step,
                # and before the episode's lock, so that on_step below sees the episode as this step left it (a
                # wait after the step would let the episode's next step run meanwhile)
                for pace in self._paces:
                    if (waiting := pace()) is not None:
                        await waiting
                async with episode.lock:
                    if episode.closed:
                        raise self.episodes.not_found(episode.id)
                    if episode.done:
                        raise self._finished(episode)
                    try:
                        observation, grade, truncated, ran = await self.play_step(episode, bound)
                    except BackendUnavailable as exc:
                        if episode.pending is None:  # the tool's own backend failed: nothing ran to completion
                            raise
                        raise type(exc)(
                            f"{exc.message}. Step {episode.step_count + 1} ({bound.tool.name}) ran but is not "
                            "graded, so it does not count yet: send the same action again to grade it (the tool "
                            "does not run again)"
                        ) from exc
                result = Outcome(
                    observation, episode, grade.reward, episode.done, truncated, grade.scores, grade.reasons
                )
                if grade.scores:
                    self.metrics.observe_scores(grade.scores)
                if episode.done and self.curriculum is not None:
                    self.curriculum.record(episode.task.id, episode.total_reward)
                for observer in self.observers:
                    observer.on_step(episode, bound, result, ran)
            outcome = "tool_failed" if observation.is_error else "ok"
            return result
        except ToolNotFound:
            outcome, tool = "tool_not_found", "(unknown)"
            raise
        except OpenEnvError as exc:
            outcome = exc.code
            raise
        except Exception as exc:  # a bug in the environment's code: one clear error, the connection goes on
            consequence = "the step does not count" if self.sim else "it returned nothing"
            raise crashed(f"Tool {tool!r}", exc, consequence, detail=self.sim) from exc
        finally:
            self.metrics.observe_call(tool, outcome, time.perf_counter() - started)

    async def play_step(self, episode: Episode, bound: BoundCall) -> tuple[Observation, Grade, bool, float]:
        """Run one validated call on an episode (its lock held) and grade it: the one step, for calls and replays.

        A step whose grade fails (a judge or backend error) ran but does not count: the episode keeps it as
        pending and the error propagates (503). Sending the same action again grades it without running the
        tool again; any other action is refused (:class:`GradePending`) until then.
        """
        if episode.pending is None:
            ran = time.perf_counter()
            observation = await bound.run(episode.backend)
            ran = time.perf_counter() - ran
        else:
            bound, observation, ran = pending_step(episode, bound)
        try:
            grade = await self.grade(episode.task, episode.backend, bound, observation)
        except BackendUnavailable:
            episode.pending = (bound, observation, ran)
            raise
        truncated = episode.record(bound.tool.name, bound.arguments, observation, grade)
        return observation, grade, truncated, ran

    async def step_batch(self, steps: Sequence[BatchStep | BatchFork]) -> list[BatchItem]:
        """Run many episodes' steps (and forks) concurrently; answers in order, each with its own error if any.

        Steps of one episode run in the order given (the episode's lock is first come, first served); a fork
        takes the state its source has once the steps before it in the batch have run.
        """

        async def one(step: BatchStep | BatchFork) -> BatchItem:
            try:
                if type(step) is BatchFork:
                    result = await self.forks.fork(step.episode_id)
                else:
                    assert isinstance(step, BatchStep)
                    action = step.action
                    if step.step_id is None:  # the hot path: no coroutine more than the call's own
                        result = (await self.call(action.tool, action.arguments, step.episode_id)).as_step()
                    else:
                        result = await self.recent.step(action.tool, action.arguments, step.episode_id, step.step_id)
            except OpenEnvError as exc:
                return BatchItem(ok=False, error=ErrorDetail(code=exc.code, message=exc.message), status=exc.status)
            return construct(BatchItem, ok=True, result=result, error=None, status=200)

        return await eager_gather([one(step) for step in steps])

    def _finished(self, episode: Episode) -> EpisodeFinished:
        if not self.sim:  # a prod session's world: no reward to show, no control plane to reset with
            return EpisodeFinished(f"This session's world is done after {episode.step_count} steps; open a new MCP "
                                   "session to play another")  # fmt: skip
        return EpisodeFinished(
            f"Episode {episode.id!r} is done after {episode.step_count} steps "
            f"(total reward {episode.total_reward:g}); POST /reset to start another"
        )

    # episodes ------------------------------------------------------------------------------------

    def _require_sim(self, what: str) -> None:
        if not self.sim:
            raise ModeError(f"{what} exists in sim mode only; this server runs in prod mode (MODE=prod)")

    async def reset(
        self,
        *,
        task_id: str | None = None,
        split: str | None = None,
        seed: int | None = None,
        snapshot: Snapshot | None = None,
    ) -> StepResult:
        """Open a new episode and return its first observation (or, from a snapshot, the episode it holds)."""
        self._require_sim("reset")
        if snapshot is not None:
            if task_id is not None or split is not None or seed is not None:
                raise EpisodeError("A reset from a snapshot takes no task_id, split or seed: the snapshot has them")
            return await self.restore(snapshot)
        started = time.perf_counter()
        if seed is None:
            seed = secrets.randbelow(2**31)
        if self.curriculum is not None and task_id is None:
            task = self.tasks.get(self.curriculum.sample(split or self.tasks.default_split).id)
        else:
            task = self.tasks.pick(task_id=task_id, split=split, seed=seed)
        episode = await self.open_episode(task, seed)
        self.metrics.resets.inc()
        self.metrics.reset_latency.observe(time.perf_counter() - started)
        observation = first_observation(self.env, episode, self.tools.names)
        for observer in self.observers:
            observer.on_reset(episode, observation)
        return construct(
            StepResult,
            episode_id=episode.id,
            observation=observation,
            reward=0.0,
            done=False,
            info={"task_id": task.id, "split": task.split, "seed": seed, "max_steps": episode.max_steps},
        )

    async def open_episode(
        self, task: Task, seed: int, episode_id: str | None = None, *, max_steps: int | None = None
    ) -> Episode:
        """A new episode of ``task`` under ``seed`` on a fresh sim backend, counted against the cap and shown to no
        observer yet (:meth:`reset` announces its own; a fork or a restore announces its episode once built)."""

        async def build() -> Any:
            try:
                return await self.env.sim_backend(task, seed, self.server_settings)
            except OpenEnvError:
                raise
            except Exception as exc:
                raise crashed(
                    f"The sim backend of task {task.id!r} (seed {seed})", exc, "no episode was opened"
                ) from exc

        limit = max_steps if max_steps is not None else self.max_steps
        return await self.episodes.open(task, seed, build, max_steps=limit, episode_id=episode_id)

    async def _default_episode(self) -> Episode:
        if not self.sim:  # prod sessions: an episode is a session's own, never shared
            raise EpisodeError(
                f"{self.env.name} gives each MCP session a world of its own in prod: connect with a session (the "
                "2025 Streamable HTTP protocol, which sends Mcp-Session-Id, or stdio); this request has none"
            )
        async with self._default_lock:
            if DEFAULT_EPISODE in self.episodes:
                episode = self.episodes.get(DEFAULT_EPISODE)
                if not episode.done:
                    return episode
                await self.episodes.close(DEFAULT_EPISODE)
            seed = self._defaults_opened  # 0, 1, 2...: each new default episode moves to the next draw
            self._defaults_opened += 1
            task = self.tasks.pick(task_id=None, split=None, seed=seed)
            episode = await self.open_episode(task, seed, DEFAULT_EPISODE)
            observation = first_observation(self.env, episode, self.tools.names)
            for observer in self.observers:
                observer.on_reset(episode, observation)
            return episode

    def episode(self, episode_id: str) -> Episode:
        self._require_sim("Episode state")
        return self.episodes.get(episode_id)

    async def close_episode(self, episode_id: str) -> Episode:
        self._require_sim("Closing an episode")
        return await self.episodes.close(episode_id)

    def task_list(
        self,
        split: str | None = None,
        *,
        difficulty: str | None = None,
        query: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> TaskList:
        """The tasks that match (see :meth:`TaskSet.select`), ``limit`` of them from ``offset`` (all by default)."""
        self._require_sim("The task list")
        matched = self.tasks.select(split=split, difficulty=difficulty, query=query)
        page = matched[offset : None if limit is None else offset + limit]
        tasks = [
            TaskInfo.model_construct(id=t.id, split=t.split, prompt=t.prompt, difficulty=t.difficulty) for t in page
        ]
        curriculum = self.curriculum.state([t.id for t in page]) if self.curriculum is not None else None
        return TaskList.model_construct(
            tasks=tasks,
            splits=self.tasks.splits,
            difficulties=self.tasks.difficulties,
            total=len(matched),
            offset=offset,
            curriculum=curriculum,
        )

    # forks and snapshots (sim only): forks.py --------------------------------------------------

    async def fork(self, episode_id: str, *, via: ForkVia = "auto") -> StepResult:
        """A new episode in the state ``episode_id`` is in now; both go on independently (:meth:`Forks.fork`)."""
        self._require_sim("Forking an episode")
        return await self.forks.fork(episode_id, via=via)

    async def snapshot(self, episode_id: str) -> Snapshot:
        """The episode as signed data: task, seed and its steps (:meth:`Forks.snapshot`)."""
        self._require_sim("Snapshotting an episode")
        return await self.forks.snapshot(episode_id)

    async def restore(self, snapshot: Snapshot) -> StepResult:
        """Open an episode in the state a snapshot of this server (or a replica sharing its key) holds."""
        self._require_sim("Restoring a snapshot")
        return await self.forks.restore(snapshot)
