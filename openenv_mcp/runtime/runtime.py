"""The runtime: one environment bound to one mode. Both doors (MCP and HTTP) call into it.

It owns the one path every call takes: look up and validate the tool, find the episode,
run the tool on the episode's backend (or the prod backend), grade the step, count it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any, Literal, TypeVar

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Grade, Task, TaskSet
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.errors import (
    BackendUnavailable,
    EnvironmentCrashed,
    EpisodeError,
    EpisodeFinished,
    GradePending,
    ModeError,
    OpenEnvError,
    ReplayDiverged,
    ToolError,
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
    TextBlock,
    construct,
)
from openenv_mcp.rewards.curriculum import Curriculum
from openenv_mcp.rewards.rubrics import bind_grade
from openenv_mcp.runtime.episodes import Episode, EpisodeTable, LoggedStep, Outcome, observation_digest
from openenv_mcp.runtime.metrics import Metrics
from openenv_mcp.runtime.observers import EpisodeObserver
from openenv_mcp.runtime.snapshots import SnapshotSigner, describe, toolset_digest
from openenv_mcp.settings import Settings

__all__ = ["DEFAULT_EPISODE", "ForkVia", "Runtime", "crashed", "task_observation"]

ForkVia = Literal["auto", "replay"]
"""How a fork is made: ``auto`` uses the environment's fast path (``sim_fork``) when it declares one, else replays
the source's actions; ``replay`` always replays."""

log = logging.getLogger(__name__)

_GC_YOUNG = 7_000  # the collector's youngest-generation threshold while serving (see _Collector)

DEFAULT_EPISODE = "default"
"""The episode a sim-mode MCP call without ``X-Episode-Id`` acts on (opened on first use)."""


