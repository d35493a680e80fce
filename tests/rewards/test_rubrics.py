"""Rubrics: named, weighted reward components with gates and terminal parts, reported on every surface."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_settings import BaseSettings

from openenv_mcp import Environment, Settings, Task, TaskSet, Toolbox
from openenv_mcp.rewards.rubrics import Criterion, Gate, Rubric
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.search import environment as search_environment
from openenv_mcp.servers.sql import environment as sql_environment
from openenv_mcp.trajectories import iter_records, record_trajectories
from openenv_mcp.trajectories.store import TrajectoryStore
from tests.support import LiveServer, live_server

pytestmark = pytest.mark.anyio


class Counter:
    def __init__(self) -> None:
        self.value = 0
        self.progress: float | None = None  # the rubric's total so far

    async def ping(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


counting: Toolbox[Counter] = Toolbox("counting")


@counting.tool
async def add(counter: Counter, n: int) -> int:
    """Add n to the counter.

    Args:
        n: How much to add.
    """
    counter.value += n
    return counter.value


@counting.tool(read_only=True)
async def peek(counter: Counter) -> int:
    """The counter's value."""
    return counter.value


class _NoSettings(BaseSettings):
    pass


async def _open(task: Task, seed: int, settings: object) -> Counter:
    return Counter()


async def _prod(settings: object) -> Counter:
    return Counter()


scored: list[str] = []


def _reach(s: Any) -> float:
    scored.append("reach")
    return float(min(1.0, s.backend.value / 10))


COUNTING = Environment(
    name="counting",
    description="Count to ten without going below zero.",
    tools=counting,
    tasks=lambda: TaskSet([Task(id="ten", split="train", prompt="Bring the counter to 10.")]),
    settings=_NoSettings,
    sim_backend=_open,
    prod_backend=_prod,
    grade=Rubric(
        Gate("never_negative", lambda s: s.backend.value >= 0),
        Criterion("reach", _reach, weight=0.8),
        Criterion("exactly_ten", lambda s: s.backend.value == 10, weight=0.2, terminal=True),
        graded=lambda s: s.call.tool.name == "add",
        done=lambda s: s.backend.value >= 10,
        progress="progress",
    ),
)


@pytest.fixture
def counting_server(tmp_path: Path) -> Iterator[LiveServer]:
    with live_server(COUNTING, mode="sim", trajectories=f"sqlite:///{tmp_path / 'runs.db'}") as server:
        yield server


def _reset(http: httpx.Client) -> str:
    return str(http.post("/reset", json={}).json()["episode_id"])


def _step(http: httpx.Client, episode: str, tool: str, **arguments: Any) -> dict[str, Any]:
    response = http.post(
        "/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": tool, "arguments": arguments}}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_each_step_earns_the_change_of_the_weighted_total_and_names_its_parts(counting_server: LiveServer) -> None:
    with httpx.Client(base_url=counting_server.url) as http:
        episode = _reset(http)
        first = _step(http, episode, "add", n=4)
        look = _step(http, episode, "peek")
        last = _step(http, episode, "add", n=6)
        assert http.get("/state", headers={"X-Episode-Id": episode}).json()["total_reward"] == 1.0
    assert (first["reward"], first["done"]) == (0.32, False)
    assert first["info"]["scores"] == {"never_negative": 1.0, "reach": 0.4}
    assert look["reward"] == 0.0 and "scores" not in look["info"]  # not graded
    assert (last["reward"], last["done"]) == (0.68, True)  # 0.8 * 1.0 + 0.2 (terminal) - 0.32
    assert last["info"]["scores"] == {"never_negative": 1.0, "reach": 1.0, "exactly_ten": 1.0}


def test_a_failed_gate_zeroes_the_total_and_skips_the_components_after_it(counting_server: LiveServer) -> None:
    with httpx.Client(base_url=counting_server.url) as http:
        episode = _reset(http)
        assert _step(http, episode, "add", n=5)["reward"] == 0.4
        scored.clear()
        below = _step(http, episode, "add", n=-6)
        back = _step(http, episode, "add", n=3)
    assert (below["reward"], below["info"]["scores"]) == (-0.4, {"never_negative": 0.0})
    assert scored == ["reach"]  # only for the step after: the gate stopped the one below zero
    assert (back["reward"], back["info"]["scores"]) == (0.16, {"never_negative": 1.0, "reach": 0.2})


