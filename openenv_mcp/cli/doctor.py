"""``openenv-mcp doctor``: inspect the PostgreSQL role a prod server connects as.

    openenv-mcp doctor                  # every installed server whose *_DATABASE_URL is set
    openenv-mcp doctor sql              # SQL_DATABASE_URL
    openenv-mcp doctor --url postgresql://reader@db/shop [--admin-url postgresql://postgres@db/shop]

Prints each privilege the role should not hold with the SQL that removes it
(:func:`openenv_mcp.deploy.doctor.check`), and exits 1 when there is any (0 when clean, 2 when it could not
connect). ``--admin-url`` (a superuser on the same database) also checks the role attributes that provisioning
hides from the role itself.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``doctor`` to the ``openenv-mcp`` parser."""
    doctor = commands.add_parser(
        "doctor", help="inspect the PostgreSQL role prod servers connect as; print what to revoke"
    )
    doctor.set_defaults(handler=_doctor)
    doctor.add_argument("servers", nargs="*", metavar="SERVER", help="servers to check (default: every one set up)")
    doctor.add_argument("--url", help="check this role's URL instead of the servers' settings")
    doctor.add_argument("--admin-url", help="a superuser's URL on the same database, to check role attributes too")


def _doctor(args: argparse.Namespace) -> int:
    import psycopg
    from sqlalchemy.engine import make_url

    from openenv_mcp.deploy.doctor import check, postgres_urls

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