class Runtime:
    """One environment bound to one mode, with its episodes (sim) or its shared backend (prod)."""

    def __init__(self, env: Environment[Any, Any], settings: Settings, server_settings: Any) -> None:
        self.env = env
        self.settings = settings
        self.server_settings = server_settings
        self.mode = settings.mode
        self.tools = env.tools
        # a rubric's judges take their endpoint from the server's settings (a missing one: ConfigError, here)
        self.grade = bind_grade(env.grade, server_settings) if self.sim else env.grade
        self.tasks: TaskSet = env.tasks()
        self.max_steps = settings.max_steps or env.max_steps
        self.observers: list[EpisodeObserver] = []
        self._paces: list[Callable[[], Awaitable[None] | None]] = []  # observers' waits for room (EpisodeObserver)
        self.episodes = EpisodeTable(
            capacity=settings.max_episodes, idle_timeout=settings.idle_timeout, on_close=self._closed
        )
        self.metrics = Metrics(server=env.name, mode=self.mode, open_episodes=lambda: len(self.episodes))
        self.metrics.count_judges(_judges(self.grade))
        self._backend: Any = None  # prod: the shared backend; sim: a probe backend for /readyz
        self._default_lock = asyncio.Lock()
        self._defaults_opened = 0
        self._reaper: asyncio.Task[None] | None = None
        self._collecting = False  # counted among the runtimes _Collector serves for
        key = settings.snapshot_key.get_secret_value().encode() if settings.snapshot_key is not None else None
        self.snapshots = SnapshotSigner(env.name, toolset_digest(env.tools), key)
        self.curriculum: Curriculum | None = None
        if settings.curriculum and self.sim:
            self.curriculum = Curriculum(
                self.tasks,
                band=settings.curriculum_band,
                window=settings.curriculum_window,
                min_attempts=settings.curriculum_min_attempts,
                success_threshold=settings.curriculum_success,
                outside_weight=settings.curriculum_outside_weight,
                seed=settings.curriculum_seed,
            )
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

    def _closed(self, episode: Episode) -> None:
        for observer in self.observers:
            observer.on_close(episode)

    async def start(self) -> None:
        """Open the prod backend (or, in sim, a probe that proves a sim backend can be built)."""
        for observer in self.observers:
            await observer.start()
        if self.sim:
            task = next(iter(self.tasks))
            self._backend = await self.env.sim_backend(task, 0, self.server_settings)
            self._reaper = asyncio.get_running_loop().create_task(
                self.episodes.reap_forever(self.settings.reap_interval)
            )
        else:
            self._backend = await self.env.prod_backend(self.server_settings)
        _Collector.serving(self)

    async def stop(self) -> None:
        _Collector.stopped(self)
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        await self.episodes.close_all()
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None
        for observer in self.observers:
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

    # episodes (sim only) ----------------------------------------------------------------------

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
        episode = await self._open(task, seed)
        self.metrics.resets.inc()
        self.metrics.reset_latency.observe(time.perf_counter() - started)
        observation = task_observation(task, self.tools.names)
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

    async def _open(
        self, task: Task, seed: int, episode_id: str | None = None, *, max_steps: int | None = None
    ) -> Episode:
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
        async with self._default_lock:
            if DEFAULT_EPISODE in self.episodes:
                episode = self.episodes.get(DEFAULT_EPISODE)
                if not episode.done:
                    return episode
                await self.episodes.close(DEFAULT_EPISODE)
            seed = self._defaults_opened  # 0, 1, 2...: each new default episode moves to the next draw
            self._defaults_opened += 1
            task = self.tasks.pick(task_id=None, split=None, seed=seed)
            episode = await self._open(task, seed, DEFAULT_EPISODE)
            observation = task_observation(task, self.tools.names)
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

    # forks and snapshots (sim only) ---------------------------------------------------------------

    async def fork(self, episode_id: str, *, via: ForkVia = "auto") -> StepResult:
        """A new episode in the state ``episode_id`` is in now; both go on independently.

        The fork counts against the cap. With ``via="auto"`` an environment's fast path copies the backend (under
        the source's lock); otherwise the source's actions are replayed on a fresh backend, each step checked
        against the observation it gave (:class:`ReplayDiverged` names the first that differs).
        """
        self._require_sim("Forking an episode")
        source = self.episodes.get(episode_id)
        copy = self.env.sim_fork if via == "auto" else None
        if copy is None:
            async with source.lock:  # the log as it is now; the replay itself runs outside the source's lock
                self._check_open(source)
                log = list(source.log)
            episode = await self._replay(source.task, source.seed, source.max_steps, log, source.id)
        else:
            taken: list[Any] = []

            async def build() -> Any:
                async with source.lock:
                    self._check_open(source)
                    taken.extend((list(source.log), source.last_observation))
                    try:
                        return await copy(source.backend)
                    except OpenEnvError:
                        raise
                    except Exception as exc:
                        raise crashed(f"The sim fork of episode {episode_id!r}", exc, "no episode was opened") from exc

            episode = await self.episodes.open(source.task, source.seed, build, max_steps=source.max_steps)
            log, episode.last_observation = taken
            self._adopt(episode, log)
        episode.forked_from = source.id
        return self._opened(episode, via="fast" if copy is not None else "replay")

    async def snapshot(self, episode_id: str) -> Snapshot:
        """The episode as signed data: task, seed and its steps (action, observation digest, reward, done)."""
        self._require_sim("Snapshotting an episode")
        episode = self.episodes.get(episode_id)
        async with episode.lock:
            self._check_open(episode)
            log = list(episode.log)
        return self.snapshots.snapshot(episode, log)

    async def restore(self, snapshot: Snapshot) -> StepResult:
        """Open an episode in the state a snapshot (of this server, or of a replica sharing its key) holds."""
        self._require_sim("Restoring a snapshot")
        log = self.snapshots.verify(snapshot)
        task = self.tasks.get(snapshot.task_id)
        episode = await self._replay(task, snapshot.seed, snapshot.max_steps, log, "the snapshot")
        return self._opened(episode, via="replay")

    def _check_open(self, episode: Episode) -> None:
        if episode.closed:
            raise self.episodes.not_found(episode.id)
        if episode.pending is not None:
            raise GradePending(
                f"Episode {episode.id!r} has a step whose grade failed ({episode.pending[0].tool.name}): send that "
                "action again to grade it before forking or snapshotting the episode"
            )

    @staticmethod
    def _pending(episode: Episode, bound: BoundCall) -> tuple[BoundCall, Observation, float]:
        """The step that ran but was not graded, when ``bound`` is the same action; else GradePending."""
        assert episode.pending is not None
        pending, observation, ran = episode.pending
        if (bound.tool.name, dict(bound.arguments)) != (pending.tool.name, dict(pending.arguments)):
            raise GradePending(
                f"Episode {episode.id!r}: step {episode.step_count + 1} ({pending.tool.name} "
                f"{describe(pending.arguments)}) ran but its grade failed; send that same action again to grade "
                "it (the tool does not run again), or close the episode"
            )
        return pending, observation, ran

    def _adopt(self, episode: Episode, log: list[LoggedStep]) -> None:
        episode.log = log
        episode.step_count = len(log)
        total = 0.0
        for step in log:
            total += step.reward
        episode.total_reward = total
        episode.done = bool(log and log[-1].done)

    async def _replay(self, task: Task, seed: int, max_steps: int, log: Sequence[LoggedStep], source: str) -> Episode:
        """A new episode of ``task`` under ``seed`` after replaying ``log`` through the one path, checked step by
        step; closed again (and :class:`ReplayDiverged` raised) at the first step that differs."""
        episode = await self._open(task, seed, max_steps=max_steps)
        try:
            async with episode.lock:
                for index, recorded in enumerate(log, 1):
                    where = f"step {index} ({recorded.tool} {describe(recorded.arguments)}) of {source}"
                    if episode.done:
                        raise ReplayDiverged(f"Replay diverged at {where}: the replayed episode was already done")
                    try:
                        bound = self.tools.bind(recorded.tool, recorded.arguments)
                    except ToolError as exc:
                        raise ReplayDiverged(f"Replay failed at {where}: {exc.message}") from None
                    try:
                        await self._advance(episode, bound)
                    except OpenEnvError:
                        raise
                    except Exception as exc:
                        raise crashed(f"Replaying {where}", exc, "no episode was opened") from exc
                    replayed = episode.log[-1]
                    if replayed.digest() != recorded.digest():
                        raise ReplayDiverged(
                            f"Replay diverged at {where}: the observation differs from the recorded one "
                            f"(the environment is not deterministic under seed {seed}, or changed since)"
                        )
                    if (replayed.reward, replayed.done) != (recorded.reward, recorded.done):
                        raise ReplayDiverged(
                            f"Replay diverged at {where}: reward {replayed.reward:g} done {replayed.done}, "
                            f"recorded reward {recorded.reward:g} done {recorded.done}"
                        )
        except BaseException:
            await self.episodes.close(episode.id)
            raise
        return episode

    def _opened(self, episode: Episode, *, via: str) -> StepResult:
        """Announce a fork or a restored episode to the observers; its answer (its last observation)."""
        task = episode.task
        first = task_observation(task, self.tools.names)
        for observer in self.observers:
            observer.on_reset(episode, first)
        last = episode.log[-1] if episode.log else None
        return construct(
            StepResult,
            episode_id=episode.id,
            observation=episode.last_observation or first,
            reward=last.reward if last is not None else 0.0,
            done=episode.done,
            info={
                "task_id": task.id,
                "split": task.split,
                "seed": episode.seed,
                "max_steps": episode.max_steps,
                "step_count": episode.step_count,
                "total_reward": episode.total_reward,
                "forked_from": episode.forked_from,
                "via": via,
            },
        )

    # the one path ------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, Any] | None, episode_id: str | None) -> Outcome:
        """Validate and run one tool call; in sim mode, on an episode (the default one when ``None``)."""
        started = time.perf_counter()
        outcome = "crashed"  # what the metrics say if a tool raises something unexpected
        try:
            bound = self.tools.bind(tool, arguments)
            if not self.sim:
                observation = await bound.run(self._backend)
                result = Outcome(observation, None, 0.0, False)
            else:
                episode = self.episodes.get(episode_id) if episode_id else await self._default_episode()
                async with episode.lock:
                    if episode.closed:
                        raise self.episodes.not_found(episode.id)
                    if episode.done:
                        raise EpisodeFinished(
                            f"Episode {episode.id!r} is done after {episode.step_count} steps "
                            f"(total reward {episode.total_reward:g}); POST /reset to start another"
                        )
                    try:
                        observation, grade, truncated, ran = await self._advance(episode, bound)
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
                for pace in self._paces:  # an observer whose writer is behind: wait for it rather than lose the step
                    if (waiting := pace()) is not None:
                        await waiting
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

    async def _advance(self, episode: Episode, bound: BoundCall) -> tuple[Observation, Grade, bool, float]:
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
            bound, observation, ran = self._pending(episode, bound)
        try:
            grade = await self.grade(episode.task, episode.backend, bound, observation)
        except BackendUnavailable:
            episode.pending = (bound, observation, ran)
            raise
        episode.pending = None
        episode.step_count += 1
        episode.total_reward += grade.reward
        truncated = not grade.done and episode.step_count >= episode.max_steps
        episode.done = grade.done or truncated
        # What the log keeps of the observation (LoggedStep): its one text block, or its digest. Inline and built
        # with tuple.__new__ (not the NamedTuple's Python-level __new__): this runs on every step.
        content = observation.content
        if len(content) == 1 and not observation.is_error and type(block := content[0]) is TextBlock:
            result: str | bytes = block.text
        else:
            result = observation_digest(observation)
        episode.log.append(
            tuple.__new__(LoggedStep, (bound.tool.name, bound.arguments, result, grade.reward, episode.done))
        )
        episode.last_observation = observation
        episode.touch()
        return observation, grade, truncated, ran

    async def step_batch(self, steps: Sequence[BatchStep | BatchFork]) -> list[BatchItem]:
        """Run many episodes' steps (and forks) concurrently; answers in order, each with its own error if any.

        Steps of one episode run in the order given (the episode's lock is first come, first served); a fork
        takes the state its source has once the steps before it in the batch have run.
        """

        async def one(step: BatchStep | BatchFork) -> BatchItem:
            try:
                if type(step) is BatchFork:
                    result = await self.fork(step.episode_id)
                else:
                    assert isinstance(step, BatchStep)
                    result = (await self.call(step.action.tool, step.action.arguments, step.episode_id)).as_step()
            except OpenEnvError as exc:
                return BatchItem(ok=False, error=ErrorDetail(code=exc.code, message=exc.message), status=exc.status)
            return construct(BatchItem, ok=True, result=result, error=None, status=200)

        return await eager_gather([one(step) for step in steps])


