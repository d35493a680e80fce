"""``openenv-mcp parity NAME``: the same calls through the environment's sim and prod backends, answers compared
per tool (docs/parity.md)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from openenv_mcp.cli.runs import positive
from openenv_mcp.errors import ConfigError

__all__ = ["add_commands"]

_SOURCES = ("tasks", "trajectories", "random")


def add_commands(commands: Any) -> None:
    """Add ``parity`` to the ``openenv-mcp`` parser."""
    parity = commands.add_parser(
        "parity",
        help="play the same calls on sim and prod and report, per tool, how often the answers differ",
        description="Plays calls through a sim runtime and a prod runtime of the environment (prod settings read as "
        "'serve --mode prod' reads them, e.g. SQL_DATABASE_URL), compares each call's answers exactly and after the "
        "environment's normalisation, prints a table and writes DIR/parity.json and DIR/parity.html. Exit 0 when it "
        "ran, whatever the gap; 2 when it could not run (a prod setting missing, the prod service unreachable).",
    )
    parity.set_defaults(handler=_parity)
    parity.add_argument("name", help="the server's name, as 'openenv-mcp list' shows it")
    parity.add_argument("--out", required=True, type=Path, help="directory for parity.json and parity.html")
    parity.add_argument(
        "--from",
        dest="sources",
        nargs="+",
        metavar="SOURCE",
        help="where calls come from: tasks (reference solutions), trajectories [URL|PATH] (a recorded store; "
        "default $OPENENV_TRAJECTORIES), random (a seeded generator over the input schemas); default: all three",
    )
    parity.add_argument("--sample", type=positive, help="task references to play, drawn with --seed (default: all)")
    parity.add_argument("--random", type=positive, default=20, help="random scripts of 4 calls (default 20)")
    parity.add_argument("--trajectories-limit", type=positive, default=200, help="recorded episodes at most (200)")
    parity.add_argument("--seed", type=int, default=0, help="the draws and the sim episodes' seed (default 0)")
    parity.add_argument(
        "--allow-writes",
        action="store_true",
        help="run even though the calls change the prod service (email sends mail, memory replaces its graph): "
        "for a scratch copy of the service, never the one in use",
    )


def _sources(tokens: list[str] | None) -> dict[str, str | None]:
    """``--from`` as {source: argument}: ``trajectories`` may be followed by its store's URL or path."""
    if not tokens:
        return {source: None for source in _SOURCES}
    chosen: dict[str, str | None] = {}
    for token in tokens:
        if token in _SOURCES:
            chosen[token] = None
        elif list(chosen)[-1:] == ["trajectories"] and chosen["trajectories"] is None:
            chosen["trajectories"] = token
        else:
            raise ConfigError(f"--from {token!r}: give tasks, random, or trajectories followed by a store URL or path")
    return chosen


def _parity(args: argparse.Namespace) -> int:
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.parity import comparable, from_random, from_tasks, from_trajectories, measure
    from openenv_mcp.parity.staging import prod_writes
    from openenv_mcp.runtime import build_runtime
    from openenv_mcp.settings import Settings, load_settings

    sources = _sources(args.sources)
    env = load_environment(args.name)
    if env.prod_backend is None:
        raise ConfigError(f"{env.name} has no prod backend of its own to compare its sim with")
    if not args.allow_writes and (writes := prod_writes(env)) is not None:
        raise ConfigError(
            f"parity {env.name} would change its prod service: {writes}. Point its prod settings at a scratch "
            "copy of the service (not the one in use), then pass --allow-writes"
        )
    settings = load_settings(Settings, curriculum=False)  # nothing records here: no recorder is attached
    scripts, notes = [], []
    if "tasks" in sources:
        scripts += from_tasks(env, sample=args.sample, seed=args.seed)
    if (left := comparable(env)[1]) is not None:
        notes.append(left)
    if "trajectories" in sources:
        explicit = sources["trajectories"]
        store = explicit or settings.trajectories_url
        if explicit is None and (settings.trajectories or "").strip() == "off":
            notes.append("no recorded trajectories to replay (OPENENV_TRAJECTORIES is off)")
        elif explicit is None and store.startswith("sqlite:///") and not Path(store[len("sqlite:///") :]).exists():
            notes.append(f"no recorded trajectories to replay ({store} does not exist)")
        else:
            recorded = from_trajectories(env, store, limit=args.trajectories_limit)
            scripts += recorded
            if not recorded:
                notes.append(f"the trajectory store holds no episodes of {env.name} to replay")
    if "random" in sources:
        scripts += from_random(env, count=args.random, seed=args.seed, seen=scripts)
    prod = build_runtime(env, settings.model_copy(update={"mode": "prod"}))
    sim = build_runtime(env, settings.model_copy(update={"mode": "sim", "max_episodes": 4}))
    report = asyncio.run(measure(sim, prod, scripts, seed=args.seed))
    report.notes[:0] = notes
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "parity.json").write_text(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n")
    (args.out / "parity.html").write_text(report.html())
    print(report.render())
    print(f"wrote {args.out / 'parity.json'} and {args.out / 'parity.html'}")
    return 0
