"""An Atropos environment over a running openenv-mcp server (``pip install "openenv-mcp[atropos]"``).

    python -m openenv_mcp.training.atropos serve --env.server_url http://127.0.0.1:8100 \\
        --env.tokenizer_name Qwen/Qwen3-1.7B --openai.base_url http://127.0.0.1:9001/v1 --openai.model_name ...

How :class:`OpenEnvMCPEnv` maps Atropos' ``BaseEnv`` onto a sim server:

- **item**: one task of ``split`` with a seed; ``get_next_item`` cycles the split's tasks in the
  server's order (``GET /tasks``), item *n* getting seed ``seed + n``.
- **collect_trajectories**: ``group_size`` episodes of that task and seed at once, each its own
  episode on the server (``POST /reset`` with the task id and seed, closed at the end whatever
  happens). Each is driven by the rollout runner's tool-calling loop (:class:`OpenAIPolicy`: the
  server's MCP tools as OpenAI function schemas, its description as the system message), with the
  completions asked of Atropos' server manager (``self.server.chat_completion``), so Atropos'
  load balancing, semaphores, health checks and retries apply. A group in which an episode
  failed (the server or the model answered an error) is dropped and logged, not scored.
- **shared prefix** (``prefix_steps`` > 0): a group is instead ``group_size`` forks of one episode
  after its first ``prefix_steps`` steps, played once by the model
  (:func:`~openenv_mcp.training.groups.ashared_prefix_group`), so the group's scores compare
  continuations of one state. Every member's transcript opens with the prefix (the task, then one
  tool call and its answer per step); the prefix is masked out of the loss, since no member
  generated it. A prefix that ends the episode drops the group, logged.
- **scores**: each episode's total environment reward.
- **tokens and masks**: the transcript rendered by ``tokenizer_name``'s chat template with the
  tools; every assistant turn is trained, everything else is masked (-100). ``messages`` holds the
  transcripts (OpenAI chat format) when ``include_messages`` is set (the default here).
- **evaluate**: one episode per task of ``eval_split`` (seed ``seed``, ``eval_temperature``):
  ``eval/mean_reward``, ``eval/success_rate``, through ``evaluate_log``.

Only this module imports ``atroposlib``; for the type checker its names are ``Any``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypedDict

from atroposlib.envs.base import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
    APIServerConfig,
    BaseEnv,
    BaseEnvConfig,
    ScoredDataGroup,
)
from pydantic import Field

from openenv_mcp.client import AsyncEnvClient
from openenv_mcp.client.lifecycle import close_all, close_surely, opened_reset
from openenv_mcp.environment.tasks import stratified_sample
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import StepResult, TaskInfo
from openenv_mcp.rollout import ChatModel, OpenAIPolicy, RolloutEpisode, Sampling, ServerInfo, discover
from openenv_mcp.rollout.endpoint import Completion
from openenv_mcp.training.groups import ashared_prefix_group
from openenv_mcp.trajectories.chat import ChatMessage

__all__ = ["OpenEnvMCPEnv", "OpenEnvMCPEnvConfig", "Played", "TaskItem", "tokenize_transcript"]

logger = logging.getLogger(__name__)

IGNORED = -100  # the mask value of a token the trainer does not learn


class OpenEnvMCPEnvConfig(BaseEnvConfig):  # type: ignore[misc, unused-ignore]
    """Atropos' ``BaseEnvConfig`` plus where the server is and which tasks to play."""

    server_url: str = Field(
        default="http://127.0.0.1:8100",
        description="Base URL of a running openenv-mcp server in sim mode (Atropos' own API defaults to port 8000)",
    )
    split: str = Field(default="train", description="The split whose tasks are the training items")
    eval_split: str = Field(default="test", description="The split evaluate() plays, one episode per task")
    eval_tasks: int | None = Field(
        default=None,
        ge=1,
        description="Play only this many tasks of eval_split, a sample drawn with `seed` that holds every difficulty "
        "(default: every task)",
    )
    seed: int = Field(default=0, description="Item n is played with seed `seed + n`; evaluation with `seed`")
    temperature: float = Field(default=1.0, description="Sampling temperature of training episodes")
    eval_temperature: float = Field(default=0.0, description="Sampling temperature of evaluation episodes")
    max_turns: int | None = Field(default=None, description="Model calls per episode at most (default: step limit)")
    prefix_steps: int = Field(
        default=0,
        ge=0,
        description="When > 0, each group is group_size forks of one episode after the first prefix_steps steps "
        "the model plays on it (a shared prefix): GRPO compares continuations of one state",
    )


