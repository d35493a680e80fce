"""A trainer's loop over the control plane with the typed client: many episodes, rewards from the env.

    scripts/serve &
    .venv/bin/python examples/trainer_loop.py http://127.0.0.1:8000 --episodes 20

The policy is a stand-in (it answers every question with a customer count); a trainer puts its
model there. Episodes run concurrently with AsyncEnvClient, one client per episode.
"""

from __future__ import annotations

import argparse

import anyio

from openenv_mcp import AsyncEnvClient


async def episode(url: str, seed: int, rewards: list[float]) -> None:
    async with AsyncEnvClient(url) as env:
        first = await env.reset(seed=seed)
        step = await env.step("list_tables")
        while not step.done:
            step = await env.step("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})
        rewards.append((await env.state()).total_reward)
        print(f"seed {seed:>3}  task {first.info['task_id']}  reward {rewards[-1]}")


async def main(url: str, episodes: int, concurrency: int) -> None:
    rewards: list[float] = []
    limiter = anyio.Semaphore(concurrency)

    async def limited(seed: int) -> None:
        async with limiter:
            await episode(url, seed, rewards)

    async with anyio.create_task_group() as group:
        for seed in range(episodes):
            group.start_soon(limited, seed)
    print(f"{len(rewards)} episodes, mean reward {sum(rewards) / len(rewards):.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    anyio.run(main, args.url, args.episodes, args.concurrency)
