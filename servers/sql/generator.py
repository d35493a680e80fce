"""The SQL task generator: question families over the shop's schema, each with a gold query, in train and test.

    from openenv_mcp.servers.sql.generator import VERSION, generate
    for candidate in generate():          # deterministic: the same candidates, ids and prompts every time
        candidate.task                    # an SqlTask: id, split, prompt, gold_sql, ordered, difficulty, family

Each family (:mod:`~openenv_mcp.servers.sql.families`) is a question with a gold query, instantiated over a grid of
parameters drawn from the shipped fixture's entities (customers, products, categories, regions, periods...).
Nothing here runs a query: :func:`judge` does, and the candidates it rejects are listed once in
``data/rejected.json`` (written by ``data/build_tasks.py``, which judges on SQLite and PostgreSQL), so loading the
tasks costs string formatting only.

- **Ids** are ``sql-g{VERSION}-{family}-{hash}``, the hash of the family and its parameters: stable across releases
  while the generator version stands, never a position in a list.
- **Split**: each family names one parameter as its anchor (a customer, a product, a period, a threshold...); a
  task is in ``test`` when its anchor's value is held out (:func:`held_out`), so no test (family, anchor value) pair
  is ever in train: test asks about customers, products, months, thresholds that train never asks that question
  about.
- **Difficulty** comes from what the gold query needs (:func:`tier`): one point per table joined beyond the first
  (subqueries included), one each for grouping, HAVING, NULL handling, date bucketing and ordering with a limit or
  ties, two each for a correlated or NOT EXISTS subquery and a window function; ``easy`` up to 1, ``medium`` 2-3,
  ``hard`` 4 and up.
- **Rejected** at generation (:func:`judge`): an empty answer (no rows, or one row of zeros and NULLs), more than
  100 rows, a tie at the LIMIT boundary (the rows would depend on the tie-break), and answers that differ between
  SQLite and PostgreSQL after the grader's normalisation.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv_mcp.environment.cache import cached_table, source_fingerprint
from openenv_mcp.environment.tasks import TaskSet
from openenv_mcp.errors import ConfigError
from openenv_mcp.servers.sql.backends import fixture_database, fixture_sql
from openenv_mcp.servers.sql.families import FAMILIES
from openenv_mcp.servers.sql.family import Family
from openenv_mcp.servers.sql.results import cell
from openenv_mcp.servers.sql.shop import Shop
from openenv_mcp.servers.sql.tasks import HOW, SqlTask, exact_rows, hand_written

__all__ = [
    "VERSION",
    "Candidate",
    "generate",
    "held_out",
    "judge",
    "load_tasks",
    "postgres_runner",
    "rejected",
    "sqlite_runner",
    "tier",
]

VERSION = 1
MAX_ROWS = 100  # a gold answer longer than this is rejected (run_query shows 100 rows)

Rows = list[list[Any]]
Runner = Callable[[str], Rows]
"""Runs one query on one engine and returns its rows as JSON cells."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A generated task before judgement: the task, and the family and parameters it was made from."""

    task: SqlTask
    family: Family
    params: dict[str, Any]

    @property
    def anchor(self) -> str:
        """The held-out parameter's kind and value, e.g. ``customer:15``."""
        kind, name = self.family.anchor
        return f"{kind}:{_key(self.params[name])}"

    @property
    def boundary(self) -> tuple[str, int, int] | None:
        """For a top-k question: the gold query with room for one row more, ``k``, and the index of the column the
        rows are ranked by (a tie between row k and row k + 1 there makes the answer ambiguous)."""
        if self.family.top is None:
            return None
        k = int(self.params["k"])
        return self.family.sql.format(**self.params, limit=f" LIMIT {k + 1}"), k, self.family.top


def tier(points: int) -> str:
    """The difficulty of a gold query worth ``points`` (see the module's description)."""
    return "easy" if points <= 1 else "medium" if points <= 3 else "hard"


# held-out values per anchor kind: a task whose anchor has one of these is a test task
_HELD_OUT_PERIODS = frozenset(
    {"2021-Q3", "2022-Q2", "2022-H2", "2023-04", "2023-10", "2023-Q3", "2024-02", "2024-08", "2024-Q2"}
)
_HELD_OUT_NAMES = frozenset({"Home Decor", "Midwest", "Madison", "Orlando", "Phoenix", "Providence", "Japan"})


def held_out(kind: str, value: Any) -> bool:
    """Whether an anchor value is held out for test.

    Customers, products, employees and suppliers with an id divisible by 5 (suppliers: by 4); the category Home
    Decor, the region Midwest, four cities and one supplier country; nine periods (months, quarters, halves);
    thresholds whose last non-zero digit is 5 (15, 25, 50, 150, 55000...; train has 10, 20, 100, 60000...).
    """
    if kind in ("customer", "product", "employee"):
        return int(value) % 5 == 0
    if kind == "supplier":
        return int(value) % 4 == 0
    if kind == "period":
        return str(value) in _HELD_OUT_PERIODS
    if kind == "threshold":
        return str(value).rstrip("0").rstrip(".").rstrip("0").endswith("5")
    if kind == "name":
        return str(value) in _HELD_OUT_NAMES
    raise ValueError(f"No held-out rule for anchor kind {kind!r}")


