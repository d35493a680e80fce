"""TRL: an ``environment_factory`` for ``GRPOTrainer`` over a sim server (``pip install trl``).

    from trl import GRPOConfig, GRPOTrainer
    from openenv_mcp.training.trl import environment_factory, task_dataset

    SqlEnv = environment_factory("http://127.0.0.1:8000")        # or environment_factory(LocalServer("sql"))
    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=task_dataset("http://127.0.0.1:8000"),
                          environment_factory=SqlEnv)             # the reward is SqlEnv.get_reward
    trainer.train()
    SqlEnv.close_all()                                            # close the episodes still open

:func:`environment_factory` asks the server for its MCP tool list and builds a class that TRL
instantiates once per rollout (with no arguments), then reuses:

- **Tools.** Each MCP tool is a public method of the same name, with keyword parameters typed from
  its ``inputSchema`` and a Google docstring (the tool's description, ``Args:`` from each
  property's description), so the schema TRL renders for the model (transformers'
  ``get_json_schema``) is the tool's ``inputSchema`` as far as type hints can say it: every
  property, its type, ``items``, ``enum``, nullability, description, and which are required.
  Bounds, lengths, patterns, formats and defaults are not expressible there; the server still
  checks them, and a call that breaks one comes back as an error the model reads.
  :func:`trl_schema` gives that projection of an ``inputSchema``.
- **reset(\\*\\*row)** closes the instance's previous episode and opens one from the dataset row's
  ``task_id``, ``split`` and ``seed`` columns (each optional; other columns are ignored), and
  returns the task's prompt, which TRL appends to the row's last prompt message.
- **Shared prefixes.** A row with a ``prefix`` column (actions, as :func:`task_rows` writes it with
  ``prefix=``) makes the episode a member of a group forked from one episode after those actions
  (:mod:`openenv_mcp.training.groups`): TRL resets one instance per generation with the same row,
  so the ``group_size`` generations of a prompt (``GRPOConfig.num_generations``) each get a fork
  of one root, in the same state, and GRPO compares their continuations. Rows sharing a ``group``
  key share a root (by default the key is the task, seed and prefix). The row's ``prompt`` holds
  the prefix as a chat (the task, then each tool call and its answer), so ``reset`` adds nothing.
- **A call** is a step of that episode (``POST /step``). It returns the observation's text. A call
  the server refuses (the tool's own error, an unknown tool, invalid arguments, a finished
  episode, the server gone) raises :class:`~openenv_mcp.errors.OpenEnvError` with the server's
  message; TRL hands that message to the model as the tool's answer.
- **Reward and done** are on the instance (``reward``: the episode's total reward so far,
  ``done``, ``episode_id``, ``steps``, ``task_id``). ``get_reward()`` returns ``reward``: TRL
  (>= 1.16) uses it as the environment's reward source, logged under the class's name.
  :func:`reward_function` is the same as a ``reward_funcs`` entry, for a weighted mix (pass one
  or the other, not both, or the reward counts twice).
- **No leaks.** An episode is closed when its instance is reset again, when the instance is
  dropped (garbage-collected) and at interpreter exit; ``Cls.close_all()`` closes every open one
  now (TRL keeps its pool of instances until the trainer itself is dropped).

Limits: every request waits at most ``timeout`` seconds (30 by default, connecting included); a
server that does not answer raises instead of hanging the trainer. Only this module and the test
that runs it know about TRL; ``openenv_mcp`` itself never imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import httpx

from openenv_mcp.client import EnvClient, auth_headers
from openenv_mcp.client.discovery import ServerInfo, discover
from openenv_mcp.deploy.providers.base import Provider
from openenv_mcp.errors import BackendUnavailable, ConfigError, EpisodeFinished, OpenEnvError, ResetNeeded, ToolFailed
from openenv_mcp.models import TaskInfo
from openenv_mcp.training.groups import MemberPool, prefix_actions, shared_prefix_group
from openenv_mcp.training.tool_schema import method_signature, python_type, trl_schema

__all__ = [
    "PREFIX_COLUMNS",
    "ROW_COLUMNS",
    "ToolEnvironment",
    "environment_factory",
    "python_type",
    "reward_function",
    "task_dataset",
    "task_rows",
    "trl_schema",
]

ROW_COLUMNS = ("task_id", "split", "seed")
"""The dataset columns ``reset(**row)`` reads to open an episode; every other column is ignored, but for
``PREFIX_COLUMNS``."""

PREFIX_COLUMNS = ("prefix", "group", "group_size")
"""The columns of a row whose episode is a member of a shared-prefix group (:func:`task_rows` with ``prefix=``)."""

_RESERVED = {"reset", "get_reward"}  # TRL's own method names: a tool may not take them


class ToolEnvironment:
    """The base of the classes :func:`environment_factory` builds: one sim episode at a time over HTTP.

    Attributes:
        server: The server's name (``sql``).
        url: The server's base URL.
        reward: The current episode's total reward so far.
        done: Whether the current episode has ended (the task ended it or the step limit did).
        episode_id: The current episode's id on the server (``None`` before the first reset).
        task_id: The current episode's task.
        steps: Tool calls the server counted as steps in the current episode.
    """

    server: ClassVar[str]
    url: ClassVar[str]
    timeout: ClassVar[float]
    token: ClassVar[str | None]
    max_observation_length: ClassVar[int]
    _instances: ClassVar[weakref.WeakSet[ToolEnvironment]]
    _pool: ClassVar[MemberPool]  # members of shared-prefix groups not handed to an instance yet

    def __init__(self) -> None:
        self.reward = 0.0
        self.done = False
        self.episode_id: str | None = None
        self.task_id: str | None = None
        self.steps = 0
        self._client = EnvClient(self.url, timeout=self.timeout, token=self.token)
        # the episode is closed when this instance is collected, or at exit, whichever comes first
        self._finalizer = weakref.finalize(self, self._client.close)
        self._lock = threading.Lock()
        type(self)._instances.add(self)

    def reset(self, **row: Any) -> str | None:
        """Close the previous episode, open one from the row's task_id, split and seed; the task's prompt.

        A row with a ``prefix`` gets a member of its shared-prefix group instead, and adds nothing to the
        prompt, which holds the prefix already.
        """
        with self._lock:
            self._close_episode()
            task_id, split, seed = (row.get(column) for column in ROW_COLUMNS)
            if seed is not None and not isinstance(seed, int):
                raise ConfigError(f"{self._where()}: the dataset's 'seed' column must hold integers, got {seed!r}")
            if row.get("prefix") is not None:
                self._join_group(row)
                return None
            try:
                result = self._client.reset(
                    task_id=None if task_id is None else str(task_id),
                    split=None if split is None else str(split),
                    seed=seed,
                )
            except httpx.HTTPError as exc:
                raise self._unreachable(exc) from None
            except OpenEnvError as exc:
                where = f"{self._where()} refused reset(task_id={task_id!r}, split={split!r})"
                raise type(exc)(f"{where}: {exc.message}") from None
            self.episode_id = result.episode_id
            self.task_id = str(result.info.get("task_id", task_id))
            self.reward, self.done, self.steps = 0.0, False, 0
            return result.observation.text

    def _join_group(self, row: dict[str, Any]) -> None:
        task_id, seed, size, prompt = row.get("task_id"), row.get("seed"), row.get("group_size"), row.get("prompt")
        where = f"{self._where()}: a dataset row with a 'prefix'"
        if task_id is None or not isinstance(seed, int):
            raise ConfigError(f"{where} needs 'task_id' and 'seed' (task_rows(prefix=...) writes them)")
        if not isinstance(size, int) or size < 1:
            raise ConfigError(f"{where} needs 'group_size': GRPOConfig.num_generations (task_rows(group_size=...))")
        if not (
            isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict) and prompt[-1].get("role") == "tool"
        ):
            raise ConfigError(
                f"{where} needs a 'prompt' ending with the prefix's chat: build it with task_rows(prefix=...)"
            )
        actions = prefix_actions(row["prefix"], where=f"the 'prefix' column of task {task_id!r}")
        key = str(row.get("group") or json.dumps([str(task_id), seed, actions]))
        try:
            member = type(self)._pool.take(self._client, key, task_id=str(task_id), seed=seed, k=size, actions=actions)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        except OpenEnvError as exc:
            raise type(exc)(f"{self._where()}: {exc.message}") from None
        self.episode_id = self._client.episode_id = member.episode_id  # the client closes it when dropped
        self.task_id = str(member.info.get("task_id", task_id))
        self.steps = int(member.info.get("step_count", 0))
        self.reward = float(member.info.get("total_reward", 0.0))
        self.done = member.done

    def get_reward(self) -> float:
        """The current episode's total reward (TRL calls this once per finished rollout)."""
        return self.reward

    @classmethod
    def close_all(cls) -> int:
        """Close the open episode of every live instance of this class, and the shared-prefix group members no
        instance took; how many were closed."""
        with EnvClient(cls.url, timeout=cls.timeout, token=cls.token) as client:
            closed = cls._pool.close(client) if cls._pool.waiting() else 0
        for instance in list(cls._instances):
            with instance._lock:
                if instance.episode_id is not None:
                    instance._close_episode()
                    closed += 1
        return closed

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        with self._lock:
            if self.episode_id is None:
                raise ResetNeeded(f"{self._where()}: no episode yet; TRL calls reset(**row) before any tool")
            if self.done:
                raise EpisodeFinished(
                    f"{self._where()}: episode {self.episode_id} is over (total reward {self.reward:g}); "
                    "no more tool calls count: answer without tools"
                )
            try:
                result = self._client.step(tool, arguments, episode_id=self.episode_id)
            except httpx.HTTPError as exc:
                raise self._unreachable(exc) from None
            self.steps = int(result.info.get("step_count", self.steps + 1))
            self.reward = float(result.info.get("total_reward", self.reward + result.reward))
            self.done = result.done
            text = result.observation.text
            if len(text) > self.max_observation_length:
                cut = len(text) - self.max_observation_length
                text = text[: self.max_observation_length] + f"\n[cut: {cut} more characters]"
            if result.observation.is_error:
                raise ToolFailed(text)
            return text

    def _close_episode(self) -> None:
        if self.episode_id is not None:
            # reaped already, or the server is gone: nothing left to free there
            with contextlib.suppress(OpenEnvError, httpx.HTTPError):
                self._client.close_episode(episode_id=self.episode_id)
            self.episode_id = None

    def _where(self) -> str:
        return f"openenv-mcp server {self.server!r} at {self.url}"

    def _unreachable(self, exc: httpx.HTTPError) -> BackendUnavailable:
        return BackendUnavailable(
            f"Cannot reach the {self._where()} ({type(exc).__name__}: {exc}; timeout {self.timeout:g} s): "
            f"start it (openenv-mcp serve {self.server} --mode sim) or fix the URL"
        )


