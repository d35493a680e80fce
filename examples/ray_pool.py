"""Environments on a Ray cluster: sql replicas as Ray actors, episodes spread over them, run concurrently.

    ray start --head                                         # or an existing cluster
    .venv/bin/python examples/ray_pool.py --address auto --replicas 2 --episodes 8

Each replica is an actor serving sql (control plane and /mcp) on the node Ray placed it on; the pool
puts each episode on the replica with the fewest open episodes and keeps it there. The policy is a
stand-in, as in trainer_loop.py. Needs Ray: pip install 'openenv-mcp[ray]'.
"""

from __future__ import annotations

import argparse
from collections import Counter

import anyio
import ray

from openenv_mcp.deploy.ray_pool import AsyncRayPool


async def main(replicas: int, episodes: int) -> None:
    async with AsyncRayPool("sql", replicas=replicas, environment={"OPENENV_TRAJECTORIES": "off"}) as pool:
        await pool.refresh()  # wait for every replica: the first reset would too
        placements = pool.placements()
        for url, where in placements.items():
            print(f"replica {url}  node {where.node_id[:12]}  pid {where.pid}")
        rewards: list[float] = []
        nodes: Counter[str] = Counter()

        async def episode(seed: int) -> None:
            first = await pool.reset(seed=seed)
            nodes[placements[pool.replica_of(first.episode_id)].node_id[:12]] += 1
            step = await pool.step(first.episode_id, "list_tables")
            while not step.done:
                step = await pool.step(first.episode_id, "submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})
            rewards.append((await pool.close_episode(first.episode_id)).total_reward)

        async with anyio.create_task_group() as group:
            for seed in range(episodes):
                group.start_soon(episode, seed)
        print(f"episodes by node: {dict(sorted(nodes.items()))}")
        print(f"{len(rewards)} episodes, mean reward {sum(rewards) / len(rewards):.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", help="the Ray cluster (default: Ray's own choice, e.g. RAY_ADDRESS)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    ray.init(address=args.address, log_to_driver=False)
    try:
        anyio.run(main, args.replicas, args.episodes)
    finally:
        ray.shutdown()