def generate(*, seed: int = 0, skip: Collection[str] = ()) -> Iterator[Candidate]:
    """Every candidate task of every family, in a fixed order, but those whose id is in ``skip`` (``seed`` picks
    each prompt's wording among its family's)."""
    shop = _shop()
    for family in FAMILIES:
        kind, anchor = family.anchor
        difficulty = tier(family.points)
        for params in family.grid(shop):
            key = "|".join(f"{name}={_key(value)}" for name, value in sorted(params.items()))
            digest = hashlib.sha256(f"{VERSION}:{family.name}:{key}".encode()).hexdigest()
            task_id = f"sql-g{VERSION}-{family.name}-{digest[:6]}"
            if task_id in skip:
                continue
            wording = family.questions[(int(digest[6:14], 16) + seed) % len(family.questions)]
            limit = f" LIMIT {params['k']}" if family.top is not None else ""
            task = SqlTask(
                id=task_id,
                split="test" if held_out(kind, _key(params[anchor])) else "train",
                prompt=wording.format(**params) + HOW,
                difficulty=difficulty,
                gold_sql=family.sql.format(**params, limit=limit),
                ordered=family.ordered,
                family=family.name,
            )
            yield Candidate(task, family, params)


def _key(value: Any) -> Any:
    """A parameter's identity: an entity's or period's key, a number itself."""
    return getattr(value, "key", value)


@functools.cache
def _shop() -> Shop:
    """The fixture's entities, read once from the process's copy of the fixture."""
    return Shop.read(fixture_database())


def judge(candidate: Candidate, engines: Sequence[Runner]) -> str | None:
    """Why a candidate is rejected (empty, too long, a tie at its LIMIT, engines that disagree), or ``None``.

    Args:
        candidate: The candidate.
        engines: Query runners, the first one SQLite; every other one must give the same rows (normalised as the
            grader normalises them, in order when the task is ordered).
    """
    task = candidate.task
    first = engines[0](task.gold_sql)
    if not first or (len(first) == 1 and all(value in (None, 0) for value in first[0])):
        return "empty: no rows, or only zeros and NULLs"
    if len(first) > MAX_ROWS:
        return f"too long: {len(first)} rows"
    if candidate.boundary is not None:
        sql, k, column = candidate.boundary
        extra = engines[0](sql)
        if len(extra) > k and extra[k - 1][column] == extra[k][column]:
            return f"a tie at the LIMIT {k} boundary"
    for engine in engines[1:]:
        other = engine(task.gold_sql)
        if not exact_rows(other, first, ordered=task.ordered):
            return f"the engines disagree: {first[:3]} against {other[:3]}"
    return None


def sqlite_runner(connection: Any) -> Runner:
    """A runner over a ``sqlite3`` connection (the values converted as the tools convert them)."""
    return lambda sql: [[cell(value) for value in row] for row in connection.execute(sql).fetchall()]


def postgres_runner(connection: Any) -> Runner:
    """A runner over a ``psycopg`` connection in autocommit mode (the values converted as the tools convert them)."""
    return lambda sql: [[cell(value) for value in row] for row in connection.execute(sql).fetchall()]


@functools.cache
def rejected() -> dict[str, str]:
    """The candidates ``data/rejected.json`` rejects, by id, with why.

    Raises:
        ConfigError: The file was written for another generator version or another fixture.
    """
    package = resources.files("openenv_mcp.servers.sql")
    raw = json.loads(package.joinpath("data/rejected.json").read_text(encoding="utf-8"))
    if raw.get("version") != VERSION or raw.get("fixture") != fixture_digest():
        raise ConfigError(
            "servers/sql/data/rejected.json was written for another generator version or fixture; "
            "run: python servers/sql/data/build_tasks.py"
        )
    return dict(raw["rejected"])


def fixture_digest() -> str:
    """A digest of the shipped fixture (the verdicts hold for this data only)."""
    return hashlib.sha256(fixture_sql().encode()).hexdigest()[:16]


def load_tasks() -> TaskSet:
    """The environment's tasks: the hand-written ones (``data/tasks.json``), then every generated candidate that
    ``data/rejected.json`` does not reject. The generated ones are kept in the user's cache directory
    (:mod:`openenv_mcp.environment.cache`), under a fingerprint of the generator's modules and its data: generating
    them took a twentieth of a server's start, reading them back a tenth of that."""
    package = resources.files("openenv_mcp.servers.sql")
    data = hashlib.sha256()
    for name in ("data/fixture.sql", "data/rejected.json"):
        data.update(package.joinpath(name).read_bytes())
    fingerprint = source_fingerprint("openenv_mcp.servers.sql", _MODULES, extra=f"{VERSION}:{data.hexdigest()}")
    rows = cached_table(f"sql-tasks-g{VERSION}", fingerprint, lambda: [_row(c.task) for c in generate(skip=rejected())])
    generated = (SqlTask(**{**row, "prompt": row["prompt"] + HOW}) for row in rows)
    return TaskSet([*hand_written(), *generated])


_MODULES = ["generator.py", "families.py", "deep_families.py", "family.py", "shop.py", "tasks.py"]


def _row(task: SqlTask) -> dict[str, Any]:
    fields = ("id", "split", "difficulty", "gold_sql", "ordered", "family")
    return {"prompt": task.prompt.removesuffix(HOW), **{name: getattr(task, name) for name in fields}}
