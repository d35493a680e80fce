"""Baseline A: a bare FastAPI app whose one POST endpoint does what a trivial tool does (return a small list).

It parses the same kind of body and header as our ``/step`` and is served by uvicorn exactly like
``openenv-mcp serve`` serves ours (``uvicorn.run``: auto loop and http, i.e. uvloop and httptools; no access log).
"""

from __future__ import annotations

import argparse
from typing import Annotated, Any

import uvicorn
from fastapi import FastAPI, Header
from pydantic import BaseModel, Field


class Action(BaseModel):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class StepBody(BaseModel):
    action: Action


def build_app(tables: list[str]) -> FastAPI:
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/step")
    async def step(body: StepBody, x_episode_id: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        return {"episode_id": x_episode_id, "tool": body.action.tool, "result": tables}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tables", required=True, help="comma-separated table names to return")
    args = parser.parse_args()
    app = build_app(args.tables.split(","))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
