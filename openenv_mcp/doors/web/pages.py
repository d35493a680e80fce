"""The page's files and the routes a sim server adds for it."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

if TYPE_CHECKING:
    from openenv_mcp.runtime import Runtime

__all__ = ["ASSETS", "page", "web_router"]

# path -> (file in static/, media type); the page itself is rendered by page()
ASSETS: dict[str, tuple[str, str]] = {
    "/web/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/web/style.css": ("style.css", "text/css; charset=utf-8"),
}


@cache
def _read(name: str) -> str:
    return resources.files("openenv_mcp.doors.web").joinpath("static", name).read_text(encoding="utf-8")


def page(mode: Literal["play", "replay"]) -> str:
    """``index.html`` for ``mode``: playing a live sim server, or replaying a trajectory store."""
    return _read("index.html").replace("{{mode}}", mode)


def add_assets(router: APIRouter, mode: Literal["play", "replay"]) -> None:
    """``/web`` and its script and style sheet on ``router``."""

    @router.get("/web", include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse(page(mode), headers={"Cache-Control": "no-cache"})

    for path, (name, media_type) in ASSETS.items():

        async def asset(name: str = name, media_type: str = media_type) -> Response:
            return Response(_read(name), media_type=media_type, headers={"Cache-Control": "no-cache"})

        router.add_api_route(path, asset, methods=["GET"], include_in_schema=False)


def web_router(runtime: Runtime) -> APIRouter:
    """The page and ``GET /web/tools`` (the server's tool table, as ``tools/list`` gives it)."""
    router = APIRouter()
    add_assets(router, "play")
    tools = runtime.tools.listing()

    @router.get("/web/tools", tags=["web"])
    async def web_tools() -> dict[str, Any]:
        """The server's name, description and tools with their input schemas, for the page's forms."""
        return {"server": runtime.env.name, "description": runtime.env.description, "tools": tools}

    return router
