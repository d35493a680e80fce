# mypy: disable-error-code="import-not-found,misc"
# (openenv is installed in .venv/openenv only, never in the project's venv that mypy checks with)
"""Baseline C: OpenEnv (``openenv``, its latest release) serving a minimal environment like ``bench/trivial.py``.

Runs under OpenEnv's venv (``.venv/openenv``, shared with tests/doors/test_openenv.py), never the project's:
``bench/servers.py`` starts it as ``.venv/openenv/bin/python bench/baseline_openenv.py --port P --tables a,b,...``.

The environment takes an action ``{"tool", "arguments"}`` and answers with the table list, like the other baselines.
It is written for OpenEnv's fastest paths: ``reset_async``/``step_async`` are overridden (so neither HTTP nor the
WebSocket hops to a thread pool per call), ``SUPPORTS_CONCURRENT_SESSIONS`` is set and the session cap raised (each
WebSocket is one session). It is built with ``create_app`` (the call OpenEnv's template server makes) and served by
``uvicorn.run`` with the same settings as ours (uvloop and httptools are installed in that venv too).
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

TABLES: list[str] = []


class ToolAction(Action):
    """A tool call, as ours takes it."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class TablesObservation(Observation):
    """The tool's result."""

    result: list[str] = Field(default_factory=list)


class MinimalEnvironment(Environment[ToolAction, TablesObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TablesObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return TablesObservation(done=False, reward=0.0)

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TablesObservation:
        return self.reset(seed=seed, episode_id=episode_id)

    def step(self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any) -> TablesObservation:
        self._state.step_count += 1
        return TablesObservation(done=False, reward=0.0, result=TABLES)

    async def step_async(self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any) -> TablesObservation:
        return self.step(action)

    @property
    def state(self) -> State:
        return self._state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tables", required=True, help="comma-separated table names to return")
    parser.add_argument("--max-sessions", type=int, default=20_000)
    args = parser.parse_args()
    TABLES.extend(args.tables.split(","))
    app = create_app(
        MinimalEnvironment, ToolAction, TablesObservation, env_name="minimal", max_concurrent_envs=args.max_sessions
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
