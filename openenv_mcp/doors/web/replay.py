"""``openenv-mcp trajectories view``: the page in replay mode over a trajectory store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse

from openenv_mcp.doors.guard import AccessPolicy, Guard
from openenv_mcp.doors.web.pages import add_assets
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.settings import Settings

__all__ = ["replay_app"]


class EpisodeNotRecorded(OpenEnvError):
    code = "episode_not_recorded"
    status = 404


def replay_app(url: str, *, settings: Settings | None = None, limit: int = 500) -> FastAPI:
    """An app serving ``/web`` in replay mode over the store at ``url`` (its ``limit`` latest episodes).

    The same guard as a server's (Host, Origin, the optional bearer token) applies to every route.
    """
    from openenv_mcp.trajectories.store import TrajectoryStore

    store = TrajectoryStore(url)
    store.check_readable()
    app = FastAPI(title="openenv-mcp: recorded episodes", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(Guard, policy=AccessPolicy.from_settings(settings or Settings()))

    @app.exception_handler(OpenEnvError)
    async def refused(request: Any, exc: OpenEnvError) -> JSONResponse:
        return JSONResponse({"error": {"code": exc.code, "message": exc.message}}, status_code=exc.status)

    router = APIRouter()
    add_assets(router, "replay")
    shown = ("id", "server", "task_id", "split", "seed", "step_count", "total_reward", "done")
    kept = ("step", "tool", "arguments", "content", "structured_content", "is_error", "reward", "done")

    @router.get("/web/replay/episodes")
    def episodes() -> dict[str, Any]:
        return {"store": url, "episodes": [{k: row[k] for k in shown} for row in store.recent(limit)]}

    @router.get("/web/replay/episodes/{trajectory_id}")
    def episode(trajectory_id: str) -> dict[str, Any]:
        stored = store.episode(trajectory_id)
        if stored is None:
            raise EpisodeNotRecorded(
                f"No recorded episode {trajectory_id!r} in {url}; GET /web/replay/episodes lists them"
            )
        return {
            "episode": {k: v for k, v in stored.episode.items() if k != "toolset_id"},
            "steps": [{k: step[k] for k in kept} for step in stored.steps],
        }

    app.include_router(router)
    return app
