"""The desktop environment: a real Xvfb display and Tk editor per episode, driven through both doors.

Every test below that touches a display starts real Xvfb servers and editors (and, for prod, a
display of its own). Outside CI a machine without Xvfb or xdotool skips them with the reason; in
CI they fail instead.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from PIL import Image as Picture

from openenv_mcp import EnvClient, InvalidToolArguments, StepResult, ToolFailed
from openenv_mcp.models import ImageBlock
from openenv_mcp.servers.desktop import environment
from openenv_mcp.servers.desktop.authority import Authority
from openenv_mcp.servers.desktop.backends import EDITOR, AppState, Scenario, SimDesktop
from openenv_mcp.servers.desktop.display import VirtualDisplay, stop_process
from openenv_mcp.servers.desktop.keys import parse_keys
from openenv_mcp.servers.desktop.png import BandEncoder, adler32_combine
from openenv_mcp.servers.desktop.screen import Screen
from openenv_mcp.servers.desktop.settings import DesktopSettings
from openenv_mcp.servers.desktop.tasks import DesktopTask, score
from tests.support import LiveServer, live_server, require_service

TASKS = {task.id: task for task in environment.tasks()}


@pytest.fixture(scope="module")
def x11() -> None:
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:
        require_service("The X tools " + ", ".join(missing), FileNotFoundError("apt-get install xvfb xdotool"))


@pytest.fixture(scope="module")
def desktop(x11: None) -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=16, mcp_reward_meta=True) as server:
        yield server


def backend(server: LiveServer, episode_id: str) -> SimDesktop:
    desk = server.runtime.episodes.get(episode_id).backend
    assert isinstance(desk, SimDesktop)
    return desk


def editor_state(server: LiveServer, episode_id: str) -> dict[str, Any]:
    """The editor's own account (title, text...), asked on the server's event loop."""
    desk = backend(server, episode_id)
    return asyncio.run_coroutine_threadsafe(desk.state(), desk.loop).result(10)


def image_of(result: StepResult) -> Picture.Image:
    block = result.observation.content[0]
    assert isinstance(block, ImageBlock) and block.mime_type == "image/png"
    return Picture.open(io.BytesIO(base64.b64decode(block.data)))


def act(env: EnvClient, tool: str, **arguments: Any) -> StepResult:
    result = env.step(tool, arguments)
    assert not result.observation.is_error, result.observation.text
    return result


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout:g} s")
        time.sleep(0.05)


# the shipped solutions: the GUI actions a competent agent would take -------------------------------------


def solve(env: EnvClient, task: DesktopTask) -> list[StepResult]:
    assert environment.solve is not None
    return [act(env, tool, **arguments) for tool, arguments in environment.solve(task)]


@pytest.mark.parametrize("task_id", ["type-00", "type-01", "save-00", "menu-00", "menu-01", "menu-02", "replace-00"])
def test_every_task_kind_is_solved_by_a_scripted_gui_sequence(desktop: LiveServer, task_id: str) -> None:
    task = TASKS[task_id]
    with EnvClient(desktop.url) as env:
        first = env.reset(task_id=task_id, seed=11)
        assert first.observation.text.startswith(task.prompt[:40])
        results = solve(env, task)
        for result in results:
            assert image_of(result).size == (1024, 768)
            assert result.observation.structured_content is not None
            assert result.observation.structured_content["settled"] is True
        assert [r.done for r in results] == [False] * (len(results) - 1) + [True]
        state = env.state()
        assert state.total_reward == pytest.approx(1.0) and state.done
        env.close_episode()


def test_openenv_mcp_eval_with_the_scripted_policy_solves_the_hand_written_test_tasks(
    desktop: LiveServer, tmp_path: Path
) -> None:
    tested = sorted(task.id for task in TASKS.values() if task.split == "test" and task.kind != "edits")
    only = [argument for task_id in tested for argument in ("--task", task_id)]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "openenv_mcp.cli",
            "eval",
            desktop.url,
            "-k",
            "1",
            "--no-progress",
            "--out",
            "out",
            *only,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [t["task_id"] for t in results["tasks"]] == tested and len(tested) == 12
    assert all(t["rewards"] == [1.0] for t in results["tasks"]), results["tasks"]
    assert results["overall"]["pass^k"]["1"] == 1.0


def test_a_wrong_attempt_scores_lower(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        env.reset(task_id="save-00", seed=3)  # saved under another name: no credit, not done
        act(env, "key", keys="ctrl+shift+s")
        act(env, "type_text", text="elsewhere.txt")
        saved = act(env, "key", keys="Return")
        assert (saved.reward, saved.done) == (0.0, False)

        task = TASKS["replace-01"]  # "Replace" only the first match: partial credit
        env.reset(task_id=task.id, seed=3)
        act(env, "key", keys="ctrl+h")
        act(env, "type_text", text=task.find)
        act(env, "key", keys="Tab")
        act(env, "type_text", text=task.replace_with)
        act(env, "key", keys="alt+n")  # Find Next selects the first match...
        act(env, "key", keys="alt+r")  # ...and Replace replaces it
        act(env, "key", keys="Escape")
        partial = act(env, "key", keys="ctrl+s")
        assert 0.0 < partial.reward < 0.5 and not partial.done

        task = TASKS["type-02"]  # a typo earns less than the text
        env.reset(task_id=task.id, seed=3)
        act(env, "type_text", text=task.text.replace("e", "3"))
        typo = act(env, "key", keys="ctrl+s")
        assert 0.0 < typo.reward < 0.5 and not typo.done
        env.close_episode()


def test_the_same_seed_gives_the_same_episode_and_another_seed_another_document(desktop: LiveServer) -> None:
    def play(seed: int) -> tuple[str, bytes]:
        with EnvClient(desktop.url) as env:
            env.reset(task_id="menu-00", seed=seed)
            shot = act(env, "key", keys="ctrl+End")
            text = editor_state(desktop, env.episode_id or "")["text"]
            env.close_episode()
        block = shot.observation.content[0]
        assert isinstance(block, ImageBlock)
        return text, base64.b64decode(block.data)

    first, again, other = play(5), play(5), play(6)
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]


def test_single_clicks_at_one_point_stay_single_clicks_however_fast_they_come(desktop: LiveServer) -> None:
    def shot(result: StepResult) -> str:
        block = result.observation.content[0]
        assert isinstance(block, ImageBlock)
        return block.data

    with EnvClient(desktop.url) as env:
        env.reset(task_id="menu-00", seed=1)  # a word on the first line, under (20, 67)
        once = shot(act(env, "click", x=20, y=67))
        again = shot(act(env, "click", x=20, y=67))  # no double click (a replay sends it at once)
        double = shot(act(env, "click", x=20, y=67, clicks=2))  # a double click selects the word
        env.close_episode()
    assert again == once and double != once


def test_mouse_drag_selects_and_scroll_moves_the_view(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        episode = env.reset(task_id="type-03", seed=1).episode_id
        act(env, "type_text", text="alpha beta\n" + "line\n" * 80)
        act(env, "key", keys="ctrl+Home")
        # "alpha" spans x 6..54 on the first text line (y 67, 9.6 px a character); drag across it, overtype.
        act(env, "drag", x=6, y=67, to_x=55, to_y=67)
        act(env, "type_text", text="gamma")
        assert editor_state(desktop, episode)["text"].startswith("gamma beta\n")
        before = image_of(act(env, "move_mouse", x=500, y=400))
        after = image_of(act(env, "scroll", x=500, y=400, direction="down", amount=5))
        assert before.tobytes() != after.tobytes()
        env.close_episode()


def test_typing_reaches_the_editor_as_typed_non_ascii_too(desktop: LiveServer) -> None:
    # Characters the keymap lacks are typed through a spare keycode remapped for the moment (libxdo's way).
    with EnvClient(desktop.url) as env:
        episode = env.reset(task_id="type-00", seed=3).episode_id
        typed = "Grüße, ça coûte 5 € — naïve Ωmega\ttab"
        act(env, "type_text", text=typed)
        act(env, "key", keys="Return shift+a ctrl+a Delete shift+b")
        assert editor_state(desktop, episode)["text"].rstrip("\n") == "B"
        act(env, "type_text", text=typed)
        assert editor_state(desktop, episode)["text"].rstrip("\n") == "B" + typed
        env.close_episode()


def test_bad_inputs_give_clear_errors(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        env.reset(task_id="type-00", seed=1)
        off = env.step("click", {"x": 5000, "y": 10}).observation
        assert off.is_error and "(5000, 10) is off the screen, which is 1024x768 pixels" in off.text
        bad_key = env.step("key", {"keys": "ctrl+Entr"}).observation
        assert bad_key.is_error and "Unknown key name 'Entr' in 'ctrl+Entr'" in bad_key.text
        control = env.step("type_text", {"text": "bell\x07"}).observation
        assert control.is_error and "U+0007" in control.text
        with pytest.raises(InvalidToolArguments, match="x: Input should be greater than or equal to 0"):
            env.step("click", {"x": -1, "y": 10})
        with pytest.raises(InvalidToolArguments, match="direction"):
            env.step("scroll", {"x": 1, "y": 1, "direction": "sideways"})
        assert env.state().step_count == 3  # refused by the tool: steps; refused by the schema: not
        assert editor_state(desktop, env.episode_id or "")["text"] == ""  # nothing was typed
        env.close_episode()


def test_closing_an_episode_leaves_no_display_or_editor_behind(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        episodes = [env.reset(task_id="type-00", seed=seed).episode_id for seed in range(3)]
        desks = [backend(desktop, episode) for episode in episodes]
        displays = {desk.display.number for desk in desks}
        assert len(displays) == 3  # one display each, no collision
        for episode in episodes:
            env.close_episode(episode_id=episode)
    for desk in desks:
        for pid in desk.pids:
            assert not _alive(pid), f"process {pid} is still running"
        assert not Path(f"/tmp/.X11-unix/X{desk.display.number}").exists()
        assert not Path(f"/tmp/.X{desk.display.number}-lock").exists()
        assert not desk.root.exists()


def test_an_editor_that_dies_takes_its_display_with_it(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        episode = env.reset(task_id="type-00", seed=2).episode_id
        desk = backend(desktop, episode)
        act(env, "move_mouse", x=10, y=10)  # the server's own connection to the display is open now
        os.kill(desk.editor.pid, 9)
        wait_until(lambda: desk.display.process.returncode is not None, "Xvfb exits once its editor is gone")
        answer = httpx.post(
            f"{desktop.url}/step",
            headers={"X-Episode-Id": episode},
            json={"action": {"tool": "key", "arguments": {"keys": "a"}}},
        )
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "backend_unavailable"
        env.close_episode()
    assert not desk.root.exists()


def test_stopping_the_server_stops_every_display_and_editor_it_started(x11: None) -> None:
    before = _our_x_processes()
    with live_server(environment, mode="sim") as server, EnvClient(server.url) as env:
        for seed in range(2):
            env.reset(task_id="menu-00", seed=seed)  # left open on purpose
        assert len(_our_x_processes() - before) == 6  # two episodes and the readiness probe
    wait_until(lambda: _our_x_processes() == before, "every Xvfb and editor is gone")


def test_the_step_limit_ends_the_episode(x11: None) -> None:
    with live_server(environment, mode="sim", max_steps=3) as server, EnvClient(server.url) as env:
        env.reset(task_id="type-00", seed=1)
        results = [env.step("screenshot") for _ in range(3)]
        assert [r.done for r in results] == [False, False, True]


# MCP: the SDK client sees image content -------------------------------------------------------------------


async def mcp_episode(server: LiveServer) -> list[Any]:
    async with httpx2.AsyncClient(timeout=30) as http:
        reset = await http.post(f"{server.url}/reset", json={"task_id": "type-01", "seed": 4})
        episode = reset.json()["episode_id"]
        http.headers["X-Episode-Id"] = episode
        async with Client(streamable_http_client(server.mcp_url, http_client=http)) as client:  # type: ignore[arg-type]
            shot = await client.call_tool("screenshot", {})
            typed = await client.call_tool("type_text", {"text": TASKS["type-01"].text})
            saved = await client.call_tool("key", {"keys": "ctrl+s"})
        await http.delete(f"{server.url}/episodes/{episode}")
    return [shot, typed, saved]


def test_mcp_tool_results_carry_png_screenshots_and_the_reward(desktop: LiveServer) -> None:
    shot, typed, saved = anyio.run(mcp_episode, desktop)
    image, text = shot.content
    assert image.type == "image" and image.mime_type == "image/png" and text.type == "text"
    picture = Picture.open(io.BytesIO(base64.b64decode(image.data)))
    assert picture.format == "PNG" and picture.size == (1024, 768)
    assert shot.structured_content == {
        "width": 1024,
        "height": 768,
        "image_width": 1024,
        "image_height": 768,
        "mime_type": "image/png",
    }
    assert typed.content[0].type == "image" and typed.structured_content["action"].startswith("type ")
    assert saved.meta["openenv-mcp/reward"] == pytest.approx(1.0) and saved.meta["openenv-mcp/done"] is True


# settings: size and format of the observation --------------------------------------------------------------


def test_screenshots_follow_the_resolution_format_and_quality_settings(x11: None) -> None:
    settings = DesktopSettings(
        screen_width=800, screen_height=600, image_format="jpeg", jpeg_quality=40, image_scale=0.5
    )

    async def take() -> tuple[Any, Any]:
        desk = await SimDesktop.open(TASKS["menu-00"], 1, settings)
        try:
            shot = await desk.screen.screenshot()
            acted = await desk.screen.acted(await desk.screen.key("ctrl+End", 1))
        finally:
            await desk.aclose()
        return shot, acted

    shot, acted = anyio.run(take)
    picture = Picture.open(io.BytesIO(shot.data))
    assert shot.mime_type == "image/jpeg" and picture.format == "JPEG" and picture.size == (400, 300)
    assert (shot.metadata.width, shot.metadata.height, shot.metadata.image_width) == (800, 600, 400)
    assert acted.metadata.screen.image_height == 300 and acted.metadata.action == "key ctrl+End"


# prod: the same tools on a display someone else runs --------------------------------------------------------


@pytest.fixture
def foreign_display(x11: None, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An Xvfb display that wants a cookie and the editor on it, started here as a user's session would be."""
    documents = tmp_path / "Documents"
    documents.mkdir()
    (documents / "hello.txt").write_text("", encoding="utf-8")

    authority = Authority.create(tmp_path / "Xauthority")

    async def start() -> tuple[VirtualDisplay, asyncio.subprocess.Process]:
        display = await VirtualDisplay.start(width=1024, height=768, authority=authority)
        editor = await asyncio.create_subprocess_exec(
            DesktopSettings().editor_python,
            "-I",
            str(EDITOR),
            "--documents",
            str(documents),
            "--open",
            "hello.txt",
            env={
                "DISPLAY": display.name,
                "XAUTHORITY": str(authority.path),
                "HOME": str(tmp_path),
                "PATH": "/usr/bin:/bin",
            },
        )
        screen = Screen(display.name, DesktopSettings(), authority=authority)
        deadline = time.monotonic() + 20
        while "hello.txt - Editor" not in await _titles(screen):
            assert time.monotonic() < deadline, "the editor did not show its window within 20 s"
            await asyncio.sleep(0.05)
        return display, editor

    loop = asyncio.new_event_loop()
    display, editor = loop.run_until_complete(start())
    try:
        yield display.name, authority.path
    finally:
        loop.run_until_complete(stop_process(editor))
        loop.run_until_complete(display.stop())
        loop.close()


