"""The SQL environment: read-only in both modes, graded against gold SQL, same data in sim and prod."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import httpx
import pytest

from openenv_mcp import EnvClient, ToolFailed
from openenv_mcp.servers.sql import environment
from openenv_mcp.servers.sql.readonly import single_read_statement
from openenv_mcp.servers.sql.tasks import score_rows
from tests.support import LiveServer, free_port, live_server

GOLD = json.loads(resources.files("openenv_mcp.servers.sql").joinpath("data/tasks.json").read_text())

WRITES = [
    "DELETE FROM orders",
    "UPDATE products SET unit_price = 0",
    "DROP TABLE customers",
    "INSERT INTO regions (region_id, name) VALUES (99, 'x')",
    "CREATE TABLE t (x INTEGER)",
    "SELECT 1; DELETE FROM orders",
    "SELECT 1;DROP TABLE orders;",
    "WITH gone AS (DELETE FROM orders RETURNING *) SELECT COUNT(*) FROM gone",
    "ATTACH DATABASE '/tmp/evil.db' AS evil",
    "PRAGMA writable_schema = 1",
    "/* hi */ ALTER TABLE orders ADD COLUMN x INTEGER",
]


@pytest.mark.parametrize(
    ("sql", "cleaned"),
    [
        ("SELECT 1", "SELECT 1"),
        ("  select 1 ;  ", "select 1"),
        ("SELECT ';' AS s", "SELECT ';' AS s"),
        ("SELECT 1 -- ; DROP TABLE x", "SELECT 1 -- ; DROP TABLE x"),
        ("(SELECT 1) UNION (SELECT 2)", "(SELECT 1) UNION (SELECT 2)"),
        ("WITH a AS (SELECT 1) SELECT * FROM a", "WITH a AS (SELECT 1) SELECT * FROM a"),
        ('SELECT "we;ird" FROM t', 'SELECT "we;ird" FROM t'),
        ("SELECT $x$;$x$", "SELECT $x$;$x$"),
    ],
)
def test_guard_accepts_one_read(sql: str, cleaned: str) -> None:
    assert single_read_statement(sql) == cleaned


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT 1; SELECT 2", "Only one SQL statement"),
        ("SELECT 'a'; DROP TABLE x", "Only one SQL statement"),
        ("DELETE FROM x", "not DELETE"),
        ("/* SELECT */ DROP TABLE x", "not DROP"),
        ("EXPLAIN ANALYZE DELETE FROM x", "not EXPLAIN"),
        ("   ", r"not \(nothing\)"),
        ("selectx 1", "not SELECTX"),
    ],
)
def test_guard_refuses_writes_and_chains(sql: str, message: str) -> None:
    with pytest.raises(ToolFailed, match=message):
        single_read_statement(sql)


def test_score_rows_exact_unordered_ordered_and_partial() -> None:
    gold: list[list[Any]] = [["a", 1], ["b", 2.5]]
    assert score_rows([["b", 2.50], ["a", 1.0]], gold, ordered=False) == 1.0
    assert score_rows([["b", 2.5], ["a", 1]], gold, ordered=True) == 0.5  # right rows, wrong order: F1 1.0 halved
    assert score_rows([["a", "1.00"]], gold, ordered=False) == round(0.5 * 2 * 1.0 * 0.5 / 1.5, 4)
    assert score_rows([["a"], ["b"]], gold, ordered=False) == 0.0
    assert score_rows([], gold, ordered=False) == 0.0


def tool(client: EnvClient, name: str, **arguments: Any) -> Any:
    return client.step(name, arguments).observation


def test_every_gold_query_earns_full_reward(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        for task in GOLD:
            env.reset(task_id=task["id"])
            result = env.step("submit_answer", {"sql": task["gold_sql"]})
            assert (result.reward, result.done) == (1.0, True), task["id"]
            env.close_episode()


def test_wrong_and_partial_answers_earn_less(sim_server: LiveServer) -> None:
    # sql-002 asks for rows; submitting half of them earns half the row F1
    task = next(t for t in GOLD if t["id"] == "sql-002")
    with EnvClient(sim_server.url) as env:
        env.reset(task_id=task["id"])
        gold_rows = env.step("run_query", {"sql": task["gold_sql"]}).observation.structured_content["rows"]
        assert len(gold_rows) >= 2
        half = gold_rows[: len(gold_rows) // 2]
        partial = env.step("submit_answer", {"rows": half})
        precision, recall = 1.0, len(half) / len(gold_rows)
        assert partial.reward == round(0.5 * 2 * precision * recall / (precision + recall), 4)
        env.reset(task_id=task["id"])
        assert env.step("submit_answer", {"sql": "SELECT 'nothing'"}).reward == 0.0


def test_submit_needs_exactly_one_form_and_does_not_end_the_episode_when_refused(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(task_id="sql-001")
        refused = env.step("submit_answer", {})
        assert refused.observation.is_error and "exactly one" in refused.observation.text
        assert (refused.reward, refused.done) == (0.0, False)


def test_step_limit_ends_the_episode(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(seed=4)
        results = [env.step("list_tables") for _ in range(environment.max_steps)]
    assert [r.done for r in results] == [False] * (environment.max_steps - 1) + [True]


def test_same_seed_gives_same_task_and_observations(sim_server: LiveServer) -> None:
    def play(seed: int) -> list[Any]:
        with EnvClient(sim_server.url) as env:
            first = env.reset(seed=seed)
            seen: list[Any] = [first.info["task_id"], first.observation.model_dump()]
            for name, args in [
                ("list_tables", {}),
                ("describe_table", {"table": "orders"}),
                ("run_query", {"sql": "SELECT * FROM products ORDER BY product_id LIMIT 5"}),
            ]:
                seen.append(env.step(name, args).observation.model_dump())
            return seen

    assert play(1234) == play(1234)
    assert play(1234)[0] != play(99)[0] or play(1234)[1] == play(99)[1]


@pytest.mark.parametrize("sql", WRITES)
def test_sim_refuses_writes_and_keeps_the_data(sim_server: LiveServer, sql: str) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(seed=1)
        refused = tool(env, "run_query", sql=sql)
        assert refused.is_error, sql
        assert re.search("read-only|one SQL statement|syntax error", refused.text), refused.text
        counts = tool(env, "run_query", sql="SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM regions)")
        assert counts.structured_content["rows"] == [[300, 5]]
        assert "t" not in tool(env, "list_tables").structured_content["result"]


def test_runaway_query_is_cancelled(sim_server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_STATEMENT_TIMEOUT_MS", "300")
    with live_server(environment, mode="sim") as server, EnvClient(server.url) as env:
        env.reset(seed=1)
        slow = tool(env, "run_query", sql="SELECT COUNT(*) FROM order_items a, order_items b, order_items c")
        assert slow.is_error and "cancelled after 300 ms" in slow.text
        assert tool(env, "run_query", sql="SELECT COUNT(*) FROM orders").structured_content["rows"] == [[300]]


def test_large_results_are_truncated(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(seed=1)
        result = tool(env, "run_query", sql="SELECT * FROM order_items").structured_content
    assert (result["row_count"], result["truncated"]) == (100, True)


# prod: the same tools against the PostgreSQL running on this machine -------------------------------


def mcp_call(server: LiveServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call over plain JSON-RPC on the stateless 2026-07-28 protocol era."""
    import anyio
    from mcp import Client

    async def call() -> dict[str, Any]:
        async with Client(server.mcp_url) as client:
            result = await client.call_tool(name, arguments)
        return {"error": result.is_error, "text": result.content[0].text, "data": result.structured_content}

    return anyio.run(call)


