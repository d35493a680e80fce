"""Environment.declares: the defaults of an environment that declares nothing, and the names parity always had."""

from __future__ import annotations

import dataclasses

from openenv_mcp.environment import declarations
from openenv_mcp.environment.declarations import DEFAULT, Declarations
from openenv_mcp.models import Observation
from openenv_mcp.parity import Normaliser, normaliser_for
from openenv_mcp.parity import normalisers as parity_normalisers
from openenv_mcp.parity.mining import Rejected, unmineable
from openenv_mcp.parity.scripts import comparable
from openenv_mcp.parity.staging import prod_writes
from openenv_mcp.servers.email import environment as email
from openenv_mcp.servers.sql import environment as sql


def test_an_environment_that_declares_nothing_gets_the_defaults() -> None:
    bare = dataclasses.replace(sql, declares=Declarations())
    assert normaliser_for(bare) is DEFAULT and DEFAULT.forgives == declarations.COMMON
    assert comparable(bare) == (list(sql.tasks()), None)  # every task compared
    assert prod_writes(bare) is None  # sql's tools only read, and there is no stage
    assert unmineable(bare) == "sql cannot be mined: it declares no miner (Environment.declares.mining)"
    container, cluster = bare.declares.container, bare.declares.cluster
    assert (container.target, container.user, container.memory_mb, cluster.prod_replicas) == ("slim", None, 1024, None)


def test_the_parity_names_are_where_they_were_and_read_the_declarations() -> None:
    assert Normaliser is declarations.Normaliser and parity_normalisers.DEFAULT is DEFAULT
    assert Rejected is declarations.Rejected
    assert normaliser_for("sql") is sql.declares.parity.normaliser is normaliser_for(sql)
    assert normaliser_for("no-such-server") is DEFAULT
    unordered = Observation.model_validate({"content": [], "structured_content": {"rows": [[2], [1]]}})
    ordered = Observation.model_validate({"content": [], "structured_content": {"rows": [[1], [2]]}})
    rows = normaliser_for("sql")
    assert rows("run_query", {"sql": "SELECT 1"}, unordered) == rows("run_query", {"sql": "SELECT 1"}, ordered)
    by = {"sql": "SELECT 1 ORDER BY 1"}
    assert rows("run_query", by, unordered) != rows("run_query", by, ordered)  # an ORDER BY's order counts


def test_email_compares_the_tasks_on_the_shipped_mailbox_and_says_why_not_the_others() -> None:
    kept, note = comparable(email)
    assert kept and all(getattr(task, "scenario", None) is None for task in kept)
    assert note is not None and note.endswith(email.declares.parity.not_compared)
    assert note.startswith(f"{len(email.tasks()) - len(kept)} of {len(email.tasks())} tasks not compared: ")