def test_prod_attaches_to_an_existing_display(foreign_display: tuple[str, Path], monkeypatch: Any) -> None:
    name, cookie_file = foreign_display
    documents = cookie_file.parent / "Documents"
    monkeypatch.setenv("DESKTOP_DISPLAY", name)
    monkeypatch.setenv("XAUTHORITY", str(cookie_file))  # as an operator points the server at the session's cookie

    async def drive(server: LiveServer) -> list[Any]:
        async with Client(server.mcp_url) as client:
            shot = await client.call_tool("screenshot", {})
            typed = await client.call_tool("type_text", {"text": "typed in prod"})
            saved = await client.call_tool("key", {"keys": "ctrl+s"})
            off = await client.call_tool("click", {"x": 2000, "y": 1})
        return [shot, typed, saved, off]

    with live_server(environment, mode="prod") as server:
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        assert httpx.post(f"{server.url}/reset", json={}).status_code == 404
        shot, typed, saved, off = anyio.run(drive, server)
    assert shot.content[0].type == "image" and shot.structured_content["width"] == 1024
    assert not typed.is_error and not saved.is_error and "openenv-mcp/reward" not in (saved.meta or {})
    assert off.is_error and "off the screen" in off.content[0].text
    wait_until(lambda: (documents / "hello.txt").read_text() == "typed in prod", "the editor saves the file")


