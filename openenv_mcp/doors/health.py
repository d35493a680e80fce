"""The health routes, served in both modes: ``GET /healthz``, ``GET /readyz`` and ``GET /metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from openenv_mcp.doors.guard import AUTHENTICATED
from openenv_mcp.doors.mcp_mount import McpMount
from openenv_mcp.models import Readiness
from openenv_mcp.runtime import Runtime
from openenv_mcp.runtime.metrics import CONTENT_TYPE

__all__ = ["add_health_routes"]


def add_health_routes(app: FastAPI, runtime: Runtime, mcp: McpMount) -> None:
    """Add liveness, readiness (every backend and the MCP door ``mcp``) and the Prometheus metrics of ``runtime``."""

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process serves."""
        return {"status": "ok", "mode": runtime.mode, "server": runtime.env.name}

    @app.get(
        "/readyz",
        tags=["health"],
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "A backend failed its ping"}},
    )
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: every backend answers its ping and the MCP door is up (why not only with the token, if any)."""
        backends = {**await runtime.readiness(), "mcp": mcp.state()}  # the MCP door counts: clients use both
        ready = all(state == "ok" for state in backends.values())
        if not request.scope.get("state", {}).get(AUTHENTICATED, True):
            backends = {name: "ok" if state == "ok" else "unavailable" for name, state in backends.items()}
        body: dict[str, Any] = {"status": "ready" if ready else "unavailable", "backends": backends}
        if not ready:
            failed = ", ".join(f"{name}: {state}" for name, state in backends.items() if state != "ok")
            body["error"] = {"code": "backend_unavailable", "message": f"Backend not ready ({failed})"}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get(
        "/metrics",
        tags=["health"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}, "description": "Prometheus text"}},
    )
    async def metrics() -> Response:
        """Prometheus metrics."""
        return Response(runtime.metrics.render(), media_type=CONTENT_TYPE)
