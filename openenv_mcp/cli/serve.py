"""``openenv-mcp serve NAME``: one environment over HTTP (control plane and ``/mcp`` on one port) or stdio.

``rollout`` and ``eval`` given a name, the local provider and the images run this command in a process of its own;
a Ray replica builds the same server in process through :mod:`openenv_mcp.doors.serving`, as this command does.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from typing import TYPE_CHECKING, Any

from openenv_mcp.settings import Settings, load_settings

if TYPE_CHECKING:
    from openenv_mcp.runtime import Runtime

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``serve`` to the ``openenv-mcp`` parser."""
    serve = commands.add_parser("serve", help="serve one environment over HTTP (control plane + /mcp) or stdio")
    serve.set_defaults(handler=_serve)
    serve.add_argument("name", help="the server's name, as 'openenv-mcp list' shows it")
    serve.add_argument("--mode", choices=["sim", "prod"], help="sim or prod (default: $MODE, else sim)")
    serve.add_argument("--host", help="address to bind (default: $OPENENV_HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind; 0 picks a free one (default: $OPENENV_PORT, else 8000)")
    serve.add_argument("--transport", choices=["http", "stdio"], default="http", help="http (default) or stdio")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def _serve(args: argparse.Namespace) -> int:
    from openenv_mcp.runtime import Collector

    Collector.hold()  # no collections while the server starts: the MCP door (or stdio's) settles it once up
    from openenv_mcp.doors.serving import STARTUP_FAILURE, http_server, served_runtime

    overrides: dict[str, Any] = {
        k: v for k, v in {"mode": args.mode, "host": args.host, "port": args.port}.items() if v is not None
    }
    settings = load_settings(Settings, **overrides)
    # stdout belongs to the MCP protocol under stdio; logs go to stderr in both transports.
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    runtime = served_runtime(args.name, settings)
    if args.transport == "stdio":
        return _serve_stdio(runtime)
    server = http_server(runtime, log_level=args.log_level)
    server.run()
    return 0 if server.started else STARTUP_FAILURE


def _serve_stdio(runtime: Runtime) -> int:
    import anyio

    from openenv_mcp.doors.mcp import McpDoor
    from openenv_mcp.runtime import Collector

    async def run() -> None:
        async with runtime.run():
            Collector.settle()
            await McpDoor(runtime).serve_stdio()

    anyio.run(run)
    return 0


def bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one) for uvicorn to serve on; a port that is taken is a
    ConfigError that says to pass another ``--port``."""
    from openenv_mcp.errors import ConfigError

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"Cannot listen on {host}:{port} ({exc.strerror}); pass another --port") from None
    return sock
