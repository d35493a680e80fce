"""The page for people, in a real headless Chromium: play an sql episode to reward 1, replay a desktop one.

Playwright drives Debian's chromium (scripts/debian-packages); nothing is downloaded.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from openenv_mcp import EnvClient
from openenv_mcp.servers.sql import environment as sql
from tests.support import IN_CI, free_port, live_server, wait_http
from tests.support.sums import sum_tasks, sums_environment

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CLI = [sys.executable, "-m", "openenv_mcp.cli"]

if not Path(CHROMIUM).exists():
    if IN_CI:
        pytest.fail("chromium (scripts/debian-packages) must be installed in CI", pytrace=False)
    pytest.skip("chromium is not installed (apt-get install chromium); CI runs these tests", allow_module_level=True)

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def not_blank(png: bytes) -> bool:
    """A screenshot with real content: many colours, not one flat fill."""
    picture = Image.open(io.BytesIO(png)).convert("RGB")
    colours = picture.getcolors(maxcolors=1 << 20) or []
    return len(colours) > 50


def test_a_person_plays_an_sql_episode_to_reward_one(browser: Browser, tmp_path: Path) -> None:
    with live_server(sql, mode="sim") as server:
        page: Page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{server.url}/web")
        page.wait_for_selector("#task option[value='sql-001']", state="attached")
        page.select_option("#task", "sql-001")
        page.click("#reset")
        page.wait_for_function("document.querySelector('#prompt').textContent.includes('How many customers')")

        page.click("#tool-describe_table summary")
        page.fill("#arg-describe_table-table", "customers")
        page.click("#tool-describe_table button.call")
        page.wait_for_selector("#log li[data-step='1']")
        assert "customer_id" in page.inner_text("#log li[data-step='1']")

        page.click("#tool-submit_answer summary")
        page.fill("#arg-submit_answer-sql", "SELECT COUNT(*) FROM customers")
        page.click("#tool-submit_answer button.call")
        page.wait_for_function("document.querySelector('#state').dataset.done === 'true'")
        assert page.get_attribute("#state", "data-total-reward") == "1"
        assert "reward 1 · done" in page.inner_text("#log li[data-step='2']")
        assert page.is_disabled("#tool-run_query button.call")  # a finished episode takes no more calls
        shot = page.screenshot(full_page=True)
        (tmp_path / "play.png").write_bytes(shot)
        assert not_blank(shot)

        # bad input is shown, not lost: the episode is finished, so a new one is needed
        page.click("#reset")
        page.wait_for_function("document.querySelector('#state').dataset.done === 'false'")
        page.click("#tool-run_query summary")
        page.fill("#arg-run_query-sql", "DELETE FROM customers")
        page.click("#tool-run_query button.call")
        page.wait_for_selector("#log li[data-step='1']")
        assert page.locator("#log .observation.error").count() == 1
        page.close()


def test_the_task_picker_finds_one_task_among_five_thousand(browser: Browser) -> None:
    tasks = sum_tasks(5000)
    with live_server(sums_environment(tasks), mode="sim") as server:
        page: Page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{server.url}/web")
        page.wait_for_selector("#task-count[data-total='5000']", state="attached")
        assert page.locator("#task option").count() == 101  # one page of tasks and "(drawn by the seed)"
        assert "showing 100 of 5000 matching tasks" in page.inner_text("#task-count")
        assert page.locator("#task-difficulty option").all_inner_texts() == [
            "all",
            "easy (1667)",
            "medium (1667)",
            "hard (1666)",
        ]
        page.fill("#task-search", "sum-04321")
        page.wait_for_selector("#task-count[data-total='1']", state="attached")
        page.select_option("#task", "sum-04321")
        page.click("#reset")
        page.wait_for_function("document.querySelector('#prompt').textContent.includes('What is 4321 + 8643?')")
        page.fill("#task-search", "")
        page.select_option("#task-split", "test")
        page.select_option("#task-difficulty", "hard")
        wanted = sum(1 for t in tasks if (t.split, t.difficulty) == ("test", "hard"))
        page.wait_for_selector(f"#task-count[data-total='{wanted}']", state="attached")
        shown = page.locator("#task option").all_inner_texts()[1:]
        assert len(shown) == 100 and all(" · test · hard: " in text for text in shown)
        page.close()


def test_a_recorded_desktop_episode_replays_with_its_screenshots(browser: Browser, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'desktop.db'}"
    port = free_port()
    served = subprocess.Popen(
        [*CLI, "serve", "desktop", "--port", str(port)],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENENV_TRAJECTORIES": store, "MODE": "sim"},
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
        with EnvClient(f"http://127.0.0.1:{port}") as env:
            env.reset(seed=3)
            env.step("type_text", {"text": "hello from the replay test"})
            env.step("key", {"keys": "ctrl+End"})
            env.step("screenshot")
            env.close_episode()
    finally:
        served.send_signal(signal.SIGTERM)  # a clean stop writes every recorded step
        served.wait(timeout=30)
    viewer = subprocess.Popen(
        [*CLI, "trajectories", "view", "--url", store, "--port", "0", "--no-browser"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert viewer.stderr is not None
        line = viewer.stderr.readline()
        match = re.search(r"at (http://\S+/web)", line)
        assert match, line
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(match.group(1))
        page.wait_for_selector("#episodes option", state="attached")
        page.select_option("#episodes", index=0)
        page.wait_for_selector("#player:not([hidden])")
        assert "step 1 of 3" in page.inner_text("#position")
        page.click("#next")
        assert "step 2 of 3" in page.inner_text("#position")
        image = page.locator("#log li.current img")
        image.wait_for()
        assert page.evaluate("document.querySelector('#log li.current img').naturalWidth") > 100
        assert page.locator("#log li[data-step='3']").is_hidden()  # not yet reached
        page.click("#last")
        assert "step 3 of 3" in page.inner_text("#position")
        shot = page.screenshot(full_page=True)
        (tmp_path / "replay.png").write_bytes(shot)
        assert not_blank(shot)
        page.close()
    finally:
        viewer.terminate()
        viewer.communicate(timeout=20)


def test_the_page_is_sim_only_and_its_data_needs_the_token(tmp_path: Path) -> None:
    token = "page-token-0123456789-abcdefghij"
    with live_server(sql, mode="sim", auth_token=token) as server:
        assert httpx.get(f"{server.url}/web").status_code == 200  # static, no data
        assert httpx.get(f"{server.url}/web/app.js").status_code == 200
        assert httpx.get(f"{server.url}/web/tools").status_code == 401
        tools = httpx.get(f"{server.url}/web/tools", headers={"Authorization": f"Bearer {token}"}).json()
        assert [t["name"] for t in tools["tools"]] == ["list_tables", "describe_table", "run_query", "submit_answer"]
        hostile = httpx.get(f"{server.url}/web", headers={"Host": "evil.example"})
        assert hostile.status_code == 421 or hostile.status_code == 403
    os.environ.setdefault("SQL_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    with live_server(sql, mode="prod") as server:
        assert httpx.get(f"{server.url}/web").status_code == 404
