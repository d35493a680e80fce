"""The loader of bundled PostgreSQL (the prod stack's <server>-load service), against the real PostgreSQL."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from openenv_mcp.cli import main
from openenv_mcp.deploy.providers import LocalServer
from openenv_mcp.deploy.provision import provision_postgres
from tests.support import PG_ADMIN_URL, require_service

pytestmark = pytest.mark.prod

LOADER = [sys.executable, "-m", "openenv_mcp.servers.sql.load", "{url}"]


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        require_service("PostgreSQL", exc)
    tag = uuid.uuid4().hex[:8]
    database, reader = f"openenv_prov_{tag}", f"openenv_prov_{tag}_reader"
    with admin:
        try:
            yield database, reader
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(reader)))


def _url(role: str, database: str) -> str:
    return f"{PG_ADMIN_URL.split('://')[0]}://{role}@{PG_ADMIN_URL.split('@', 1)[1].rsplit('/', 1)[0]}/{database}"


def test_it_creates_the_database_loads_it_once_and_leaves_a_select_only_role(names: tuple[str, str]) -> None:
    database, reader = names
    assert provision_postgres(PG_ADMIN_URL, database=database, reader=reader, reader_password="pw1", loader=LOADER)
    # A second run (the loader service restarted, or 'compose up' again) changes nothing.
    assert not provision_postgres(PG_ADMIN_URL, database=database, reader=reader, reader_password="pw2", loader=LOADER)
    with psycopg.connect(_url(reader, database), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (300,)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the role's sessions start read-only
            conn.execute("DELETE FROM orders")
        conn.execute("SET default_transaction_read_only = off")  # and without that, privileges refuse
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM orders")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE planted (x int)")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        row = admin.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = %s",
            (reader,),
        ).fetchone()
    assert row == (False, False, False, True)


def test_the_sql_server_serves_prod_through_the_provisioned_role(names: tuple[str, str]) -> None:
    database, reader = names
    provision_postgres(PG_ADMIN_URL, database=database, reader=reader, reader_password="pw", loader=LOADER)
    server = LocalServer("sql", mode="prod", environment={"SQL_DATABASE_URL": _url(reader, database)})
    with server as env:
        assert env.health()["mode"] == "prod"


def test_a_failing_loader_fails_the_service_with_its_status(
    names: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database, reader = names
    monkeypatch.setenv("PROVISION_ADMIN_URL", PG_ADMIN_URL)
    monkeypatch.setenv("PROVISION_READER_PASSWORD", "pw")
    status = main(
        [
            "provision",
            "postgres",
            "--database",
            database,
            "--reader",
            reader,
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(3)",
        ]
    )
    assert status == 1
    assert "failed with exit status 3" in capsys.readouterr().err


def test_missing_credentials_are_named(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROVISION_ADMIN_URL", raising=False)
    monkeypatch.delenv("PROVISION_READER_PASSWORD", raising=False)
    assert main(["provision", "postgres", "--database", "x", "--reader", "y"]) == 1
    err = capsys.readouterr().err
    assert "set PROVISION_ADMIN_URL" in err and "set PROVISION_READER_PASSWORD" in err
