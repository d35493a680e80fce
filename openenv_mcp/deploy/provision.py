"""Provision a bundled PostgreSQL for one server of a prod compose stack (the one-shot loader service).

    provision_postgres(admin_url, database="sql", reader="sql_reader", reader_password=password,
                       loader=["python", "-m", "openenv_mcp.servers.sql.load", "{url}"])

Waits (bounded) for the server to accept connections, creates the database if it is missing
(UTF8, from ``template0``; an existing database in another encoding is refused), creates or
updates the login role ``reader`` with the password, runs the loader command (``{url}`` becomes
the admin URL of the new database) only when the database has no tables yet, so running it again
changes nothing, then leaves the role SELECT on every table of the schema and nothing else: what
PostgreSQL grants every role by default and an agent must not have (advisory locks, signalling
other sessions, WAL messages, other sessions' activity, the cluster's databases and roles) is
revoked in that database (:mod:`openenv_mcp.deploy.agent_role`). The loader service runs it as
``openenv-mcp provision postgres`` (:mod:`openenv_mcp.cli.provision`), credentials from
:class:`ProvisionSettings`, never the command line.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence

import psycopg
from psycopg import sql
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from openenv_mcp.deploy.agent_role import harden
from openenv_mcp.errors import OpenEnvError

__all__ = ["ProvisionSettings", "create_utf8_database", "provision_postgres"]


class ProvisionSettings(BaseSettings):
    """``PROVISION_*`` variables: the loader's credentials."""

    model_config = SettingsConfigDict(env_prefix="PROVISION_", extra="ignore")

    admin_url: SecretStr = Field(description="PostgreSQL URL of a superuser, e.g. postgresql://postgres:pw@db/postgres")
    reader_password: SecretStr = Field(description="Password to give the read-only role")
    wait: float = Field(default=120.0, gt=0, description="Seconds to wait for PostgreSQL to accept connections")


def _connect(url: str, *, wait: float) -> psycopg.Connection[tuple[object, ...]]:
    deadline = time.monotonic() + wait
    while True:
        try:
            return psycopg.connect(url, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                where = make_url(url).render_as_string(hide_password=True)
                raise OpenEnvError(
                    f"PostgreSQL at {where} did not accept connections within {wait:.0f} s: {exc}"
                ) from None
            time.sleep(1.0)


def create_utf8_database(admin: psycopg.Connection[tuple[object, ...]], database: str) -> None:
    """Create ``database`` in UTF8 (from ``template0``, whatever ``template1``'s encoding), or check that the
    existing one is UTF8: a SQL_ASCII database stores bytes unchecked and hands clients bytes, not text."""
    found = admin.execute(
        "SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = %s", (database,)
    ).fetchone()
    if found is None:
        name = sql.Identifier(database)
        try:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(name))
        except psycopg.errors.InvalidParameterValue:  # the cluster's default locale cannot hold UTF8
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'").format(name))
    elif found[0] != "UTF8":
        raise OpenEnvError(
            f"Database {database} exists with encoding {found[0]}, not UTF8: the servers read its text as UTF-8 "
            f"and non-UTF-8 bytes in it fail the queries that meet them. Dump it, DROP DATABASE {database}, run "
            "this again (it creates the database with TEMPLATE template0 ENCODING 'UTF8') and restore the dump"
        )


def provision_postgres(
    admin_url: str,
    *,
    database: str,
    reader: str,
    reader_password: str,
    loader: Sequence[str] = (),
    schema: str = "public",
    wait: float = 120.0,
) -> bool:
    """Make ``database`` with a read-only ``reader`` role, loading it with ``loader`` if it is empty.

    Returns:
        Whether the loader ran (False: the database already had tables, or no loader was given).
    """
    base = make_url(admin_url).set(drivername="postgresql")
    with _connect(base.render_as_string(hide_password=False), wait=wait) as admin:
        create_utf8_database(admin, database)
        role, password = sql.Identifier(reader), sql.Literal(reader_password)
        verb = "ALTER" if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (reader,)).fetchone() else "CREATE"
        admin.execute(
            sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(role, password)
        )
    target = base.set(database=database).render_as_string(hide_password=False)
    with _connect(target, wait=wait) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchone()
        ran = False
        if loader and tables is not None and tables[0] == 0:
            command = [part.replace("{url}", target) for part in loader]
            done = subprocess.run(command, check=False)
            if done.returncode != 0:
                raise OpenEnvError(f"The loader {' '.join(loader)} failed with exit status {done.returncode}")
            ran = True
        ident = sql.Identifier(schema)
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(ident))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(ident, role))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(ident, role))
        harden(conn, database=database, role=reader)
    return ran