async def test_scores_reach_metrics_and_trajectories_and_a_replayed_fork_earns_the_same(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    runtime = build_runtime(COUNTING, Settings(mode="sim", trajectories=url))
    assert record_trajectories(runtime) is not None
    async with runtime.run():  # the recorder writes everything queued
        episode = (await runtime.reset()).episode_id
        await runtime.call("add", {"n": 4}, episode)
        await runtime.call("peek", {}, episode)
        fork = await runtime.fork(episode, via="replay")  # replays the log: each step's reward must match
        assert fork.info["total_reward"] == 0.32
        await runtime.call("add", {"n": 6}, episode)
        metrics = runtime.metrics.render().decode()
    assert 'openenv_reward_component_count{component="reach",server="counting"} 2.0' in metrics  # calls, not replays
    assert 'openenv_reward_component_count{component="exactly_ten",server="counting"} 1.0' in metrics
    assert 'openenv_reward_component_sum{component="reach",server="counting"} 1.4' in metrics
    records = [r for r in iter_records(url) if r["episode_id"] == episode]
    (record,) = records
    assert record["rewards"] == [0.32, 0.0, 0.68]
    assert record["scores"] == [
        [{"name": "never_negative", "value": 1.0}, {"name": "reach", "value": 0.4}],
        [],
        [
            {"name": "never_negative", "value": 1.0},
            {"name": "reach", "value": 1.0},
            {"name": "exactly_ten", "value": 1.0},
        ],
    ]


def test_an_older_trajectory_file_gains_the_scores_column_and_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    store = TrajectoryStore(url)
    store.create()
    store.close()
    with sqlite3.connect(path) as db:  # what a database made before scores existed looks like
        db.execute("ALTER TABLE trajectory_steps DROP COLUMN scores")
        db.execute(
            "INSERT INTO trajectory_episodes VALUES ('e1', 'ep', 'counting', 't', 'ten', 'train', 1, 'p', 20, 1.0,"
            " 2.0, 1, 0.5, 1, 0)"
        )
        db.execute("INSERT INTO trajectory_toolsets VALUES ('t', 'counting', 'd', '[]', 1.0)")
        db.execute(
            "INSERT INTO trajectory_steps (trajectory_id, step, tool, arguments, content, structured_content, "
            "is_error, reward, done, tool_seconds, at) VALUES ('e1', 1, 'add', '{}', '[]', NULL, 0, 0.5, 1, 0.1, 1.0)"
        )
    (old,) = iter_records(url)  # read as it is, without adding anything
    assert old["rewards"] == [0.5] and old["scores"] == [[]]
    with sqlite3.connect(path) as db:
        assert "scores" not in {row[1] for row in db.execute("PRAGMA table_info(trajectory_steps)")}
    store = TrajectoryStore(url)
    store.create()  # what a server does at start: the column is added, the rows stay
    store.close()
    with sqlite3.connect(path) as db:
        assert "scores" in {row[1] for row in db.execute("PRAGMA table_info(trajectory_steps)")}
        assert db.execute("SELECT reward, scores FROM trajectory_steps").fetchall() == [(0.5, None)]


async def test_sql_reports_exact_rows_and_row_f1_and_pays_as_before() -> None:
    runtime = build_runtime(sql_environment, Settings(mode="sim", trajectories="off"))
    async with runtime.run():
        solved = await runtime.reset(task_id="sql-001")
        outcome = await runtime.call("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}, solved.episode_id)
        assert (outcome.reward, outcome.done, outcome.scores) == (1.0, True, {"exact_rows": 1.0, "row_f1": 1.0})
        task = runtime.tasks.get("sql-001")
        assert task is not None
        wrong = await runtime.reset(task_id="sql-001")
        outcome = await runtime.call("submit_answer", {"rows": [[1], [2]]}, wrong.episode_id)
        assert outcome.done and outcome.scores is not None and outcome.scores["exact_rows"] == 0.0
        assert outcome.reward == round(0.5 * outcome.scores["row_f1"], 4)
        refused = await runtime.reset(task_id="sql-001")
        outcome = await runtime.call("list_tables", {}, refused.episode_id)
        assert (outcome.reward, outcome.scores) == (0.0, None)


async def test_search_reports_exact_match_and_answer_f1() -> None:
    runtime = build_runtime(search_environment, Settings(mode="sim", trajectories="off"))
    async with runtime.run():
        task = next(iter(runtime.tasks))
        answer = task.answers[0]  # type: ignore[attr-defined]
        episode = (await runtime.reset(task_id=task.id)).episode_id
        outcome = await runtime.call("submit_answer", {"answer": answer}, episode)
        assert (outcome.reward, outcome.scores) == (1.0, {"exact_match": 1.0, "answer_f1": 1.0})
        episode = (await runtime.reset(task_id=task.id)).episode_id
        outcome = await runtime.call("submit_answer", {"answer": f"{answer} perhaps"}, episode)
        assert outcome.scores is not None and outcome.scores["exact_match"] == 0.0
        assert 0.0 < outcome.reward == round(outcome.scores["answer_f1"], 4) < 1.0


def test_a_rubric_refuses_what_it_cannot_report() -> None:
    with pytest.raises(TypeError, match="at least one component"):
        Rubric()
    with pytest.raises(TypeError, match="must be unique"):
        Rubric(Criterion("a", lambda s: 1.0), Criterion("a", lambda s: 0.0))
    with pytest.raises(TypeError, match="pass the function"):
        Criterion("a", 1.0)  # type: ignore[arg-type]
    described = Rubric(Gate("g", lambda s: True), Criterion("c", lambda s: 1.0, weight=2, terminal=True)).describe()
    assert described == [
        {"name": "g", "weight": 0.0, "gate": True, "terminal": False},
        {"name": "c", "weight": 2.0, "gate": False, "terminal": True},
    ]


async def test_email_reports_its_three_parts_beside_the_reward() -> None:
    from openenv_mcp.servers.email import environment as email_environment

    runtime = build_runtime(email_environment, Settings(mode="sim", trajectories="off"))
    async with runtime.run():
        episode = (await runtime.reset(task_id="email-001")).episode_id
        read = await runtime.call("list_folders", {}, episode)
        assert read.scores is None
        sent = await runtime.call(
            "send_email",
            {"to": ["rita.chen@globex.example"], "subject": "Renewal", "body": "Finance approved up to 18,000."},
            episode,
        )
    # a new message, not a reply in the thread: right person, right fact, wrong form
    assert sent.scores == {"recipients": 1.0, "form": 0.0, "facts": 1.0, "attempted": 1.0, "extra_messages": 0.0}
    assert (sent.reward, sent.done) == (0.8, True)  # 0.3 * recipients + 0.2 * form + 0.5 * facts


async def test_memory_reports_goals_and_destroyed() -> None:
    from memory_env import environment as memory_environment

    runtime = build_runtime(memory_environment, Settings(mode="sim", trajectories="off"))
    async with runtime.run():
        task = runtime.tasks.get("forget-0")
        person = next(check["name"] for check in task.goals if check["kind"] == "no_entity")  # type: ignore[attr-defined]
        kept = next(e["name"] for e in task.entities if e["name"] != person)  # type: ignore[attr-defined]
        episode = (await runtime.reset(task_id="forget-0")).episode_id
        wrong = await runtime.call("delete_entities", {"entityNames": [kept]}, episode)
        assert wrong.scores is not None and wrong.scores["destroyed"] > 0.0  # one of the entities to keep
        assert wrong.reward == round(wrong.scores["goals"] - 0.5 * wrong.scores["destroyed"], 6)


def test_sql_and_search_totals_equal_the_formulas_they_replace_bit_for_bit() -> None:
    import random
    from collections import Counter as Multiset

    from openenv_mcp.servers.search.tasks import normalize_answer, score_answer, token_f1
    from openenv_mcp.servers.sql.tasks import _row, score_rows

    def sql_before(submitted: list[list[Any]], gold: list[list[Any]], *, ordered: bool) -> float:
        mine, theirs = [_row(r) for r in submitted], [_row(r) for r in gold]
        if (mine == theirs) if ordered else (Multiset(mine) == Multiset(theirs)):
            return 1.0
        if not mine or not theirs:
            return 0.0
        common = sum((Multiset(mine) & Multiset(theirs)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(mine), common / len(theirs)
        return round(0.5 * 2 * precision * recall / (precision + recall), 4)

    def search_before(prediction: str, answers: list[str]) -> float:
        normalized = normalize_answer(prediction)
        if normalized and any(normalized == normalize_answer(gold) for gold in answers):
            return 1.0
        return round(max((token_f1(prediction, gold) for gold in answers), default=0.0), 4)

    rng = random.Random(15)
    words = ["the", "red", "kestrel", "motors", "4,812", "m.", "Ada", "river"]
    for _ in range(2000):
        gold = [[rng.randint(0, 4), rng.choice("ab")] for _ in range(rng.randint(0, 7))]
        mine = [[rng.randint(0, 4), rng.choice("ab")] for _ in range(rng.randint(0, 7))]
        if rng.random() < 0.2:
            mine = rng.sample(gold, len(gold))
        ordered = rng.random() < 0.5
        assert score_rows(mine, gold, ordered=ordered) == sql_before(mine, gold, ordered=ordered)
        answers = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
        prediction = " ".join(rng.sample(words, rng.randint(0, 4)))
        assert score_answer(prediction, answers) == search_before(prediction, answers)
