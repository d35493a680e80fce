"""Worlds for the tests: the DockerGym-style counter worker, its tasks, and playing a world over HTTP."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from openenv_mcp.doors.http import build_app
from openenv_mcp.environment.spec import Environment
from openenv_mcp.runtime import build_runtime
from openenv_mcp.settings import Settings
from openenv_mcp.trajectories import record_trajectories
from tests.support import LiveServer, serve_app

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
    {"id": "count-6", "split": "test", "env_id": "count-to-6", "difficulty": "medium", "solution": ["add 2"] * 3},
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


@contextmanager
def recording_server(env: Environment[Any, Any], trajectories: str, **settings: Any) -> Iterator[LiveServer]:
    """Serve ``env`` as :func:`tests.support.live_server` does, recording every episode into ``trajectories``."""
    runtime = build_runtime(env, Settings(**{"port": 0, "mode": "sim", "trajectories": trajectories, **settings}))
    record_trajectories(runtime)
    app = build_app(runtime)
    with serve_app(app, until=lambda: not app.state.mcp.loading) as url:
        yield LiveServer(url=url, runtime=runtime)


def play(http: httpx.Client, task_id: str, actions: list[str]) -> tuple[str, list[dict[str, Any]]]:
    """Reset ``task_id`` and send ``actions`` until the episode is done; its id and every step's answer."""
    episode = str(http.post("/reset", json={"task_id": task_id}).json()["episode_id"])
    answers = []
    for action in actions:
        answer = act(http, episode, action)
        assert answer.status_code == 200, answer.text
        answers.append(answer.json())
        if answers[-1]["done"]:
            break
    return episode, answers
