"""The ``openenv-mcp`` command line: the parser, assembled from one module per command.

Each command module exposes ``add_commands(subparsers)``; each subcommand sets ``handler`` (``args -> exit
code``). A command parses, calls the library, prints; heavy imports stay inside handlers so ``--help``, ``list``
and ``serve`` start fast. ``runs.py`` holds what ``rollout`` and ``eval`` share.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from openenv_mcp.errors import OpenEnvError

__all__ = ["main"]

# `list`, `serve` and `proxy` need none of the other commands' modules: a server starts without them.
_OWN_COMMANDS = {
    "list": "openenv_mcp.cli.catalog",
    "serve": "openenv_mcp.cli.serve",
    "proxy": "openenv_mcp.cli.proxy",
}
_COMMAND_MODULES: tuple[str, ...] = (
    *_OWN_COMMANDS.values(),
    "openenv_mcp.cli.trajectories",
    "openenv_mcp.cli.rollout",
    "openenv_mcp.cli.evaluation",
    "openenv_mcp.cli.registry",
    "openenv_mcp.cli.compose",
    "openenv_mcp.cli.authoring",
    "openenv_mcp.cli.tasks",
    "openenv_mcp.cli.doctor",
    "openenv_mcp.cli.provision",
    "openenv_mcp.cli.verl",
    "openenv_mcp.cli.parity",
    "openenv_mcp.cli.mining",
)
# A subcommand beside a positional (`tasks NAME` and `tasks mine RECORDING`): routed to its own command.
_ROUTES = {("tasks", "mine"): "tasks-mine"}


def _parser(modules: Sequence[str] = _COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-mcp", description="MCP tool servers for training (sim) and production (prod)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for module in modules:
        importlib.import_module(module).add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: this process's arguments) and return its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) >= 2 and (route := _ROUTES.get((argv[0], argv[1]))) is not None:
        argv = [route, *argv[2:]]
    # Any other first word, --help included, gets the whole parser.
    own = _OWN_COMMANDS.get(argv[0]) if argv else None
    args = _parser(tuple(_OWN_COMMANDS.values()) if own else _COMMAND_MODULES).parse_args(argv)
    try:
        return int(args.handler(args))
    except OpenEnvError as exc:
        print(f"openenv-mcp: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`openenv-mcp registry list | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
