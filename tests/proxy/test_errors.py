"""Bad requests to the capture proxy answer in each wire format's own error shape with a message that says what to
do, within a bounded time: an unknown episode, a malformed body, an upstream that is down, slow or refusing."""

from __future__ import annotations

import contextlib
import io
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from openenv_mcp.cli import main
from openenv_mcp.proxy import CaptureProxy, EngineOptions
from tests.support import free_port
from tests.support.token_model import ProxyStack, detokenize, proxy_stack, stored_episode

CHAT = {"model": "q", "messages": [{"role": "user", "content": "hi"}], "tools": []}
RESPONSES = {"model": "q", "input": "hi"}
MESSAGES = {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
ROUTES = {
    "chat": ("/v1/chat/completions", CHAT),
    "responses": ("/v1/responses", RESPONSES),
    "messages": ("/v1/messages", MESSAGES),
    "gemini": ("/v1beta/models/g:streamGenerateContent?alt=sse", GEMINI),
}


def shape(wire: str, body: dict[str, Any], status: int) -> tuple[str, str]:
    """(kind, message) of an error body, checked to be in ``wire``'s own shape."""
    if wire in ("chat", "responses"):
        error = body["error"]
        assert set(error) == {"message", "type", "param", "code"}
        return error["type"], error["message"]
    if wire == "messages":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
        return body["error"]["type"], body["error"]["message"]
    error = body["error"]
    assert error["code"] == status and set(error) == {"code", "message", "status"}
    return error["status"], error["message"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyStack]:
    with proxy_stack(tmp_path_factory.mktemp("errors"), episode_wait=0.3) as made:
        yield made


@pytest.mark.parametrize("wire", ROUTES)
def test_an_unknown_episode_is_refused_in_the_wires_own_shape(stack: ProxyStack, wire: str) -> None:
    path, body = ROUTES[wire]
    answer = httpx.post(f"{stack.proxy.url}/ep/no-such-episode{path}", json=body, timeout=30)
    assert answer.status_code == 404
    kind, message = shape(wire, answer.json(), 404)
    assert kind in ("not_found_error", "NOT_FOUND")
    assert "No episode 'no-such-episode' in the trajectory store" in message and "/ep/EPISODE_ID/v1" in message


@pytest.mark.parametrize("wire", ROUTES)
def test_a_malformed_body_is_refused_in_the_wires_own_shape(stack: ProxyStack, wire: str) -> None:
    path, body = ROUTES[wire]
    episode = stack.episode()
    broken = httpx.post(f"{stack.proxy.url}/ep/{episode}{path}", content=b'{"model": ', timeout=30)
    assert broken.status_code == 400
    kind, message = shape(wire, broken.json(), 400)
    assert kind in ("invalid_request_error", "INVALID_ARGUMENT") and message.startswith("The request body is not JSON")
    emptied = {key: value for key, value in body.items() if key not in ("messages", "input", "contents")}
    missing = httpx.post(f"{stack.proxy.url}/ep/{episode}{path}", json=emptied, timeout=30)
    assert missing.status_code == 400 and shape(wire, missing.json(), 400)[1].startswith("The field '")


def test_fields_of_the_wrong_kind_and_blocks_the_model_cannot_read_are_named(stack: ProxyStack) -> None:
    episode = stack.episode()
    client = openai.OpenAI(base_url=stack.proxy.base_url(episode), api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="The field 'max_tokens' must be int, not str"):
        client.chat.completions.create(model="q", messages=CHAT["messages"], max_tokens="many")  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="input items of type 'computer_call'"):
        client.responses.create(model="q", input=[{"type": "computer_call", "id": "x"}])  # type: ignore[list-item]
    claude = anthropic.Anthropic(base_url=stack.proxy.base_url(episode, v1=False), api_key="unused", max_retries=0)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
    with pytest.raises(anthropic.BadRequestError, match="content blocks of type 'image'"):
        claude.messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": [image]}])  # type: ignore[list-item]


