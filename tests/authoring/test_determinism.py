"""The determinism audit over every shipped environment, and that it catches an environment that is not."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pydantic_settings import BaseSettings

from openenv_mcp import Environment, Grade, Task, TaskSet, Toolbox
from openenv_mcp.authoring.determinism import audit_determinism
from openenv_mcp.environment.catalog import load_environment
from openenv_mcp.environment.tools import BoundCall

# Per environment: actions that read, change state (sent mail, files, typed text) and end the episode.
ACTIONS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "sql": [
        ("list_tables", {}),
        ("describe_table", {"table": "orders"}),
        ("run_query", {"sql": "SELECT status, COUNT(*) FROM orders GROUP BY status ORDER BY status"}),
        ("run_query", {"sql": "DELETE FROM orders"}),  # refused: an is_error observation, still a step
        ("submit_answer", {"rows": [[60]]}),
    ],
    "search": [
        ("collection_info", {}),
        ("search", {"query": "founded headquarters river", "k": 3}),
        ("fetch", {"doc_id": "doc-0001"}),
        ("submit_answer", {"answer": "1987"}),
    ],
    "email": [
        ("list_emails", {"folder": "INBOX", "unread_only": True, "limit": 5}),
        ("read_email", {"message_id": "INBOX/12"}),
        ("search_emails", {"query": "invoice", "limit": 5}),
        ("send_email", {"to": ["ops@northwind.example"], "subject": "Status", "body": "All done at 14:00."}),
        ("reply_email", {"message_id": "INBOX/3", "body": "Thanks, noted."}),
        ("list_emails", {"folder": "Sent", "limit": 5}),
    ],
    "coding": [
        ("describe_sandbox", {}),
        ("run_python", {"code": "print(hash('x') % 1000, sorted({'b', 'a', 'c'}))"}),
        ("run_python", {"code": "open('notes.txt', 'a').write('x')\nprint(open('notes.txt').read())"}),
        ("submit_solution", {"code": "print(input())"}),
    ],
    "desktop": [
        ("screenshot", {}),
        ("type_text", {"text": "hello"}),
        ("key", {"keys": "ctrl+End"}),
        ("click", {"x": 300, "y": 200}),
    ],
}
# Sequences drawn per environment: enough to fork at several steps; desktop and coding start processes per step.
SEQUENCES = {"sql": 12, "search": 10, "email": 15, "coding": 4, "desktop": 3}


@pytest.mark.parametrize("name", list(ACTIONS))
def test_every_shipped_environment_is_deterministic_and_forks_into_the_same_state(name: str) -> None:
    environment = load_environment(name)
    problems = audit_determinism(environment, actions=ACTIONS[name], sequences=SEQUENCES[name], max_length=6)
    assert problems == []


ENTROPY_AND_IDS = {
    "random": "import random\nprint(random.random(), random.getrandbits(64))",
    "urandom": "import os, secrets, uuid\nprint(os.urandom(8).hex(), secrets.token_hex(8), uuid.uuid4())",
    "temporary names": "import tempfile\nprint(tempfile.mktemp(), tempfile.NamedTemporaryFile().name)",
    "uid": "import os, re\nprint(os.getuid(), os.getgid(), os.stat('main.py').st_uid, "
    "re.findall(r'(?m)^[UG]id:.*$', open('/proc/self/status').read()))",
}


@pytest.mark.parametrize("code", list(ENTROPY_AND_IDS.values()), ids=list(ENTROPY_AND_IDS))
def test_coding_programs_that_read_entropy_or_their_uid_are_deterministic(code: str) -> None:
    problems = audit_determinism(load_environment("coding"), actions=[("run_python", {"code": code})], sequences=3)
    assert problems == []


class Counter:
    """A backend whose answers depend on something outside the seed: a process-wide counter."""

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


_ticks = itertools.count()
tools: Toolbox[Counter] = Toolbox("leaky")


@tools.tool()
async def tick(backend: Counter) -> int:
    """Count."""
    return next(_ticks)


async def _open(task: Task, seed: int, settings: object) -> Counter:
    return Counter()


async def _grade(task: Task, backend: Counter, call: BoundCall, observation: object) -> Grade:
    return Grade()


class LeakySettings(BaseSettings):
    pass


leaky: Environment[Counter, Task] = Environment(
    name="leaky",
    description="Not deterministic.",
    tools=tools,
    tasks=lambda: TaskSet([Task(id="t", split="train", prompt="tick")]),
    settings=LeakySettings,
    sim_backend=_open,
    prod_backend=lambda settings: _open(Task(id="t", split="train", prompt=""), 0, settings),
    grade=_grade,
    examples=(("tick", {}),),
)


def test_the_audit_names_what_differs_in_an_environment_that_is_not_deterministic() -> None:
    problems = audit_determinism(leaky, sequences=3)
    assert len(problems) == 1
    assert problems[0].startswith("two runs of seed ") and "step 1 (tick) gave another observation" in problems[0]
