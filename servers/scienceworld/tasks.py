"""ScienceWorld's tasks: all 30 task types with all their variations (7,207), in the package's own splits.

The list comes from ``data/tasks.json`` (made by ``data/generate.py`` from the package), so a server lists the
tasks without starting a JVM. A task's difficulty is its task type's, from the length of the gold path of the
type's first variation (easy up to 20 steps, medium up to 50, hard beyond).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from functools import cache
from importlib import resources
from typing import Any

from openenv_mcp import BackendUnavailable, Grade, Observation, TaskSet
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.servers.scienceworld.settings import JAVA_OPTIONS, WORKER
from openenv_mcp.worlds import WorldBackend, WorldTask

__all__ = ["grade", "load_tasks", "solve", "task_types"]

_HOW = "Act with one command at a time (act); valid_actions lists the commands the world accepts now."


@cache
def task_types() -> list[dict[str, Any]]:
    """The shipped description of each task type: name, title, variations, splits, difficulty."""
    text = resources.files("openenv_mcp.servers.scienceworld").joinpath("data/tasks.json").read_text(encoding="utf-8")
    types: list[dict[str, Any]] = json.loads(text)["task_types"]
    return types


def load_tasks() -> TaskSet:
    """Every variation of every task type, as a task in its split (train, dev or test)."""
    tasks = []
    for kind in task_types():
        splits = {variation: split for split in ("train", "dev", "test") for variation in kind[split]}
        for variation in range(kind["variations"]):
            tasks.append(
                WorldTask(
                    id=f"{kind['name']}-{variation}",
                    split=splits[variation],
                    prompt=f"ScienceWorld task {kind['number']} ({kind['title']}), variation {variation} of "
                    f"{kind['variations']}. {_HOW}",
                    difficulty=kind["difficulty"],
                    env_id=kind["name"],
                    params={"variation": variation},
                )
            )
    return TaskSet(tasks, default_split="train")


async def grade(task: WorldTask, world: WorldBackend, call: BoundCall, observation: Observation) -> Grade:
    """ScienceWorld's score, out of 100, as the reward: each step earns its change / 100, so a solved task totals
    1.0 (a failed one can end below zero, as the world's score does)."""
    reply = world.last
    if observation.is_error or reply is None:
        return Grade()
    return Grade(reward=reply.reward / 100, done=reply.done)


class _GoldPaths:
    """Gold paths from one ScienceWorld worker in ``--gold`` mode, started on first use and kept (a JVM); each
    path was played there and solved its task (the simulator's paths vary from load to load: worker.py)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._known: dict[tuple[str, int], list[str]] = {}

    def __call__(self, task: str, variation: int) -> list[str]:
        with self._lock:
            if (task, variation) not in self._known:
                self._known[task, variation] = self._ask(task, variation)
            return self._known[task, variation]

    def _ask(self, task: str, variation: int) -> list[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-u", str(WORKER), "--gold"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                env={**os.environ, "JAVA_TOOL_OPTIONS": JAVA_OPTIONS},
            )  # fmt: skip
            atexit.register(self.close)
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"task": task, "variation": variation}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise BackendUnavailable(f"The ScienceWorld gold-path worker exited while asked for {task} {variation}")
        actions: list[str] = json.loads(line)["actions"]
        return actions

    def close(self) -> None:
        if self._process is not None:
            assert self._process.stdin is not None and self._process.stdout is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
            self._process = None


_gold = _GoldPaths()


def solve(task: WorldTask) -> list[tuple[str, dict[str, Any]]]:
    """ScienceWorld's gold action sequence for the task's variation, as ``act`` calls (one that was seen to solve
    it, when the simulator gave one in five tries; else its last: a task set check then names the task)."""
    return [("act", {"action": action}) for action in _gold(task.env_id, int(task.params["variation"]))]