class TaskItem(TypedDict):
    """An Atropos item: a task of the server, and the seed its group is played with."""

    task_id: str
    seed: int


@dataclass(slots=True)
class Played:
    """One finished episode: its environment reward and its transcript."""

    item: TaskItem
    reward: float
    steps: int
    done: bool
    messages: list[ChatMessage] = field(default_factory=list)
    context: int = 0  # the leading messages no member generated (a shared prefix): never learnt


@dataclass(slots=True)
class _Transcript:
    messages: list[ChatMessage] = field(default_factory=list)


# The policy's loop keeps its messages in one list; its completions report that list here, per episode.
_transcript: ContextVar[_Transcript] = ContextVar("openenv_mcp_atropos_transcript")


class _ServerManagerPolicy(OpenAIPolicy):
    """The rollout runner's tool-calling loop, its completions asked of Atropos' server manager."""

    def __init__(self, server: Any, *, split: str, sampling: Sampling, max_turns: int | None) -> None:
        # a reply without a call ends the episode (text_only) at once: a group's episodes stay as sampled
        super().__init__(
            ChatModel(base_url="atropos-server-manager", model=""), sampling=sampling, max_turns=max_turns, reminders=0
        )
        self._server = server
        self._split = split

    async def complete(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> Completion:
        with contextlib.suppress(LookupError):  # outside an episode of ours nobody keeps the transcript
            _transcript.get().messages = messages
        started = time.perf_counter()
        completion = await self._server.chat_completion(
            messages=messages,
            tools=tools,
            tool_choice="auto",
            n=1,
            temperature=self.sampling.temperature,
            max_tokens=self.sampling.max_tokens,
            split=self._split,
        )
        choice = completion.choices[0]
        message = choice.message
        reply: ChatMessage = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            reply["tool_calls"] = [call.model_dump(mode="json", exclude_none=True) for call in message.tool_calls]
        model = str(getattr(completion, "model", "") or "")
        return Completion(reply, choice.finish_reason, model, time.perf_counter() - started)


class OpenEnvMCPEnv(BaseEnv):  # type: ignore[misc, unused-ignore]
    """Atropos' ``BaseEnv`` over an openenv-mcp sim server (see the module docstring for the mapping)."""

    name = "openenv-mcp"
    env_config_cls = OpenEnvMCPEnvConfig
    config: OpenEnvMCPEnvConfig

    def __init__(
        self, config: OpenEnvMCPEnvConfig, server_configs: Any, slurm: bool = False, testing: bool = False
    ) -> None:
        super().__init__(config, server_configs, slurm=slurm, testing=testing)
        self.items_drawn = 0  # saved in Atropos checkpoints (load_checkpoint sets it back by name)
        self.tasks: list[TaskInfo] = []
        self.eval_tasks: list[TaskInfo] = []
        self.rewards: list[float] = []
        self.eval_metrics: list[tuple[str, float]] = []
        self._open: set[str] = set()  # members of shared-prefix groups not closed yet

    @classmethod
    def config_init(cls) -> tuple[OpenEnvMCPEnvConfig, list[Any]]:
        env = OpenEnvMCPEnvConfig(
            group_size=4, use_wandb=False, include_messages=True, wandb_name=cls.name, max_token_length=8192
        )
        model = APIServerConfig(model_name="default", base_url="http://127.0.0.1:9001/v1", api_key="x")
        return env, [model]

    async def setup(self) -> None:
        self._client = AsyncEnvClient(self.config.server_url)  # for the process's life: Atropos has no teardown
        self._server_info: ServerInfo = await discover(self.config.server_url)
        self.tasks = (await self._client.tasks(split=self.config.split)).tasks
        self.eval_tasks = (await self._client.tasks(split=self.config.eval_split)).tasks
        if self.config.eval_tasks is not None:
            self.eval_tasks = stratified_sample(
                self.eval_tasks, self.config.eval_tasks, seed=self.config.seed, key=lambda t: t.difficulty or "-"
            )
        if not self.tasks:
            raise OpenEnvError(f"The server at {self.config.server_url} has no tasks in split {self.config.split!r}")
        self._train_policy = self._policy("train", self.config.temperature)
        self._eval_policy = self._policy("eval", self.config.eval_temperature)

    def _policy(self, split: str, temperature: float) -> _ServerManagerPolicy:
        config = self.config
        return _ServerManagerPolicy(
            self.server,
            split=split,
            sampling=Sampling(temperature=temperature, max_tokens=config.max_token_length),
            max_turns=config.max_turns,
        )

    async def get_next_item(self) -> TaskItem:
        task = self.tasks[self.items_drawn % len(self.tasks)]
        item = TaskItem(task_id=task.id, seed=self.config.seed + self.items_drawn)
        self.items_drawn += 1
        return item

    async def collect_trajectories(self, item: TaskItem) -> tuple[Any, list[TaskItem]]:
        size = self.config.group_size
        prefix = None
        if self.config.prefix_steps:
            try:
                prefix = await ashared_prefix_group(
                    self._client, task_id=item["task_id"], seed=item["seed"], k=size, policy=self._train_policy,
                    steps=self.config.prefix_steps, server=self._server_info,
                )  # fmt: skip
            except Exception as exc:  # as a member's failure below: the group is dropped, and logged
                reason = f"{type(exc).__name__}: {exc}"
                logger.warning("Dropped the group of task %s, seed %s: %s", item["task_id"], item["seed"], reason)
                return None, []
            self._open.update(prefix.episode_ids)
            history = prefix.messages(self._server_info.description)
            plays = [self.play(item, self._train_policy, start=m, history=history) for m in prefix.members]
        else:
            plays = [self.play(item, self._train_policy) for _ in range(size)]
        try:
            group = await asyncio.gather(*plays, return_exceptions=True)
        finally:  # a member whose play never started (cancelled first) is still open: close it
            unplayed = set() if prefix is None else set(prefix.episode_ids) & self._open
            self._open -= unplayed
            if await close_all(self._client, unplayed):
                raise asyncio.CancelledError
        failures = [outcome for outcome in group if isinstance(outcome, BaseException)]
        if failures:
            reasons = "; ".join(sorted({f"{type(e).__name__}: {e}" for e in failures}))
            logger.warning("Dropped the group of task %s, seed %s: %s", item["task_id"], item["seed"], reasons)
            return None, []
        played = [outcome for outcome in group if isinstance(outcome, Played)]
        tools = self._server_info.openai_tools
        scored = ScoredDataGroup(tokens=[], masks=[], scores=[], messages=[] if self.config.include_messages else None)
        for episode in played:
            tokens, masks = tokenize_transcript(self.tokenizer, episode.messages, tools, context=episode.context)
            scored["tokens"].append(tokens)
            scored["masks"].append(masks)
            scored["scores"].append(episode.reward)
            if self.config.include_messages:
                scored["messages"].append(episode.messages)
        self.rewards.extend(episode.reward for episode in played)
        return scored, []

    async def play(
        self,
        item: TaskItem,
        policy: OpenAIPolicy,
        *,
        start: StepResult | None = None,
        history: Sequence[ChatMessage] = (),
    ) -> Played:
        """One episode of ``item``'s task and seed, driven by ``policy``; the episode is closed whatever happens.

        ``start`` is an episode already open (a member of a shared-prefix group) that goes on from ``history``;
        by default a new one is opened.
        """
        first = start or await opened_reset(self._client, task_id=item["task_id"], seed=item["seed"])
        episode = RolloutEpisode(self._client, self._server_info, first, item["seed"], history=history)
        transcript = _Transcript()
        token = _transcript.set(transcript)
        try:
            await policy(episode)
        finally:
            _transcript.reset(token)
            if await self._close(episode.episode_id):
                raise asyncio.CancelledError
        return Played(item, episode.reward, episode.steps, episode.done, transcript.messages, len(history))

    async def _close(self, episode_id: str) -> bool:
        """Close ``episode_id`` to the end; whether this worker was cancelled meanwhile (see rollout.lifecycle)."""
        self._open.discard(episode_id)
        return await close_surely(self._client, episode_id)

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        started = time.time()
        limiter = asyncio.Semaphore(max(1, self.config.max_eval_workers))

        async def one(task: TaskInfo) -> Played:
            async with limiter:
                return await self.play(TaskItem(task_id=task.id, seed=self.config.seed), self._eval_policy)

        outcomes = await asyncio.gather(*(one(task) for task in self.eval_tasks), return_exceptions=True)
        played = [outcome for outcome in outcomes if isinstance(outcome, Played)]
        for failure in (outcome for outcome in outcomes if isinstance(outcome, BaseException)):
            logger.warning("An evaluation episode failed: %s: %s", type(failure).__name__, failure)
        rewards = [episode.reward for episode in played]
        metrics = {
            "eval/mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
            "eval/success_rate": sum(1 for r in rewards if r >= 1.0) / len(rewards) if rewards else 0.0,
            "eval/episodes": float(len(played)),
            "eval/errors": float(len(outcomes) - len(played)),
        }
        self.eval_metrics.extend(metrics.items())
        samples = [
            {"task_id": e.item["task_id"], "seed": e.item["seed"], "reward": e.reward, "steps": e.steps}
            | {"done": e.done, "messages": e.messages}
            for e in played
        ]
        await self.evaluate_log(
            metrics=metrics,
            samples=samples,
            start_time=started,
            end_time=time.time(),
            generation_parameters={"temperature": self.config.eval_temperature},
        )

    async def wandb_log(self, wandb_metrics: dict[str, Any] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.rewards:
            metrics["train/mean_reward"] = sum(self.rewards) / len(self.rewards)
            metrics["train/success_rate"] = sum(1 for r in self.rewards if r >= 1.0) / len(self.rewards)
        metrics.update(self.eval_metrics)
        self.rewards, self.eval_metrics = [], []
        await super().wandb_log(metrics)

    def save_checkpoint(self, step: int, data: dict[str, Any] | None = None) -> None:
        super().save_checkpoint(step, {**(data or {}), "items_drawn": self.items_drawn})


def tokenize_transcript(
    tokenizer: Any, messages: Sequence[ChatMessage], tools: list[dict[str, Any]], *, context: int = 0
) -> tuple[list[int], list[int]]:
    """A transcript's tokens through the tokenizer's chat template (tools included), and its masks.

    Each assistant turn keeps its token ids in the mask (it is learnt); system, user and tool
    turns are ``-100``, and so are the assistant turns among the first ``context`` messages (a
    shared prefix, which the model did not generate in this episode). Tool-call arguments are
    given to the template as objects, as Hugging Face chat templates expect, not as the JSON
    strings of the OpenAI format.
    """
    chat = [_for_template(message) for message in messages]

    def render(turns: list[dict[str, Any]], *, generation_prompt: bool = False) -> list[int]:
        ids = tokenizer.apply_chat_template(
            turns, tools=tools or None, add_generation_prompt=generation_prompt, tokenize=True, return_dict=False
        )
        return [int(i) for i in ids]

    tokens = render(chat)
    masks = [IGNORED] * len(tokens)
    for index, message in enumerate(chat):
        if message["role"] == "assistant" and index >= context:
            start, end = len(render(chat[:index], generation_prompt=True)), len(render(chat[: index + 1]))
            masks[start:end] = tokens[start:end]
    return tokens, masks


def _for_template(message: ChatMessage) -> dict[str, Any]:
    turn = {**message, "content": message.get("content") or ""}
    if message.get("tool_calls"):
        turn["tool_calls"] = [_call_for_template(call) for call in message["tool_calls"]]
    return turn


def _call_for_template(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    with contextlib.suppress(TypeError, json.JSONDecodeError):  # arguments that are not JSON stay as written
        function["arguments"] = json.loads(function.get("arguments") or "{}")
    return {**call, "function": function}


if __name__ == "__main__":
    OpenEnvMCPEnv.cli()
