"""The PostgreSQL role an agent's queries run as: what it must not hold, taken away or reported.

A prod server connects as a login role meant to SELECT the data and nothing else. PostgreSQL grants
more than that to every role by default (to ``PUBLIC``), and in PostgreSQL 15 a read-only
transaction does not stop all of it:

- advisory locks (``pg_advisory_lock`` and its variants): one query can fill the shared lock table
  and lock every client out of the whole cluster until the session ends;
- backend signalling (``pg_terminate_backend``, ``pg_cancel_backend``): allowed against any session
  of the same role, so one agent can kill another's queries;
- state that survives a rollback: ``pg_logical_emit_message`` writes WAL, ``txid_current`` and
  ``pg_current_xact_id`` consume transaction ids, large objects;
- other sessions and the cluster's catalog: ``pg_stat_activity`` (query text of the same role's
  sessions), ``pg_locks``, every database's name and statistics, every role and its superuser flag.

Function and relation privileges live in each database's own catalog, so :func:`harden` revokes
them from ``PUBLIC`` **in the served database only** (run there as a superuser) and grants the
monitoring ones back to ``pg_read_all_stats`` and the signals to ``pg_signal_backend``; other
databases of the cluster are untouched. :func:`inspect_role` reports what a role still holds, each
finding with the SQL that removes it (``openenv-mcp doctor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

__all__ = [
    "DANGEROUS_FUNCTIONS",
    "HIDDEN_RELATIONS",
    "PREDEFINED_ROLES",
    "ROLE_SETTINGS",
    "Finding",
    "harden",
    "inspect_role",
]

# pg_catalog functions (every overload) no read-only agent needs, matched on their names.
DANGEROUS_FUNCTIONS = (
    r"^(pg_advisory_.*|pg_try_advisory_.*"  # the shared lock table
    r"|pg_terminate_backend|pg_cancel_backend"  # other sessions
    r"|pg_logical_emit_message|txid_current|pg_current_xact_id|pg_notify|lo_.*|loread|lowrite"  # lasting state
    r"|pg_stat_get_activity|pg_stat_get_backend_.*|pg_stat_get_progress_info|pg_lock_status|pg_blocking_pids"
    r"|pg_safe_snapshot_blocking_pids|pg_stat_get_db_.*|pg_database_size|pg_tablespace_size|pg_prepared_xact"
    r"|pg_stat_get_wal_senders|pg_stat_get_wal_receiver|pg_stat_get_subscription.*|pg_get_replication_slots"
    r"|pg_export_snapshot|pg_get_userbyid|pg_describe_object|pg_identify_object|pg_identify_object_as_address"
    r"|pg_get_object_address)$"  # other sessions, databases, roles and the cluster
)
_SIGNALS = ("pg_terminate_backend", "pg_cancel_backend")
# Of those, the ones monitoring reads: granted back to pg_read_all_stats (the signals to pg_signal_backend).
_MONITORING = (
    r"^(pg_stat_get_.*|pg_lock_status|pg_blocking_pids|pg_safe_snapshot_blocking_pids|pg_database_size"
    r"|pg_tablespace_size|pg_prepared_xact|pg_get_replication_slots)$"
)

# pg_catalog relations that show other sessions, other databases or the cluster's roles.
HIDDEN_RELATIONS = (
    "pg_stat_activity",
    "pg_stat_ssl",
    "pg_stat_gssapi",
    "pg_stat_replication",
    "pg_stat_wal_receiver",
    "pg_stat_subscription",
    "pg_stat_subscription_stats",
    "pg_stat_database",
    "pg_stat_database_conflicts",
    "pg_stat_progress_analyze",
    "pg_stat_progress_basebackup",
    "pg_stat_progress_cluster",
    "pg_stat_progress_copy",
    "pg_stat_progress_create_index",
    "pg_stat_progress_vacuum",
    "pg_stat_replication_slots",
    "pg_locks",
    "pg_prepared_xacts",
    "pg_replication_slots",
    "pg_database",
    "pg_roles",
    "pg_user",
    "pg_group",
    "pg_auth_members",
    "pg_db_role_setting",
    "pg_shdescription",
    "pg_tablespace",
)

# Predefined roles whose membership gives an agent more than its own data.
PREDEFINED_ROLES = (
    "pg_read_all_stats",
    "pg_monitor",
    "pg_signal_backend",
    "pg_read_all_settings",
    "pg_stat_scan_tables",
    "pg_read_all_data",
    "pg_write_all_data",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_checkpoint",
    "pg_database_owner",
)

# Defaults the role gets in the served database: for any session opened with its credentials, not
# only the server's (which sets its own at connect). temp_file_limit only a superuser can change.
ROLE_SETTINGS = {
    "default_transaction_read_only": "on",
    "statement_timeout": "30s",
    "lock_timeout": "1s",
    "idle_in_transaction_session_timeout": "60s",
    "temp_file_limit": "1GB",
}

_WRITES = ("INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
_ATTRIBUTES = {
    "rolsuper": "SUPERUSER",
    "rolcreaterole": "CREATEROLE",
    "rolcreatedb": "CREATEDB",
    "rolreplication": "REPLICATION",
    "rolbypassrls": "BYPASSRLS",
}

Connection = psycopg.Connection[Any]

_KINDS = {
    "locks": "fill the cluster's shared lock table (advisory locks)",
    "signals": "cancel or terminate other sessions",
    "state": "change state that outlives a rollback (WAL, transaction ids, large objects, notifications)",
    "peek": "show other sessions, databases or the cluster",
}


def _kind(proname: str) -> str:
    if proname.startswith(("pg_advisory", "pg_try_advisory")):
        return "locks"
    if proname in _SIGNALS:
        return "signals"
    if proname.startswith(("pg_logical", "txid", "pg_current", "pg_notify", "lo")):
        return "state"
    return "peek"


def harden(conn: Connection, *, database: str, role: str) -> None:
    """Take from ``PUBLIC`` in ``database`` (which ``conn``, a superuser, is connected to) what agents must not
    hold; give the monitoring functions and views to ``pg_read_all_stats``, the signals to ``pg_signal_backend``,
    and ``role`` its connection, its session defaults, and no temporary tables."""
    db, who = sql.Identifier(database), sql.Identifier(role)
    for statement in (
        sql.SQL("REVOKE CONNECT, TEMPORARY, CREATE ON DATABASE {} FROM PUBLIC").format(db),
        sql.SQL("REVOKE TEMPORARY, CREATE ON DATABASE {} FROM {}").format(db, who),
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, who),
    ):
        conn.execute(statement)
    for name, value in ROLE_SETTINGS.items():
        conn.execute(
            sql.SQL("ALTER ROLE {} IN DATABASE {} SET {} = {}").format(
                who, db, sql.Identifier(name), sql.Literal(value)
            )
        )
    functions = conn.execute(
        "SELECT p.oid::regprocedure::text, p.proname, p.proname ~ %s FROM pg_proc p "
        "WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname ~ %s ORDER BY 1",
        (_MONITORING, DANGEROUS_FUNCTIONS),
    ).fetchall()
    for signature, name, monitoring in functions:
        function = sql.SQL("pg_catalog.{}").format(sql.SQL(signature))  # regprocedure text is already quoted
        conn.execute(sql.SQL("REVOKE EXECUTE ON FUNCTION {} FROM PUBLIC").format(function))
        keeper = "pg_signal_backend" if name in _SIGNALS else "pg_read_all_stats" if monitoring else None
        if keeper:
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(function, sql.Identifier(keeper)))
    for relation in _existing(conn, HIDDEN_RELATIONS):
        target = sql.SQL("pg_catalog.{}").format(sql.Identifier(relation))
        conn.execute(sql.SQL("REVOKE SELECT ON {} FROM PUBLIC").format(target))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO pg_read_all_stats").format(target))


def _existing(conn: Connection, relations: tuple[str, ...]) -> list[str]:
    rows = conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'pg_catalog'::regnamespace AND relname = ANY(%s)",
        (list(relations),),
    ).fetchall()
    return sorted(row[0] for row in rows)


@dataclass(frozen=True)
class Finding:
    """One privilege the role should not have, and the SQL (run as a superuser in the database) that removes it."""

    what: str
    fix: str


def inspect_role(conn: Connection, role: str | None = None) -> tuple[list[Finding], list[str]]:
    """What ``role`` (default: the connected user) holds in the connected database beyond SELECT.

    Returns:
        The findings, and notes on what could not be checked from this connection.
    """
    name = role or str(conn.execute("SELECT current_user").fetchone()[0])  # type: ignore[index]
    database = str(conn.execute("SELECT current_database()").fetchone()[0])  # type: ignore[index]
    subject = _Subject(
        conn, name, database, who=sql.Identifier(name).as_string(conn), db=sql.Identifier(database).as_string(conn)
    )
    findings, notes, superuser = _attributes(subject, connected=role is None)
    if superuser:
        notes.append("a superuser holds every privilege: remove SUPERUSER, then run doctor again")
        return findings, notes
    for check in (
        _memberships,
        _database_privileges,
        _schema_privileges,
        _table_writes,
        _sequences,
        _functions,
        _catalog_views,
        _ownership,
    ):
        findings.extend(check(subject))
    return findings, notes


@dataclass(frozen=True)
class _Subject:
    """The role inspected, the connection that inspects it, and the role's and database's names (``who`` and
    ``db`` quoted for SQL)."""

    conn: Connection
    name: str
    database: str
    who: str
    db: str


def _attributes(subject: _Subject, *, connected: bool) -> tuple[list[Finding], list[str], bool]:
    """The role's attributes (SUPERUSER, CREATEROLE, ...), notes, and whether it is a superuser (then nothing
    else is worth checking); ``pg_roles`` may be hidden from the role itself."""
    conn, who = subject.conn, subject.who
    findings: list[Finding] = []
    notes: list[str] = []
    try:
        with conn.transaction():
            attributes = conn.execute(
                "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls FROM pg_roles "
                "WHERE rolname = %s",
                (subject.name,),
            ).fetchone()
    except psycopg.errors.InsufficientPrivilege:
        superuser = conn.execute("SELECT current_setting('is_superuser') = 'on'").fetchone()
        if connected and superuser and superuser[0]:
            findings.append(Finding("is a superuser", f"ALTER ROLE {who} NOSUPERUSER;"))
        notes.append(
            "pg_roles is hidden from this role (as provisioning leaves it), so CREATEROLE, CREATEDB, REPLICATION "
            "and BYPASSRLS were not checked: run doctor with --admin-url to check them"
        )
        return findings, notes, False
    if attributes is None:
        return findings, notes, False
    for flag, (column, keyword) in zip(attributes, _ATTRIBUTES.items(), strict=True):
        if flag:
            findings.append(Finding(f"has {keyword} ({column})", f"ALTER ROLE {who} NO{keyword};"))
    return findings, notes, bool(attributes[0])


def _memberships(subject: _Subject) -> list[Finding]:
    findings = []
    for granted in PREDEFINED_ROLES:
        member = subject.conn.execute(
            "SELECT to_regrole(%s) IS NOT NULL AND pg_has_role(%s, %s, 'MEMBER')", (granted, subject.name, granted)
        ).fetchone()
        if member and member[0]:
            fix = (
                f"ALTER DATABASE {subject.db} OWNER TO CURRENT_USER;"
                if granted == "pg_database_owner"
                else f"REVOKE {granted} FROM {subject.who};"
            )
            findings.append(Finding(f"is a member of {granted}", fix))
    return findings


def _database_privileges(subject: _Subject) -> list[Finding]:
    findings = []
    db, who = subject.db, subject.who
    for privilege in ("CREATE", "TEMPORARY"):
        row = subject.conn.execute(
            "SELECT has_database_privilege(%s, current_database(), %s)", (subject.name, privilege)
        ).fetchone()
        if row and row[0]:
            findings.append(
                Finding(
                    f"may {privilege} in database {subject.database}",
                    f"REVOKE {privilege} ON DATABASE {db} FROM PUBLIC; REVOKE {privilege} ON DATABASE {db} FROM {who};",
                )
            )
    return findings


def _schema_privileges(subject: _Subject) -> list[Finding]:
    schemas = subject.conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema' "
        "AND has_schema_privilege(%s, oid, 'CREATE') ORDER BY 1",
        (subject.name,),
    ).fetchall()
    findings = []
    for (schema,) in schemas:
        ident = sql.Identifier(schema).as_string(subject.conn)
        findings.append(
            Finding(
                f"may CREATE in schema {schema}",
                f"REVOKE CREATE ON SCHEMA {ident} FROM PUBLIC; REVOKE CREATE ON SCHEMA {ident} FROM {subject.who};",
            )
        )
    return findings


def _table_writes(subject: _Subject) -> list[Finding]:
    checks = " , ".join(f"has_table_privilege(%(role)s, c.oid, '{w}')" for w in _WRITES)
    tables = subject.conn.execute(
        f"SELECT c.oid::regclass::text, {checks} FROM pg_class c "
        "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relnamespace NOT IN "
        "('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace) ORDER BY 1",
        {"role": subject.name},
    ).fetchall()
    findings = []
    for table, *flags in tables:
        held = [w for w, flag in zip(_WRITES, flags, strict=True) if flag]
        if held:
            listed = ", ".join(held)
            findings.append(
                Finding(
                    f"may {listed} on {table}",
                    f"REVOKE {listed} ON {table} FROM PUBLIC; REVOKE {listed} ON {table} FROM {subject.who};",
                )
            )
    return findings


def _sequences(subject: _Subject) -> list[Finding]:
    sequences = subject.conn.execute(
        "SELECT c.oid::regclass::text FROM pg_class c WHERE c.relkind = 'S' "
        "AND (has_sequence_privilege(%s, c.oid, 'USAGE') OR has_sequence_privilege(%s, c.oid, 'UPDATE')) ORDER BY 1",
        (subject.name, subject.name),
    ).fetchall()
    return [
        Finding(
            f"may advance sequence {sequence} (nextval)",
            f"REVOKE USAGE, UPDATE ON SEQUENCE {sequence} FROM PUBLIC; "
            f"REVOKE USAGE, UPDATE ON SEQUENCE {sequence} FROM {subject.who};",
        )
        for (sequence,) in sequences
    ]


def _functions(subject: _Subject) -> list[Finding]:
    """The dangerous pg_catalog functions the role may execute, one finding per kind of harm."""
    functions = subject.conn.execute(
        "SELECT p.oid::regprocedure::text, p.proname FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace "
        "AND p.proname ~ %s AND has_function_privilege(%s, p.oid, 'EXECUTE') ORDER BY 1",
        (DANGEROUS_FUNCTIONS, subject.name),
    ).fetchall()
    groups: dict[str, list[str]] = {}
    for signature, proname in functions:
        groups.setdefault(_KINDS[_kind(proname)], []).append(f"pg_catalog.{signature}")
    findings = []
    for kind, signatures in groups.items():
        listed = ", ".join(signatures)
        shown = ", ".join(s.removeprefix("pg_catalog.") for s in signatures[:4])
        more = f" and {len(signatures) - 4} more" if len(signatures) > 4 else ""
        findings.append(
            Finding(
                f"may EXECUTE {len(signatures)} function(s) that {kind} ({shown}{more})",
                f"REVOKE EXECUTE ON FUNCTION {listed} FROM PUBLIC; "
                f"REVOKE EXECUTE ON FUNCTION {listed} FROM {subject.who};",
            )
        )
    return findings


def _catalog_views(subject: _Subject) -> list[Finding]:
    relations = subject.conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'pg_catalog'::regnamespace AND relname = ANY(%s) "
        "AND has_table_privilege(%s, oid, 'SELECT') ORDER BY 1",
        (list(HIDDEN_RELATIONS), subject.name),
    ).fetchall()
    if not relations:
        return []
    listed = ", ".join(f"pg_catalog.{row[0]}" for row in relations)
    return [
        Finding(
            f"may read {len(relations)} catalog view(s) showing other sessions, databases or roles "
            f"({', '.join(row[0] for row in relations[:4])}{' ...' if len(relations) > 4 else ''})",
            f"REVOKE SELECT ON {listed} FROM PUBLIC; GRANT SELECT ON {listed} TO pg_read_all_stats; "
            f"REVOKE SELECT ON {listed} FROM {subject.who};",
        )
    ]


def _ownership(subject: _Subject) -> list[Finding]:
    owned = subject.conn.execute(
        "SELECT 'relation ' || oid::regclass::text FROM pg_class WHERE relowner = to_regrole(%(role)s) "
        "UNION ALL SELECT 'schema ' || quote_ident(nspname) FROM pg_namespace WHERE nspowner = to_regrole(%(role)s) "
        "UNION ALL SELECT 'function ' || oid::regprocedure::text FROM pg_proc WHERE proowner = to_regrole(%(role)s) "
        "ORDER BY 1",
        {"role": subject.name},
    ).fetchall()
    if not owned:
        return []
    shown = ", ".join(row[0] for row in owned[:5]) + (f" and {len(owned) - 5} more" if len(owned) > 5 else "")
    return [
        Finding(
            f"owns {len(owned)} object(s) ({shown}): an owner may change and grant them",
            f"REASSIGN OWNED BY {subject.who} TO CURRENT_USER;",
        )
    ]
