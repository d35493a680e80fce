"""Baseline A: a bare FastAPI app whose one POST endpoint does what a trivial tool does (return a small list).

It parses the same kind of body and header as our ``/step`` and is served by uvicorn exactly like
``openenv-mcp serve`` serves ours (``uvicorn.run``: auto loop and http, i.e. uvloop and httptools; no access log).

``--mcp`` adds the bare MCP SDK server (``bench/baseline_mcp.py``) at ``/mcp``, its session manager started by the
app's lifespan: both doors and nothing else, the start-up floor for a server that serves a control plane and MCP.
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


def with_mcp(app: FastAPI, tables: list[str]) -> FastAPI:
    """``app`` with the bare SDK server at ``/mcp``; it answers only once the SDK's session manager runs."""
    from bench.baseline_mcp import build_server

    sdk = build_server(tables).streamable_http_app(streamable_http_path="/mcp", json_response=True, host="127.0.0.1")
    app.router.lifespan_context = lambda _: sdk.router.lifespan_context(sdk)
    app.mount("/", sdk)  # after /healthz and /step, so those stay FastAPI's
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tables", required=True, help="comma-separated table names to return")
    parser.add_argument("--mcp", action="store_true", help="also serve the bare MCP SDK server at /mcp")
    args = parser.parse_args()
    app = build_app(args.tables.split(","))
    if args.mcp:
        app = with_mcp(app, args.tables.split(","))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
