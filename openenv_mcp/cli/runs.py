"""What ``rollout`` and ``eval`` share: their policy flags, and the run they open (a server started or reached,
a policy chosen).

    run = await open_run(args, stack)      # the server by URL, or started here by name; the policy that plays it
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openenv_mcp.settings import Settings

if TYPE_CHECKING:
    from openenv_mcp.client.discovery import ServerInfo
    from openenv_mcp.rollout.runner import Policy
    from openenv_mcp.trajectories.turns import TurnRecorder

__all__ = ["Run", "add_policy_arguments", "open_run", "positive"]


def positive(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--policy`` and the options of ``--policy openai``."""
    parser.add_argument(
        "--policy",
        default="scripted",
        help="scripted (the environment's reference solution of each task, else its examples), "
        "openai (a chat model with tool calling), or module:callable (your async policy)",
    )
    model = parser.add_argument_group("--policy openai")
    model.add_argument("--base-url", help="chat endpoint up to /v1 (default: $OPENAI_BASE_URL)")
    model.add_argument("--model", help="model name")
    model.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY)")
    model.add_argument("--max-turns", type=positive, help="model calls per episode at most (default: step limit)")
    model.add_argument("--temperature", type=float, help="sampling temperature (default: the endpoint's)")
    model.add_argument(
        "--capture-tokens",
        action="store_true",
        help="record each model call's prompt and completion token ids and logprobs into the trajectory store "
        "($OPENENV_TRAJECTORIES, where the server records), for export; the endpoint must report them (vLLM)",
    )


@dataclass(frozen=True)
class Run:
    """A server ready to play and the policy that plays it."""

    url: str
    server: ServerInfo
    policy: Policy
    token: str | None  # $OPENENV_AUTH_TOKEN, sent as the bearer token


async def open_run(args: argparse.Namespace, stack: AsyncExitStack) -> Run:
    """The policy ``--policy`` names (checked before any server is reached) and the server ``args.server``: a URL,
    or an installed server's name, then started here in sim mode until ``stack`` closes."""
    from openenv_mcp.client.discovery import ServerProcess, discover
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.settings import load_settings

    settings = load_settings(Settings)
    token = settings.auth_token.get_secret_value() if settings.auth_token is not None else None
    chosen = await _choose_policy(args, settings, stack)
    url = args.server
    if not url.startswith(("http://", "https://")):
        load_environment(url)  # an unknown name fails here, listing the installed ones
        url = (await stack.enter_async_context(ServerProcess(args.server))).url
    server = await discover(url, token=token)
    return Run(url, server, chosen if chosen is not None else _scripted_for(server), token)


async def _choose_policy(args: argparse.Namespace, settings: Settings, stack: AsyncExitStack) -> Policy | None:
    """The policy ``--policy`` names; ``None`` for ``scripted``, which needs the server's name."""
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.rollout.policies import OpenAIPolicy, load_policy

    capture = await _capture(args, settings, stack)
    if args.policy == "openai":
        base_url = args.base_url or settings.openai_base_url
        if not base_url or not args.model:
            raise ConfigError("--policy openai needs --base-url (or OPENAI_BASE_URL) and --model")
        secret = settings.openai_api_key
        api_key = args.api_key or (secret.get_secret_value() if secret is not None else None)
        openai = OpenAIPolicy(
            base_url=base_url,
            model=args.model,
            api_key=api_key,
            max_turns=args.max_turns,
            temperature=args.temperature,
            capture=capture,
        )
        return await stack.enter_async_context(openai)
    if args.policy == "scripted":
        return None
    return load_policy(args.policy)


async def _capture(args: argparse.Namespace, settings: Settings, stack: AsyncExitStack) -> TurnRecorder | None:
    """The store ``--capture-tokens`` writes into, opened (its tables made) before any episode runs."""
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.trajectories.turns import TurnRecorder

    if not args.capture_tokens:
        return None
    if args.policy != "openai":
        raise ConfigError("--capture-tokens records a model's tokens: use it with --policy openai")
    url = settings.trajectories_url
    if url.lower() == "off":
        raise ConfigError(
            "--capture-tokens writes into the trajectory store, and OPENENV_TRAJECTORIES=off; "
            "set it to the store the server records into"
        )
    recorder = await stack.enter_async_context(TurnRecorder(url))
    stack.callback(
        lambda: print(
            f"captured the tokens of {recorder.turns} model calls in {recorder.episodes} episodes into {url}",
            file=sys.stderr,
        )
    )
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
