"""The sim names result columns as PostgreSQL does: each query runs through a sim and a prod runtime (the one
path) and the column names must be identical."""

from __future__ import annotations

import pytest

from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.sql import environment
from openenv_mcp.settings import Settings

NAMED = [
    "SELECT COUNT(*), COUNT(DISTINCT category_id), SUM(unit_price * units_in_stock), MIN(name) FROM products",
    "SELECT ROUND(AVG(unit_price), 2), MAX(unit_price) - MIN(unit_price), 100.0 * SUM(discontinued) / COUNT(*) "
    "FROM products",
    'SELECT name AS Product, unit_price AS "Unit Price", units_in_stock stock, p.category_id FROM products p',
    "SELECT CASE WHEN unit_price > 20 THEN 'dear' ELSE 'cheap' END, CASE WHEN discontinued = 1 THEN NULL ELSE name "
    "END, COALESCE(NULL, name), NULLIF(discontinued, 0), UPPER(name), LENGTH(name) FROM products",
    "SELECT CAST(unit_price AS INTEGER), CAST(unit_price * 2 AS INTEGER), CAST(unit_price * 2 AS REAL), (name), "
    "name || '!', 1, 'x', NULL, TRUE, -units_in_stock, unit_price IS NULL FROM products",
    "SELECT DENSE_RANK() OVER (ORDER BY unit_price DESC), units_in_stock - LAG(units_in_stock) OVER (ORDER BY "
    "product_id), (SELECT MAX(unit_price) FROM products), (SELECT MIN(unit_price) AS floor FROM products) "
    "FROM products",
    "WITH c AS (SELECT category_id, COUNT(*) FROM products GROUP BY category_id) SELECT * FROM c",
    "SELECT EXISTS (SELECT 1 FROM products WHERE unit_price > 100), CURRENT_DATE IS NOT NULL",
]


@pytest.mark.prod
@pytest.mark.anyio
async def test_result_columns_are_named_as_postgresql_names_them(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", pg_url)
    sim = build_runtime(environment, Settings(mode="sim", trajectories="off"))
    prod = build_runtime(environment, Settings(mode="prod", trajectories="off"))
    async with sim.run(), prod.run():
        for sql in NAMED:
            query = {"sql": f"{sql} ORDER BY 1 LIMIT 3"}
            mine = (await sim.call("run_query", query, None)).observation
            theirs = (await prod.call("run_query", query, None)).observation
            assert not mine.is_error and not theirs.is_error, (mine.text, theirs.text)
            assert mine.structured_content is not None and theirs.structured_content is not None
            assert mine.structured_content["columns"] == theirs.structured_content["columns"], sql