QUERIES = [
    "SELECT COUNT(*) FROM order_items",
    "SELECT name, unit_price FROM products ORDER BY product_id LIMIT 3",
    "SELECT e.first_name, m.first_name FROM employees e JOIN employees m ON e.manager_id = m.employee_id "
    "ORDER BY e.employee_id LIMIT 3",
    "SELECT order_date, shipped_date FROM orders ORDER BY order_id LIMIT 2",
    "SELECT name, '100%' FROM products WHERE name LIKE '%Beans%' ORDER BY product_id LIMIT 2",  # '%' is no placeholder
]


@pytest.mark.prod
@pytest.mark.parametrize("sql", QUERIES)
def test_prod_and_sim_return_the_same_rows(sim_server: LiveServer, prod_server: LiveServer, sql: str) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(seed=1)
        sim_rows = tool(env, "run_query", sql=sql).structured_content["rows"]
    prod = mcp_call(prod_server, "run_query", {"sql": sql})
    assert not prod["error"], prod["text"]
    assert prod["data"]["rows"] == sim_rows


@pytest.mark.prod
def test_prod_describes_the_same_schema(sim_server: LiveServer, prod_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(seed=1)
        sim_tables = tool(env, "list_tables").structured_content
        sim_orders = tool(env, "describe_table", table="order_items").structured_content
    assert mcp_call(prod_server, "list_tables", {})["data"] == sim_tables
    prod_orders = mcp_call(prod_server, "describe_table", {"table": "order_items"})["data"]
    assert [c["name"] for c in prod_orders["columns"]] == [c["name"] for c in sim_orders["columns"]]
    assert [c["type"] for c in prod_orders["columns"]] == [c["type"] for c in sim_orders["columns"]]
    assert sorted(fk["references_table"] for fk in prod_orders["foreign_keys"]) == ["orders", "products"]


@pytest.mark.prod
@pytest.mark.parametrize("sql", [*WRITES, "SELECT pg_read_file('/etc/passwd')", "SELECT pg_sleep(30)"])
def test_prod_refuses_writes_and_the_data_is_intact(prod_server: LiveServer, sql: str) -> None:
    refused = mcp_call(prod_server, "run_query", {"sql": sql})
    assert refused["error"], sql
    counts = mcp_call(
        prod_server,
        "run_query",
        {
            "sql": "SELECT (SELECT COUNT(*) FROM orders), (SELECT SUM(unit_price) "
            "FROM products), (SELECT COUNT(*) FROM regions)"
        },
    )
    assert counts["data"]["rows"] == [[300, pytest.approx(counts["data"]["rows"][0][1]), 5]]
    assert "t" not in mcp_call(prod_server, "list_tables", {})["data"]["result"]


@pytest.mark.prod
def test_prod_read_only_holds_even_if_the_session_setting_is_changed(prod_server: LiveServer) -> None:
    flipped = mcp_call(
        prod_server, "run_query", {"sql": "SELECT set_config('default_transaction_read_only', 'off', false)"}
    )
    assert not flipped["error"]
    for write in [
        "WITH x AS (UPDATE products SET unit_price = 0 RETURNING 1) SELECT 1",  # refused by the cursor itself
        "SELECT query_to_xml('UPDATE products SET unit_price = 0 RETURNING 1', true, true, '')",  # by read-only
    ]:
        sneaky = mcp_call(prod_server, "run_query", {"sql": write})
        assert sneaky["error"] and re.search("read-only|data-modifying|non-volatile", sneaky["text"]), sneaky["text"]
    assert mcp_call(prod_server, "run_query", {"sql": "SELECT MIN(unit_price) > 0 FROM products"})["data"]["rows"] == [
        [True]
    ]


@pytest.mark.prod
def test_prod_with_database_down_is_not_ready_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", f"postgresql://reader@127.0.0.1:{free_port()}/shop")
    with live_server(environment, mode="prod") as server:
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503
        assert "PostgreSQL at postgresql+psycopg://reader@127.0.0.1" in ready.json()["backends"]["sql"]
        down = mcp_call(server, "list_tables", {})
        assert down["error"] and "unavailable" in down["text"]
        assert httpx.get(f"{server.url}/healthz").status_code == 200
