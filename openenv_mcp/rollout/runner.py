"""The rollout runner: many episodes at once against a server (or its replicas), each driven by a policy, and their
summary. Episodes go through an :class:`~openenv_mcp.client.pool.AsyncEnvPool` over the server's URLs (one URL:
a pool of one), which spreads them over the replicas and keeps each on its own.

A policy is an async callable taking a :class:`RolloutEpisode`: it calls ``await episode.step(tool,
arguments)`` until ``episode.done`` or it chooses to stop. The runner resets each episode (seeds
``seed``, ``seed + 1``, ...), runs the policy, closes the episode, and keeps what happened. An
episode that fails (the server answered an error, the model endpoint failed) is counted and
reported with its message; the other episodes go on.

Every episode ends for one of :data:`~openenv_mcp.rollout.endings.END_REASONS`, kept in its result: a chat policy
says why it stopped (``episode.end_reason``); otherwise the runner tells from the episode (done, or its step limit)
or from the error (:func:`~openenv_mcp.rollout.endings.ending_for`). An episode that ended for an infrastructure
failure is left out of the summary's figures and counted apart. Each result also has its wall time (reset to
close) beside the environment's time (the steps) and, for a chat policy, the model's side (:class:`ModelSide`).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from openenv_mcp.client import AsyncEnvClient
from openenv_mcp.client.discovery import ServerInfo
from openenv_mcp.client.lifecycle import close_surely, opened_reset
from openenv_mcp.client.pool import AsyncEnvPool
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import StepResult
from openenv_mcp.rollout.endings import END_REASONS, PolicyError, ending_for, is_infra
from openenv_mcp.trajectories.chat import ChatMessage

__all__ = [
    "END_REASONS",
    "Batch",
    "EpisodeResult",
    "ModelSide",
    "Policy",
    "PolicyError",
    "Reset",
    "RolloutEpisode",
    "Summary",
    "resumed",
    "run_plan",
    "run_rollouts",
]


_LAST_TEXT = 500  # characters of the model's last reply kept with a result


@dataclass(slots=True)
class ModelSide:
    """What a chat policy's model did in one episode (all zero for a policy without a model).

    Attributes:
        turns: Model calls made.
        text_replies: Replies without a tool call (neither in ``tool_calls`` nor readable in the text).
        parsed_calls: Calls read out of the reply's text (the endpoint did not parse them).
        refused_calls: Calls that did not become steps (unknown tool, bad arguments, refused by the server).
        seconds: Time spent waiting for the model.
        last_text: The last reply's text, cut to 500 characters.
    """

    turns: int = 0
    text_replies: int = 0
    parsed_calls: int = 0
    refused_calls: int = 0
    seconds: float = 0.0
    last_text: str | None = None

    def replied(self, text: str | None, seconds: float) -> None:
        """Count one model call that answered ``text``."""
        self.turns += 1
        self.seconds += seconds
        if text:
            self.last_text = text if len(text) <= _LAST_TEXT else text[: _LAST_TEXT - 3] + "..."


class RolloutEpisode:
    """One episode as a policy sees it: the task, the tools, and :meth:`step`.

    ``history`` is the conversation so far when the episode goes on from another's state (a member of a
    shared-prefix group, :mod:`openenv_mcp.training.groups`): a chat policy continues it instead of
    opening with the task.
    """

    def __init__(
        self,
        client: AsyncEnvClient | AsyncEnvPool,
        server: ServerInfo,
        first: StepResult,
        seed: int,
        *,
        history: Sequence[ChatMessage] = (),
    ) -> None:
        self.server = server
        self.first = first
        self.seed = seed
        self.last = first
        # a fork starts where its source was: its steps and reward so far (0 after a reset)
        self.steps = int(first.info.get("step_count", 0))
        self.reward = float(first.info.get("total_reward", 0.0))
        self.done = first.done
        self.history = list(history)
        self.latencies: list[float] = []
        self.end_reason: str | None = None  # a policy's word on why it stopped (one of END_REASONS)
        self.model = ModelSide()
        self._client = client

    @property
    def episode_id(self) -> str:
        return self.first.episode_id

    @property
    def task_id(self) -> str:
        return str(self.first.info.get("task_id", ""))

    @property
    def prompt(self) -> str:
        """The task, as the first observation gives it."""
        return self.first.observation.text

    @property
    def max_steps(self) -> int:
        return int(self.first.info.get("max_steps", 20))

    async def step(self, tool: str, arguments: dict[str, Any] | None = None) -> StepResult:
        """Call ``tool`` on this episode (``POST /step``); errors are raised as the package's exceptions."""
        started = time.perf_counter()
        try:
            if isinstance(self._client, AsyncEnvPool):
                result = await self._client.step(self.episode_id, tool, arguments)
            else:
                result = await self._client.step(tool, arguments, episode_id=self.episode_id)
        finally:
            self.latencies.append(time.perf_counter() - started)
        self.steps += 1
        self.reward = float(result.info.get("total_reward", self.reward + result.reward))  # the server's sum
        self.done = result.done
        self.last = result
        return result

    def address(self) -> tuple[str, str]:
        """The URL of the server that holds this episode now and the id it knows it by: for a policy whose calls
        reach the server another way (an agent harness over MCP). With several replicas, that is the episode's own."""
        if isinstance(self._client, AsyncEnvPool):
            return self._client.address(self.episode_id)
        return self.server.url, self.episode_id

    async def refresh(self) -> None:
        """Read the episode's step count, reward and done flag from the server (``GET /state``): for a policy
        whose calls reach the server another way (an agent harness over MCP)."""
        state = await self._client.state(episode_id=self.episode_id)
        self.steps, self.reward, self.done = state.step_count, state.total_reward, state.done


