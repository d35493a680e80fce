"""Fork, snapshot, restore and a curriculum over a running sim server (docs/episodes.md).

    scripts/serve sql &
    .venv/bin/python examples/episodes.py http://127.0.0.1:8000

Every block of docs/episodes.md is a piece of this script (a test checks it), so the documentation runs.
"""

from __future__ import annotations

import random
import sys

from openenv_mcp import EnvClient
from openenv_mcp.rewards.curriculum import Curriculum
from openenv_mcp.training.groups import shared_prefix_group


def main(url: str) -> None:
    with EnvClient(url) as env:
        # --- fork
        env.reset(task_id="sql-001", seed=7)
        env.step("list_tables")
        env.step("run_query", {"sql": "SELECT COUNT(*) FROM orders"})
        branch = env.fork()  # a new episode in the same state: same task, 2 steps, same reward so far
        print("fork:", branch.info["step_count"], "steps, via", branch.info["via"])
        right = env.step("submit_answer", {"rows": [[60]]})
        wrong = env.step("submit_answer", {"rows": [[61]]}, episode_id=branch.episode_id)
        print("continuations:", right.reward, wrong.reward)
        # --- end fork

        # --- group
        prefix = [("list_tables", {}), ("describe_table", {"table": "customers"})]
        group = shared_prefix_group(env, task_id="sql-001", seed=3, k=4, actions=prefix)  # the root is closed
        print("group of", len(group.members), "forks, each after", group.members[0].info["step_count"], "steps")
        rewards = []
        for guess, episode_id in zip([58, 59, 60, 61], group.episode_ids, strict=True):  # each goes on alone
            rewards.append(env.step("submit_answer", {"rows": [[guess]]}, episode_id=episode_id).reward)
            env.close_episode(episode_id=episode_id)
        print("members' rewards:", rewards)  # GRPO compares these: one state, four continuations
        # --- end group

        # --- snapshot
        env.reset(task_id="sql-002", seed=3)
        env.step("describe_table", {"table": "orders"})
        snapshot = env.snapshot()  # data: task, seed, actions, digests; signed by this server
        text = snapshot.model_dump_json()  # store it anywhere; restore it here, on a replica, after a restart
        print("snapshot:", snapshot.step_count, "steps,", len(text), "bytes")
        restored = env.reset(snapshot=type(snapshot).model_validate_json(text))
        print("restored:", restored.info["step_count"], "steps, via", restored.info["via"])
        # --- end snapshot

        # --- curriculum
        curriculum = Curriculum(env.tasks(split="train").tasks, band=(0.2, 0.8), seed=0)
        luck = random.Random(0)
        for _ in range(20):
            task = curriculum.sample("train")
            env.reset(task_id=task.id, seed=luck.randrange(1000))
            result = env.step("submit_answer", {"rows": [[luck.randrange(3)]]})  # a poor policy
            curriculum.record(task.id, result.reward)
        print("curriculum draws:", curriculum.state().draws)
        # --- end curriculum


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