# building the class --------------------------------------------------------------------------------------


def environment_factory(
    server: str | Provider,
    *,
    timeout: float = 30.0,
    token: str | None = None,
    max_observation_length: int = 16_384,
    class_name: str | None = None,
) -> type[ToolEnvironment]:
    """A zero-argument class for ``GRPOTrainer(environment_factory=...)`` over a sim server.

    Args:
        server: The server's base URL, or a :class:`~openenv_mcp.deploy.providers.Provider` (started here if it
            is not yet; the caller stops it).
        timeout: Seconds each request may take, connecting included.
        token: The server's bearer token (``OPENENV_AUTH_TOKEN``), if it has one.
        max_observation_length: A tool answer longer than this is cut, with a note saying so.
        class_name: The class's name (TRL logs the reward under it); by default ``<Server>Env``.

    Raises:
        BackendUnavailable: The server does not answer.
        ConfigError: A tool's name or schema cannot be a Python method (the message names it).
    """
    url = server.start() if isinstance(server, Provider) else server
    info = _discover(url, token=token, timeout=timeout)
    name = info.name or "server"
    namespace: dict[str, Any] = {
        "server": name,
        "url": url,
        "timeout": timeout,
        "token": token,
        "max_observation_length": max_observation_length,
        "_instances": weakref.WeakSet(),
        "_pool": MemberPool(),
        "__doc__": f"Episodes of the openenv-mcp server {name!r} at {url}, one at a time, its tools as methods.",
        "__module__": __name__,
    }
    for tool in info.tools:
        namespace[str(tool["name"])] = _tool_method(name, tool)
    title = class_name or "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Env"
    return type(title, (ToolEnvironment,), namespace)