Policy = Callable[[RolloutEpisode], Awaitable[None]]


@dataclass(slots=True)
class EpisodeResult:
    """What one episode did: its reward and steps, why it ended, its wall time (``seconds``, reset to close) and
    the environment's (``env_seconds``, the steps), and the model's side for a chat policy."""

    seed: int
    task_id: str = ""
    episode_id: str = ""
    reward: float = 0.0
    steps: int = 0
    done: bool = False
    error: str | None = None
    latencies: list[float] = field(default_factory=list)
    end_reason: str = ""
    seconds: float = 0.0
    model: ModelSide = field(default_factory=ModelSide)

    @property
    def env_seconds(self) -> float:
        """Time spent in the environment's steps."""
        return sum(self.latencies)


@dataclass(slots=True)
class Summary:
    """Every episode's result, and the figures of the run."""

    results: list[EpisodeResult]
    seconds: float
    success_threshold: float = 1.0
    resumes: list[float] = field(default_factory=list)  # seconds each rebuild of an episode on another replica took

    def resumed(self) -> str:
        """The rebuilt episodes in a few words ('' when none was)."""
        return resumed(self.resumes)

    @property
    def errors(self) -> list[EpisodeResult]:
        """The episodes that stopped on an error (the infrastructure's, or a call the policy insisted on)."""
        return [r for r in self.results if r.error is not None]

    @property
    def infra(self) -> list[EpisodeResult]:
        """The episodes that infrastructure ended (their figures are left out of the means)."""
        return [r for r in self.results if is_infra(r.end_reason)]

    @property
    def ok(self) -> list[EpisodeResult]:
        """The episodes scored: every one but those that infrastructure ended."""
        return [r for r in self.results if not is_infra(r.end_reason)]

    @property
    def mean_reward(self) -> float:
        ok = self.ok
        return sum(r.reward for r in ok) / len(ok) if ok else 0.0

    @property
    def success_rate(self) -> float:
        ok = self.ok
        return sum(1 for r in ok if r.reward >= self.success_threshold) / len(ok) if ok else 0.0

    @property
    def mean_steps(self) -> float:
        ok = self.ok
        return sum(r.steps for r in ok) / len(ok) if ok else 0.0

    @property
    def latencies(self) -> list[float]:
        return sorted(latency for r in self.results for latency in r.latencies)

    def latency(self, quantile: float) -> float:
        """A step-latency quantile in seconds (nearest rank), 0 without steps."""
        ordered = self.latencies
        return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)] if ordered else 0.0

    @property
    def end_reasons(self) -> Counter[str]:
        """How many episodes ended for each reason (:data:`END_REASONS`)."""
        return Counter(r.end_reason for r in self.results if r.end_reason)

    def _times(self) -> str:
        n = len(self.results) or 1
        wall = sum(r.seconds for r in self.results) / n
        env = sum(r.env_seconds for r in self.results) / n
        model = sum(r.model.seconds for r in self.results) / n
        return f"mean {wall:.2f} s wall (environment {env:.2f} s, model {model:.2f} s)"

    def render(self) -> str:
        """The summary table printed at the end of a rollout."""
        n, failed, infra = len(self.results), len(self.errors), len(self.infra)
        steps = len(self.latencies)
        lines = [
            ("episodes", f"{n} ({n - infra} scored, {infra} infra failures, {failed} errors)"),
            ("mean reward", f"{self.mean_reward:.3f}"),
            ("success rate", f"{self.success_rate:.1%} (reward >= {self.success_threshold:g})"),
            ("mean steps", f"{self.mean_steps:.2f}"),
            (
                "step latency",
                f"p50 {self.latency(0.5) * 1000:.1f} ms, p99 {self.latency(0.99) * 1000:.1f} ms ({steps} steps)",
            ),
            (
                "throughput",
                f"{n / self.seconds:.1f} episodes/s, {steps / self.seconds:.1f} steps/s in {self.seconds:.2f} s",
            ),
            ("episode time", self._times()),
            ("ended", ", ".join(f"{reason} {count}" for reason, count in self.end_reasons.most_common()) or "-"),
        ]
        turns = sum(r.model.turns for r in self.results)
        if turns:
            text_replies = sum(r.model.text_replies for r in self.results)
            parsed = sum(r.model.parsed_calls for r in self.results)
            refused = sum(r.model.refused_calls for r in self.results)
            lines.append(
                (
                    "model turns",
                    f"{turns / n:.2f} per episode; {text_replies} without a call, {parsed} calls read from the text, "
                    f"{refused} calls refused",
                )
            )
        if self.resumes:
            lines.append(("resumed", self.resumed()))
        lines.append(("errors", str(failed) if failed else "none"))
        text = [f"{label:<14}{value}" for label, value in lines]
        by_message = Counter(r.error for r in self.errors)
        for message, count in by_message.most_common(5):
            seeds = ", ".join(str(r.seed) for r in self.errors if r.error == message)
            text.append(f"  {count} x {message} (seeds {seeds})")
        if len(by_message) > 5:
            text.append(f"  ... and {len(by_message) - 5} other errors")
        return "\n".join(text)


