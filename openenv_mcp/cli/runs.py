"""What ``rollout`` and ``eval`` share: their policy flags, and the run they open (a server started or reached,
a policy chosen, and for a chat model its endpoint checked before the first episode).

    run = await open_run(args, stack)      # the server by URL, or started here by name; the policy that plays it

Both run under :func:`run_stoppable`: SIGTERM or SIGINT cancels the run, so everything it opened (episodes, the
servers it started) is closed on the way out before the command exits with 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openenv_mcp.settings import Settings

if TYPE_CHECKING:
    from openenv_mcp.client.discovery import ServerInfo
    from openenv_mcp.harnesses import HarnessPolicy
    from openenv_mcp.rollout.runner import Batch, Policy
    from openenv_mcp.trajectories.turns import TurnRecorder

__all__ = ["Run", "add_policy_arguments", "add_server_argument", "open_run", "positive", "run_stoppable"]

_PARSERS = ("auto", "none", "hermes", "json", "mistral")  # openenv_mcp.rollout.parsers.PARSERS (a test pins it)
_HARNESSES = (
    "claude",
    "cline",
    "codex",
    "continue",
    "copilot",
    "gemini",
    "opencode",
    "qwen",
    "smolagents",
)  # harnesses.HARNESSES (pinned too)


def run_stoppable(main: Callable[[argparse.Namespace], Awaitable[int]], args: argparse.Namespace) -> int:
    """``main(args)`` on an event loop; SIGTERM or SIGINT cancels it (its ``async with`` blocks unwind: the servers
    it started stop, its episodes close) and the exit status is then 128 + the signal's number."""
    import anyio

    async def guarded() -> int:
        stopped: list[int] = []
        code = 1
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                        async for number in signals:
                            stopped.append(number)
                            group.cancel_scope.cancel()
                            return

                group.start_soon(watch)
                code = await main(args)
                group.cancel_scope.cancel()
        except BaseExceptionGroup as failed:  # the run's own error (a ConfigError, say), as it would be unguarded
            if len(failed.exceptions) == 1:
                raise failed.exceptions[0] from None
            raise
        if stopped:
            name = signal.Signals(stopped[0]).name
            print(f"openenv-mcp {args.command}: stopped by {name}; what it started is stopped", file=sys.stderr)
            return 128 + stopped[0]
        return code

    return anyio.run(guarded)


