#!/usr/bin/env python3
"""Judge every generated SQL task on SQLite and PostgreSQL and write ``rejected.json`` next to this file.

Run it after changing the generator (``openenv_mcp/servers/sql/generator.py``, its families) or the fixture::

    .venv/bin/python servers/sql/data/build_tasks.py [--postgres postgresql://postgres@127.0.0.1:5432/postgres]

It loads the fixture into a scratch database on that server (created and dropped here), runs every candidate's
gold query on both engines (``generator.judge``: empty, too long, a tie at the LIMIT, engines that disagree) and
writes the rejected ids with the reason, for the generator version and fixture digest they hold for. The loaded
tasks are the candidates not rejected; ``tests/servers/test_sql_tasks.py`` checks the file is current.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections import Counter
from pathlib import Path

import psycopg

from openenv_mcp.servers.sql.backends import fixture_database
from openenv_mcp.servers.sql.generator import (
    VERSION,
    fixture_digest,
    generate,
    judge,
    postgres_runner,
    sqlite_runner,
)
from openenv_mcp.servers.sql.load import load

OUT = Path(__file__).resolve().parent / "rejected.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres", help="admin URL")
    args = parser.parse_args()
    scratch = f"sql_tasks_{secrets.token_hex(4)}"
    with psycopg.connect(args.postgres, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {scratch}")
    try:
        url = args.postgres.rsplit("/", 1)[0] + f"/{scratch}"
        load(url)
        with psycopg.connect(url, autocommit=True) as pg:
            engines = [sqlite_runner(fixture_database()), postgres_runner(pg)]
            rejected: dict[str, str] = {}
            candidates = list(generate())
            for candidate in candidates:
                why = judge(candidate, engines)
                if why is not None:
                    rejected[candidate.task.id] = f"{candidate.family.name}: {why}"
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {scratch}")
    document = {"version": VERSION, "fixture": fixture_digest(), "rejected": dict(sorted(rejected.items()))}
    OUT.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    kept = [c for c in candidates if c.task.id not in rejected]
    reasons = Counter(why.split(": ", 1)[1].split(":")[0] for why in rejected.values())
    print(f"{len(candidates)} candidates, {len(rejected)} rejected ({dict(reasons)}), {len(kept)} kept")
    print(f"kept per split: {dict(Counter(c.task.split for c in kept))}")
    print(f"kept per difficulty: {dict(Counter(c.task.difficulty for c in kept))}")
    print(f"kept per family: {dict(Counter(c.family.name for c in kept))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
