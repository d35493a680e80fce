"""``openenv-mcp provision postgres``: a server's database and SELECT-only role, loaded once (the loader service).

    PROVISION_ADMIN_URL=postgresql://postgres:secret@postgres:5432/postgres \
    PROVISION_READER_PASSWORD=hunter2 \
    openenv-mcp provision postgres --database sql --reader sql_reader \
        -- python -m openenv_mcp.servers.sql.load {url}

What it does is :func:`openenv_mcp.deploy.provision.provision_postgres`'s; the credentials come from the
environment (``PROVISION_*``), never the command line. Exits 1, saying why, when it could not.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``provision postgres`` to the ``openenv-mcp`` parser."""
    provision = commands.add_parser(
        "provision", help="create a server's database and a SELECT-only role in a PostgreSQL, and load it once"
    )
    kinds = provision.add_subparsers(dest="kind", required=True, metavar="SERVICE")
    postgres = kinds.add_parser(
        "postgres",
        help="PostgreSQL: credentials from PROVISION_ADMIN_URL and PROVISION_READER_PASSWORD",
        epilog="After --, the command that loads an empty database; {url} stands for its admin URL.",
    )
    postgres.set_defaults(handler=_postgres)
    postgres.add_argument("--database", required=True, help="database to create (if missing) and load")
    postgres.add_argument("--reader", required=True, help="login role to create (or update) with SELECT only")
    postgres.add_argument("--schema", default="public", help="schema whose tables the role may read (default: public)")
    postgres.add_argument("loader", nargs="*", metavar="-- LOADER", help="the loader command, after --")


def _postgres(args: argparse.Namespace) -> int:
    import psycopg

    from openenv_mcp.deploy.provision import ProvisionSettings, provision_postgres
    from openenv_mcp.errors import OpenEnvError
    from openenv_mcp.settings import load_settings

    try:
        settings = load_settings(ProvisionSettings)
        ran = provision_postgres(
            settings.admin_url.get_secret_value(),
            database=args.database,
            reader=args.reader,
            reader_password=settings.reader_password.get_secret_value(),
            loader=args.loader,
            schema=args.schema,
            wait=settings.wait,
        )
    except (OpenEnvError, psycopg.Error) as exc:
        message = exc.message if isinstance(exc, OpenEnvError) else str(exc).strip()
        print(f"provision: {message}", file=sys.stderr)
        return 1
    state = "loaded" if ran else "already loaded" if args.loader else "ready (no loader)"
    print(f"provision: database {args.database} (UTF8) {state}; role {args.reader} may SELECT only")
    return 0
