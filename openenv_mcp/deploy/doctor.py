"""``openenv-mcp doctor``: inspect the PostgreSQL role a prod server connects as.

    openenv-mcp doctor                  # every installed server whose *_DATABASE_URL is set
    openenv-mcp doctor sql              # SQL_DATABASE_URL
    openenv-mcp doctor --url postgresql://reader@db/shop [--admin-url postgresql://postgres@db/shop]

Connects with the server's own URL (the agent's role), lists each privilege that role should not
hold (see :mod:`openenv_mcp.deploy.agent_role`) with the SQL that removes it, and exits 1 when
there is any (0 when clean, 2 when it could not connect). ``--admin-url`` (a superuser on the same
database) also checks the role attributes that provisioning hides from the role itself.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["add_commands", "check", "postgres_urls"]


def add_commands(commands: Any) -> None:
    """Add ``doctor`` to the ``openenv-mcp`` parser."""
    doctor = commands.add_parser(
        "doctor", help="inspect the PostgreSQL role prod servers connect as; print what to revoke"
    )
    doctor.set_defaults(handler=_doctor)
    doctor.add_argument("servers", nargs="*", metavar="SERVER", help="servers to check (default: every one set up)")
    doctor.add_argument("--url", help="check this role's URL instead of the servers' settings")
    doctor.add_argument("--admin-url", help="a superuser's URL on the same database, to check role attributes too")


def postgres_urls(names: list[str]) -> dict[str, str]:
    """The PostgreSQL URL each named server (default: all) is configured with, from its settings."""
    from openenv_mcp.environment.catalog import load_environment, server_names
    from openenv_mcp.settings import load_settings

    urls: dict[str, str] = {}
    for name in names or server_names():
        env = load_environment(name)
        if not any(service.name == "postgresql" for service in env.prod_services):
            if names:
                raise ConfigError(f"Server {name!r} uses no PostgreSQL; doctor checks sql and search")
            continue
        value = getattr(load_settings(env.settings), "database_url", None)
        url = value.get_secret_value() if value is not None else None
        if url is None or not url.startswith("postgres"):
            if names:
                prefix = env.settings.model_config.get("env_prefix", "")
                raise ConfigError(f"Set {prefix}DATABASE_URL to the postgresql:// URL server {name!r} connects with")
            continue
        urls[name] = url
    if not urls:
        raise ConfigError("No server has a PostgreSQL URL set: set SQL_DATABASE_URL or SEARCH_DATABASE_URL, or --url")
    return urls


def check(url: str, *, admin_url: str | None = None) -> tuple[list[Any], list[str], str]:
    """Inspect the role of ``url`` in its database: (findings, notes, the role's name)."""
    import psycopg
    from sqlalchemy.engine import make_url

    from openenv_mcp.deploy.agent_role import inspect_role

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True, connect_timeout=5) as conn:
        role = str(conn.execute("SELECT current_user").fetchone()[0])  # type: ignore[index]
        findings, notes = inspect_role(conn)
    if admin_url is not None:
        admin = make_url(admin_url).set(drivername="postgresql", database=make_url(url).database)
        with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True, connect_timeout=5) as conn:
            findings, notes = inspect_role(conn, role)
    return findings, notes, role


def _doctor(args: argparse.Namespace) -> int:
    import psycopg
    from sqlalchemy.engine import make_url

    urls = {"--url": args.url} if args.url else postgres_urls(args.servers)
    status = 0
    for name, url in urls.items():
        where = make_url(url).render_as_string(hide_password=True)
        try:
            findings, notes, role = check(url, admin_url=args.admin_url)
        except psycopg.Error as exc:
            print(f"{name}: cannot inspect {where}: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
            status = max(status, 2)
            continue
        if findings:
            print(f"{name}: role {role} at {where} holds {len(findings)} privilege(s) an agent must not have:")
            for finding in findings:
                print(f"  - {finding.what}\n      {finding.fix}")
            status = max(status, 1)
        else:
            print(f"{name}: role {role} at {where}: nothing an agent must not have")
        for note in notes:
            print(f"  note: {note}")
    if status == 1:
        print("Run the SQL above as a superuser in that database (or re-run the provisioning), then doctor again.")
    return status
