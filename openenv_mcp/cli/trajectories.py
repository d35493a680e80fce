"""``openenv-mcp trajectories export``: recorded episodes as chat-format JSON lines."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``trajectories`` and its subcommands to the ``openenv-mcp`` parser."""
    group = commands.add_parser("trajectories", help="export or replay the episodes sim servers recorded")
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
        "--min-steps",
        type=int,
        default=0,
        help="only episodes with at least this many steps (default 0: those whose model never acted too)",
    )
    export.add_argument(
        "--include-incomplete", action="store_true", help="also episodes with steps the recorder dropped"
    )
    view = actions.add_parser("view", help="step through recorded episodes in a browser page (replay)")
    view.set_defaults(handler=_view)
    view.add_argument("--url", help="the store's SQLAlchemy URL (default: $OPENENV_TRAJECTORIES, as servers use)")
    view.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    view.add_argument("--port", type=int, default=8765, help="port to bind; 0 picks a free one (default 8765)")
    view.add_argument("--limit", type=int, default=500, help="the latest episodes listed (default 500)")
    view.add_argument("--no-browser", action="store_true", help="print the address; do not open a browser")


def _view(args: argparse.Namespace) -> int:
    import sys
    import webbrowser

    import uvicorn

    from openenv_mcp.cli.serve import bound_socket
    from openenv_mcp.doors.web import replay_app
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.settings import Settings, load_settings

    settings = load_settings(Settings)
    url = args.url or settings.trajectories_url
    if url.lower() == "off":
        raise ConfigError("Trajectory recording is off (OPENENV_TRAJECTORIES=off); pass --url to read a store")
    app = replay_app(url, settings=settings, limit=args.limit)
    sock = bound_socket(args.host, args.port)
    port = sock.getsockname()[1]
    address = f"http://{'localhost' if args.host in ('127.0.0.1', '::1') else args.host}:{port}/web"
    print(f"Replaying {url} at {address} (Ctrl+C to stop)", file=sys.stderr, flush=True)
    if not args.no_browser:
        webbrowser.open(address)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    return 0


def _export(args: argparse.Namespace) -> int:
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.settings import Settings, load_settings
    from openenv_mcp.trajectories.export import export_jsonl
    from openenv_mcp.trajectories.store import EpisodeFilter

    url = args.url or load_settings(Settings).trajectories_url
    if url.lower() == "off":
        raise ConfigError("Trajectory recording is off (OPENENV_TRAJECTORIES=off); pass --url to read a store")
    where = EpisodeFilter(
        split=args.split,
        server=args.server,
        min_reward=args.min_reward,
        done_only=args.done_only,
        include_incomplete=args.include_incomplete,
        min_steps=args.min_steps,
    )
    if args.output == "-":
        count = export_jsonl(url, sys.stdout, where)
    else:
        with open(args.output, "w", encoding="utf-8") as output:
            count = export_jsonl(url, output, where)
    print(f"exported {count} episodes from {url}", file=sys.stderr)
    return 0
