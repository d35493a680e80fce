"""Writes data/tasks.json: ScienceWorld's 30 task types with their variations split as the package splits them.

    .venv/bin/python -m openenv_mcp.servers.scienceworld.data.generate

Run once per ScienceWorld release (the file names the version it was made with). It loads each task type in one
JVM and asks the package for its variation count, its own train/dev/test variation lists and the gold path of its
first variation (whose length sets the task type's difficulty), so that a server lists all 7,207 tasks without
starting a JVM. About a minute here.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

from scienceworld import ScienceWorldEnv
from scienceworld.constants import TASKS

OUT = Path(__file__).resolve().parent / "tasks.json"


def difficulty(gold_steps: int) -> str:
    """A task type's tier from the length of its first variation's gold path."""
    return "easy" if gold_steps <= 20 else "medium" if gold_steps <= 50 else "hard"


def main() -> int:
    env = ScienceWorldEnv("", envStepLimit=10_000)
    titles = {task["task_name"]: (task["task_id"], f"{task['topic']}: {task['task']}") for task in TASKS}
    types = []
    try:
        for name in env.get_task_names():
            env.load(name, 0, "", True)
            gold = env.get_gold_action_sequence()
            number, title = titles[name]
            types.append(
                {
                    "name": name,
                    "number": number,
                    "title": title,
                    "variations": env.get_max_variations(name),
                    "train": env.get_variations_train(),
                    "dev": env.get_variations_dev(),
                    "test": env.get_variations_test(),
                    "gold_steps": len(gold),
                    "difficulty": difficulty(len(gold)),
                }
            )
            print(f"{name}: {types[-1]['variations']} variations, gold path {len(gold)} steps", file=sys.stderr)
    finally:
        env.close()
    document = {"scienceworld": version("scienceworld"), "task_types": types}
    lines = ",\n".join(json.dumps(t, separators=(",", ":")) for t in types)  # a task type a line
    OUT.write_text(f'{{"scienceworld":{json.dumps(document["scienceworld"])},"task_types":[\n{lines}\n]}}\n')
    print(f"{sum(t['variations'] for t in types)} tasks in {len(types)} task types -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
