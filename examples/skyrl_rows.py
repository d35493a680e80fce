"""SkyRL: play sql episodes through skyrl-gym's registry and step loop, as SkyRL's generator does; print what happened.

    .venv/skyrl/bin/python examples/skyrl_rows.py URL

Each row names its env class (``openenv_mcp``, or ``sql_server`` registered with ``register_server``) and its
task; the "model" is a script of answers per row. Prints one JSON object per row, then the down-server error.
"""

from __future__ import annotations

import json
import sys

import skyrl_gym

from openenv_mcp.training.skyrl import register_server

GOLD = '<tool_call>{"name": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}}</tool_call>'
LIST = 'Let me look.\n<tool_call>{"name": "list_tables", "arguments": {}}</tool_call>'
UNKNOWN = '<tool_call>{"name": "drop_everything", "arguments": {}}</tool_call>'


def main(url: str) -> None:
    register_server("sql_server", url)
    rows = [
        {"env_class": "openenv_mcp", "server_url": url, "task_id": "sql-001", "seed": 1, "answers": [LIST, GOLD]},
        {"env_class": "sql_server", "extra_info": {"task_id": "sql-002"}, "answers": [UNKNOWN, "I give up."]},
        {"env_class": "sql_server", "task_id": "sql-001", "answers": ["<tool_call>not json</tool_call>", GOLD]},
    ]
    out = []
    for row in rows:
        env = skyrl_gym.make(row["env_class"], env_config={"timeout": 10}, extras=row)
        conversation, info = env.init(
            [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": ""}]
        )
        steps = []
        for answer in row["answers"]:
            step = env.step(answer)
            steps.append(step)
            if step["done"]:
                break
        out.append({"conversation": conversation, "info": info, "steps": steps, "episode_id": info["episode_id"]})
        env.close()
    try:
        skyrl_gym.make("openenv_mcp", extras={"server_url": "http://127.0.0.1:9"}).init([])
    except Exception as exc:
        out.append({"down": f"{type(exc).__name__}: {exc}"})
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