class _Collector:
    """The garbage collector while runtimes serve in this process. Its settings are the process's, so the first
    runtime to start tunes them and the last to stop gives them back (tests and Ray replicas host several).

    - Everything alive at a start (modules, the app, schemas, the tool table) lives as long as the server: it is
      frozen, out of the collector's sight, so that the collections the step path's short-lived objects trigger
      stop re-scanning it (measured: batched steps over ``/ws`` went from 25 to 18 us of server CPU).
    - The youngest generation holds ten times CPython's default (700 objects): a batch of steps keeps about a
      thousand objects alive until its answer is sent, so the default collects (and scans them) several times
      per batch: 5% of a batched step's instructions, about none at this threshold (callgrind, bench/README.md).
    """

    running = 0
    threshold: tuple[int, ...] = ()

    @classmethod
    def serving(cls, runtime: Runtime) -> None:
        gc.freeze()
        if cls.running == 0:
            cls.threshold = gc.get_threshold()
            gc.set_threshold(_GC_YOUNG, *cls.threshold[1:])
        cls.running += 1
        runtime._collecting = True

    @classmethod
    def stopped(cls, runtime: Runtime) -> None:
        if not runtime._collecting:
            return
        runtime._collecting = False
        cls.running -= 1
        if cls.running == 0:
            gc.unfreeze()  # what the starts froze becomes collectable again
            gc.set_threshold(*cls.threshold)


