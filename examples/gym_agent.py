"""A Gymnasium loop over a sim server: text observations, JSON tool-call actions, the 5-tuple.

    scripts/serve &
    .venv/bin/python examples/gym_agent.py http://127.0.0.1:8000

Needs the 'gym' extra (pip install 'openenv-mcp[gym]'). The "agent" is a stand-in that lists the
tables and then answers with a customer count; a trainer puts its model there.
"""

from __future__ import annotations

import argparse
import json

import gymnasium

import openenv_mcp.training.gym  # noqa: F401  (registers "openenv_mcp/ToolEnv-v0")


def main(url: str, episodes: int) -> None:
    env = gymnasium.make("openenv_mcp/ToolEnv-v0", base_url=url)
    for seed in range(episodes):
        observation, info = env.reset(seed=seed)
        print(f"seed {seed}  task {info['task_id']}: {observation.splitlines()[0][:60]}")
        actions = [
            {"tool": "list_tables", "arguments": {}},
            {"tool": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}},
        ]
        total, terminated, truncated = 0.0, False, False
        for action in actions:
            _, reward, terminated, truncated, info = env.step(json.dumps(action))
            total += float(reward)
            if terminated or truncated:
                break
        print(f"  reward {total}  terminated {terminated}  truncated {truncated}")
    env.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000")
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    main(args.url, args.episodes)