def positive(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _seconds(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {value}")
    return number


def _count(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {number}")
    return number


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--policy`` and the options of ``--policy openai``."""
    parser.add_argument(
        "--policy",
        default="scripted",
        help="scripted (the environment's reference solution of each task, else its examples), "
        "openai (a chat model with tool calling), harness (an agent CLI, --harness), "
        "or module:callable (your async policy)",
    )
    model = parser.add_argument_group("--policy openai (docs/local-models.md)")
    model.add_argument(
        "--base-url",
        help="chat endpoint up to /v1 (default: $OPENAI_BASE_URL); with --policy harness, llama-server's root URL",
    )
    model.add_argument("--model", help="model name")
    model.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY)")
    model.add_argument("--max-turns", type=positive, help="model calls per episode at most (default: step limit)")
    model.add_argument("--temperature", type=float, help="sampling temperature (default: the endpoint's)")
    model.add_argument(
        "--max-tokens",
        type=positive,
        help="tokens per reply at most (default: the endpoint's; with --policy harness, the proxy caps at 4096)",
    )
    model.add_argument(
        "--timeout", type=_seconds, default=300.0, help="seconds to wait for each model answer (default 300)"
    )
    model.add_argument(
        "--tool-choice",
        choices=("auto", "required"),
        default="auto",
        help="auto, or required: the server constrains every reply to a tool call (default auto)",
    )
    model.add_argument(
        "--tool-parser",
        choices=_PARSERS,
        default="auto",
        help="how tool calls the model writes as text are read: hermes (<tool_call> tags: Qwen, Hermes), "
        "mistral ([TOOL_CALLS]), json (a call as JSON in a code fence or the text), auto (the first that "
        "finds one; default), none (only the endpoint's tool_calls)",
    )
    model.add_argument(
        "--reminders",
        type=_count,
        default=1,
        help="replies without a tool call answered with a reminder to call one, per episode; the next such "
        "reply ends the episode as text_only (default 1)",
    )
    model.add_argument(
        "--capture-tokens",
        action="store_true",
        help="also record each model call's prompt and completion token ids and logprobs (the endpoint must "
        "report them: vLLM, SGLang, llama.cpp's server; docs/capture.md)",
    )
    harness = parser.add_argument_group("--policy harness: an agent CLI per episode (docs/harnesses.md)")
    harness.add_argument("--harness", help="which CLI: " + ", ".join(_HARNESSES))
    harness.add_argument("--harness-command", help="its executable (default: its command on PATH)")
    harness.add_argument(
        "--harness-timeout",
        type=_seconds,
        default=600.0,
        help="seconds the CLI has for one episode; past them it is stopped (harness_timeout; default 600)",
    )
    harness.add_argument(
        "--store",
        help="the trajectory store the server records into, where the proxy writes the model's turns (default: "
        "$OPENENV_TRAJECTORIES; needed with a server URL)",
    )


@dataclass(frozen=True)
class Run:
    """A server ready to play and the policy that plays it.

    ``identity`` is what makes two runs with this policy comparable: ``{"policy": ...}``, and for a chat model its
    name, endpoint, sampling settings, turn cap and parser.
    """

    urls: list[str]  # the server's replicas (one, or several: episodes are spread over them)
    server: ServerInfo
    policy: Policy
    token: str | None  # $OPENENV_AUTH_TOKEN, sent as the bearer token
    identity: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The first replica's URL (where the tasks are listed)."""
        return self.urls[0]

    @property
    def where(self) -> str:
        """The replicas, as a header line names them."""
        return self.url if len(self.urls) == 1 else f"{len(self.urls)} replicas ({', '.join(self.urls)})"

    def batch(self, args: argparse.Namespace) -> Batch:
        """How its episodes run: ``--concurrency`` at once, ``--success-threshold``, on this server's replicas."""
        from openenv_mcp.rollout.runner import Batch

        return Batch(
            concurrency=args.concurrency,
            success_threshold=args.success_threshold,
            token=self.token,
            server=self.server,
        )


def add_server_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """The positional ``SERVER``: repeated, or a comma list, for several replicas of one server."""
    parser.add_argument(
        "server",
        nargs="+",
        help=f"{what} (http://host:port), or an installed server's name to start here; several replicas of one "
        "server: repeat it or give a comma list (episodes are spread over them); "
        "$OPENENV_AUTH_TOKEN, when set, is sent as the bearer token",
    )


async def open_run(args: argparse.Namespace, stack: AsyncExitStack) -> Run:
    """The policy ``--policy`` names (checked before any server is reached) and the servers ``args.server``: URLs,
    or an installed server's name, then started here in sim mode until ``stack`` closes (a name given twice: two
    replicas). A chat model's endpoint gets its pre-flight check (one request with the server's tools) before the
    run starts."""
    from openenv_mcp.client.discovery import ServerProcess, discover
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.rollout.chat import OpenAIPolicy
    from openenv_mcp.settings import load_settings

    settings = load_settings(Settings)
    token = settings.auth_token.get_secret_value() if settings.auth_token is not None else None
    specs = [spec.strip() for given in args.server for spec in given.split(",") if spec.strip()]
    named = all(not spec.startswith(("http://", "https://")) for spec in specs)
    harness = _harness_plan(args, settings, named=named) if args.policy == "harness" else None
    chosen = None if harness is not None else await _choose_policy(args, settings, stack)
    store = harness.store if harness is not None else None  # the proxy's turns go where the servers record
    urls: list[str] = []
    for spec in specs:
        if not spec.startswith(("http://", "https://")):
            load_environment(spec)  # an unknown name fails here, listing the installed ones
            spec = (await stack.enter_async_context(ServerProcess(spec, trajectories=store))).url
        urls.append(spec.rstrip("/"))
    servers = [await discover(url, token=token) for url in urls]
    names = sorted({server.name for server in servers})
    if len(names) > 1:
        found = ", ".join(f"{server.url} serves {server.name!r}" for server in servers)
        raise ConfigError(f"The servers given are not replicas of one server ({found}); give one server's replicas")
    server = servers[0]
    identity: dict[str, Any] = {"policy": args.policy}
    if harness is not None:
        played = harness.start(args, stack)
        identity.update(played.identity())
        chosen = played
    if isinstance(chosen, OpenAIPolicy):
        print(await chosen.check(server.openai_tools), file=sys.stderr)
        identity.update(chosen.identity())
    return Run(urls, server, chosen if chosen is not None else _scripted_for(server), token, identity)


@dataclass(frozen=True)
class _HarnessPlan:
    """``--policy harness`` checked before any server starts: the CLI, its executable, the model and the store."""

    name: str
    command: str
    store: str

    def start(self, args: argparse.Namespace, stack: AsyncExitStack) -> HarnessPolicy:
        """The capture proxy in front of ``--base-url`` (until ``stack`` closes), and the policy that uses it."""
        from openenv_mcp.harnesses import HarnessPolicy, harness_named
        from openenv_mcp.proxy import CaptureProxy, EngineOptions

        capped = {"max_tokens": args.max_tokens} if args.max_tokens else {}
        options = EngineOptions(parser=args.tool_parser, **capped)
        proxy = CaptureProxy(args.base_url, store=self.store, options=options, timeout=args.timeout)
        stack.enter_context(proxy)
        policy = HarnessPolicy(
            harness_named(self.name),
            command=self.command,
            proxy=proxy,
            model=args.model,
            timeout=args.harness_timeout,
            max_turns=args.max_turns,
        )

        def report() -> None:
            left = f"; stopped {policy.leftovers} processes the harness left running" if policy.leftovers else ""
            print(f"model turns recorded by the capture proxy into {self.store}{left}", file=sys.stderr)

        stack.callback(report)
        return policy


def _harness_plan(args: argparse.Namespace, settings: Settings, *, named: bool) -> _HarnessPlan:
    """Check ``--policy harness``'s options: a known harness, its executable, ``--base-url`` and ``--model``, and a
    trajectory store shared with the server (a server given by URL records where it was told: say where)."""
    import shutil

    from openenv_mcp.errors import ConfigError
    from openenv_mcp.harnesses import harness_named

    if args.capture_tokens:
        raise ConfigError(
            "--policy harness always records the model's tokens (through its proxy): drop --capture-tokens"
        )
    if not args.harness:
        raise ConfigError(f"--policy harness needs --harness, one of: {', '.join(_HARNESSES)}")
    harness = harness_named(args.harness)
    if not args.base_url or not args.model:
        raise ConfigError(
            "--policy harness needs --base-url (the inference server's root URL, llama-server's "
            "http://HOST:PORT, which the capture proxy fronts) and --model"
        )
    command = args.harness_command or harness.command
    found = shutil.which(command)
    if found is None:
        given = "--harness-command" if args.harness_command else "PATH"
        raise ConfigError(
            f"No executable {command!r} for harness {harness.name!r} (looked on {given}); install {harness.package} "
            "(in a clone, scripts/harnesses installs every pinned harness and prints the PATH to add) or give "
            "its path with --harness-command"
        )
    store = args.store or (settings.trajectories.strip() if settings.trajectories else "")
    if not store and not named:
        raise ConfigError(
            f"--policy harness with a server URL ({', '.join(args.server)}) needs --store (or OPENENV_TRAJECTORIES): "
            "the trajectory store that server records into, so the proxy writes the model's turns beside its steps"
        )
    if not store:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = settings.trajectories_url
    if store.lower() == "off":
        raise ConfigError(
            "--policy harness records the model's turns into the trajectory store, and it is off; set --store or "
            "OPENENV_TRAJECTORIES to the store the server records into"
        )
    return _HarnessPlan(harness.name, found, store)


async def _choose_policy(args: argparse.Namespace, settings: Settings, stack: AsyncExitStack) -> Policy | None:
    """The policy ``--policy`` names; ``None`` for ``scripted``, which needs the server's name."""
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.rollout.chat import OpenAIPolicy
    from openenv_mcp.rollout.endpoint import ChatModel, Sampling
    from openenv_mcp.rollout.policies import load_policy

    if args.capture_tokens and args.policy != "openai":
        raise ConfigError("--capture-tokens records a model's tokens: use it with --policy openai")
    if args.policy == "openai":
        base_url = args.base_url or settings.openai_base_url
        if not base_url or not args.model:
            raise ConfigError("--policy openai needs --base-url (or OPENAI_BASE_URL) and --model")
        secret = settings.openai_api_key
        api_key = args.api_key or (secret.get_secret_value() if secret is not None else None)
        openai = OpenAIPolicy(
            ChatModel(base_url=base_url, model=args.model, api_key=api_key, timeout=args.timeout),
            sampling=Sampling(
                temperature=args.temperature,
                max_tokens=args.max_tokens,
                tool_choice=args.tool_choice,
                capture_tokens=args.capture_tokens,
            ),
            max_turns=args.max_turns,
            tool_parser=args.tool_parser,
            reminders=args.reminders,
            sink=await _turn_store(args, settings, stack),
        )
        return await stack.enter_async_context(openai)
    if args.policy == "scripted":
        return None
    return load_policy(args.policy)


async def _turn_store(args: argparse.Namespace, settings: Settings, stack: AsyncExitStack) -> TurnRecorder | None:
    """Where a chat model's turns are recorded: the trajectory store the server records into
    (``OPENENV_TRAJECTORIES``), opened (its tables made) before any episode runs; none when it is ``off``."""
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.trajectories.turns import TurnRecorder

    url = settings.trajectories_url
    if url.lower() == "off":
        if args.capture_tokens:
            raise ConfigError(
                "--capture-tokens writes into the trajectory store, and OPENENV_TRAJECTORIES=off; "
                "set it to the store the server records into"
            )
        return None
    chosen = settings.trajectories is not None and bool(settings.trajectories.strip())
    try:
        if not chosen:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        recorder = await stack.enter_async_context(TurnRecorder(url))
    except (ConfigError, OSError) as exc:
        if chosen or args.capture_tokens:
            raise
        print(f"Recording no model turns: {exc}; set OPENENV_TRAJECTORIES", file=sys.stderr)
        return None

    def report() -> None:
        tokens = f" ({recorder.captured} with their tokens)" if args.capture_tokens else ""
        print(
            f"recorded {recorder.turns} model turns of {recorder.episodes} episodes{tokens} into {url}", file=sys.stderr
        )

    stack.callback(report)
    return recorder


def _scripted_for(server: ServerInfo) -> Policy:
    """``--policy scripted`` for ``server``: the reference solutions shipped with its code."""
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.rollout.policies import environment_policy

    try:
        env = load_environment(server.name)
    except ConfigError as exc:
        raise ConfigError(f"--policy scripted plays the server's own solutions: {exc.message}") from None
    return environment_policy(env)
