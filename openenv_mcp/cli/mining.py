"""``openenv-mcp tasks mine RECORDING --out FILE``: recorded prod sessions become sim tasks, each checked by replay
(docs/parity.md). Registered as ``tasks-mine``; ``openenv-mcp tasks mine`` is routed here."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``tasks mine`` (as ``tasks-mine``) to the ``openenv-mcp`` parser."""
    mine = commands.add_parser(
        "tasks-mine",
        prog="openenv-mcp tasks mine",
        help="(run as 'openenv-mcp tasks mine') turn recorded prod sessions into sim tasks, checked by replay",
        description="Reads a session recording (OPENENV_RECORD_SESSIONS of a prod server), makes one task per "
        "session (the prompt given, the recorded calls as reference, the grade from what prod answered), replays "
        "each through the sim and keeps those that answer as prod did and earn 1.0; the others are listed with "
        "the reason (an environment that cannot be mined says why). Serve the tasks with OPENENV_EXTRA_TASKS=FILE. "
        "Exit 0 when a task was mined, 1 when none.",
    )
    mine.set_defaults(handler=_mine)
    mine.add_argument("recording", type=Path, help="the JSON-lines file a prod server recorded its sessions into")
    mine.add_argument("--out", required=True, type=Path, help="the tasks file to write (JSON lines)")
    mine.add_argument("--prompt", required=True, help="the task's prompt: what the user asked in the session")
    mine.add_argument("--server", help="only this server's sessions")
    mine.add_argument("--session", help="only this session")


def _mine(args: argparse.Namespace) -> int:
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.parity.mining import mine, unmineable, write_tasks
    from openenv_mcp.trajectories.sessions import read_sessions

    if args.server is not None and (why := unmineable(load_environment(args.server))) is not None:
        print(why)  # what the environment declares: no session of it can become a task
        return 1
    by_server: dict[str, list[tuple[str | None, Any]]] = {}
    for (server, session), calls in read_sessions(args.recording).items():
        if (args.server is None or server == args.server) and (args.session is None or session == args.session):
            by_server.setdefault(server, []).append((session, calls))
    mined = []
    for server, sessions in by_server.items():
        mined += asyncio.run(mine(load_environment(server), sessions, prompt=args.prompt))
    for found in mined:
        where = f"{found.server} session {found.session or '(sessionless)'} ({found.calls} calls)"
        if found.task is not None:
            print(f"mined {found.task.id} from {where}: {len(found.reference)} reference calls, replayed to 1.0")
        else:
            print(f"rejected {where}: {found.rejected}")
    written = write_tasks(args.out, mined)
    print(f"{written} of {len(mined)} sessions made tasks, written to {args.out} (serve with OPENENV_EXTRA_TASKS)")
    return 0 if written else 1