def test_prod_without_a_display_setting_names_the_variable(monkeypatch: Any) -> None:
    from openenv_mcp import ConfigError

    monkeypatch.delenv("DESKTOP_DISPLAY", raising=False)
    with pytest.raises(ConfigError, match="set DESKTOP_DISPLAY"), live_server(environment, mode="prod"):
        pass


# pure parts: key names and scoring ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "parsed"),
    [
        ("ctrl+s", ["ctrl+s"]),
        ("ctrl+shift+S", ["ctrl+shift+S"]),
        ("Enter", ["Return"]),
        ("esc", ["Escape"]),
        ("f5", ["F5"]),
        ("alt+o s", ["alt+o", "s"]),
        ("ctrl+a BackSpace", ["ctrl+a", "BackSpace"]),
        ("pgdn", ["Page_Down"]),
    ],
)
def test_key_names_are_xdotool_names_with_friendly_spellings(keys: str, parsed: list[str]) -> None:
    assert parse_keys(keys) == parsed


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ("Foo_Bar", "Unknown key name 'Foo_Bar'"),
        ("ctrl+", r"write plus for the \+ key"),
        ("s+ctrl", "only the last key may be a non-modifier"),
        ("é", "Unknown key name 'é'"),
    ],
)
def test_unknown_key_names_are_refused_with_the_fix(keys: str, message: str) -> None:
    with pytest.raises(ToolFailed, match=message) as caught:
        parse_keys(keys)
    assert "ctrl+shift+s" in caught.value.message


