"""Attacks on prod SQL as an agent makes them (MCP tool calls to a prod server), judged from outside.

Each attempt runs against a private PostgreSQL cluster this module starts (filling its lock table
must not harm the machine's shared server), provisioned as a deployment is
(``openenv_mcp.deploy.provision``), behind a prod server connected as the SELECT-only role. The
verdict never reads the tool's message: a superuser's fingerprint of the cluster before and after
(every table's rows, relations and their grants, function and catalog grants, roles and their
flags, large objects, prepared transactions, advisory locks, the WAL position, the next transaction
id), two bystander sessions (a superuser's and another client of the agent's role) still alive and
answering, fresh connections of both kinds answering within a bound while the attack runs, and no
secret (another database's name, a role's flags, the bystander's query text, a host file) in what
the agent got back.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from openenv_mcp.deploy.provision import provision_postgres
from openenv_mcp.servers.sql import environment as sql_environment
from openenv_mcp.servers.sql.load import load
from tests.support import LiveServer, live_server, mcp_call, record
from tests.support.postgres import PgCluster, pg_cluster

pytestmark = pytest.mark.prod

LOADER = [sys.executable, "-m", "openenv_mcp.servers.sql.load", "{url}"]
SECRET_DB = "payroll_secret_db"
SECRET_ROLE = "payroll_superuser"
BYSTANDER_SECRET = "bystander-secret-4711"
LATENCY_BOUND = 2.0  # seconds for another client to connect and answer SELECT 1 during an attack
WAL_SLACK = 64 * 1024  # bytes of WAL a read may cause (hint bits, pruning); one logical message is 16 MiB

# id -> SQL; {agent_pid} and {admin_pid} are the bystanders' backend pids (an attacker can guess them).
ATTACKS: dict[str, str] = {
    # issue 18, item 5: the lock table
    "advisory lock flood": "SELECT count(pg_advisory_lock(g)) FROM generate_series(1, 1000000) g",
    "advisory xact lock flood": "SELECT count(pg_advisory_xact_lock(g)) FROM generate_series(1, 1000000) g",
    "shared advisory lock flood": "SELECT count(pg_advisory_lock_shared(g, g)) FROM generate_series(1, 1000000) g",
    "try advisory lock": "SELECT pg_try_advisory_lock(1), pg_try_advisory_xact_lock_shared(2)",
    "advisory lock inside query_to_xml": "SELECT query_to_xml('SELECT pg_advisory_lock(1)', true, true, '')",
    # item 6: other sessions
    "terminate another agent session": "SELECT pg_terminate_backend({agent_pid})",
    "terminate the superuser's session": "SELECT pg_terminate_backend({admin_pid})",
    "cancel another agent session": "SELECT pg_cancel_backend({agent_pid})",
    "read others' query text": "SELECT pid, query, client_addr FROM pg_stat_activity",
    "read query text by backend id": "SELECT pg_stat_get_backend_activity(s) FROM pg_stat_get_backend_idset() s",
    "read activity function": "SELECT * FROM pg_stat_get_activity(NULL)",
    "read locks of others": "SELECT * FROM pg_locks",
    # item 7: state that outlives the rollback
    "WAL through logical messages": "SELECT pg_logical_emit_message(false, 'x', repeat('x', 16000000))",
    "transactional logical message": "SELECT pg_logical_emit_message(true, 'x', 'y')",
    "consume a transaction id": "SELECT txid_current()",
    "consume a transaction id (new name)": "SELECT pg_current_xact_id()",
    "large object create": "SELECT lo_create(0)",
    "large object from bytea": "SELECT lo_from_bytea(0, 'x')",
    "notify": "SELECT pg_notify('c', 'x')",
    "export a snapshot": "SELECT pg_export_snapshot()",
    # item 8: memory and size
    "4M-row result": "SELECT g, md5(g::text) FROM generate_series(1, 4000000) g",
    "huge cell": "SELECT repeat('x', 100000000)",
    "many large cells": "SELECT repeat('x', 1000000) FROM generate_series(1, 1000)",
    "wide row": "SELECT " + ", ".join(f"repeat('y', 100000) AS c{i}" for i in range(200)),
    "recursive CTE bomb": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    "cross join bomb": "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
    "sleep past the timeout": "SELECT pg_sleep(30)",
    "sort spilling to disk": "SELECT g FROM generate_series(1, 50000000) g ORDER BY md5(g::text)",
    # item 9: catalog leaks
    "list databases": "SELECT datname FROM pg_database",
    "database statistics": "SELECT datname FROM pg_stat_database",
    "database size by name": f"SELECT pg_database_size('{SECRET_DB}')",
    "describe objects by oid": "SELECT pg_describe_object('pg_database'::regclass, g::oid, 0) "
    "FROM generate_series(1, 40000) g",
    "roles and superuser flags": "SELECT rolname, rolsuper FROM pg_roles",
    "users and superuser flags": "SELECT usename, usesuper FROM pg_user",
    "role memberships": "SELECT * FROM pg_auth_members",
    "role names by oid": "SELECT pg_get_userbyid(g::oid) FROM generate_series(1, 40000) g",
    "password hashes": "SELECT rolpassword FROM pg_authid",
    "client addresses": "SELECT client_addr FROM pg_stat_ssl JOIN pg_stat_activity USING (pid)",
    "server settings file": "SELECT current_setting('data_directory')",
    # what an attacker tries next
    "read a host file": "SELECT pg_read_file('/etc/passwd')",
    "list a host directory": "SELECT pg_ls_dir('.')",
    "import a host file": "SELECT lo_import('/etc/passwd')",
    "XML external entity": "SELECT xmlparse(document '<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>')",
    "COPY out": "COPY orders TO STDOUT",
    "COPY to a program": "COPY (SELECT 1) TO PROGRAM 'id'",
    "become the superuser": "SELECT set_config('role', 'postgres', false)",
    "session authorization": "SELECT set_config('session_authorization', 'postgres', false)",
    "SET ROLE": "SET ROLE postgres",
    "dblink": "SELECT dblink_connect('dbname=postgres')",
    "create an extension": "CREATE EXTENSION dblink",
    "file_fdw": "CREATE SERVER files FOREIGN DATA WRAPPER file_fdw",
    "pg_stat_statements": "SELECT query FROM pg_stat_statements",
    "LISTEN": "LISTEN c",
    "prepare a transaction": "PREPARE TRANSACTION 'held'",
    "read prepared transactions": "SELECT * FROM pg_prepared_xacts",
    "temporary table": "SELECT * INTO TEMP stolen FROM orders",
    "create a temporary table": "CREATE TEMP TABLE t (x int)",
    "advance a sequence": "SELECT nextval('invoice_seq')",
    "row locks": "SELECT * FROM orders FOR UPDATE",
    "write inside a function": "SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, true, '')",
    "write in a CTE": "WITH gone AS (DELETE FROM orders RETURNING 1) SELECT count(*) FROM gone",
    "reload the configuration": "SELECT pg_reload_conf()",
    "switch WAL": "SELECT pg_switch_wal()",
    "turn the timeout off for later calls": "SELECT set_config('statement_timeout', '0', false)",
    "turn read-only off for later calls": "SELECT set_config('default_transaction_read_only', 'off', false)",
}
LEAKS = (SECRET_DB, BYSTANDER_SECRET, "root:x:0:0", "rolpassword", "SCRAM-SHA-256$")


@dataclass
class Arena:
    cluster: PgCluster
    server: LiveServer
    admin: psycopg.Connection[tuple[Any, ...]]  # a superuser session that must survive every attack
    agent: psycopg.Connection[tuple[Any, ...]]  # another client of the agent's role, ditto
    agent_pid: int
    admin_pid: int

    def url(self, user: str) -> str:
        return self.cluster.url("shop", user=user)


@pytest.fixture(scope="module")
def arena(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[Arena]:
    # No autovacuum: nothing but the attacks may move the transaction counter or the WAL.
    with pg_cluster({"autovacuum": "off", "max_connections": "30"}) as cluster:
        provision_postgres(cluster.url(), database="shop", reader="agent", reader_password="pw", loader=LOADER)
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {SECRET_DB}")
            conn.execute(f"CREATE ROLE {SECRET_ROLE} SUPERUSER LOGIN PASSWORD 'hunter2'")
            conn.execute("ALTER ROLE agent PASSWORD NULL")  # trust auth here; no hash to find
        with psycopg.connect(cluster.url("shop"), autocommit=True) as conn:
            conn.execute("CREATE SEQUENCE invoice_seq")
        monkeypatch_module.setenv("SQL_DATABASE_URL", cluster.url("shop", user="agent"))
        monkeypatch_module.setenv("SQL_STATEMENT_TIMEOUT_MS", "1500")
        monkeypatch_module.setenv("SQL_POOL_SIZE", "2")
        admin = psycopg.connect(cluster.url("shop"), autocommit=True)
        agent = psycopg.connect(cluster.url("shop", user="agent"), autocommit=True)
        agent.execute(f"SELECT '{BYSTANDER_SECRET}' AS card_number")
        pids = (int(agent.info.backend_pid), int(admin.info.backend_pid))
        with admin, agent, live_server(sql_environment, mode="prod") as server:
            yield Arena(cluster, server, admin, agent, *pids)


def fingerprint(arena: Arena) -> dict[str, Any]:
    """What a superuser sees of everything an attack could change (a fresh session each time)."""
    with psycopg.connect(arena.cluster.url("shop"), autocommit=True, connect_timeout=5) as conn:

        def one(query: str) -> Any:
            row = conn.execute(query).fetchone()
            return row[0] if row else None

        tables = [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        seen: dict[str, Any] = {
            table: one(f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM \"{table}\" t") for table in tables
        }
        seen |= {
            "relations": one(
                "SELECT md5(string_agg(relname || ':' || relkind::text || ':' || coalesce(relacl::text, ''), ',' "
                "ORDER BY relname, relnamespace)) FROM pg_class"
            ),
            "function grants": one(
                "SELECT md5(string_agg(oid::text || coalesce(proacl::text, ''), ',' ORDER BY oid)) FROM pg_proc"
            ),
            "database grants and settings": one(
                "SELECT md5(string_agg(datname || coalesce(datacl::text, ''), ',' ORDER BY datname)) FROM pg_database"
            )
            + str(one("SELECT md5(string_agg(setconfig::text, ',' ORDER BY setrole)) FROM pg_db_role_setting")),
            "roles": one(
                "SELECT string_agg(rolname || rolsuper::text || rolcreaterole::text || rolcreatedb::text, ',' "
                "ORDER BY rolname) FROM pg_roles"
            ),
            "memberships": one("SELECT count(*) FROM pg_auth_members"),
            "large objects": one("SELECT count(*) FROM pg_largeobject_metadata"),
            "prepared transactions": one("SELECT count(*) FROM pg_prepared_xacts"),
            "advisory locks": one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"),
            "next transaction id": one("SELECT txid_snapshot_xmax(txid_current_snapshot())"),
            "sequence": one("SELECT last_value FROM invoice_seq"),
        }
        seen["wal"] = one("SELECT pg_current_wal_lsn()")
    return seen


def latency(url: str) -> float:
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True, connect_timeout=int(LATENCY_BOUND) + 1) as conn:
        conn.execute("SELECT 1").fetchone()
    return time.monotonic() - started


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_changes_nothing_a_superuser_can_see(arena: Arena, name: str, request: pytest.FixtureRequest) -> None:
    sql = ATTACKS[name].format(agent_pid=arena.agent_pid, admin_pid=arena.admin_pid)
    before = fingerprint(arena)
    answer: dict[str, Any] = {}
    attack = threading.Thread(target=lambda: answer.update(mcp_call(arena.server, "run_query", {"sql": sql})))
    attack.start()
    worst = 0.0
    while True:  # other clients keep connecting and answering while it runs
        worst = max(worst, latency(arena.url("postgres")), latency(arena.url("agent")))
        if not attack.is_alive():
            break
    attack.join()
    after = fingerprint(arena)
    record(request, "worst_latency_s", worst)

    assert worst < LATENCY_BOUND, f"another client waited {worst:.2f} s"
    wal_moved = _lsn(after.pop("wal")) - _lsn(before.pop("wal"))
    assert wal_moved < WAL_SLACK, f"{name}: {wal_moved} bytes of WAL"
    assert after == before, f"{name} changed what a superuser sees"
    assert after["advisory locks"] == 0
    for session, pid in ((arena.agent, arena.agent_pid), (arena.admin, arena.admin_pid)):
        alive = session.execute(f"SELECT pg_backend_pid(), '{BYSTANDER_SECRET}'").fetchone()  # the text to steal
        assert alive is not None and alive[0] == pid, "a bystander session was lost"
    shown = f"{answer.get('text', '')} {answer.get('data')}"
    for secret in LEAKS:
        assert secret not in shown, f"{name} revealed {secret!r}"
    size = len(json.dumps(answer.get("data")))
    assert size < 1_100_000, f"{name} returned {size} characters"
    # The server still serves, with its limits: a sleep is still cut, and reads still come back.
    assert mcp_call(arena.server, "run_query", {"sql": "SELECT count(*) FROM orders"})["data"]["rows"] == [[300]]


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def test_later_calls_keep_the_servers_limits(arena: Arena) -> None:
    for flip in ("SELECT set_config('statement_timeout', '0', false)", "SELECT set_config('work_mem', '2GB', false)"):
        mcp_call(arena.server, "run_query", {"sql": flip})
    for _ in range(3):  # whichever pooled connection answers
        slow = mcp_call(arena.server, "run_query", {"sql": "SELECT pg_sleep(5)"})
        assert slow["error"] and "statement timeout" in slow["text"]
        shown = mcp_call(arena.server, "run_query", {"sql": "SELECT current_setting('work_mem')"})
        assert shown["data"]["rows"] != [["2GB"]]


def test_caps_say_what_they_cut(arena: Arena) -> None:
    huge = mcp_call(arena.server, "run_query", {"sql": "SELECT 'a' || repeat('x', 1000000) AS big"})["data"]
    assert len(huge["rows"][0][0]) == 10_001 and huge["rows"][0][0].startswith("ax") and huge["truncated"]
    assert "1 value(s) longer than 10,000 characters were cut" in huge["note"]
    many = mcp_call(arena.server, "run_query", {"sql": "SELECT generate_series(1, 4000000) AS g"})["data"]
    assert (many["row_count"], many["rows"][-1], many["truncated"]) == (100, [100], True)
    assert "only the first 100 rows" in many["note"]
    heavy = mcp_call(arena.server, "run_query", {"sql": "SELECT repeat('x', 20000) FROM generate_series(1, 100)"})
    assert heavy["data"]["row_count"] < 100 and "characters (at most 1,000,000 per result)" in heavy["data"]["note"]
    small = mcp_call(arena.server, "run_query", {"sql": "SELECT region_id, name FROM regions ORDER BY 1"})["data"]
    assert (small["row_count"], small["truncated"], small["note"]) == (5, False, None)


def test_an_unhardened_role_loses_its_advisory_locks_when_the_call_ends(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's reset, on its own: a database set up by hand, where PUBLIC keeps the advisory locks."""
    with psycopg.connect(arena.cluster.url(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE byhand")
        conn.execute("CREATE ROLE byhand_reader LOGIN")
    load(arena.cluster.url("byhand"))
    with psycopg.connect(arena.cluster.url("byhand"), autocommit=True) as conn:
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO byhand_reader")
    monkeypatch.setenv("SQL_DATABASE_URL", arena.cluster.url("byhand", user="byhand_reader"))
    monkeypatch.setenv("SQL_POOL_SIZE", "1")
    with live_server(sql_environment, mode="prod") as server:
        taken = mcp_call(server, "run_query", {"sql": "SELECT pg_advisory_lock(42)"})
        assert not taken["error"], taken["text"]  # the role could take it...
        # ...and the whole table, for the length of one query; then the reset frees every lock.
        mcp_call(server, "run_query", {"sql": "SELECT count(pg_advisory_lock(g)) FROM generate_series(1, 1000000) g"})
        assert latency(arena.url("postgres")) < LATENCY_BOUND
        assert fingerprint(arena)["advisory locks"] == 0
        with psycopg.connect(arena.cluster.url("byhand"), autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()
        assert row == (0,)