def _discover(url: str, *, token: str | None, timeout: float) -> ServerInfo:
    async def ask() -> ServerInfo:
        async with httpx.AsyncClient(timeout=timeout, headers=auth_headers(token)) as http:
            return await discover(url, http=http)

    with ThreadPoolExecutor(1) as pool:  # a thread of its own: the caller may be inside an event loop
        try:
            return pool.submit(asyncio.run, ask()).result()
        except OpenEnvError as exc:
            raise BackendUnavailable(
                f"{exc.message} (openenv-mcp server at {url}: start it with 'openenv-mcp serve NAME --mode sim', "
                "or fix the URL)"
            ) from None


def _tool_method(server: str, tool: Mapping[str, Any]) -> Any:
    name = str(tool["name"])
    if name in _RESERVED:
        raise ConfigError(
            f"The tool {name!r} of server {server!r} cannot be a method TRL offers as a tool; rename the tool"
        )
    signature, doc = method_signature(server, tool)

    def method(self: ToolEnvironment, **arguments: Any) -> str:
        return self._call(name, arguments)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    method.__annotations__ = {
        **{p.name: p.annotation for p in signature.parameters.values() if p.name != "self"},
        "return": str,
    }
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


# the dataset and the reward ------------------------------------------------------------------------------


def task_rows(
    server: str | Provider,
    *,
    split: str | None = "train",
    seeds: Iterable[int] = (0,),
    system_prompt: bool = True,
    timeout: float = 30.0,
    token: str | None = None,
    tasks: Sequence[TaskInfo] | None = None,
    prefix: Sequence[Any] | None = None,
    group_size: int | None = None,
) -> list[dict[str, Any]]:
    """One row per task of ``split`` (every split when ``None``) and seed, in the server's task order.

    Each row has ``prompt`` (conversational: the server's description as the system message when
    ``system_prompt``, then an empty user message that ``reset`` fills with the task), ``task_id``,
    ``split`` and ``seed``. ``tasks`` gives the tasks instead (e.g. drawn by a
    :class:`~openenv_mcp.rewards.curriculum.Curriculum` over ``EnvClient.tasks()``), one row per task given and seed,
    in that order, repeats included.

    With ``prefix`` (actions: ``(tool, arguments)`` pairs or ``{"tool", "arguments"}`` objects), each row is a
    shared-prefix group of ``group_size`` members (``GRPOConfig.num_generations``): the prefix is played once
    per row here, to write the chat the model continues into ``prompt`` (the task as the user message, then
    each tool call and its answer), and the row gets ``prefix`` (JSON), ``group`` and ``group_size``.
    """
    url = server.start() if isinstance(server, Provider) else server
    if prefix is not None and (group_size is None or group_size < 1):
        raise ConfigError("task_rows(prefix=...) needs group_size: GRPOConfig.num_generations, the members per group")
    actions = None if prefix is None else prefix_actions(list(prefix))
    system = _discover(url, token=token, timeout=timeout).description if system_prompt else ""
    with EnvClient(url, timeout=timeout, token=token) as client:
        try:
            chosen = list(tasks) if tasks is not None else client.tasks(split=split).tasks
            if not chosen:
                raise ConfigError(f"The server at {url} has no task in split {split!r}; GET /tasks lists its splits")
            if actions is None:
                prompt = [*([{"role": "system", "content": system}] if system else []), {"role": "user", "content": ""}]
                return [
                    {"prompt": prompt, "task_id": task.id, "split": task.split, "seed": int(seed)}
                    for seed in seeds
                    for task in chosen
                ]
            return [
                _prefix_row(client, task, int(seed), actions, system, group_size or 1)
                for seed in seeds
                for task in chosen
            ]
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Cannot reach the openenv-mcp server at {url} ({exc}): start it") from None


