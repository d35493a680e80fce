"""The SQL question families that need the most: joins of four to six tables, top-k with ties, NOT EXISTS and
correlated subqueries, window functions (RANK, DENSE_RANK, running SUM, LAG)."""

from __future__ import annotations

from openenv_mcp.servers.sql.family import (
    CATEGORY,
    CUSTOMER_REGION,
    IN,
    ITEMS,
    LIVE,
    MONTH,
    PRODUCTS,
    REV,
    REVENUE,
    SPENDING,
    Choice,
    Family,
    each,
)
from openenv_mcp.servers.sql.shop import ORDER_PERIODS, YEARS, YEARS_HALVES

__all__ = ["DEEP"]

LIVE_ONLY = (
    Choice("all", "", ""),
    Choice("live", " (counting only orders that were not cancelled)", " AND o.status <> 'cancelled'"),
)
SIDES = (Choice("above", "more", ">"), Choice("below", "less", "<"))
TIES_FIRST = "from most to fewest (ties: lower {what} id first)"

DEEP = (
    Family(
        "category-revenue",
        ("period", "p"),
        4,
        ("group",),
        (
            f"What was the revenue of each product category from orders placed in {{p.span}} that were not "
            f"cancelled ({REVENUE})? Return the category name and its revenue.",
        ),
        f"SELECT ca.name, {REV} FROM orders o {ITEMS} {PRODUCTS} {CATEGORY} WHERE {LIVE} AND {IN} "
        "GROUP BY ca.category_id, ca.name",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "region-revenue",
        ("period", "p"),
        4,
        ("group",),
        (
            f"How much revenue came from the customers of each region in {{p.span}}, counting orders that were not "
            f"cancelled ({REVENUE})? Return the region name and the revenue.",
        ),
        f"SELECT re.name, {REV} FROM orders o {ITEMS} {CUSTOMER_REGION} WHERE {LIVE} AND {IN} "
        "GROUP BY re.region_id, re.name",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "active-customers",
        ("name", "region"),
        3,
        ("group", "having"),
        (
            "Which customers in the {region} region placed at least {n} orders in {p.span}? Return the customer id, "
            "first name, last name and their number of orders.",
        ),
        f"SELECT cu.customer_id, cu.first_name, cu.last_name, COUNT(*) FROM orders o {CUSTOMER_REGION} "
        f"WHERE re.name = {{region.q}} AND {IN} GROUP BY cu.customer_id, cu.first_name, cu.last_name "
        "HAVING COUNT(*) >= {n}",
        each(region="regions", n=(2, 3, 4, 5), p=YEARS),
    ),
    Family(
        "monthly-orders",
        ("name", "region"),
        3,
        ("group", "dates"),
        (
            "Month by month, how many orders did customers in the {region} region place in {p.span}{scope}? Return "
            "the month as YYYY-MM and the number of orders, ordered by month; months without orders are left out.",
        ),
        f"SELECT {MONTH} AS month, COUNT(*) FROM orders o {CUSTOMER_REGION} WHERE re.name = {{region.q}}"
        f"{{scope.sql}} AND {IN} GROUP BY {MONTH} ORDER BY month",
        each(region="regions", scope=LIVE_ONLY, p=YEARS),
        ordered=True,
    ),
    Family(
        "top-products",
        ("period", "p"),
        3,
        ("group", "top"),
        (
            "Which {k} products sold the most units in orders placed in {p.span} that were not cancelled? Return the "
            "product name and the units sold, " + TIES_FIRST.format(what="product") + ".",
        ),
        f"SELECT pr.name, SUM(oi.quantity) AS units FROM orders o {ITEMS} {PRODUCTS} WHERE {LIVE} AND {IN} "
        "GROUP BY pr.product_id, pr.name ORDER BY units DESC, pr.product_id{limit}",
        each(p=ORDER_PERIODS, k=(3, 5)),
        ordered=True,
        top=1,
    ),
    Family(
        "top-customers",
        ("period", "p"),
        3,
        ("group", "top"),
        (
            f"Which {{k}} customers spent the most on orders placed in {{p.span}} that were not cancelled "
            f"({SPENDING})? Return the customer id, first name, last name and the amount, from highest to lowest "
            "(ties: lower customer id first).",
        ),
        f"SELECT cu.customer_id, cu.first_name, cu.last_name, {REV} AS spent FROM orders o {ITEMS} "
        f"JOIN customers cu ON cu.customer_id = o.customer_id WHERE {LIVE} AND {IN} "
        "GROUP BY cu.customer_id, cu.first_name, cu.last_name ORDER BY spent DESC, cu.customer_id{limit}",
        each(p=ORDER_PERIODS, k=(3, 5)),
        ordered=True,
        top=3,
    ),
    Family(
        "region-category-revenue",
        ("name", "region"),
        6,
        (),
        (
            f"What revenue did {{category}} products bring from customers in the {{region}} region in {{p.span}}, "
            f"counting orders that were not cancelled ({REVENUE})? Return a single number.",
        ),
        f"SELECT {REV} FROM orders o {ITEMS} {PRODUCTS} {CATEGORY} {CUSTOMER_REGION} WHERE ca.name = "
        f"{{category.q}} AND re.name = {{region.q}} AND {LIVE} AND {IN}",
        each(region="regions", category="categories", p=YEARS),
    ),
    Family(
        "never-bought",
        ("name", "region"),
        6,
        ("subquery",),
        (
            "Which customers in the {region} region have never bought a {category} product (in an order that was "
            "not cancelled)? Return the customer id, first name and last name.",
        ),
        "SELECT cu.customer_id, cu.first_name, cu.last_name FROM customers cu JOIN regions re "
        "ON re.region_id = cu.region_id WHERE re.name = {region.q} AND NOT EXISTS (SELECT 1 FROM orders o "
        f"{ITEMS} {PRODUCTS} {CATEGORY} WHERE o.customer_id = cu.customer_id AND ca.name = {{category.q}} "
        f"AND {LIVE})",
        each(region="regions", category="categories"),
    ),
    Family(
        "unsold-products",
        ("period", "p"),
        3,
        ("subquery",),
        ("Which products were not ordered at all in {p.span}? Return the product id and name.",),
        "SELECT pr.product_id, pr.name FROM products pr WHERE NOT EXISTS (SELECT 1 FROM order_items oi "
        f"JOIN orders o ON o.order_id = oi.order_id WHERE oi.product_id = pr.product_id AND {IN})",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "above-own-average",
        ("period", "p"),
        2,
        ("group", "subquery"),
        (
            "Which orders placed in {p.span} were worth more than the average of all orders of the same customer "
            "(any date, any status)? An order's worth is quantity times unit price summed over its lines. Return "
            "the order id, the customer id and the order's worth.",
        ),
        f"WITH totals AS (SELECT o.order_id, o.customer_id, o.order_date, {REV} AS worth FROM orders o {ITEMS} "
        "GROUP BY o.order_id, o.customer_id, o.order_date) SELECT t.order_id, t.customer_id, t.worth FROM totals t "
        "WHERE t.order_date >= '{p.start}' AND t.order_date <= '{p.end}' AND t.worth > "
        "(SELECT AVG(t2.worth) FROM totals t2 WHERE t2.customer_id = t.customer_id)",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "category-average",
        ("supplier", "supplier"),
        3,
        ("subquery",),
        (
            "Which products supplied by {supplier} cost {side} than the average price of the products in their own "
            "category? Return the product name, its price and the average price of its category.",
        ),
        "SELECT pr.name, pr.unit_price, (SELECT AVG(p2.unit_price) FROM products p2 WHERE p2.category_id = "
        "pr.category_id) FROM products pr JOIN suppliers su ON su.supplier_id = pr.supplier_id WHERE "
        "su.company_name = {supplier.q} AND pr.unit_price {side.sql} (SELECT AVG(p3.unit_price) FROM products p3 "
        "WHERE p3.category_id = pr.category_id)",
        each(supplier="suppliers", side=SIDES),
    ),
    Family(
        "category-leader",
        ("period", "p"),
        4,
        ("group", "window"),
        (
            f"For each product category, which product brought the most revenue in {{p.span}}, counting orders that "
            f"were not cancelled ({REVENUE})? When products tie, list each of them. Return the category name, the "
            "product name and its revenue.",
        ),
        f"WITH sales AS (SELECT ca.name AS category, pr.name AS product, {REV} AS revenue, RANK() OVER "
        f"(PARTITION BY ca.category_id ORDER BY {REV} DESC) AS place FROM orders o {ITEMS} {PRODUCTS} {CATEGORY} "
        f"WHERE {LIVE} AND {IN} GROUP BY ca.category_id, ca.name, pr.product_id, pr.name) "
        "SELECT category, product, revenue FROM sales WHERE place = 1",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "running-revenue",
        ("name", "category"),
        4,
        ("group", "dates", "window"),
        (
            f"Month by month in {{p.span}}, what revenue did {{category}} products bring (orders not cancelled; "
            f"{REVENUE}), and what was the running total from the first month? Return the month as YYYY-MM, the "
            "month's revenue and the running total, ordered by month; months without sales are left out.",
        ),
        f"WITH monthly AS (SELECT {MONTH} AS month, {REV} AS revenue FROM orders o {ITEMS} {PRODUCTS} {CATEGORY} "
        f"WHERE ca.name = {{category.q}} AND {LIVE} AND {IN} GROUP BY {MONTH}) "
        "SELECT month, revenue, SUM(revenue) OVER (ORDER BY month) FROM monthly ORDER BY month",
        each(category="categories", p=YEARS),
        ordered=True,
    ),
    Family(
        "month-change",
        ("name", "region"),
        3,
        ("group", "dates", "window"),
        (
            "For each month of {p.span} in which customers from the {region} region placed orders, how many did "
            "they place, and how many more than in the previous such month (negative for fewer, empty for the "
            "first)? Return the month as YYYY-MM, the number of orders and the change, ordered by month.",
        ),
        f"WITH monthly AS (SELECT {MONTH} AS month, COUNT(*) AS n FROM orders o {CUSTOMER_REGION} "
        f"WHERE re.name = {{region.q}} AND {IN} GROUP BY {MONTH}) "
        "SELECT month, n, n - LAG(n) OVER (ORDER BY month) FROM monthly ORDER BY month",
        each(region="regions", p=YEARS),
        ordered=True,
    ),
    Family(
        "order-ranking",
        ("name", "region"),
        3,
        ("group", "window", "top"),
        (
            "Rank the customers of the {region} region by how many orders they placed in {p.span}: most first, and "
            "customers with the same number share a rank, with no gap after it (1, 1, 2...). Return the rank, the "
            "customer id, the last name and the number of orders, ordered by rank and then customer id; customers "
            "without orders then are left out.",
        ),
        f"SELECT DENSE_RANK() OVER (ORDER BY COUNT(*) DESC) AS place, cu.customer_id, cu.last_name, COUNT(*) "
        f"FROM orders o {CUSTOMER_REGION} WHERE re.name = {{region.q}} AND {IN} "
        "GROUP BY cu.customer_id, cu.last_name ORDER BY place, cu.customer_id",
        each(region="regions", p=YEARS_HALVES),
        ordered=True,
    ),
)
