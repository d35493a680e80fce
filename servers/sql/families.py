"""The SQL question families, from one table to five, with grouping, subqueries and window functions.

``FAMILIES`` is every family, in a fixed order (the generator's order). The one- and two-table families are here;
the others in :mod:`~openenv_mcp.servers.sql.deep_families`.
"""

from __future__ import annotations

from openenv_mcp.servers.sql.deep_families import DEEP
from openenv_mcp.servers.sql.family import (
    CATEGORY,
    IN,
    ITEMS,
    LIVE,
    PRODUCTS,
    REV,
    REVENUE,
    SPENDING,
    Choice,
    Family,
    each,
)
from openenv_mcp.servers.sql.shop import ORDER_PERIODS, SIGNUP_PERIODS, YEARS, YEARS_HALVES

__all__ = ["FAMILIES"]

EASY = (
    Family(
        "price-range",
        ("threshold", "low"),
        1,
        (),
        (
            "Which products have a current unit price from {low} to {high} inclusive? Return the product name and its "
            "unit price.",
            "List the products priced at least {low} and at most {high}: the product name and its unit price.",
        ),
        "SELECT name, unit_price FROM products WHERE unit_price >= {low} AND unit_price <= {high}",
        lambda shop: (
            {"low": low, "high": low + width}
            for low in (10, 15, 20, 30, 40, 50, 60, 80, 100, 120, 150, 200)
            for width in (5, 10, 20, 50)
        ),
    ),
    Family(
        "low-stock",
        ("threshold", "n"),
        1,
        (),
        (
            "Which products that are still sold (not discontinued) have fewer than {n} units in stock? Return the "
            "product name and its units in stock.",
        ),
        "SELECT name, units_in_stock FROM products WHERE discontinued = 0 AND units_in_stock < {n}",
        each(n=(10, 20, 25, 30, 40, 50, 60, 75, 80, 100, 120, 150, 200, 250)),
    ),
    Family(
        "status-count",
        ("period", "p"),
        1,
        (),
        (
            "How many orders with status '{status}' were placed in {p.span}? Return a single number.",
            "Count the {status} orders whose order date falls in {p.span}. Return the count.",
        ),
        "SELECT COUNT(*) FROM orders o WHERE o.status = '{status}' AND " + IN,
        each(p=ORDER_PERIODS, status=("delivered", "shipped", "cancelled", "pending")),
    ),
    Family(
        "signups",
        ("period", "p"),
        1,
        (),
        ("Which customers signed up in {p.span}? Return each customer's first name, last name and signup date.",),
        "SELECT first_name, last_name, signup_date FROM customers WHERE signup_date >= '{p.start}' "
        "AND signup_date <= '{p.end}'",
        each(p=SIGNUP_PERIODS),
    ),
    Family(
        "email-count",
        ("name", "city"),
        1,
        ("null",),
        ("How many customers from {city} have an email address on file? Return a single number.",),
        "SELECT COUNT(email) FROM customers WHERE city = {city.q}",
        each(city="cities"),
    ),
    Family(
        "contact-list",
        ("name", "city"),
        1,
        ("null",),
        (
            "List the customers from {city} with their email address, showing the text 'no email' where it is "
            "missing. Return the first name, the last name and the email (or 'no email').",
        ),
        "SELECT first_name, last_name, COALESCE(email, 'no email') FROM customers WHERE city = {city.q}",
        each(city="cities"),
    ),
    Family(
        "unshipped",
        ("period", "p"),
        1,
        ("null",),
        (
            "Which orders placed in {p.span} have no shipped date yet? Return the order id, the order date and the "
            "status.",
        ),
        "SELECT o.order_id, o.order_date, o.status FROM orders o WHERE o.shipped_date IS NULL AND " + IN,
        each(p=ORDER_PERIODS),
    ),
    Family(
        "salaries",
        ("threshold", "salary"),
        1,
        (),
        (
            "Which employees hired in {year} or later earn a salary above {salary}? Return the first name, last name, "
            "title and salary.",
        ),
        "SELECT first_name, last_name, title, salary FROM employees WHERE hire_date >= '{year}-01-01' "
        "AND salary > {salary}",
        each(salary=(55000, 60000, 62000, 64000, 65000, 66000, 70000, 74000, 80000, 100000), year=range(2016, 2023)),
    ),
    Family(
        "category-price",
        ("name", "category"),
        2,
        (),
        ("Which products in the {category} category cost more than {price}? Return the product name and its price.",),
        "SELECT pr.name, pr.unit_price FROM products pr JOIN categories ca ON ca.category_id = pr.category_id "
        "WHERE ca.name = {category.q} AND pr.unit_price > {price}",
        each(category="categories", price=(10, 20, 30, 50, 100)),
    ),
    Family(
        "customer-orders",
        ("customer", "customer"),
        1,
        (),
        ("How many orders did {customer} place in {p.span}? Return a single number.",),
        "SELECT COUNT(*) FROM orders o WHERE o.customer_id = {customer.key} AND " + IN,
        each(customer="customers", p=YEARS),
    ),
    Family(
        "customer-spend",
        ("customer", "customer"),
        2,
        (),
        (
            f"How much did {{customer}} spend on orders placed in {{p.span}} that were not cancelled ({SPENDING})? "
            "Return a single number.",
        ),
        f"SELECT {REV} FROM orders o {ITEMS} WHERE o.customer_id = {{customer.key}} AND {LIVE} AND {IN}",
        each(customer="customers", p=YEARS),
    ),
    Family(
        "employee-customers",
        ("employee", "employee"),
        2,
        (),
        (
            "Which customers had an order handled by {employee} in {p.span}? List each customer once: customer id, "
            "first name and last name.",
        ),
        "SELECT DISTINCT cu.customer_id, cu.first_name, cu.last_name FROM orders o JOIN customers cu "
        "ON cu.customer_id = o.customer_id WHERE o.employee_id = {employee.key} AND " + IN,
        each(employee="employees", p=YEARS),
    ),
)

