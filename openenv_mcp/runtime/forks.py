"""Forks, snapshots and restores: an episode is its task, its seed and its actions, so the runtime can copy it.

A fork is a new episode in the state another is in now: by the environment's fast path (``sim_fork``, a copy of
the backend made under the source's lock) when it declares one, else by replaying the source's actions on a fresh
backend through the one path (:meth:`Runtime.play_step <openenv_mcp.runtime.Runtime.play_step>`), each step
checked against the observation, reward and done flag it gave the first time. A snapshot is the same log as signed data
(``snapshots.py``); restoring one replays it. ``docs/episodes.md`` has the guarantees and figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Grade, Task, TaskSet
from openenv_mcp.environment.tools import BoundCall, Toolbox
from openenv_mcp.errors import GradePending, OpenEnvError, ReplayDiverged, ToolError
from openenv_mcp.models import Observation, Snapshot, StepResult, construct
from openenv_mcp.runtime.crashes import crashed
from openenv_mcp.runtime.episodes import Episode, EpisodeTable, LoggedStep, first_observation
from openenv_mcp.runtime.observers import EpisodeObserver
from openenv_mcp.runtime.snapshots import SnapshotSigner, describe

__all__ = ["ForkVia", "Forks"]

ForkVia = Literal["auto", "replay"]
"""How a fork is made: ``auto`` uses the environment's fast path (``sim_fork``) when it declares one, else replays
the source's actions; ``replay`` always replays."""


class _Runtime(Protocol):
    """What forks use of the runtime they serve (:class:`~openenv_mcp.runtime.Runtime` is one)."""

    env: Environment[Any, Any]
    tools: Toolbox[Any]
    tasks: TaskSet
    episodes: EpisodeTable
    observers: list[EpisodeObserver]
    snapshots: SnapshotSigner

    async def open_episode(
        self, task: Task, seed: int, episode_id: str | None = None, *, max_steps: int | None = None
    ) -> Episode: ...

    async def play_step(self, episode: Episode, bound: BoundCall) -> tuple[Observation, Grade, bool, float]: ...


class Forks:
    """The forks, snapshots and restores of one runtime's episodes (sim mode; the runtime checks the mode)."""

    def __init__(self, runtime: _Runtime) -> None:
        self.runtime = runtime

    async def fork(self, episode_id: str, *, via: ForkVia = "auto") -> StepResult:
        """A new episode in the state ``episode_id`` is in now; both go on independently.

        The fork counts against the cap. With ``via="auto"`` an environment's fast path copies the backend (under
        the source's lock); otherwise the source's actions are replayed on a fresh backend, each step checked
        against the observation it gave (:class:`ReplayDiverged` names the first that differs).
        """
        runtime = self.runtime
        source = runtime.episodes.get(episode_id)
        copy = runtime.env.sim_fork if via == "auto" else None
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

            episode = await runtime.episodes.open(source.task, source.seed, build, max_steps=source.max_steps)
            log, episode.last_observation = taken
            episode.adopt(log)
        episode.forked_from = source.id
        return self._opened(episode, via="fast" if copy is not None else "replay")

    async def snapshot(self, episode_id: str) -> Snapshot:
        """The episode as signed data: task, seed and its steps (action, observation digest, reward, done)."""
        episode = self.runtime.episodes.get(episode_id)
        async with episode.lock:
            self._check_open(episode)
            log = list(episode.log)
        return self.runtime.snapshots.snapshot(episode, log)

    async def restore(self, snapshot: Snapshot) -> StepResult:
        """Open an episode in the state a snapshot (of this server, or of a replica sharing its key) holds."""
        log = self.runtime.snapshots.verify(snapshot)
        task = self.runtime.tasks.get(snapshot.task_id)
        episode = await self._replay(task, snapshot.seed, snapshot.max_steps, log, "the snapshot")
        return self._opened(episode, via="replay")

    def _check_open(self, episode: Episode) -> None:
        if episode.closed:
            raise self.runtime.episodes.not_found(episode.id)
        if episode.pending is not None:
            raise GradePending(
                f"Episode {episode.id!r} has a step whose grade failed ({episode.pending[0].tool.name}): send that "
                "action again to grade it before forking or snapshotting the episode"
            )

    async def _replay(self, task: Task, seed: int, max_steps: int, log: Sequence[LoggedStep], source: str) -> Episode:
        """A new episode of ``task`` under ``seed`` after replaying ``log`` through the one path, checked step by
        step; closed again (and :class:`ReplayDiverged` raised) at the first step that differs."""
        runtime = self.runtime
        episode = await runtime.open_episode(task, seed, max_steps=max_steps)
        try:
            async with episode.lock:
                for index, recorded in enumerate(log, 1):
                    where = f"step {index} ({recorded.tool} {describe(recorded.arguments)}) of {source}"
                    if episode.done:
                        raise ReplayDiverged(f"Replay diverged at {where}: the replayed episode was already done")
                    try:
                        bound = runtime.tools.bind(recorded.tool, recorded.arguments)
                    except ToolError as exc:
                        raise ReplayDiverged(f"Replay failed at {where}: {exc.message}") from None
                    try:
                        await runtime.play_step(episode, bound)
                    except OpenEnvError:
                        raise
                    except Exception as exc:
                        raise crashed(f"Replaying {where}", exc, "no episode was opened") from exc
                    _check_replayed(episode.log[-1], recorded, where, seed)
        except BaseException:
            await runtime.episodes.close(episode.id)
            raise
        return episode

    def _opened(self, episode: Episode, *, via: str) -> StepResult:
        """Announce a fork or a restored episode to the observers; its answer (its last observation)."""
        task = episode.task
        first = first_observation(self.runtime.env, episode, self.runtime.tools.names)
        for observer in self.runtime.observers:
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


def _check_replayed(replayed: LoggedStep, recorded: LoggedStep, where: str, seed: int) -> None:
    """Raise :class:`ReplayDiverged` when a replayed step did not give what the recorded one did."""
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
