"""The episode routes, served in sim mode only: the control plane a trainer drives.

``POST /reset``, ``POST /step``, ``POST /step_batch``, ``GET /state``, ``DELETE /episodes/{id}``,
``POST /episodes/{id}/fork``, ``POST /episodes/{id}/snapshot`` and ``GET /tasks``; each a thin call of the runtime.
A step sent with ``X-Step-Id`` that the server already ran is answered with its recorded result
(:mod:`openenv_mcp.runtime.steps`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Header, Query, Request

from openenv_mcp.errors import ResetNeeded
from openenv_mcp.models import (
    BatchResult,
    EpisodeState,
    ResetRequest,
    Snapshot,
    StepBatchRequest,
    StepRequest,
    StepResult,
    TaskList,
)
from openenv_mcp.runtime import ForkVia, Runtime

__all__ = ["add_episode_routes"]

_EPISODE_DOC = "The episode_id that POST /reset returned"
EpisodeHeader = Annotated[str | None, Header(alias="X-Episode-Id", description=_EPISODE_DOC)]
_EPISODE_PARAMETER = {  # the OpenAPI parameter EpisodeHeader makes, for the route that reads the header itself
    "name": "X-Episode-Id",
    "in": "header",
    "required": False,
    "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": _EPISODE_DOC, "title": "X-Episode-Id"},
    "description": _EPISODE_DOC,
}


def add_episode_routes(app: FastAPI, runtime: Runtime) -> None:
    """Add the routes that open, step, inspect, fork and close ``runtime``'s episodes, and list its tasks."""

    @app.post("/reset", tags=["episodes"])
    async def reset(body: ResetRequest | None = None) -> StepResult:
        """Open an episode on a task picked by id, or by split and seed; or restore one from a snapshot."""
        body = body or ResetRequest()
        return await runtime.reset(task_id=body.task_id, split=body.split, seed=body.seed, snapshot=body.snapshot)

    @app.post("/step", tags=["episodes"], openapi_extra={"parameters": [_EPISODE_PARAMETER]})
    async def step(body: StepRequest, request: Request) -> StepResult:
        """Call one tool on the episode named by X-Episode-Id."""
        # The header is read here, not declared as a Header parameter: FastAPI's parameter handling cost this,
        # the hottest route, 13% of its instructions (callgrind; bench/README.md). The schema still shows it.
        episode_id = _require(request.headers.get("x-episode-id"))
        step_id = request.headers.get("x-step-id")
        if step_id is None:
            return (await runtime.call(body.action.tool, body.action.arguments, episode_id)).as_step()
        # a step sent again is answered, not run again
        return await runtime.recent.step(body.action.tool, body.action.arguments, episode_id, step_id)

    @app.post("/step_batch", tags=["episodes"])
    async def step_batch(body: StepBatchRequest) -> BatchResult:
        """Steps of many episodes in one request, answered in order; a failing step fails alone."""
        return BatchResult.model_construct(results=await runtime.step_batch(body.steps))

    @app.get("/state", tags=["episodes"])
    async def state(x_episode_id: EpisodeHeader = None) -> EpisodeState:
        """The episode's task, step count, total reward and done flag."""
        return runtime.episode(_require(x_episode_id)).state()

    @app.delete("/episodes/{episode_id}", tags=["episodes"])
    async def close_episode(episode_id: str) -> EpisodeState:
        """Close an episode and free its backend; returns its final state."""
        episode = await runtime.close_episode(episode_id)
        return episode.state()

    @app.post("/episodes/{episode_id}/fork", tags=["episodes"])
    async def fork_episode(episode_id: str, via: ForkVia = "auto") -> StepResult:
        """A new episode in this one's state now (task, steps, reward so far); both go on independently."""
        return await runtime.fork(episode_id, via=via)

    @app.post("/episodes/{episode_id}/snapshot", tags=["episodes"])
    async def snapshot_episode(episode_id: str) -> Snapshot:
        """The episode as signed data (task, seed, actions); POST /reset {"snapshot": ...} restores it."""
        return await runtime.snapshot(episode_id)

    @app.get("/tasks", tags=["episodes"])
    async def tasks(
        split: str | None = None,
        difficulty: str | None = None,
        q: Annotated[str | None, Query(max_length=500, description="Text the id or prompt contains")] = None,
        offset: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int | None, Query(ge=1, description="At most this many (default: all)")] = None,
    ) -> TaskList:
        """The tasks (without answers) that match the filters, from ``offset``; ``total`` counts the matches,
        ``splits`` and ``difficulties`` the whole set."""
        return runtime.task_list(split, difficulty=difficulty, query=q, offset=offset, limit=limit)


def _require(episode_id: str | None) -> str:
    if not episode_id:
        raise ResetNeeded("Missing X-Episode-Id header: POST /reset first and send the episode_id it returns")
    return episode_id
