"""``openenv-mcp compose``: start, stop and watch the stacks in ``compose/``; regenerate them from the catalog.

    openenv-mcp compose up --mode sim            # start every sim server, wait for each /readyz
    openenv-mcp compose logs --mode sim sql      # stream one service's logs
    openenv-mcp compose down --mode sim
    openenv-mcp compose config --mode prod       # validate and print (no engine needed)
    openenv-mcp compose generate [--check]       # rewrite compose/*.yml and compose/k8s/ from the catalog

The work is :class:`~openenv_mcp.deploy.compose.ComposeRunner`'s (Docker Compose v2, else v1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openenv_mcp.deploy.compose import ComposeRunner
    from openenv_mcp.settings import Mode

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``compose`` and its actions to the ``openenv-mcp`` parser."""
    group = commands.add_parser("compose", help="run the compose stacks (compose/docker-compose.<mode>.yml)")
    actions = group.add_subparsers(dest="action", required=True)

    def action(name: str, help: str, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, help=help)
        parser.set_defaults(handler=handler)
        parser.add_argument("--mode", choices=["sim", "prod"], help="which stack (default: $MODE, else sim)")
        parser.add_argument("--file", "-f", help="another compose file (default: compose/docker-compose.<mode>.yml)")
        parser.add_argument("--project", "-p", help="compose project name (default: openenv-<mode>)")
        return parser

    up = action("up", "start the stack in the background and wait for every server's /readyz", _up)
    up.add_argument("services", nargs="*", metavar="SERVICE")
    up.add_argument("--build", action="store_true", help="build the image first")
    up.add_argument("--no-wait", action="store_true", help="return once started, without waiting for /readyz")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for /readyz (default: 180)")
    down = action("down", "stop the stack and remove its containers", _down)
    down.add_argument("--volumes", action="store_true", help="also remove its named volumes (data is lost)")
    action("ps", "list the stack's containers", _ps)
    logs = action("logs", "stream the logs of the stack (or of SERVICE...)", _logs)
    logs.add_argument("services", nargs="*", metavar="SERVICE")
    logs.add_argument("--no-follow", action="store_true", help="print what is there and return")
    logs.add_argument("--tail", type=int, help="lines per container to start from")
    config = action("config", "validate the file and print it resolved (no engine needed)", _config)
    config.add_argument("--quiet", "-q", action="store_true", help="only validate")
    generate = actions.add_parser(
        "generate", help="write compose/docker-compose.{sim,prod}.yml and compose/k8s/ from the catalog"
    )
    generate.set_defaults(handler=_generate)
    generate.add_argument("--mode", choices=["sim", "prod"], help="only this mode's file (default: both)")
    generate.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")


def _runner(args: argparse.Namespace) -> ComposeRunner:
    from openenv_mcp.deploy.compose import ComposeRunner, compose_file
    from openenv_mcp.settings import Settings, load_settings

    mode: Mode = args.mode or load_settings(Settings).mode
    file = Path(args.file) if args.file else compose_file(mode)
    return ComposeRunner(file, project=args.project or f"openenv-{mode}")


def _up(args: argparse.Namespace) -> int:
    runner = _runner(args)
    runner.up(args.services, build=args.build, wait=False)
    if not args.no_wait:
        for service, url in runner.wait_ready(args.services, timeout=args.timeout).items():
            print(f"{service:<12} ready at {url} (MCP at {url}/mcp)")
    return 0


def _down(args: argparse.Namespace) -> int:
    _runner(args).down(volumes=args.volumes)
    return 0


def _ps(args: argparse.Namespace) -> int:
    _runner(args).ps()
    return 0


def _logs(args: argparse.Namespace) -> int:
    try:
        _runner(args).logs(args.services, follow=not args.no_follow, tail=args.tail)
    except KeyboardInterrupt:
        return 130
    return 0


def _config(args: argparse.Namespace) -> int:
    text = _runner(args).config(quiet=args.quiet)
    sys.stdout.write(text)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from openenv_mcp.deploy.compose import generated_files

    modes: tuple[Mode, ...] = (args.mode,) if args.mode else ("sim", "prod")
    stale = []
    for path, text in generated_files(modes).items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
    if args.check and stale:
        print(f"out of date: {', '.join(map(str, stale))}; run 'openenv-mcp compose generate'", file=sys.stderr)
        return 1
    return 0
