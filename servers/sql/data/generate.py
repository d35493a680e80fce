#!/usr/bin/env python3
"""Deterministic generator for the SQL environment fixture.

Writes ``fixture.sql`` next to this file: a small-business (specialty retail /
wholesale) schema with related tables and a few hundred rows of realistic data.

The output is accepted unchanged by both SQLite (``sqlite3.executescript``) and
PostgreSQL 15:

* only INTEGER, TEXT, NUMERIC(10,2) and DATE column types;
* dates are ISO ``'YYYY-MM-DD'`` literals;
* tables are created in dependency order, then filled with multi-row
  ``INSERT INTO t (cols) VALUES (...), (...);`` statements (<= 100 rows each);
* single quotes are escaped by doubling; no BEGIN/COMMIT, no PRAGMAs, only
  ``--`` comments.

Python stdlib only; all randomness comes from ``random.Random(SEED)`` so the
output is byte-for-byte reproducible.  Regenerate with::

    python servers/sql/data/generate.py
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

SEED = 20240917
OUT_PATH = Path(__file__).resolve().parent / "fixture.sql"
BATCH = 100

N_CUSTOMERS = 60
N_ORDERS = 300
ORDER_START = dt.date(2023, 1, 1)
ORDER_END = dt.date(2024, 12, 31)

# --------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------

REGIONS = ["Northeast", "Southeast", "Midwest", "Southwest", "West"]

# (city, state, region name)
CITIES = [
    ("Boston", "MA", "Northeast"),
    ("Providence", "RI", "Northeast"),
    ("Hartford", "CT", "Northeast"),
    ("Albany", "NY", "Northeast"),
    ("Philadelphia", "PA", "Northeast"),
    ("Atlanta", "GA", "Southeast"),
    ("Charlotte", "NC", "Southeast"),
    ("Nashville", "TN", "Southeast"),
    ("Orlando", "FL", "Southeast"),
    ("Chicago", "IL", "Midwest"),
    ("Columbus", "OH", "Midwest"),
    ("Madison", "WI", "Midwest"),
    ("Minneapolis", "MN", "Midwest"),
    ("Austin", "TX", "Southwest"),
    ("Phoenix", "AZ", "Southwest"),
    ("Albuquerque", "NM", "Southwest"),
    ("Denver", "CO", "West"),
    ("Portland", "OR", "West"),
    ("Seattle", "WA", "West"),
    ("San Diego", "CA", "West"),
]

FIRST_NAMES = [
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Carlos",
    "Karen",
    "Daniel",
    "Lisa",
    "Matthew",
    "Nancy",
    "Anthony",
    "Sandra",
    "Mark",
    "Ashley",
    "Steven",
    "Emily",
    "Andrew",
    "Michelle",
    "Kevin",
    "Amanda",
    "Brian",
    "Melissa",
    "Priya",
    "Stephanie",
    "Wei",
    "Rebecca",
    "Omar",
    "Laura",
    "Diego",
    "Hannah",
    "Yuki",
    "Sofia",
    "Ethan",
    "Grace",
    "Noah",
    "Chloe",
]

LAST_NAMES = [
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Taylor",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Thompson",
    "White",
    "Harris",
    "Clark",
    "Lewis",
    "Robinson",
    "Walker",
    "Young",
    "Allen",
    "King",
    "Wright",
    "Scott",
    "Nguyen",
    "Hill",
    "Flores",
    "Green",
    "Adams",
    "Nelson",
    "Baker",
    "Campbell",
    "O'Connor",
    "Patel",
    "Kim",
    "Chen",
    "O'Brien",
    "Murphy",
    "Rivera",
    "Cooper",
    "Reed",
    "Bailey",
]

EMAIL_DOMAINS = ["example.com", "mail.example.org", "inbox.example.net"]

# category name -> (description, [(product name, nominal price), ...])
CATEGORIES = [
    (
        "Coffee & Tea",
        "Whole beans, loose-leaf teas and brewing gear",
        [
            ("Ethiopian Yirgacheffe Beans", 18),
            ("Colombian Supremo Beans", 15),
            ("House Espresso Blend", 14),
            ("Decaf Swiss Water Beans", 16),
            ("Earl Grey Loose Leaf", 11),
            ("Sencha Green Tea", 13),
            ("Chai Spice Blend", 10),
            ("Ceramic Pour-Over Dripper", 28),
        ],
    ),
    (
        "Kitchenware",
        "Cookware, utensils and kitchen tools",
        [
            ("Cast Iron Skillet 10in", 39),
            ("Chef's Knife 8in", 79),
            ("Bamboo Cutting Board", 24),
            ("Stainless Mixing Bowl Set", 34),
            ("Silicone Spatula Set", 15),
            ("Enamel Dutch Oven", 119),
            ("Digital Kitchen Scale", 27),
            ("French Press 1L", 36),
        ],
    ),
    (
        "Stationery",
        "Notebooks, pens and desk supplies",
        [
            ("Dotted Notebook A5", 14),
            ("Gel Pen 12-Pack", 12),
            ("Fountain Pen Classic", 42),
            ("Kraft Sticky Notes", 6),
            ("Leather Desk Pad", 48),
            ("Weekly Planner 2024", 19),
            ("Brass Paper Clips", 5),
        ],
    ),
    (
        "Electronics",
        "Small gadgets and accessories",
        [
            ("Wireless Earbuds", 89),
            ("USB-C Charging Hub", 45),
            ("Bluetooth Speaker Mini", 39),
            ("LED Desk Lamp", 49),
            ("Portable Power Bank 10000mAh", 32),
            ("Mechanical Keyboard", 129),
            ("Noise-Cancelling Headphones", 249),
        ],
    ),
    (
        "Home Decor",
        "Candles, textiles and decorative accents",
        [
            ("Soy Candle Lavender", 22),
            ("Linen Throw Pillow", 38),
            ("Ceramic Vase Tall", 54),
            ("Woven Storage Basket", 31),
            ("Wool Throw Blanket", 89),
        ],
    ),
    (
        "Outdoor",
        "Gear for camping and the trail",
        [
            ("Insulated Water Bottle", 29),
            ("Trekking Poles Pair", 69),
            ("Camping Lantern", 35),
            ("Packable Rain Jacket", 119),
            ("Hammock Single", 59),
        ],
    ),
]

# (company name, city, country)
SUPPLIERS = [
    ("Highland Roasters Co.", "Portland", "USA"),
    ("Golden Leaf Imports", "Vancouver", "Canada"),
    ("Forge & Hearth Ltd.", "Sheffield", "United Kingdom"),
    ("Paperwise GmbH", "Hamburg", "Germany"),
    ("Brightline Electronics", "Shenzhen", "China"),
    ("Nordic Home AB", "Malmo", "Sweden"),
    ("Trailhead Outfitters", "Boulder", "USA"),
    ("Kyoto Crafts K.K.", "Kyoto", "Japan"),
]

# Which suppliers can supply which category (indexes into SUPPLIERS, 0-based).
CATEGORY_SUPPLIERS = {
    "Coffee & Tea": [0, 1, 7],
    "Kitchenware": [2, 7, 5],
    "Stationery": [3, 7],
    "Electronics": [4],
    "Home Decor": [5, 7],
    "Outdoor": [6, 0],
}

ORDER_STATUSES = ["delivered", "shipped", "pending", "cancelled"]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def money(x: float | Decimal) -> Decimal:
    return Decimal(str(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def sql_literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):  # pragma: no cover - not used, keep explicit
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal):
        return f"{v:.2f}"
    if isinstance(v, dt.date):
        return "'" + v.isoformat() + "'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    raise TypeError(f"unsupported literal {v!r}")


def insert_statements(table: str, cols: list[str], rows: list[tuple]) -> list[str]:
    out = []
    for i in range(0, len(rows), BATCH):
        chunk = rows[i : i + BATCH]
        values = ",\n".join("(" + ", ".join(sql_literal(v) for v in row) + ")" for row in chunk)
        out.append(f"INSERT INTO {table} ({', '.join(cols)}) VALUES\n{values};")
    return out


def rand_date(rng: random.Random, start: dt.date, end: dt.date) -> dt.date:
    return start + dt.timedelta(days=rng.randint(0, (end - start).days))


def retail_price(rng: random.Random, nominal: int) -> Decimal:
    """A retail-looking price near ``nominal`` ending in .99/.49/.95/.50/.25."""
    base = max(1, round(nominal * rng.uniform(0.9, 1.1)) - 1)
    cents = rng.choice([".99", ".99", ".99", ".49", ".95", ".50", ".25"])
    return Decimal(f"{base}{cents}")


# --------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------

SCHEMA = """\
CREATE TABLE regions (
    region_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE categories (
    category_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT
);

CREATE TABLE suppliers (
    supplier_id INTEGER PRIMARY KEY,
    company_name TEXT NOT NULL,
    city TEXT NOT NULL,
    country TEXT NOT NULL
);

CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    category_id INTEGER NOT NULL REFERENCES categories (category_id),
    supplier_id INTEGER NOT NULL REFERENCES suppliers (supplier_id),
    unit_price NUMERIC(10,2) NOT NULL,
    units_in_stock INTEGER NOT NULL,
    discontinued INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE employees (
    employee_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    title TEXT NOT NULL,
    hire_date DATE NOT NULL,
    salary NUMERIC(10,2) NOT NULL,
    manager_id INTEGER REFERENCES employees (employee_id),
    region_id INTEGER REFERENCES regions (region_id)
);

CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT,
    city TEXT NOT NULL,
    state TEXT NOT NULL,
    region_id INTEGER NOT NULL REFERENCES regions (region_id),
    signup_date DATE NOT NULL
);

CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    order_date DATE NOT NULL,
    shipped_date DATE,
    status TEXT NOT NULL
);

CREATE TABLE order_items (
    order_item_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders (order_id),
    product_id INTEGER NOT NULL REFERENCES products (product_id),
    quantity INTEGER NOT NULL,
    unit_price NUMERIC(10,2) NOT NULL,
    UNIQUE (order_id, product_id)
);
"""


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def build(rng: random.Random) -> list[tuple[str, list[str], list[tuple]]]:
    tables: list[tuple[str, list[str], list[tuple]]] = []

    # regions ---------------------------------------------------------------
    region_id = {name: i + 1 for i, name in enumerate(REGIONS)}
    tables.append(("regions", ["region_id", "name"], [(i, n) for n, i in region_id.items()]))

    # categories ------------------------------------------------------------
    cat_rows = []
    for i, (name, desc, _products) in enumerate(CATEGORIES, start=1):
        cat_rows.append((i, name, desc if i != 6 else None))  # one NULL description
    tables.append(("categories", ["category_id", "name", "description"], cat_rows))

    # suppliers -------------------------------------------------------------
    sup_rows = [(i, n, c, k) for i, (n, c, k) in enumerate(SUPPLIERS, start=1)]
    tables.append(("suppliers", ["supplier_id", "company_name", "city", "country"], sup_rows))

    # products --------------------------------------------------------------
    prod_rows = []
    pid = 0
    for cid, (cname, _desc, products) in enumerate(CATEGORIES, start=1):
        for pname, nominal in products:
            pid += 1
            sid = rng.choice(CATEGORY_SUPPLIERS[cname]) + 1
            price = retail_price(rng, nominal)
            stock = rng.choice([0, 0, 5, 8, 12]) if rng.random() < 0.15 else rng.randint(15, 400)
            prod_rows.append([pid, pname, cid, sid, price, stock, 0])
    # A few discontinued products; two of them were never ordered at all.
    discontinued = rng.sample(range(len(prod_rows)), 4)
    for idx in discontinued:
        prod_rows[idx][6] = 1
        prod_rows[idx][5] = 0
    never_ordered = {prod_rows[idx][0] for idx in discontinued[:2]}
    tables.append(
        (
            "products",
            ["product_id", "name", "category_id", "supplier_id", "unit_price", "units_in_stock", "discontinued"],
            [tuple(r) for r in prod_rows],
        )
    )
    price_of = {r[0]: r[4] for r in prod_rows}

    # employees -------------------------------------------------------------
    used_names = set()

    def person_name() -> tuple[str, str]:
        while True:
            fn, ln = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
            if (fn, ln) not in used_names:
                used_names.add((fn, ln))
                return fn, ln

    emp_rows = []
    # 1: general manager (no manager, no region)
    fn, ln = person_name()
    emp_rows.append((1, fn, ln, "General Manager", dt.date(2015, 3, 2), money(148000), None, None))
    # 2-4: sales managers, report to GM, each covers a region
    mgr_regions = {2: region_id["Northeast"], 3: region_id["Midwest"], 4: region_id["West"]}
    for eid in (2, 3, 4):
        fn, ln = person_name()
        hired = rand_date(rng, dt.date(2016, 1, 1), dt.date(2019, 12, 31))
        salary = money(rng.randrange(92000, 112000, 500))
        emp_rows.append((eid, fn, ln, "Sales Manager", hired, salary, 1, mgr_regions[eid]))
    # 5: operations lead, reports to GM
    fn, ln = person_name()
    emp_rows.append((5, fn, ln, "Operations Lead", dt.date(2018, 6, 11), money(87500), 1, None))
    # 6-15: sales representatives
    rep_plan = [  # (manager_id, region)
        (2, "Northeast"),
        (2, "Northeast"),
        (2, "Southeast"),
        (2, "Southeast"),
        (3, "Midwest"),
        (3, "Midwest"),
        (3, "Southwest"),
        (4, "West"),
        (4, "West"),
        (4, "Southwest"),
    ]
    for eid, (mgr, reg) in enumerate(rep_plan, start=6):
        fn, ln = person_name()
        hired = rand_date(rng, dt.date(2019, 1, 1), dt.date(2022, 10, 31))
        senior = eid in (6, 10, 13)
        title = "Senior Sales Representative" if senior else "Sales Representative"
        salary = money(rng.randrange(68000, 78000, 250) if senior else rng.randrange(52000, 66000, 250))
        emp_rows.append((eid, fn, ln, title, hired, salary, mgr, region_id[reg]))
    tables.append(
        (
            "employees",
            ["employee_id", "first_name", "last_name", "title", "hire_date", "salary", "manager_id", "region_id"],
            emp_rows,
        )
    )
    reps_by_region: dict[int, list[int]] = {}
    for r in emp_rows:
        if r[3].endswith("Sales Representative"):
            reps_by_region.setdefault(r[7], []).append(r[0])

    # customers -------------------------------------------------------------
    cust_rows = []
    for cid in range(1, N_CUSTOMERS + 1):
        fn, ln = person_name()
        city, state, reg = rng.choice(CITIES)
        if rng.random() < 0.1:
            email = None
        else:
            local = (fn[0] + ln).lower().replace("'", "")
            email = f"{local}{rng.randint(1, 99)}@{rng.choice(EMAIL_DOMAINS)}"
        signup = rand_date(rng, dt.date(2021, 1, 1), dt.date(2024, 6, 30))
        cust_rows.append((cid, fn, ln, email, city, state, region_id[reg], signup))
    tables.append(
        (
            "customers",
            ["customer_id", "first_name", "last_name", "email", "city", "state", "region_id", "signup_date"],
            cust_rows,
        )
    )

    # orders ----------------------------------------------------------------
    # Customer activity is skewed: some loyal customers, a handful who never ordered.
    cust_ids = [c[0] for c in cust_rows]
    inactive = set(rng.sample(cust_ids, 5))
    weights = {}
    for c in cust_rows:
        if c[0] in inactive:
            weights[c[0]] = 0.0
        else:
            weights[c[0]] = rng.choice([1.0, 1.0, 1.0, 2.0, 2.0, 4.0])
    cust_by_id = {c[0]: c for c in cust_rows}
    active = [c for c in cust_ids if weights[c] > 0]
    active_w = [weights[c] for c in active]

    order_rows = []
    for oid in range(1, N_ORDERS + 1):
        cid = rng.choices(active, weights=active_w)[0]
        cust = cust_by_id[cid]
        signup = cust[7]
        start = max(ORDER_START, signup)
        odate = rand_date(rng, start, ORDER_END)
        reg = cust[6]
        # a manager closes the occasional sale
        eid = rng.choice([2, 3, 4]) if rng.random() < 0.08 else rng.choice(reps_by_region[reg])
        days_to_end = (ORDER_END - odate).days
        r = rng.random()
        if r < 0.06:
            status = "cancelled"
        elif days_to_end < 21:
            status = "pending" if r < 0.6 else "shipped"
        elif days_to_end < 45:
            status = "shipped"
        else:
            status = "delivered"
        shipped = None
        if status in ("shipped", "delivered"):
            shipped = odate + dt.timedelta(days=rng.randint(1, 6))
            if shipped > ORDER_END:
                shipped = ORDER_END
        order_rows.append((oid, cid, eid, odate, shipped, status))
    # order_id follows chronological order, like an auto-increment would.
    order_rows.sort(key=lambda r: (r[3], r[1], r[2]))
    order_rows = [(i, *r[1:]) for i, r in enumerate(order_rows, start=1)]
    tables.append(
        ("orders", ["order_id", "customer_id", "employee_id", "order_date", "shipped_date", "status"], order_rows)
    )

    # order_items -----------------------------------------------------------
    orderable = [p[0] for p in prod_rows if p[0] not in never_ordered]
    # popularity weights so that a few products are best sellers
    pop = {p: rng.choice([1, 1, 2, 2, 3, 5]) for p in orderable}
    item_rows = []
    item_id = 0
    for o in order_rows:
        n_items = rng.choices([1, 2, 3, 4, 5], weights=[20, 30, 25, 15, 10])[0]
        chosen: list[int] = []
        while len(chosen) < n_items:
            p = rng.choices(orderable, weights=[pop[x] for x in orderable])[0]
            if p not in chosen:
                chosen.append(p)
        for p in chosen:
            item_id += 1
            qty = rng.choices(range(1, 11), weights=[30, 22, 14, 10, 7, 5, 4, 3, 3, 2])[0]
            price = price_of[p]
            if o[3] < dt.date(2024, 1, 1):
                # prices were raised at the start of 2024
                price = money(float(price) * 0.95)
            item_rows.append((item_id, o[0], p, qty, price))
    tables.append(("order_items", ["order_item_id", "order_id", "product_id", "quantity", "unit_price"], item_rows))
    return tables


def render(tables) -> str:
    parts = [
        "-- SQL environment fixture: a small specialty-retail business.",
        f"-- Generated by servers/sql/data/generate.py (seed {SEED}); do not edit by hand.",
        "-- Portable between SQLite and PostgreSQL 15.",
        "",
        SCHEMA,
    ]
    for name, cols, rows in tables:
        parts.append(f"-- {name}: {len(rows)} rows")
        parts.extend(insert_statements(name, cols, rows))
        parts.append("")
    return "\n".join(parts)


def main() -> None:
    rng = random.Random(SEED)
    text = render(build(rng))
    OUT_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {OUT_PATH} ({len(text.encode('utf-8'))} bytes)")


if __name__ == "__main__":
    main()