SCOPES = (
    Choice("all", "", ""),
    Choice("still-sold", " that are still sold (not discontinued)", " AND pr.discontinued = 0"),
)
FIRST_LAST = (Choice("last", "most recent", "MAX"), Choice("first", "first", "MIN"))

JOINED = (
    Family(
        "customer-products",
        ("customer", "customer"),
        3,
        (),
        (
            "Which different products did {customer} buy in orders placed in {p.span} that were not cancelled? "
            "Return each product's name once.",
        ),
        f"SELECT DISTINCT pr.name FROM orders o {ITEMS} {PRODUCTS} WHERE o.customer_id = {{customer.key}} "
        f"AND {LIVE} AND {IN}",
        each(customer="customers", p=YEARS),
    ),
    Family(
        "supplier-catalogue",
        ("supplier", "supplier"),
        3,
        (),
        (
            "Which products{scope} does {supplier} supply, and in which category is each? Return the product name "
            "and the category name.",
        ),
        "SELECT pr.name, ca.name FROM products pr JOIN suppliers su ON su.supplier_id = pr.supplier_id "
        f"{CATEGORY} WHERE su.company_name = {{supplier.q}}{{scope.sql}}",
        each(supplier="suppliers", scope=SCOPES),
    ),
    Family(
        "supplier-revenue",
        ("supplier", "supplier"),
        4,
        (),
        (
            f"What revenue did the products supplied by {{supplier}} bring in {{p.span}}, counting orders that were "
            f"not cancelled ({REVENUE})? Return a single number.",
        ),
        f"SELECT {REV} FROM orders o {ITEMS} {PRODUCTS} JOIN suppliers su ON su.supplier_id = pr.supplier_id "
        f"WHERE su.company_name = {{supplier.q}} AND {LIVE} AND {IN}",
        each(supplier="suppliers", p=YEARS_HALVES),
    ),
    Family(
        "product-buyers",
        ("product", "product"),
        3,
        (),
        (
            "How many different customers bought {product} in orders placed in {p.span} that were not cancelled? "
            "Return a single number.",
        ),
        f"SELECT COUNT(DISTINCT o.customer_id) FROM orders o {ITEMS} {PRODUCTS} WHERE pr.name = {{product.q}} "
        f"AND {LIVE} AND {IN}",
        each(product="products", p=YEARS),
    ),
    Family(
        "city-status",
        ("name", "city"),
        2,
        ("group",),
        (
            "How many orders did customers from {city} place in {p.span}, in each order status? Return the status "
            "and the number of orders.",
        ),
        "SELECT o.status, COUNT(*) FROM orders o JOIN customers cu ON cu.customer_id = o.customer_id "
        f"WHERE cu.city = {{city.q}} AND {IN} GROUP BY o.status",
        each(city="cities", p=YEARS),
    ),
    Family(
        "employee-load",
        ("period", "p"),
        2,
        ("group",),
        (
            "How many orders did each employee handle in {p.span}? Include only employees who handled at least "
            "one. Return the employee id, first name, last name and the number of orders.",
        ),
        "SELECT e.employee_id, e.first_name, e.last_name, COUNT(*) FROM employees e JOIN orders o "
        f"ON o.employee_id = e.employee_id WHERE {IN} GROUP BY e.employee_id, e.first_name, e.last_name",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "big-orders",
        ("period", "p"),
        2,
        ("group", "having"),
        (
            "Which orders placed in {p.span} are worth more than {v} in total (quantity times unit price summed "
            "over their lines)? Return the order id and its total.",
        ),
        f"SELECT o.order_id, {REV} FROM orders o {ITEMS} WHERE {IN} GROUP BY o.order_id HAVING {REV} > {{v}}",
        each(p=ORDER_PERIODS, v=(500, 1000, 2000)),
    ),
    Family(
        "idle-staff",
        ("period", "p"),
        2,
        ("subquery",),
        (
            "Which sales staff (employees whose title includes 'Sales') handled no orders at all in {p.span}? "
            "Return the employee id, first name and last name.",
        ),
        "SELECT e.employee_id, e.first_name, e.last_name FROM employees e WHERE e.title LIKE '%Sales%' "
        f"AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.employee_id = e.employee_id AND {IN})",
        each(p=ORDER_PERIODS),
    ),
    Family(
        "order-dates",
        ("name", "city"),
        2,
        ("group",),
        (
            "For each customer from {city} who has placed an order, on what date did they place their {which} "
            "order? Return the customer id, last name and that date.",
        ),
        "SELECT cu.customer_id, cu.last_name, {which.sql}(o.order_date) FROM customers cu JOIN orders o "
        "ON o.customer_id = cu.customer_id WHERE cu.city = {city.q} GROUP BY cu.customer_id, cu.last_name",
        each(city="cities", which=FIRST_LAST),
    ),
    Family(
        "category-share",
        ("name", "category"),
        4,
        (),
        (
            f"What percentage of all revenue from orders placed in {{p.span}} that were not cancelled came from "
            f"{{category}} products ({REVENUE})? Return a single number, e.g. 12.5 for 12.5%.",
        ),
        "SELECT 100.0 * SUM(CASE WHEN ca.name = {category.q} THEN oi.quantity * oi.unit_price ELSE 0 END) "
        f"/ {REV} FROM orders o {ITEMS} {PRODUCTS} {CATEGORY} WHERE {LIVE} AND {IN}",
        each(category="categories", p=YEARS_HALVES),
    ),
)

FAMILIES: tuple[Family, ...] = EASY + JOINED + DEEP
