"""``openenv-mcp verl tools URL`` and ``openenv-mcp verl mcp URL``: verl's tool config YAML, or an MCP servers
JSON, for a running server (written by :mod:`openenv_mcp.training.verl_config`; see docs/verl.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``verl tools`` and ``verl mcp`` to the ``openenv-mcp`` parser."""
    verl = commands.add_parser("verl", help="write verl's tool config YAML or an MCP servers JSON for a server")
    kinds = verl.add_subparsers(dest="verl_command", required=True)
    tools = kinds.add_parser("tools", help="verl's tool config (tool_config_path): every tool, via our BaseTool")
    tools.set_defaults(handler=_tools)
    tools.add_argument("url", help="the running server's URL, e.g. http://127.0.0.1:8000")
    tools.add_argument("--timeout", type=float, default=30.0, help="seconds per request to the server (30)")
    tools.add_argument("--output", "-o", help="file to write (default: standard output)")
    mcp = kinds.add_parser("mcp", help="an mcpServers JSON for the server's /mcp endpoint")
    mcp.set_defaults(handler=_mcp)
    mcp.add_argument("url", help="the running server's URL, e.g. http://127.0.0.1:8000")
    mcp.add_argument("--name", default="openenv-mcp", help="the server's key under mcpServers (openenv-mcp)")
    binding = mcp.add_mutually_exclusive_group()
    binding.add_argument("--episode", help="bind every call to this episode (X-Episode-Id)")
    binding.add_argument("--task", help="open an episode of this task now and bind every call to it")
    mcp.add_argument("--seed", type=int, help="the seed of the episode --task opens")
    mcp.add_argument("--output", "-o", help="file to write (default: standard output)")


def _tools(args: argparse.Namespace) -> int:
    import anyio
    import yaml

    from openenv_mcp.client.discovery import discover
    from openenv_mcp.training.verl_config import tool_config

    info = anyio.run(discover, args.url)
    _write(yaml.safe_dump(tool_config(info, timeout=args.timeout), sort_keys=False, allow_unicode=True), args.output)
    return 0


def _mcp(args: argparse.Namespace) -> int:
    import json

    from openenv_mcp.training.verl_config import mcp_config

    episode = args.episode
    if args.seed is not None and not args.task:
        from openenv_mcp.errors import ConfigError

        raise ConfigError("--seed is the seed of the episode --task opens: give --task too")
    if args.task:
        from openenv_mcp.client import EnvClient

        with EnvClient(args.url) as client:
            episode = client.reset(task_id=args.task, seed=args.seed).episode_id
            client.episode_id = None  # the episode stays open for the config's user; they close it
    _write(json.dumps(mcp_config(args.url, name=args.name, episode_id=episode), indent=2) + "\n", args.output)
    return 0


def _write(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
