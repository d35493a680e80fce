"""``openenv-mcp list``: the installed servers, their tools and what each is."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``list`` to the ``openenv-mcp`` parser."""
    commands.add_parser("list", help="list the installed servers").set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    from openenv_mcp.environment.catalog import load_environment, server_names

    for name in server_names():
        env = load_environment(name)
        print(f"{name:<12} {', '.join(env.tools.names)}")
        print(f"{'':<12} {env.description}")
        for hint in env.missing():  # a world whose package (or runtime) is not installed here
            print(f"{'':<12} not ready here: {hint}")
    return 0
