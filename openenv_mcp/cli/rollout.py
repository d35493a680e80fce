"""``openenv-mcp rollout SERVER``: run episodes concurrently with a policy, then print a summary."""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from openenv_mcp.settings import Settings

if TYPE_CHECKING:
    from openenv_mcp.client.discovery import ServerInfo
    from openenv_mcp.rollout.runner import Policy
    from openenv_mcp.trajectories.turns import TurnRecorder

__all__ = ["add_commands", "add_policy_arguments", "choose_policy", "positive", "scripted_for"]


def add_commands(commands: Any) -> None:
    """Add ``rollout`` to the ``openenv-mcp`` parser."""
    rollout = commands.add_parser(
        "rollout", help="run episodes concurrently against a sim server with a policy, and summarise them"
    )
    rollout.set_defaults(handler=_rollout)
    rollout.add_argument(
        "server",
        help="a running server's URL (http://host:port), or an installed server's name to start here; "
        "$OPENENV_AUTH_TOKEN, when set, is sent as the bearer token",
    )
    rollout.add_argument("--episodes", "-n", type=positive, default=10, help="episodes to run (default 10)")
    rollout.add_argument("--concurrency", "-c", type=positive, default=1, help="episodes at once (default 1)")
    rollout.add_argument("--split", help="the split tasks are drawn from (default: the server's default)")
    rollout.add_argument("--seed", type=int, default=0, help="seed of the first episode; the next get seed+1... (0)")
    rollout.add_argument("--success-threshold", type=float, default=1.0, help="reward that counts as a success (1)")
    rollout.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_policy_arguments(rollout)


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--policy`` and the options of ``--policy openai``, shared by ``rollout`` and ``eval``."""
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


def positive(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _rollout(args: argparse.Namespace) -> int:
    import anyio

    return anyio.run(_main, args)


async def choose_policy(args: argparse.Namespace, settings: Settings, stack: AsyncExitStack) -> Policy | None:
    """The policy ``--policy`` names, checked before any server is reached; ``None`` for ``scripted``,
    which needs the server's name (see :func:`scripted_for`)."""
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


def scripted_for(server: ServerInfo) -> Policy:
    """``--policy scripted`` for ``server``: the reference solutions shipped with its code."""
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.rollout.policies import environment_policy

    try:
        env = load_environment(server.name)
    except ConfigError as exc:
        raise ConfigError(f"--policy scripted plays the server's own solutions: {exc.message}") from None
    return environment_policy(env)


async def _main(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from openenv_mcp.client.discovery import ServerProcess, discover
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.rollout.runner import EpisodeResult, run_rollouts
    from openenv_mcp.settings import load_settings

    settings = load_settings(Settings)
    token = settings.auth_token.get_secret_value() if settings.auth_token is not None else None
    async with AsyncExitStack() as stack:
        chosen = await choose_policy(args, settings, stack)
        url = args.server
        if not url.startswith(("http://", "https://")):
            load_environment(url)  # an unknown name fails here, listing the installed ones
            url = (await stack.enter_async_context(ServerProcess(args.server))).url
        server = await discover(url, token=token)
        policy = chosen if chosen is not None else scripted_for(server)

        print(
            f"rollout: {server.name} at {url}, policy {args.policy}, {args.episodes} episodes, "
            f"concurrency {args.concurrency}",
            file=sys.stderr,
        )
        bar = tqdm(total=args.episodes, unit="ep", file=sys.stderr, disable=args.no_progress, dynamic_ncols=True)
        rewards: list[float] = []

        def advance(result: EpisodeResult) -> None:
            rewards.append(result.reward)
            bar.set_postfix(reward=f"{sum(rewards) / len(rewards):.3f}", refresh=False)
            bar.update()

        try:
            summary = await run_rollouts(
                url,
                policy,
                episodes=args.episodes,
                concurrency=args.concurrency,
                split=args.split,
                seed=args.seed,
                server=server,
                success_threshold=args.success_threshold,
                on_result=advance,
                token=token,
            )
        finally:
            bar.close()
    print(summary.render())
    return 1 if summary.errors else 0
