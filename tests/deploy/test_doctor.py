"""`openenv-mcp doctor` on a private PostgreSQL cluster: an over-privileged role, a provisioned one, and
a SQL_ASCII database (issue 12: /readyz answered a bare 500 there; provisioning must refuse it)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from openenv_mcp.cli import main
from openenv_mcp.deploy.provision import provision_postgres
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.servers.search import environment as search_environment
from openenv_mcp.servers.search.load import load_corpus
from openenv_mcp.servers.sql import environment as sql_environment
from tests.support import live_server, mcp_call
from tests.support.postgres import PgCluster, pg_cluster

pytestmark = pytest.mark.prod

LOADER = [sys.executable, "-m", "openenv_mcp.servers.sql.load", "{url}"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    with pg_cluster() as running:
        yield running


def admin(cluster: PgCluster, database: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(cluster.url(database), autocommit=True)


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["doctor", *argv])
    return status, capsys.readouterr().out


def test_a_provisioned_role_is_clean(cluster: PgCluster, capsys: pytest.CaptureFixture[str]) -> None:
    provision_postgres(cluster.url(), database="shop", reader="shop_reader", reader_password="pw", loader=LOADER)
    status, out = doctor(capsys, "--url", cluster.url("shop", user="shop_reader"), "--admin-url", cluster.url())
    assert (status, out.count("nothing an agent must not have")) == (0, 1), out


def test_an_over_privileged_role_is_reported_with_sql_that_fixes_it(
    cluster: PgCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with admin(cluster) as conn:
        conn.execute("CREATE DATABASE lax")
    with admin(cluster, "lax") as conn:  # the way many set up a 'read-only' role by hand
        conn.execute("CREATE TABLE t (id serial PRIMARY KEY, x text)")
        conn.execute("CREATE ROLE lax_reader LOGIN CREATEDB CREATEROLE")
        conn.execute("GRANT pg_read_all_stats, pg_signal_backend TO lax_reader")
        conn.execute("GRANT SELECT, INSERT ON t TO lax_reader")
        conn.execute("GRANT USAGE ON SEQUENCE t_id_seq TO lax_reader")
        conn.execute("GRANT CREATE ON SCHEMA public TO lax_reader")  # PostgreSQL 15 no longer gives it to PUBLIC
        conn.execute("CREATE TABLE mine (x int)")
        conn.execute("ALTER TABLE mine OWNER TO lax_reader")
    url = cluster.url("lax", user="lax_reader")
    monkeypatch.setenv("SQL_DATABASE_URL", url)  # as the server is configured: doctor sql reads it
    status, out = doctor(capsys, "sql")
    assert status == 1
    for expected in [
        "has CREATEDB",
        "has CREATEROLE",
        "member of pg_read_all_stats",
        "member of pg_signal_backend",
        "may INSERT on t",
        "may advance sequence t_id_seq",
        "may CREATE in schema public",
        "may TEMPORARY in database lax",
        "fill the cluster's shared lock table",
        "cancel or terminate other sessions",
        "outlives a rollback",
        "catalog view(s)",
        "owns 1 object(s)",
    ]:
        assert expected in out, f"{expected!r} not reported:\n{out}"
    # Every fix is plain SQL a superuser runs in that database; after it, doctor finds nothing.
    fixes = [line.strip() for line in out.splitlines() if re.match(r"\s+(REVOKE|ALTER|GRANT|REASSIGN)", line)]
    with admin(cluster, "lax") as conn:
        for fix in fixes:
            conn.execute(fix.encode())
    status, out = doctor(capsys, "sql", "--admin-url", cluster.url())
    assert status == 0, out


def test_doctor_names_what_it_cannot_reach(capsys: pytest.CaptureFixture[str], cluster: PgCluster) -> None:
    status = main(["doctor", "--url", f"postgresql://nobody@127.0.0.1:{cluster.port}/nowhere"])
    assert status == 2 and "cannot inspect postgresql://nobody@" in capsys.readouterr().err


def test_sql_ascii_databases_serve_and_provisioning_refuses_them(
    cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    with admin(cluster) as conn:
        conn.execute("CREATE DATABASE legacy TEMPLATE template0 ENCODING 'SQL_ASCII' LOCALE 'C'")
    with admin(cluster, "legacy") as conn:
        conn.execute("CREATE TABLE orders (id int, note text)")
        conn.execute(b"INSERT INTO orders VALUES (1, 'plain'), (2, 'caf\xe9')")  # Latin-1 bytes: not UTF-8
    load_corpus(cluster.url("legacy"))
    monkeypatch.setenv("SQL_DATABASE_URL", cluster.url("legacy"))
    monkeypatch.setenv("SEARCH_DATABASE_URL", cluster.url("legacy"))
    for env in (sql_environment, search_environment):
        with live_server(env, mode="prod") as server:  # it was a bare 500 (a TypeError in SQLAlchemy)
            ready = httpx.get(f"{server.url}/readyz", timeout=10)
            assert ready.status_code == 200, ready.text
            if env is sql_environment:
                plain = mcp_call(server, "run_query", {"sql": "SELECT note FROM orders WHERE id = 1"})
                assert plain["data"]["rows"] == [["plain"]]
                latin = mcp_call(server, "run_query", {"sql": "SELECT note FROM orders WHERE id = 2"})
                # PostgreSQL checks what it sends as UTF-8: a clear tool error, and the server serves on.
                assert latin["error"] and 'invalid byte sequence for encoding "UTF8"' in latin["text"]
                assert httpx.get(f"{server.url}/readyz", timeout=10).status_code == 200
    with pytest.raises(OpenEnvError, match="encoding SQL_ASCII, not UTF8"):
        provision_postgres(cluster.url(), database="legacy", reader="legacy_reader", reader_password="pw")
    with admin(cluster) as conn:
        row = conn.execute("SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = 'shop'").fetchone()
    assert row == ("UTF8",)