@dataclass(frozen=True, slots=True)
class Reset:
    """How one planned episode starts: a seed, and a task id (``None``: drawn from the split by the seed)."""

    seed: int
    task_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Batch:
    """How a batch of episodes runs on one server.

    Attributes:
        concurrency: Episodes at once.
        success_threshold: The reward that counts an episode as a success.
        token: The server's bearer token (``OPENENV_AUTH_TOKEN``), if it has one.
        server: What the server offers; found over MCP when not given.
    """

    concurrency: int = 1
    success_threshold: float = 1.0
    token: str | None = field(default=None, repr=False)
    server: ServerInfo | None = None


async def run_rollouts(
    url: str | Sequence[str],
    policy: Policy,
    *,
    episodes: int,
    seed: int = 0,
    split: str | None = None,
    batch: Batch | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> Summary:
    """Run ``episodes`` episodes (seeds ``seed`` ... ``seed + episodes - 1``), ``batch.concurrency`` at a time.

    Args:
        url: The server's base URL, or its replicas' (episodes are spread over them).
        policy: Drives one episode (see the module docstring).
        split: The split tasks are drawn from (the server's default when not given).
        batch: How many at once, what counts as a success, the server's token and what it offers.
        on_result: Called as each episode ends (a progress bar, say).
    """
    plan = [Reset(seed + index) for index in range(episodes)]
    return await run_plan(url, policy, plan, split=split, batch=batch, on_result=on_result)


async def run_plan(
    url: str | Sequence[str],
    policy: Policy,
    plan: Sequence[Reset],
    *,
    split: str | None = None,
    batch: Batch | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> Summary:
    """Run one episode per :class:`Reset` of ``plan``, ``batch.concurrency`` at a time (see :func:`run_rollouts`)."""
    from openenv_mcp.client.discovery import discover

    batch = batch or Batch()
    urls = [url] if isinstance(url, str) else list(url)
    pool = AsyncEnvPool(urls, token=batch.token)
    info = batch.server or await discover(urls[0], token=batch.token)
    results: list[EpisodeResult] = []
    limiter = anyio.Semaphore(batch.concurrency)

    async def one(reset: Reset) -> None:
        async with limiter:
            result = await _episode(pool, info, policy, split, reset)
        results.append(result)
        if on_result is not None:
            on_result(result)

    started = time.perf_counter()
    try:
        async with anyio.create_task_group() as group:
            for reset in plan:
                group.start_soon(one, reset)
    finally:
        await pool.aclose()  # each episode was closed by its own task
    results.sort(key=lambda r: (r.seed, r.task_id))
    return Summary(results, time.perf_counter() - started, batch.success_threshold, list(pool.resumes))


async def _episode(
    client: AsyncEnvPool, server: ServerInfo, policy: Policy, split: str | None, reset: Reset
) -> EpisodeResult:
    seed = reset.seed
    result = EpisodeResult(seed=seed, task_id=reset.task_id or "")
    started = time.perf_counter()
    try:
        first = await opened_reset(client, task_id=reset.task_id, split=None if reset.task_id else split, seed=seed)
    except (OpenEnvError, httpx.HTTPError) as exc:
        result.error, result.end_reason = f"reset: {_describe(exc)}", ending_for(exc)
        result.seconds = time.perf_counter() - started
        return result
    episode = RolloutEpisode(client, server, first, seed)
    try:
        acting = policy(episode)
        if not inspect.isawaitable(acting):
            raise TypeError(f"A policy must be an async callable taking the episode; {policy!r} returned {acting!r}")
        await acting
    except (OpenEnvError, httpx.HTTPError) as exc:
        result.error, result.end_reason = _describe(exc), ending_for(exc)
    finally:
        if await close_surely(client, episode.episode_id):  # cancelled (Ctrl-C) meanwhile: closed all the same
            raise asyncio.CancelledError
    result.task_id, result.episode_id = episode.task_id, episode.episode_id
    result.reward, result.steps, result.done = episode.reward, episode.steps, episode.done
    result.latencies, result.model = episode.latencies, episode.model
    result.end_reason = result.end_reason or episode.end_reason or _ended(episode)
    result.seconds = time.perf_counter() - started
    return result


def resumed(resumes: Sequence[float]) -> str:
    """``resumes`` (seconds per rebuild) in a few words ('' when empty)."""
    if not resumes:
        return ""
    ordered = sorted(resumes)
    return (
        f"{len(ordered)} episodes rebuilt after their replica stopped answering "
        f"(p50 {ordered[len(ordered) // 2]:.2f} s, max {ordered[-1]:.2f} s)"
    )


def _ended(episode: RolloutEpisode) -> str:
    """Why an episode ended when its policy did not say: done, its step limit, or the policy stopped."""
    if not episode.done:
        return "stopped"
    return "step_limit" if episode.last.info.get("truncated") else "done"


def _describe(exc: BaseException) -> str:
    message = exc.message if isinstance(exc, OpenEnvError) else str(exc) or repr(exc)
    return f"{type(exc).__name__}: {message}"
