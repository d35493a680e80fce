"""``openenv-mcp trajectories export``: recorded episodes as chat-format JSON lines."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``trajectories`` and its subcommands to the ``openenv-mcp`` parser."""
    group = commands.add_parser("trajectories", help="export the episodes sim servers recorded")
    actions = group.add_subparsers(dest="action", required=True)
    export = actions.add_parser("export", help="write recorded episodes as chat-format records, one per line")
    export.set_defaults(handler=_export)
    export.add_argument("--format", choices=["jsonl"], default="jsonl", help="jsonl (one JSON record per line)")
    export.add_argument("--url", help="the store's SQLAlchemy URL (default: $OPENENV_TRAJECTORIES, as servers use)")
    export.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")
    export.add_argument("--split", help="only episodes of this split")
    export.add_argument("--server", help="only episodes of this server")
    export.add_argument("--min-reward", type=float, help="only episodes whose total reward is at least this")
    export.add_argument("--done-only", action="store_true", help="only episodes the environment finished")
    export.add_argument(
        "--include-incomplete", action="store_true", help="also episodes with steps the recorder dropped"
    )


def _export(args: argparse.Namespace) -> int:
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.settings import Settings, load_settings
    from openenv_mcp.trajectories.export import EpisodeFilter, export_jsonl

    url = args.url or load_settings(Settings).trajectories_url
    if url.lower() == "off":
        raise ConfigError("Trajectory recording is off (OPENENV_TRAJECTORIES=off); pass --url to read a store")
    where = EpisodeFilter(
        split=args.split,
        server=args.server,
        min_reward=args.min_reward,
        done_only=args.done_only,
        include_incomplete=args.include_incomplete,
    )
    if args.output == "-":
        count = export_jsonl(url, sys.stdout, where)
    else:
        with open(args.output, "w", encoding="utf-8") as output:
            count = export_jsonl(url, output, where)
    print(f"exported {count} episodes from {url}", file=sys.stderr)
    return 0