def test_score_is_one_only_for_the_saved_expected_text_and_partial_toward_it() -> None:
    scenario = Scenario(
        documents={"a.txt": "x colour y colour\n"}, expect_file="a.txt", expect_text="x color y color\n"
    )
    assert score(scenario, AppState("a.txt - Editor", {"a.txt": "x color y color"})) == 1.0
    assert score(scenario, AppState("*a.txt - Editor", {"a.txt": "x color y color\n"})) == 0.75
    assert score(scenario, AppState("a.txt - Editor", {"a.txt": "x colour y colour\n"})) == 0.0  # untouched
    halfway = score(scenario, AppState("a.txt - Editor", {"a.txt": "x color y colour\n"}))
    assert 0.0 < halfway < 0.5
    assert score(scenario, AppState("b.txt - Editor", {"b.txt": "x color y color\n"})) == 0.0


def test_tasks_cover_every_kind_in_both_splits_and_vary_with_the_seed() -> None:
    kinds = {(task.kind, task.split) for task in TASKS.values()}
    assert kinds == {(k, s) for k in ("type", "save", "menu", "replace", "edits") for s in ("train", "test")}
    task = TASKS["replace-03"]
    assert task.scenario(1) == task.scenario(1) and task.scenario(1) != task.scenario(2)
    assert task.find not in task.scenario(1).expect_text and task.scenario(1).documents[task.file].count(task.find) >= 2


