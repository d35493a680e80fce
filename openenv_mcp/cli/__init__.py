"""The ``openenv-mcp`` command line: ``list``, ``serve``, and the commands of other modules.

Each subcommand sets ``handler`` (``args -> exit code``); a module with commands of its own
exposes ``add_commands(subparsers)`` and is named in ``_COMMAND_MODULES``. Heavy imports stay
inside handlers so ``--help`` and ``list`` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.settings import Settings, load_settings

__all__ = ["main"]

_COMMAND_MODULES: tuple[str, ...] = (
    "openenv_mcp.cli.trajectories",
    "openenv_mcp.cli.rollout",
    "openenv_mcp.cli.evaluation",
    "openenv_mcp.cli.registry",
    "openenv_mcp.cli.compose",
    "openenv_mcp.cli.authoring",
    "openenv_mcp.cli.doctor",
    "openenv_mcp.cli.provision",
    "openenv_mcp.cli.verl",
)


_OWN_COMMANDS = ("list", "serve")


def _parser(*, others: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-mcp", description="MCP tool servers for training (sim) and production (prod)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the installed servers").set_defaults(handler=_list)
    serve = commands.add_parser("serve", help="serve one environment over HTTP (control plane + /mcp) or stdio")
    serve.set_defaults(handler=_serve)
    serve.add_argument("name", help="the server's name, as 'openenv-mcp list' shows it")
    serve.add_argument("--mode", choices=["sim", "prod"], help="sim or prod (default: $MODE, else sim)")
    serve.add_argument("--host", help="address to bind (default: $OPENENV_HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind; 0 picks a free one (default: $OPENENV_PORT, else 8000)")
    serve.add_argument("--transport", choices=["http", "stdio"], default="http", help="http (default) or stdio")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    for module in _COMMAND_MODULES if others else ():
        importlib.import_module(module).add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # `serve` and `list` need none of the other commands' modules (about 0.1 s of imports, httpx among them):
    # a server starts without them. Any other first word, --help included, gets the whole parser.
    args = _parser(others=not argv or argv[0] not in _OWN_COMMANDS).parse_args(argv)
    try:
        return int(args.handler(args))
    except OpenEnvError as exc:
        print(f"openenv-mcp: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`openenv-mcp registry list | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _list(args: argparse.Namespace) -> int:
    from openenv_mcp.environment.catalog import load_environment, server_names

    for name in server_names():
        env = load_environment(name)
        print(f"{name:<12} {', '.join(env.tools.names)}")
        print(f"{'':<12} {env.description}")
    return 0


def _serve(args: argparse.Namespace) -> int:
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


def _serve_stdio(runtime: Any) -> int:
    import anyio

    from openenv_mcp.doors.mcp import McpDoor

    async def run() -> None:
        await runtime.start()
        try:
            await McpDoor(runtime).serve_stdio()
        finally:
            await runtime.stop()

    anyio.run(run)
    return 0
