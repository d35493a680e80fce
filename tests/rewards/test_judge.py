"""The LLM judge against a local OpenAI-compatible server this test runs, through HTTP /step and MCP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic_settings import SettingsConfigDict

from openenv_mcp import ConfigError, Environment, Settings, Task, TaskSet, Toolbox
from openenv_mcp.rewards.judge import JudgeSettings, LLMJudge
from openenv_mcp.rewards.rubrics import Criterion, Gate, Rubric
from openenv_mcp.runtime import build_runtime
from openenv_mcp.trajectories import iter_records, record_trajectories
from tests.support import LiveServer, live_server, serve_app

pytestmark = pytest.mark.anyio


class FakeJudge:
    """An OpenAI-compatible chat completions server with scripted answers, counting what it is asked."""

    def __init__(self) -> None:
        self.mode = "ok"  # ok | pause | slow | garbage | error | out_of_range
        self.score = 8.0
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> Response:
            body = await request.json()
            self.requests.append({"body": body, "authorization": request.headers.get("authorization")})
            if self.mode == "slow":
                await asyncio.sleep(2.0)
            if self.mode == "pause":  # answers, within the judge's timeout
                await asyncio.sleep(0.3)
            if self.mode == "error":
                return PlainTextResponse("model overloaded", status_code=503)
            if self.mode == "garbage":
                content = "Looks good to me!"
            elif self.mode == "out_of_range":
                content = json.dumps({"score": 42, "reason": "generous"})
            else:
                content = "```json\n" + json.dumps({"score": self.score, "reason": "a fair answer"}) + "\n```"
            return JSONResponse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                }
            )

        self.app = app

    def reset(self, mode: str = "ok") -> None:
        self.mode, self.requests = mode, []


@pytest.fixture(scope="module")
def fake_judge() -> Iterator[FakeJudge]:
    judge = FakeJudge()
    with serve_app(judge.app) as url:
        judge.url = f"{url}/v1"
        yield judge


# a small environment whose rubric has a judge --------------------------------------------------------------


class Desk:
    def __init__(self) -> None:
        self.answers: list[str] = []

    async def ping(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


quiz: Toolbox[Desk] = Toolbox("quiz")


@quiz.tool
async def answer(desk: Desk, text: str) -> str:
    """Answer the question.

    Args:
        text: The answer.
    """
    desk.answers.append(text)
    return text


@quiz.tool(read_only=True)
async def hint(desk: Desk) -> str:
    """A hint."""
    return "It is a capital city."


class QuizSettings(JudgeSettings):
    model_config = SettingsConfigDict(env_prefix="QUIZ_", extra="ignore")


async def _open(task: Task, seed: int, settings: object) -> Desk:
    return Desk()


async def _prod(settings: object) -> Desk:
    return Desk()


RUBRIC = Rubric(
    Gate("answered", lambda s: bool(s.call.arguments["text"].strip())),
    Criterion("brief", lambda s: len(s.call.arguments["text"]) <= 40, weight=0.5),
    LLMJudge(
        "quality",
        prompt="Question: {prompt}\nAnswer: {observation}\nExpected: {gold}",
        inputs=lambda s: {"gold": "Paris"},
        scale=(0, 10),
        weight=0.5,
    ),
    graded=lambda s: s.call.tool.name == "answer",
    done=lambda s: True,
)

QUIZ = Environment(
    name="quiz",
    description="Answer one question; an LLM judges the answer.",
    tools=quiz,
    tasks=lambda: TaskSet([Task(id="capital", split="train", prompt="What is the capital of France?")]),
    settings=QuizSettings,
    sim_backend=_open,
    prod_backend=_prod,
    grade=RUBRIC,
)


def _judge_env(fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_judge.reset()
    for name, value in {
        "QUIZ_JUDGE_BASE_URL": fake_judge.url,
        "QUIZ_JUDGE_MODEL": "judge-1",
        "QUIZ_JUDGE_API_KEY": "sk-test",
        "QUIZ_JUDGE_TIMEOUT": "0.5",
        "QUIZ_JUDGE_RETRIES": "1",
        "QUIZ_JUDGE_BACKOFF": "0.01",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def quiz_server(fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    _judge_env(fake_judge, monkeypatch)
    with live_server(QUIZ, mode="sim", trajectories="off", mcp_reward_meta=True) as server:
        yield server


def _reset(http: httpx.Client) -> str:
    response = http.post("/reset", json={"task_id": "capital"})
    assert response.status_code == 200, response.text
    return str(response.json()["episode_id"])


def _step(http: httpx.Client, episode: str, tool: str, **arguments: Any) -> httpx.Response:
    return http.post(
        "/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": tool, "arguments": arguments}}
    )


# tests -------------------------------------------------------------------------------------------------------


def test_a_judged_step_pays_the_weighted_verdict_and_names_every_part(
    quiz_server: LiveServer, fake_judge: FakeJudge
) -> None:
    with httpx.Client(base_url=quiz_server.url, timeout=30) as http:
        episode = _reset(http)
        assert _step(http, episode, "hint").json()["info"].get("scores") is None  # not graded: no scores
        body = _step(http, episode, "answer", text="Paris").json()
    assert body["reward"] == 0.9 and body["done"] is True  # 0.5 * brief + 0.5 * 8/10
    assert body["info"]["scores"] == {"answered": 1.0, "brief": 1.0, "quality": 0.8}
    assert body["info"]["reasons"] == {"quality": "a fair answer"}  # the verdict's reason, beside its score
    (asked,) = fake_judge.requests
    assert asked["authorization"] == "Bearer sk-test" and asked["body"]["model"] == "judge-1"
    user = asked["body"]["messages"][-1]["content"]
    assert user == 'Question: What is the capital of France?\nAnswer: {"result":"Paris"}\nExpected: Paris'
    assert '"score"' in asked["body"]["messages"][0]["content"]
    metrics = httpx.get(f"{quiz_server.url}/metrics").text
    assert 'openenv_reward_component_count{component="quality",server="quiz"} 1.0' in metrics
    assert 'openenv_reward_component_sum{component="quality",server="quiz"} 0.8' in metrics
    assert 'openenv_judge_verdicts_total{judge="quality",server="quiz",source="answered"} 1.0' in metrics
    assert 'openenv_judge_request_seconds_count{judge="quality",server="quiz"} 1.0' in metrics


def test_a_judged_steps_reasons_are_recorded_and_exported(
    fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _judge_env(fake_judge, monkeypatch)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    runtime = build_runtime(QUIZ, Settings(mode="sim", trajectories=url))
    assert record_trajectories(runtime) is not None

    async def play() -> None:
        async with runtime.run():  # the writer stores everything queued
            episode = (await runtime.reset(task_id="capital")).episode_id
            await runtime.call("hint", {}, episode)
            assert (await runtime.call("answer", {"text": "Paris"}, episode)).reasons == {"quality": "a fair answer"}

    asyncio.run(play())
    (record,) = iter_records(url)
    assert record["reasons"] == [[], [{"name": "quality", "reason": "a fair answer"}]]
    assert record["scores"][1] == [
        {"name": "answered", "value": 1.0},
        {"name": "brief", "value": 1.0},
        {"name": "quality", "value": 0.8},
    ]


def test_a_failed_gate_asks_no_judge_and_pays_nothing(quiz_server: LiveServer, fake_judge: FakeJudge) -> None:
    with httpx.Client(base_url=quiz_server.url, timeout=30) as http:
        body = _step(http, _reset(http), "answer", text="  ").json()
    assert (body["reward"], body["done"], body["info"]["scores"]) == (0.0, True, {"answered": 0.0})
    assert fake_judge.requests == []


def test_the_same_input_is_judged_once(quiz_server: LiveServer, fake_judge: FakeJudge) -> None:
    with httpx.Client(base_url=quiz_server.url, timeout=30) as http:
        episode = _reset(http)
        first = _step(http, episode, "answer", text="Paris, of course").json()
        second = _step(http, _reset(http), "answer", text="Paris, of course").json()
        other = _step(http, _reset(http), "answer", text="Lyon").json()
        fork = http.post(f"/episodes/{episode}/fork", params={"via": "replay"})  # replays the judged step
    assert first["reward"] == second["reward"] == other["reward"] == 0.9
    assert fork.status_code == 200 and fork.json()["info"]["total_reward"] == 0.9
    assert len(fake_judge.requests) == 2  # "Paris, of course" once (cached for the second and the fork), "Lyon" once
    metrics = httpx.get(f"{quiz_server.url}/metrics").text
    assert 'openenv_judge_verdicts_total{judge="quality",server="quiz",source="answered"} 2.0' in metrics
    assert 'openenv_judge_verdicts_total{judge="quality",server="quiz",source="cached"} 2.0' in metrics


async def test_the_same_question_asked_at_once_is_one_request(quiz_server: LiveServer, fake_judge: FakeJudge) -> None:
    fake_judge.reset("pause")  # each answer takes 0.3 s: the four steps are all waiting for it
    async with httpx.AsyncClient(base_url=quiz_server.url, timeout=30) as http:
        episodes = [(await http.post("/reset", json={"task_id": "capital"})).json()["episode_id"] for _ in range(4)]
        steps = await asyncio.gather(
            *(
                http.post(
                    "/step",
                    headers={"X-Episode-Id": e},
                    json={"action": {"tool": "answer", "arguments": {"text": "Paris"}}},
                )
                for e in episodes
            )
        )
        metrics = (await http.get("/metrics")).text
    assert [(s.status_code, s.json()["reward"]) for s in steps] == [(200, 0.9)] * 4
    assert len(fake_judge.requests) == 1
    assert 'openenv_judge_verdicts_total{judge="quality",server="quiz",source="answered"} 1.0' in metrics
    assert 'openenv_judge_verdicts_total{judge="quality",server="quiz",source="joined"} 3.0' in metrics


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("slow", "gave no answer within 0.5 s"),
        ("garbage", "answered something that is not a verdict: no JSON object in 'Looks good to me!'"),
        ("out_of_range", "answered something that is not a verdict: score 42.0 outside 0..10"),
        ("error", "answered HTTP 503: 'model overloaded'"),
    ],
)
def test_a_failing_judge_is_a_503_naming_it_and_the_step_waits_to_be_graded(
    quiz_server: LiveServer, fake_judge: FakeJudge, mode: str, why: str
) -> None:
    fake_judge.reset(mode)
    with httpx.Client(base_url=quiz_server.url, timeout=30) as http:
        episode = _reset(http)
        failed = _step(http, episode, "answer", text="Paris")
        assert failed.status_code == 503, failed.text
        error = failed.json()["error"]
        assert error["code"] == "judge_unavailable"
        assert f"The LLM judge 'quality' at {fake_judge.url}/chat/completions (model judge-1) {why}" in error["message"]
        assert "(2 attempts)" in error["message"] and "send the same action again" in error["message"]
        assert len(fake_judge.requests) == 2  # retried once, then gave up
        failures = 'openenv_judge_verdicts_total{judge="quality",server="quiz",source="failed"} 1.0'
        assert failures in http.get("/metrics").text
        state = http.get("/state", headers={"X-Episode-Id": episode}).json()
        assert (state["step_count"], state["total_reward"], state["done"]) == (0, 0.0, False)  # not counted
        other = _step(http, episode, "hint")
        assert other.status_code == 409 and other.json()["error"]["code"] == "grade_pending"
        assert http.post(f"/episodes/{episode}/fork").status_code == 409
        fake_judge.reset("ok")
        graded = _step(http, episode, "answer", text="Paris")
        assert graded.status_code == 200 and graded.json()["reward"] == 0.9
        state = http.get("/state", headers={"X-Episode-Id": episode}).json()
        assert (state["step_count"], state["total_reward"], state["done"]) == (1, 0.9, True)
    desk = quiz_server.runtime.episodes.get(episode).backend
    assert desk.answers == ["Paris"]  # the retry graded the step; the tool did not run twice


async def test_mcp_carries_the_scores_in_meta_and_a_judge_failure_as_an_error(
    quiz_server: LiveServer, fake_judge: FakeJudge
) -> None:
    async with httpx.AsyncClient(base_url=quiz_server.url) as http:
        episode = (await http.post("/reset", json={"task_id": "capital"})).json()["episode_id"]
    async with (
        httpx.AsyncClient(headers={"X-Episode-Id": episode}) as http,
        Client(streamable_http_client(quiz_server.mcp_url, http_client=http)) as client,  # type: ignore[arg-type]
    ):
        fake_judge.reset("garbage")
        failed = await client.call_tool("answer", {"text": "Paris is the capital"})
        assert failed.is_error and failed.meta is not None and failed.meta["openenv-mcp/error"] == "judge_unavailable"
        assert f"at {fake_judge.url}/chat/completions" in failed.content[0].text  # type: ignore[union-attr]
        fake_judge.reset("ok")
        graded = await client.call_tool("answer", {"text": "Paris is the capital"})
    assert not graded.is_error and graded.meta is not None
    assert graded.meta["openenv-mcp/reward"] == 0.9
    assert graded.meta["openenv-mcp/scores"] == {"answered": 1.0, "brief": 1.0, "quality": 0.8}
    assert graded.meta["openenv-mcp/reasons"] == {"quality": "a fair answer"}


def test_verdicts_cached_on_disk_survive_a_restart(
    fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_judge.reset()
    monkeypatch.setenv("QUIZ_JUDGE_BASE_URL", fake_judge.url)
    monkeypatch.setenv("QUIZ_JUDGE_MODEL", "judge-1")
    monkeypatch.setenv("QUIZ_JUDGE_CACHE_DIR", str(tmp_path / "verdicts"))
    for _ in range(2):  # two servers, one after the other: the second finds the verdict on disk
        with live_server(QUIZ, mode="sim", trajectories="off") as server, httpx.Client(base_url=server.url) as http:
            assert _step(http, _reset(http), "answer", text="Paris").json()["reward"] == 0.9
    assert len(fake_judge.requests) == 1 and len(list((tmp_path / "verdicts").glob("*.json"))) == 1


def test_a_judge_without_an_endpoint_stops_the_server_from_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUIZ_JUDGE_BASE_URL", raising=False)
    monkeypatch.setenv("QUIZ_JUDGE_MODEL", "judge-1")
    with pytest.raises(ConfigError, match="needs QUIZ_JUDGE_BASE_URL"):
        build_runtime(QUIZ, Settings(mode="sim"))
    build_runtime(QUIZ, Settings(mode="prod"))  # prod grades nothing: no judge needed


def test_a_bound_judge_keeps_the_declaration_and_counts_its_own_verdicts() -> None:
    declared = LLMJudge("tone", prompt="Judge: {observation}", scale=(1, 5), weight=0.3, gate=True, max_tokens=50)
    settings = QuizSettings(judge_base_url="http://127.0.0.1:1/v1", judge_model="judge")
    bound = declared.bind(settings)
    assert bound is not declared and bound.config is settings and declared.config is None
    kept = ("name", "prompt", "scale", "weight", "gate", "threshold", "terminal", "temperature", "max_tokens")
    assert [getattr(bound, field) for field in kept] == [getattr(declared, field) for field in kept]
    bound.verdicts["answered"] += 1
    assert declared.verdicts["answered"] == 0 and bound.verdicts is not declared.verdicts