async def _titles(screen: Screen) -> str:
    try:
        return await screen.xdotool("search", "--name", ".", "getwindowname", "%@")
    except ToolFailed:  # no window yet
        return ""


def _our_x_processes() -> set[int]:
    """Our child processes that are Xvfb servers or editors."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == os.getpid() and (command.startswith(b"Xvfb") or b"editor.py" in command):
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_band_png_is_the_frames_pixels_and_the_same_bytes_whatever_came_before() -> None:
    width, height = 64, 40  # 2.5 bands of 16 rows
    noise = random.Random(7)
    first = bytes(noise.randrange(256) for _ in range(width * height * 4))
    second = bytearray(first)
    second[width * 4 * 20 : width * 4 * 21] = bytes(width * 4)  # one row of the second band changes
    for frame in (first, bytes(second)):
        fresh = BandEncoder().encode(frame, width, height)
        picture = Picture.open(io.BytesIO(fresh))
        expected = Picture.frombuffer("RGB", (width, height), frame, "raw", "BGRX", width * 4, 1)
        assert picture.mode == "RGB" and picture.tobytes() == expected.tobytes()
    warm = BandEncoder()
    warm.encode(first, width, height)  # its bands are cached now; the changed band is compressed anew
    assert warm.encode(bytes(second), width, height) == BandEncoder().encode(bytes(second), width, height)
    assert warm.encode(first, width, height) == BandEncoder().encode(first, width, height)
    a, b = first[:1000], first[1000:]
    assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(first)
