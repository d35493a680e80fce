"""The doctor's work: find the PostgreSQL URLs prod servers connect with, and inspect each URL's role.

    findings, notes, role = check("postgresql://reader@db/shop", admin_url="postgresql://postgres@db/shop")

:func:`check` connects with the server's own URL (the agent's role) and lists each privilege that role should
not hold (see :mod:`openenv_mcp.deploy.agent_role`) with the SQL that removes it; ``admin_url`` (a superuser on
the same database) also checks the role attributes that provisioning hides from the role itself.
``openenv-mcp doctor`` (:mod:`openenv_mcp.cli.doctor`) prints them.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["check", "postgres_urls"]


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
