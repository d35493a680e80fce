"""The runtime: one environment bound to one mode. Both doors (MCP and HTTP) call into it.

It owns the one path every call takes: look up and validate the tool, find the episode,
run the tool on the episode's backend (or the prod backend), grade the step, count it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import secrets
import time
from collections.abc import Coroutine, Generator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from openenv_mcp.environment import Environment
from openenv_mcp.episodes import Episode, EpisodeTable
from openenv_mcp.errors import (
    BackendUnavailable,
    EpisodeFinished,
    ModeError,
    OpenEnvError,
    ToolNotFound,
)
from openenv_mcp.metrics import Metrics
from openenv_mcp.models import (
    BatchItem,
    BatchStep,
    ErrorDetail,
    Observation,
    StepResult,
    TaskInfo,
    TaskList,
    TextBlock,
    construct,
)
from openenv_mcp.observers import EpisodeObserver
from openenv_mcp.settings import Settings
from openenv_mcp.tasks import Task, TaskSet

__all__ = ["DEFAULT_EPISODE", "Outcome", "Runtime"]

log = logging.getLogger(__name__)

DEFAULT_EPISODE = "default"
"""The episode a sim-mode MCP call without ``X-Episode-Id`` acts on (opened on first use)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one tool call did: its observation and, in sim mode, the episode's reward and done flag."""

    observation: Observation
    episode: Episode | None
    reward: float
    done: bool
    truncated: bool = False  # done because the step limit ran out, not because the task ended

    def as_step(self) -> StepResult:
        episode = self.episode
        assert episode is not None, "prod calls have no step result"
        return construct(
            StepResult,
            episode_id=episode.id,
            observation=self.observation,
            reward=self.reward,
            done=self.done,
            info={
                "step_count": episode.step_count,
                "total_reward": episode.total_reward,
                "task_id": episode.task.id,
                "truncated": self.truncated,
            },
        )


class Runtime:
    """One environment bound to one mode, with its episodes (sim) or its shared backend (prod)."""

    def __init__(self, env: Environment[Any, Any], settings: Settings, server_settings: Any) -> None:
        self.env = env
        self.settings = settings
        self.server_settings = server_settings
        self.mode = settings.mode
        self.tools = env.tools
        self.tasks: TaskSet = env.tasks()
        self.max_steps = settings.max_steps or env.max_steps
        self.observers: list[EpisodeObserver] = []
        self.episodes = EpisodeTable(
            capacity=settings.max_episodes, idle_timeout=settings.idle_timeout, on_close=self._closed
        )
        self.metrics = Metrics(server=env.name, mode=self.mode, open_episodes=lambda: len(self.episodes))
        self._backend: Any = None  # prod: the shared backend; sim: a probe backend for /readyz
        self._default_lock = asyncio.Lock()
        self._defaults_opened = 0
        self._reaper: asyncio.Task[None] | None = None

    @property
    def sim(self) -> bool:
        return self.mode == "sim"

    # lifecycle -----------------------------------------------------------------------------

    def observe(self, observer: EpisodeObserver) -> None:
        """Show ``observer`` every reset, step and close from now on (sim mode)."""
        self.observers.append(observer)

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
        # Everything alive now (modules, the app, schemas, the tool table) lives as long as the server: move it
        # out of the garbage collector's sight, so that the collections the step path's short-lived objects
        # trigger stop re-scanning it (measured: batched steps over /ws went from 25 to 18 us of server CPU).
        gc.freeze()

    async def stop(self) -> None:
        gc.unfreeze()  # what start froze becomes collectable again (tests start and stop many servers)
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
        self, *, task_id: str | None = None, split: str | None = None, seed: int | None = None
    ) -> StepResult:
        """Open a new episode and return its first observation."""
        self._require_sim("reset")
        started = time.perf_counter()
        if seed is None:
            seed = secrets.randbelow(2**31)
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

    async def _open(self, task: Task, seed: int, episode_id: str | None = None) -> Episode:
        async def build() -> Any:
            return await self.env.sim_backend(task, seed, self.server_settings)

        return await self.episodes.open(task, seed, build, max_steps=self.max_steps, episode_id=episode_id)

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

    def task_list(self, split: str | None = None) -> TaskList:
        self._require_sim("The task list")
        tasks = [
            TaskInfo(id=t.id, split=t.split, prompt=t.prompt) for t in self.tasks if split is None or t.split == split
        ]
        return TaskList(tasks=tasks, splits=self.tasks.splits)

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
                    ran = time.perf_counter()
                    observation = await bound.run(episode.backend)
                    ran = time.perf_counter() - ran
                    episode.step_count += 1
                    grade = await self.env.grade(episode.task, episode.backend, bound, observation)
                    episode.total_reward += grade.reward
                    truncated = not grade.done and episode.step_count >= episode.max_steps
                    episode.done = grade.done or truncated
                    episode.touch()
                result = Outcome(observation, episode, grade.reward, episode.done, truncated)
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
        finally:
            self.metrics.observe_call(tool, outcome, time.perf_counter() - started)

    async def step_batch(self, steps: list[BatchStep]) -> list[BatchItem]:
        """Run many episodes' steps concurrently; answers in order, each with its own error if any.

        Steps of one episode run in the order given (the episode's lock is first come, first served).
        """

        async def one(step: BatchStep) -> BatchItem:
            try:
                outcome = await self.call(step.action.tool, step.action.arguments, step.episode_id)
            except OpenEnvError as exc:
                return BatchItem(ok=False, error=ErrorDetail(code=exc.code, message=exc.message), status=exc.status)
            return construct(BatchItem, ok=True, result=outcome.as_step(), error=None, status=200)

        return await eager_gather([one(step) for step in steps])


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
