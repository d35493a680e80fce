"""``openenv-mcp rollout SERVER``: run episodes concurrently with a policy, then print a summary."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from openenv_mcp.cli.runs import add_policy_arguments, add_server_argument, positive, run_stoppable

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``rollout`` to the ``openenv-mcp`` parser."""
    rollout = commands.add_parser(
        "rollout", help="run episodes concurrently against a sim server with a policy, and summarise them"
    )
    rollout.set_defaults(handler=_rollout)
    add_server_argument(rollout, "a running server's URL")
    rollout.add_argument("--episodes", "-n", type=positive, default=10, help="episodes to run (default 10)")
    rollout.add_argument("--concurrency", "-c", type=positive, default=1, help="episodes at once (default 1)")
    rollout.add_argument("--split", help="the split tasks are drawn from (default: the server's default)")
    rollout.add_argument("--seed", type=int, default=0, help="seed of the first episode; the next get seed+1... (0)")
    rollout.add_argument("--success-threshold", type=float, default=1.0, help="reward that counts as a success (1)")
    rollout.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_policy_arguments(rollout)


def _rollout(args: argparse.Namespace) -> int:
    return run_stoppable(_main, args)


async def _main(args: argparse.Namespace) -> int:
    from contextlib import AsyncExitStack

    from tqdm import tqdm

    from openenv_mcp.cli.runs import open_run
    from openenv_mcp.rollout.runner import EpisodeResult, run_rollouts

    async with AsyncExitStack() as stack:
        run = await open_run(args, stack)
        identity = run.identity
        policy = f"model {identity['model']}" if "model" in identity else f"policy {args.policy}"
        print(
            f"rollout: {run.server.name} at {run.where}, {policy}, {args.episodes} episodes, "
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
                run.urls,
                run.policy,
                episodes=args.episodes,
                seed=args.seed,
                split=args.split,
                batch=run.batch(args),
                on_result=advance,
            )
        finally:
            bar.close()
    print(summary.render())
    return 1 if summary.errors else 0
