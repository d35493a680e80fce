"""Load the shipped fixture into a PostgreSQL database, for demos and for the prod tests.

    python -m openenv_mcp.servers.sql.load postgresql://postgres@127.0.0.1:5432/shop [--create] [--reader NAME]

``--create`` creates the database first (UTF8); ``--reader`` creates (if needed) a login role
with SELECT only, the role a prod server should connect as, and takes from ``PUBLIC`` in this
database what an agent must not hold (:func:`openenv_mcp.deploy.agent_role.harden`).
"""

from __future__ import annotations

import argparse
import sys

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from openenv_mcp.deploy.agent_role import harden
from openenv_mcp.deploy.provision import create_utf8_database
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.servers.sql.backends import fixture_sql

__all__ = ["load"]


def load(url: str, *, create: bool = False, reader: str | None = None) -> None:
    """Create the fixture's tables and rows in ``url`` (which must not have them yet)."""
    target = make_url(url)
    plain = target.set(drivername="postgresql").render_as_string(hide_password=False)
    if create:
        admin = target.set(database="postgres", drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(admin, autocommit=True) as conn:
            create_utf8_database(conn, str(target.database))
    with psycopg.connect(plain, autocommit=False) as conn:
        conn.execute(fixture_sql().encode())
        if reader:
            role = sql.Identifier(reader)
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (reader,)).fetchone():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(role))
            harden(conn, database=str(target.database), role=reader)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openenv_mcp.servers.sql.load", description=__doc__.splitlines()[0])
    parser.add_argument("url", help="postgresql://user@host:port/database")
    parser.add_argument("--create", action="store_true", help="create the database first")
    parser.add_argument("--reader", help="also create a SELECT-only login role with this name")
    args = parser.parse_args(argv)
    try:
        load(args.url, create=args.create, reader=args.reader)
    except (psycopg.Error, OpenEnvError) as exc:
        print(f"load failed: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"loaded the SQL fixture into {make_url(args.url).render_as_string(hide_password=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