def test_a_body_over_the_limit_is_413_and_a_request_naming_no_episode_is_404(stack: ProxyStack) -> None:
    episode = stack.episode()
    huge = b'{"model": "' + b"x" * (33 << 20) + b'"}'
    answer = httpx.post(f"{stack.proxy.url}/ep/{episode}/v1/messages", content=huge, timeout=60)
    assert answer.status_code == 413 and answer.json()["error"]["type"] == "request_too_large"
    bare = httpx.post(f"{stack.proxy.url}/v1/chat/completions", json=CHAT, timeout=30)
    assert bare.status_code == 404 and "names no episode" in bare.json()["error"]["message"]


def test_the_upstreams_own_refusal_comes_back_with_its_message(stack: ProxyStack) -> None:
    episode = stack.episode()
    long = {"model": "q", "messages": [{"role": "user", "content": "x" * 9000}], "tools": []}
    answer = httpx.post(f"{stack.proxy.base_url(episode)}/chat/completions", json=long, timeout=30)
    assert answer.status_code == 400
    assert "exceeds the available context size (8192 tokens)" in answer.json()["error"]["message"]


def test_a_slow_upstream_is_a_timeout_in_bounded_time(stack: ProxyStack) -> None:
    episode = stack.episode()
    stack.model.delay = 5.0
    try:
        claude = anthropic.Anthropic(base_url=stack.proxy.base_url(episode, v1=False), api_key="unused", max_retries=0)
        started = time.monotonic()
        with pytest.raises(anthropic.APIStatusError) as caught:
            claude.messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 504 and time.monotonic() - started < 4.5
        assert "did not answer /completion within 2 s" in caught.value.message
    finally:
        stack.model.delay = 0.0


@pytest.mark.parametrize("wire", ROUTES)
def test_an_upstream_that_is_down_is_503_in_the_wires_own_shape(tmp_path: Path, stack: ProxyStack, wire: str) -> None:
    path, body = ROUTES[wire]
    episode = stack.episode()
    with CaptureProxy(f"http://127.0.0.1:{free_port()}", store=stack.store, timeout=2.0) as down:
        started = time.monotonic()
        answer = httpx.post(f"{down.url}/ep/{episode}{path}", json=body, timeout=30)
        assert time.monotonic() - started < 5
    assert answer.status_code == 503
    kind, message = shape(wire, answer.json(), 503)
    assert kind in ("server_error", "api_error", "UNAVAILABLE")
    assert "cannot be reached" in message and "--upstream" in message


def test_a_turn_the_store_refuses_is_not_answered(stack: ProxyStack, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'broken.db'}"
    stored_episode(store, "ep-1")
    stored_episode(store, "ep-2")
    with CaptureProxy(stack.upstream, store=store) as proxy:
        url = f"{proxy.base_url('ep-1', v1=False)}/v1/messages"
        assert httpx.post(url, json=MESSAGES, timeout=30).status_code == 200
        with sqlite3.connect(tmp_path / "broken.db") as database:
            database.execute("DROP TABLE trajectory_turns")
        answer = httpx.post(url, json=MESSAGES, timeout=30)
        unreadable = httpx.post(url.replace("ep-1", "ep-2"), json=MESSAGES, timeout=30)
    assert unreadable.status_code == 503 and "cannot be read" in unreadable.json()["error"]["message"]
    assert answer.status_code == 503
    kind, message = shape("messages", answer.json(), 503)
    assert kind == "api_error" and "refused the captured turns" in message and "the reply was not sent" in message


def test_the_command_refuses_to_run_without_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_TRAJECTORIES", "off")
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        status = main(["proxy", "--upstream", "http://127.0.0.1:9", "--port", "0"])
    assert status == 2 and "OPENENV_TRAJECTORIES is off" in errors.getvalue()


def test_the_proxy_runs_as_its_own_process_and_records_there(stack: ProxyStack) -> None:
    episode = stack.episode()
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>me:"
    options = EngineOptions(max_tokens=64, chat_template=template)
    with CaptureProxy(stack.upstream, store=stack.store, options=options, subprocess=True) as process:
        assert process.process is not None and process.process.poll() is None
        client = openai.OpenAI(base_url=process.base_url(episode), api_key="unused", max_retries=0)
        client.chat.completions.create(model="q", messages=CHAT["messages"])  # type: ignore[arg-type]
        (row,) = process.turns(episode)
        assert (
            row["side"] is True and detokenize(row["prompt_ids"]) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>me:"
        )
        child = process.process
    assert child.poll() is not None
