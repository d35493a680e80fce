"""Baseline B: a bare MCP SDK server with one trivial tool returning the same table list as ours.

``--runner uvicorn`` (the like-for-like baseline) serves ``streamable_http_app()`` with ``uvicorn.run`` and the same
settings as ``openenv-mcp serve`` (uvloop, httptools, no access log). ``--runner sdk`` calls
``server.run("streamable-http", ...)`` as the SDK ships it, which runs uvicorn under ``anyio.run``: the plain asyncio
loop (no uvloop) and the access log on. ``--runner stdio`` serves the same server over stdio (``server.run()``).
"""

from __future__ import annotations

import argparse

import uvicorn
from mcp.server import MCPServer


def build_server(tables: list[str]) -> MCPServer:
    server = MCPServer("bare")

    @server.tool()
    async def list_tables() -> list[str]:
        """List the tables of the database."""
        return tables

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tables", required=True, help="comma-separated table names to return")
    parser.add_argument("--runner", choices=["uvicorn", "sdk", "stdio"], default="uvicorn")
    parser.add_argument("--sse", action="store_true", help="json_response=False (the SDK default)")
    args = parser.parse_args()
    server = build_server(args.tables.split(","))
    host, json_response = "127.0.0.1", not args.sse
    if args.runner == "stdio":
        server.run()
        return
    if args.runner == "sdk":
        server.run(
            "streamable-http", host=host, port=args.port, streamable_http_path="/mcp", json_response=json_response
        )
        return
    app = server.streamable_http_app(streamable_http_path="/mcp", json_response=json_response, host=host)
    uvicorn.run(app, host=host, port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