def crashed(what: str, exc: Exception, consequence: str, *, detail: bool = True) -> EnvironmentCrashed:
    """The error for an exception that is not ours out of the environment's code (a bug): logged with its
    traceback here under an incident id, answered as one clear error at every door (raise it ``from exc``).

    ``detail=False`` (prod) leaves the exception's text out of the answer, keeping its type: a real service's
    error can hold host names, user names or data the caller must not see; the log has it, found by the id.
    """
    incident = secrets.token_hex(4)
    log.error("%s raised inside the server (incident %s)", what, incident, exc_info=exc)
    kind = f"{type(exc).__name__}: {exc}" if detail else type(exc).__name__
    return EnvironmentCrashed(
        f"{what} crashed inside the server ({kind}); {consequence}. This is a bug in the environment: its "
        f"traceback is in the server's log, incident {incident}"
    )


def _judges(grade: Any) -> list[Any]:
    """The LLM judges among a rubric's components (none when no judge module was ever imported: not paid for)."""
    judge = sys.modules.get("openenv_mcp.rewards.judge")
    if judge is None:
        return []
    return [component for component in getattr(grade, "components", ()) if isinstance(component, judge.LLMJudge)]


def task_observation(task: Task, tools: list[str]) -> Observation:
    """The first observation of an episode: the task's prompt."""
    return construct(
        Observation,
        content=[construct(TextBlock, type="text", text=task.prompt)],
        structured_content={"task_id": task.id, "split": task.split, "prompt": task.prompt, "tools": tools},
        is_error=False,
    )


