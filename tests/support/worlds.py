"""Worlds for the tests: the DockerGym-style counter worker, its tasks, and playing a world over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
COUNTER_WORKER = HERE / "dockergym_worker.py"
UNRULY_WORKER = HERE / "unruly_worker.py"

COUNTER_TASKS = [
    {"id": "count-3", "split": "train", "env_id": "count-to-3", "difficulty": "easy", "solution": ["add 1", "add 2"]},
    {"id": "count-4", "split": "train", "env_id": "count-to-4", "difficulty": "easy", "solution": ["add 2", "add 2"]},
    {
        "id": "count-9",
        "split": "test",
        "env_id": "count-to-9",
        "params": {"start": 1},
        "difficulty": "hard",
        "solution": ["add 2", "add 2", "add 2", "add 2"],
    },
    {"id": "count-6", "split": "test", "env_id": "count-to-6", "difficulty": "easy", "solution": ["add 2"] * 3},
    {"id": "introspect", "split": "probe", "env_id": "count-to-5", "params": {"introspect": True}},
]


def command(worker: Path) -> str:
    """The command line that runs a worker script with this interpreter, unbuffered."""
    return f"{sys.executable} -u {worker}"


def write_tasks(folder: Path, tasks: list[dict[str, Any]] | None = None) -> Path:
    path = folder / "tasks.json"
    path.write_text(json.dumps(COUNTER_TASKS if tasks is None else tasks), encoding="utf-8")
    return path


def act(http: httpx.Client, episode: str, action: str) -> httpx.Response:
    """One ``act`` step over ``/step``."""
    return http.post(
        "/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": "act", "arguments": {"action": action}}}
    )


def view(answer: httpx.Response) -> dict[str, Any]:
    """The world's view (observation, valid actions, info) of a successful step's answer."""
    body = answer.json()
    assert answer.status_code == 200, body
    structured: dict[str, Any] = body["observation"]["structured_content"]
    return structured
