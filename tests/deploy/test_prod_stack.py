"""The committed prod compose file, up for real with its bundled PostgreSQL (one stack for the module).

sql, search and coding run against the PostgreSQL container the file bundles (the stand-in image built
from Debian's packages, through the file's ``OPENENV_POSTGRES_IMAGE`` override); the loaders create a
database and a SELECT-only role per server and load the demo data.
"""

from __future__ import annotations

import base64
import imaplib
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from openenv_mcp.deploy.compose import ComposeRunner
from tests.support import node_client, require_service, wait_for
from tests.support.containers import IMAGES, MAIL, PROD_SERVERS, Stack

pytestmark = [pytest.mark.containers, pytest.mark.timeout(1800)]


def test_sql_search_and_coding_are_ready_against_the_bundled_postgresql(prod_stack: Stack) -> None:
    assert sorted(prod_stack.urls) == sorted(PROD_SERVERS)
    for name, url in prod_stack.urls.items():
        assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200, name


def test_run_query_answers_from_postgresql_through_the_select_only_role(prod_stack: Stack) -> None:
    url = prod_stack.urls["sql"]
    count, user, write = node_client(
        "--url",
        f"{url}/mcp",
        "call",
        "run_query",
        '{"sql": "SELECT COUNT(*) FROM products"}',
        "call",
        "run_query",
        '{"sql": "SELECT current_user"}',
        "call",
        "run_query",
        '{"sql": "DROP TABLE orders"}',
    )
    assert count["structuredContent"]["rows"] == [[40]]
    assert user["structuredContent"]["rows"] == [["sql_reader"]]
    assert write["isError"] is True


def test_prod_has_no_control_plane(prod_stack: Stack) -> None:
    for url in prod_stack.urls.values():
        assert httpx.post(f"{url}/reset", json={}, timeout=10).status_code == 404


def test_postgresql_stopped_is_a_503_naming_it_and_recovers_without_restarting_the_servers(prod_stack: Stack) -> None:
    url = prod_stack.urls["sql"]
    [container] = prod_stack.containers("sql")
    started = prod_stack.inspect(container, "{{.State.StartedAt}}")
    prod_stack.runner.run("stop", "postgres", capture=True)
    try:
        answer = httpx.get(f"{url}/readyz", timeout=30)
        assert answer.status_code == 503, answer.text
        assert "postgres" in answer.text.lower(), answer.text
        [failed] = node_client("--url", f"{url}/mcp", "call", "run_query", '{"sql": "SELECT 1"}')
        assert failed["isError"] is True
        assert "postgres" in json.dumps(failed["content"]).lower(), failed
    finally:
        prod_stack.runner.run("start", "postgres", capture=True)
    wait_for(lambda: _ready(url), "sql to be ready again once PostgreSQL is back", timeout=60)
    [again] = node_client("--url", f"{url}/mcp", "call", "run_query", '{"sql": "SELECT COUNT(*) FROM products"}')
    assert again["structuredContent"]["rows"] == [[40]]
    assert prod_stack.inspect(container, "{{.State.StartedAt}}") == started, "the server was not restarted"


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


# email against a mail container; desktop against an X server on the host --------------------------------------

MAIL_USER, MAIL_PASSWORD = "alex@mail.example", "mailpw42"


def _start(stack: Stack, service: str, env: dict[str, str]) -> str:
    """``compose up -d SERVICE`` with ``env`` added; the URL once its /readyz answers 200 (bounded)."""
    runner = ComposeRunner(stack.file, project=stack.project, environment={**stack.engine.env, **env}, quiet=True)
    runner.run("up", "-d", "--no-deps", service, capture=True)
    return runner.wait_ready([service], timeout=90)[service]


def test_email_sends_through_the_tool_and_the_message_is_read_back_over_imap(prod_stack: Stack) -> None:
    engine = prod_stack.engine
    engine.build(MAIL, IMAGES / "mail")
    name = f"{prod_stack.project}-mail"
    engine.podman(
        "run", "-d", "--name", name, "--network", f"{prod_stack.project}_default", "--network-alias", "mail",
        "-e", f"MAIL_USER={MAIL_USER}", "-e", f"MAIL_PASSWORD={MAIL_PASSWORD}", "-p", "127.0.0.1::143", MAIL,
    )  # fmt: skip
    try:
        url = _start(
            prod_stack,
            "email",
            {
                "EMAIL_FROM_ADDRESS": MAIL_USER,
                "EMAIL_SMTP_HOST": "mail",
                "EMAIL_SMTP_PORT": "2525",
                "EMAIL_SMTP_SECURITY": "none",
                "EMAIL_IMAP_HOST": "mail",
                "EMAIL_IMAP_PORT": "143",
                "EMAIL_IMAP_SECURITY": "none",
                "EMAIL_IMAP_USERNAME": MAIL_USER,
                "EMAIL_IMAP_PASSWORD": MAIL_PASSWORD,
            },
        )
        subject = f"container test {uuid.uuid4().hex[:8]}"
        [listed, sent] = node_client(
            "--url", f"{url}/mcp", "list",
            "call", "send_email", json.dumps({"to": [MAIL_USER], "subject": subject, "body": "sent from a container"}),
        )  # fmt: skip
        assert "send_email" in [tool["name"] for tool in listed["tools"]]
        assert sent.get("isError") is not True, sent
        port = engine.podman("port", name, "143").stdout.strip().rsplit(":", 1)[1]

        def delivered() -> bool:
            with imaplib.IMAP4("127.0.0.1", int(port)) as imap:
                imap.login(MAIL_USER, MAIL_PASSWORD)
                imap.select("INBOX", readonly=True)
                status, found = imap.search(None, "SUBJECT", f'"{subject}"')
                return status == "OK" and bool(found[0].split())

        wait_for(delivered, "the sent message in the INBOX over IMAP", timeout=30)
    finally:
        engine.podman("rm", "--force", name, check=False)


def _free_display() -> int:
    for number in range(140, 240):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and not Path(f"/tmp/.X{number}-lock").exists():
            return number
    raise AssertionError("no free X display number")


def test_desktop_attaches_to_an_x_server_on_the_host_through_the_mounted_socket(prod_stack: Stack) -> None:
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        require_service("Xvfb (Debian package xvfb, scripts/debian-packages)", FileNotFoundError("Xvfb"))
    assert xvfb is not None
    number = _free_display()
    display = subprocess.Popen(
        [xvfb, f":{number}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: Path(f"/tmp/.X11-unix/X{number}").exists(), "Xvfb's socket", timeout=20)
        url = _start(prod_stack, "desktop", {"DESKTOP_DISPLAY": f":{number}", "OPENENV_X11_SOCKETS": "/tmp/.X11-unix"})
        [shot] = node_client("--url", f"{url}/mcp", "call", "screenshot", "{}")
        images = [block for block in shot["content"] if block["type"] == "image"]
        assert len(images) == 1 and base64.b64decode(images[0]["data"])[:4] == b"\x89PNG"
    finally:
        prod_stack.runner.run("rm", "--stop", "--force", "desktop", capture=True)
        display.terminate()
        display.wait(timeout=10)