def _prefix_row(
    client: EnvClient, task: TaskInfo, seed: int, actions: list[tuple[str, dict[str, Any]]], system: str, size: int
) -> dict[str, Any]:
    group = shared_prefix_group(client, task_id=task.id, seed=seed, k=1, actions=actions)
    client.close_episode(episode_id=group.episode_ids[0])
    script = json.dumps([{"tool": tool, "arguments": arguments} for tool, arguments in actions])
    return {
        "prompt": group.messages(system or None, style="trl"),
        "task_id": task.id,
        "split": task.split,
        "seed": seed,
        "prefix": script,
        "group": f"{task.id}/{seed}/{hashlib.blake2b(script.encode(), digest_size=4).hexdigest()}",
        "group_size": size,
    }


def task_dataset(server: str | Provider, **options: Any) -> Any:
    """:func:`task_rows` as a ``datasets.Dataset`` (the ``datasets`` package is imported here, when called)."""
    import datasets  # type: ignore[import-untyped]  # optional: only TRL users have it

    return datasets.Dataset.from_list(task_rows(server, **options))


def reward_function(environments: list[ToolEnvironment], **_: Any) -> list[float]:
    """A TRL reward function: each rollout's environment reward (use it or ``get_reward``, not both)."""
    return [environment.reward for environment in environments]