T = TypeVar("T")


async def eager_gather(coroutines: list[Coroutine[Any, Any, T]]) -> list[T]:
    """``asyncio.gather`` whose coroutines start at once, in order, in the caller's task.

    Each runs until it first waits; one that never waits (a sim tool on an in-memory backend) is done then, with
    no task, no scheduling and no loop iteration, which is most of the cost of a batched step. One that waits (on a
    lock held by an earlier step, on I/O) continues as a task, as under ``gather``. Answers come in order; the first
    exception is raised once every coroutine has started (under ``gather`` the others run on as well).
    """
    results: list[Any] = [None] * len(coroutines)
    waiting: list[tuple[int, asyncio.Future[T]]] = []
    error: Exception | None = None
    for index, coroutine in enumerate(coroutines):
        try:
            yielded = coroutine.send(None)
        except StopIteration as finished:
            results[index] = finished.value
            continue
        except Exception as exc:
            error = error or exc
            continue
        except BaseException:
            for rest in coroutines[index + 1 :]:
                rest.close()
            raise
        waiting.append((index, asyncio.ensure_future(_resume(coroutine, yielded))))
    if error is not None:
        raise error
    if waiting:
        for (index, _), value in zip(waiting, await asyncio.gather(*(task for _, task in waiting)), strict=True):
            results[index] = value
    return results


async def _resume(coroutine: Coroutine[Any, Any, T], yielded: Any) -> T:
    result: T = await _Resumed(coroutine, yielded)
    return result


class _Resumed:
    """Awaiting it carries on a coroutine that has already run up to a wait, which ``yielded`` is."""

    __slots__ = ("coroutine", "yielded")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self.coroutine, self.yielded = coroutine, yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, yielded = self.coroutine, self.yielded
        while True:
            try:
                sent = yield yielded  # the task waits on what the coroutine waits on, then wakes it the same way
            except BaseException as exc:  # cancelled, or the awaited future failed: pass it in
                try:
                    yielded = coroutine.throw(exc)
                except StopIteration as finished:
                    return finished.value
            else:
                try:
                    yielded = coroutine.send(sent)
                except StopIteration as finished:
                    return finished.value
