#!/usr/bin/env python3
"""Cross-check the SQL fixture and gold queries on SQLite and PostgreSQL.

Not a unit test: a script to run by hand after editing ``generate.py`` or
``tasks.json``::

    /work/main/.venv/bin/python servers/sql/data/check.py

It

* loads ``fixture.sql`` into an in-memory SQLite database (reports the load
  time, per-table row counts and the serialized database size);
* loads it into a scratch PostgreSQL database (``sqlfixture_check`` on
  127.0.0.1:5432, trust auth, user ``postgres`` or ``root``; created fresh and
  dropped afterwards);
* validates the shape of ``tasks.json``;
* runs every gold query on both engines, normalises the rows (Decimal/float ->
  float rounded to 2 places, date -> ISO string, ints stay ints), compares
  them (in order when ``ordered`` is true, as multisets otherwise) and prints
  the row count and OK/MISMATCH per task.

Exits non-zero on any mismatch, empty result, error or malformed task.
Set ``SQL_CHECK_NO_PG=1`` to run the SQLite part only.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixture.sql"
TASKS = HERE / "tasks.json"
PG_DB = "sqlfixture_check"
PG_HOST = os.environ.get("PGHOST", "127.0.0.1")
PG_PORT = int(os.environ.get("PGPORT", "5432"))
TABLES = ["regions", "categories", "suppliers", "products", "employees", "customers", "orders", "order_items"]
TASK_KEYS = ["id", "split", "difficulty", "question", "gold_sql", "ordered"]


def norm_value(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, (float, Decimal)):
        f = round(float(v), 2)
        # SQLite stores integral NUMERIC values as INTEGER; make 12 == 12.0 hash alike
        return f + 0.0
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    return str(v)


def norm_rows(rows):
    out = []
    for r in rows:
        row = []
        for v in r:
            n = norm_value(v)
            # unify int/float: a float that is integral compares as int
            if isinstance(n, float) and n.is_integer():
                n = int(n)
            row.append(n)
        out.append(tuple(row))
    return out


def same(a, b, ordered: bool) -> bool:
    if ordered:
        return a == b
    return Counter(a) == Counter(b)


def load_sqlite(script: str):
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    t0 = time.perf_counter()
    conn.executescript(script)
    elapsed = time.perf_counter() - t0
    return conn, elapsed


def pg_connect(dbname: str):
    import psycopg

    last = None
    for user in ("postgres", "root"):
        try:
            return psycopg.connect(host=PG_HOST, port=PG_PORT, user=user, dbname=dbname, autocommit=True), user
        except psycopg.OperationalError as e:  # try next user
            last = e
    raise last  # type: ignore[misc]


def validate_tasks(tasks) -> list[str]:
    errs = []
    if not isinstance(tasks, list):
        return ["tasks.json must be a JSON list"]
    seen = set()
    for i, t in enumerate(tasks):
        if not isinstance(t, dict) or list(t.keys()) != TASK_KEYS:
            errs.append(f"task #{i}: keys must be exactly {TASK_KEYS}, got {list(t)}")
            continue
        if t["id"] in seen:
            errs.append(f"duplicate id {t['id']}")
        seen.add(t["id"])
        if t["split"] not in ("train", "test"):
            errs.append(f"{t['id']}: bad split {t['split']!r}")
        if not isinstance(t["ordered"], bool):
            errs.append(f"{t['id']}: ordered must be a bool")
        if not t["gold_sql"].lstrip().upper().startswith(("SELECT", "WITH")):
            errs.append(f"{t['id']}: gold_sql must be a SELECT")
        if t["ordered"] and "ORDER BY" not in t["gold_sql"].upper():
            errs.append(f"{t['id']}: ordered task without ORDER BY")
    return errs


def main() -> int:
    script = FIXTURE.read_text(encoding="utf-8")
    tasks = json.loads(TASKS.read_text(encoding="utf-8"))
    failures = 0

    print(f"fixture.sql: {len(script.encode('utf-8'))} bytes")
    lite, load_s = load_sqlite(script)
    print(f"SQLite executescript load time: {load_s * 1000:.1f} ms")
    print(f"SQLite serialized size: {len(lite.serialize())} bytes")
    fk = lite.execute("PRAGMA foreign_key_check").fetchall()
    if fk:
        print(f"FOREIGN KEY violations in SQLite: {fk[:5]}")
        failures += 1
    counts = {}
    for t in TABLES:
        counts[t] = lite.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
    print("row counts: " + ", ".join(f"{t}={n}" for t, n in counts.items()) + f" (total {sum(counts.values())})")

    errs = validate_tasks(tasks)
    for e in errs:
        print("TASK ERROR:", e)
    failures += len(errs)
    splits = Counter(t.get("split") for t in tasks if isinstance(t, dict))
    print(f"tasks: {len(tasks)} ({', '.join(f'{k}={v}' for k, v in sorted(splits.items()))})")

    use_pg = os.environ.get("SQL_CHECK_NO_PG") != "1"
    pg = admin = None
    if use_pg:
        admin, user = pg_connect("postgres")
        admin.execute(f"DROP DATABASE IF EXISTS {PG_DB}")
        admin.execute(f"CREATE DATABASE {PG_DB}")
        pg, _ = pg_connect(PG_DB)
        t0 = time.perf_counter()
        # no parameters -> simple query protocol, multiple statements allowed
        pg.execute(script)
        print(f"PostgreSQL ({user}@{PG_HOST}:{PG_PORT}/{PG_DB}) load time: {(time.perf_counter() - t0) * 1000:.1f} ms")
        for t in TABLES:
            n = pg.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            if n != counts[t]:
                print(f"ROW COUNT MISMATCH {t}: sqlite={counts[t]} pg={n}")
                failures += 1

    try:
        print()
        for t in tasks:
            if not isinstance(t, dict) or "gold_sql" not in t:
                continue
            tid, sql, ordered = t["id"], t["gold_sql"], bool(t.get("ordered"))
            try:
                lrows = norm_rows(lite.execute(sql).fetchall())
            except sqlite3.Error as e:
                print(f"{tid:8s} SQLITE ERROR: {e}")
                failures += 1
                continue
            status = "OK"
            detail = ""
            if not lrows:
                status, detail = "EMPTY", "gold query returns no rows"
            if pg is not None:
                try:
                    prows = norm_rows(pg.execute(sql).fetchall())
                except Exception as e:  # psycopg errors
                    print(f"{tid:8s} PG ERROR: {e}")
                    failures += 1
                    continue
                if not same(lrows, prows, ordered):
                    status = "MISMATCH"
                    detail = f"sqlite={lrows[:3]}... pg={prows[:3]}..."
            if status != "OK":
                failures += 1
            print(
                f"{tid:8s} {t['split']:5s} rows={len(lrows):3d} "
                f"{'ordered' if ordered else 'unordered':9s} {status} {detail}"
            )
    finally:
        if pg is not None:
            pg.close()
        if admin is not None:
            admin.execute(f"DROP DATABASE IF EXISTS {PG_DB}")
            admin.close()

    print()
    print("ALL OK" if failures == 0 else f"FAILURES: {failures}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
