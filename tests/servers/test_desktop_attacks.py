"""Attacks on the sim desktop, each judged by an effect outside the server.

Every attack goes through the server's public doors (``POST /reset``, ``POST /step``) or comes from
outside it as another local user would (``setpriv`` to uid 65534, ``wish``, a raw X11 connection),
and is judged by what happened outside the server's answer: a file written or not, a connection
accepted or refused by the X server, the editor's memory and limits in ``/proc``, the display
process alive, a saved document's size, another episode still answering. Each test also runs the
control case that must succeed (the episode's own cookie is accepted, a legitimate key is pressed),
so a probe that could not have succeeded proves nothing.

Needs Xvfb and xdotool (the desktop's packages) plus ``wish`` (Debian ``tk``) and ``setpriv``
(util-linux), and root to switch users; outside CI a machine without them skips with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_mcp import EnvClient, StepResult
from openenv_mcp.servers.desktop import environment
from openenv_mcp.servers.desktop.backends import SimDesktop
from openenv_mcp.servers.desktop.settings import DesktopSettings
from tests.support import IN_CI, LiveServer, live_server, require_service

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# A raw X11 connection setup (the first bytes any client sends), with or without a cookie: prints
# what the server answered. Standard library only, so it runs as any user.
X_PROBE = r"""
import socket, struct, sys
path, cookie = sys.argv[1], bytes.fromhex(sys.argv[2])
name = b"MIT-MAGIC-COOKIE-1" if cookie else b""
pad = lambda b: b + b"\0" * (-len(b) % 4)
sock = socket.socket(socket.AF_UNIX)
sock.settimeout(10)
try:
    sock.connect(path.replace("@", "\0", 1) if path.startswith("@") else path)
except OSError as exc:
    print("connect-refused", exc.errno)
    raise SystemExit
sock.sendall(struct.pack("<BxHHHHxx", 0x6C, 11, 0, len(name), len(cookie)) + pad(name) + pad(cookie))
reply = sock.recv(8)
print({0: "failed", 1: "accepted", 2: "authenticate"}.get(reply[0], reply[0]) if reply else "closed")
"""


@pytest.fixture(scope="module")
def attackable() -> None:
    missing = [tool for tool in ("Xvfb", "xdotool", "wish", "setpriv") if shutil.which(tool) is None]
    if missing:
        require_service("The tools " + ", ".join(missing), FileNotFoundError("apt-get install xvfb xdotool tk"))
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("the desktop attack tests switch to another uid and must run as root in CI")
        pytest.skip("switching to another local user needs root; CI runs these tests as root")


@pytest.fixture(scope="module")
def desktop(attackable: None) -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=8) as server:
        yield server


@pytest.fixture
def drop_box() -> Iterator[Path]:
    """A folder any user may write to: where an attack's command would leave its mark."""
    folder = Path(tempfile.mkdtemp(prefix="openenv-attack-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def backend(server: LiveServer, episode_id: str) -> SimDesktop:
    desk = server.runtime.episodes.get(episode_id).backend
    assert isinstance(desk, SimDesktop)
    return desk


def editor_state(server: LiveServer, episode_id: str) -> dict[str, Any]:
    desk = backend(server, episode_id)
    return asyncio.run_coroutine_threadsafe(desk.state(), desk.loop).result(10)


def step(env: EnvClient, tool: str, **arguments: Any) -> StepResult:
    return env.step(tool, arguments)


def run(args: list[str], *, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=30, env=env, check=False)


def x_probe(path: str, cookie: bytes = b"", *, as_nobody: bool = False) -> str:
    python = os.path.realpath(sys.executable)
    command = [*NOBODY] * as_nobody + [python, "-I", "-c", X_PROBE, path, cookie.hex()]
    return run(command).stdout.strip()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"


def tcp_listeners() -> set[str]:
    """The ports (hex) with a listening TCP socket on this machine, IPv4 and IPv6."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":
                    ports.add(fields[1].rsplit(":", 1)[1])
    return ports


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


# 10: who can reach an episode's display ---------------------------------------------------------------


def test_tk_send_from_another_user_runs_nothing(desktop: LiveServer, drop_box: Path) -> None:
    mark = drop_box / "pwned"
    with EnvClient(desktop.url) as env:
        episode = env.reset(task_id="type-00", seed=1).episode_id or ""
        display = backend(desktop, episode).display.name
        script = f"catch {{send editor {{exec id > {mark}}}}} e; puts $e; exit\n"
        attack = run([*NOBODY, "env", f"DISPLAY={display}", "wish"], stdin=script)
        assert not mark.exists(), mark.read_text()
        assert "couldn't connect to display" in attack.stderr, attack  # refused before any send
        assert not step(env, "screenshot").observation.is_error  # the episode is untouched
        env.close_episode()


def test_tk_send_with_the_episodes_own_cookie_finds_no_application(desktop: LiveServer, drop_box: Path) -> None:
    mark = drop_box / "pwned"
    with EnvClient(desktop.url) as env:
        episode = env.reset(task_id="type-00", seed=2).episode_id or ""
        display = backend(desktop, episode).display
        assert display.authority is not None
        # A client holding the cookie (the strongest outsider there could be) still cannot send.
        environ = {"DISPLAY": display.name, "XAUTHORITY": str(display.authority.path), "PATH": "/usr/bin:/bin"}
        script = f"puts [winfo interps]; catch {{send editor {{exec id > {mark}}}}} e; puts $e; exit\n"
        attack = run(["wish"], stdin=script, env=environ)
        assert attack.returncode == 0, attack.stderr  # it did connect: the cookie is the right one
        interps, answer = attack.stdout.strip().splitlines()
        assert "editor" not in interps.split() and answer == 'no application named "editor"'
        assert not mark.exists()
        env.close_episode()


def test_the_display_refuses_other_users_and_other_cookies_on_every_socket(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        first = env.reset(task_id="type-00", seed=3).episode_id or ""
        second = env.reset(task_id="type-00", seed=4).episode_id or ""
        mine, other = backend(desktop, first).display, backend(desktop, second).display
        assert mine.authority is not None and other.authority is not None
        socket_file, abstract = str(mine.socket), "@" + str(mine.socket)
        # Another local user: the socket file is closed to it, the abstract socket asks for a cookie.
        assert x_probe(socket_file, as_nobody=True).startswith("connect-refused")
        assert x_probe(abstract, as_nobody=True) == "failed"
        # The server's own user without a cookie, with a guessed one, with another episode's.
        assert x_probe(abstract) == "failed" and x_probe(socket_file) == "failed"
        assert x_probe(abstract, b"\0" * 16) == "failed"
        assert x_probe(abstract, other.authority.cookie) == "failed"
        assert x_probe(socket_file, other.authority.cookie) == "failed"
        assert x_probe(abstract, mine.authority.cookie) == "accepted"  # the control: the right cookie works
        # The cookie file: its owner only, in a folder only its owner can enter.
        assert (mine.authority.path.stat().st_mode & 0o777) == 0o600
        assert run([*NOBODY, "cat", str(mine.authority.path)]).returncode != 0
        assert f"{6000 + mine.number:04X}" not in tcp_listeners()  # no TCP port either
        # The editor's control socket lies in the episode's folder, which only its owner may enter.
        control = backend(desktop, first).root / "control.sock"
        assert x_probe(str(control), as_nobody=True).startswith("connect-refused")
        for episode in (first, second):
            env.close_episode(episode_id=episode)


# 11: memory and document size --------------------------------------------------------------------------


def test_select_all_copy_paste_fifty_times_stays_bounded(desktop: LiveServer) -> None:
    limit = DesktopSettings().max_document_chars
    with EnvClient(desktop.url) as env, EnvClient(desktop.url) as bystander:
        episode = env.reset(task_id="type-00", seed=5).episode_id or ""
        desk = backend(desktop, episode)
        xvfb, editor = desk.pids
        bystander.reset(task_id="type-01", seed=5)
        assert not step(env, "type_text", text="x" * 99 + "\n").observation.is_error
        refusals = []
        for _ in range(4):  # the loop: 7 steps took the document to 212 MB and the editor to 885 MB
            assert not step(env, "key", keys="ctrl+a ctrl+c").observation.is_error
            pasted = step(env, "key", keys="ctrl+v", repeat=50).observation
            refusals.append(pasted.is_error)
            # Between the attacker's steps, another episode on the same server is served as usual.
            assert not step(bystander, "type_text", text="ok").observation.is_error
        assert refusals[:2] == [False, False] and all(refusals[2:])
        assert "limit of 1,000,000 characters" in pasted.text
        assert not step(env, "key", keys="ctrl+s").observation.is_error
        saved = desk.folder / desk.scenario.expect_file if desk.scenario else None
        assert saved is not None and 0 < saved.stat().st_size <= limit  # the document on disk
        assert status_kib(editor, "VmHWM") < 128 * 1024  # the editor's peak resident memory (35 MiB seen)
        limits = Path(f"/proc/{editor}/limits").read_text()
        assert "Max address space         536870912            536870912" in limits
        assert "Max core file size        0                    0" in limits
        assert "Max address space         536870912            536870912" in Path(f"/proc/{xvfb}/limits").read_text()
        assert alive(editor) and alive(xvfb)
        assert httpx.get(f"{desktop.url}/healthz").status_code == 200
        env.close_episode()
        bystander.close_episode()


# 12: file dialogs --------------------------------------------------------------------------------------


def test_file_dialogs_list_and_write_only_the_episodes_documents(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        other = env.reset(task_id="menu-00", seed=6).episode_id or ""
        elsewhere = backend(desktop, other)
        secret = elsewhere.folder / "other-episode-secret.txt"
        secret.write_text("not yours", encoding="utf-8")
        episode = env.reset(task_id="menu-01", seed=6).episode_id or ""
        desk = backend(desktop, episode)
        own = sorted(path.name for path in desk.folder.iterdir())

        assert not step(env, "key", keys="ctrl+o").observation.is_error
        dialog = editor_state(desktop, episode)["file_dialog"]
        assert dialog["title"] == "Open" and dialog["listing"] == own
        for target in ("/root", "/", str(elsewhere.folder), str(elsewhere.folder) + "/", "..", "../..", "~root"):
            assert not step(env, "type_text", text=target + "\n").observation.is_error
            dialog = editor_state(desktop, episode)["file_dialog"]
            assert dialog is not None and dialog["listing"] == own, target  # still Documents, nothing else
            assert "not a path" in dialog["message"]
        step(env, "key", keys="Escape")

        # Save As to a path outside: refused, nothing written there or in the episode's own folder.
        assert not step(env, "key", keys="ctrl+shift+s").observation.is_error
        for target in (str(elsewhere.folder / "planted.txt"), "../escaped.txt", "/tmp/escaped-desktop.txt"):
            step(env, "type_text", text=target + "\n")
            assert editor_state(desktop, episode)["file_dialog"]["listing"] == own
        step(env, "key", keys="Escape")
        assert not (elsewhere.folder / "planted.txt").exists()
        assert not (desk.root / "escaped.txt").exists() and not Path("/tmp/escaped-desktop.txt").exists()
        assert sorted(path.name for path in desk.folder.iterdir()) == own
        assert "other-episode-secret.txt" not in str(editor_state(desktop, episode))
        for closing in (episode, other):
            env.close_episode(episode_id=closing)


# 13: keys that act on the X server -------------------------------------------------------------------


DANGEROUS_KEYS = [
    "Terminate_Server",
    "ctrl+alt+Terminate_Server",
    "0xfed5",
    "XF86Switch_VT_1",
    "XF86Switch_VT_7",
    "XF86LogGrabInfo",
    "XF86LogWindowTree",
    "XF86Ungrab",
    "XF86ClearGrab",
    "XF86Next_VMode",
    "Sys_Req",
    "AccessX_Enable",
    "Pointer_EnableKeys",
    "a Terminate_Server",
]


def test_keys_that_act_on_the_x_server_are_refused_and_the_display_survives(desktop: LiveServer) -> None:
    with EnvClient(desktop.url) as env:
        episode = env.reset(task_id="type-00", seed=7).episode_id or ""
        desk = backend(desktop, episode)
        for keys in DANGEROUS_KEYS:
            refused = step(env, "key", keys=keys).observation
            assert refused.is_error and "acts on the X server itself" in refused.text, keys
        # Tried too, allowed, harmless: the classic zap chord is not bound here, nor is a lookalike character.
        for tool, arguments in (("key", {"keys": "ctrl+alt+BackSpace"}), ("type_text", {"text": "\ufed5"})):
            assert not step(env, tool, **arguments).observation.is_error
        assert all(alive(pid) for pid in desk.pids)
        # At most the one typed character: xdotool types it on a keycode it remaps for the moment, which
        # under load can be restored before the editor reads the key (the character is then lost).
        assert editor_state(desktop, episode)["text"] in ("", "\ufed5")
        shot = step(env, "screenshot")
        assert not shot.observation.is_error
        env.close_episode()


# every hostile input: a tool error or a 4xx, never a 500 ---------------------------------------------------


HOSTILE = [
    ("key", {"keys": "\ud800"}),
    ("key", {"keys": "\x00"}),
    ("key", {"keys": "ctrl+\u00e9+\U0001f600"}),
    ("key", {"keys": "+" * 200}),
    ("key", {"keys": "a", "repeat": 10**9}),
    ("type_text", {"text": "\ud800"}),
    ("type_text", {"text": "\udfff x"}),
    ("type_text", {"text": "\x1b[31m"}),
    ("type_text", {"text": "\U0010ffff"}),
    ("click", {"x": 2**40, "y": 0}),
    ("click", {"x": 1, "y": 1, "button": "\ud800"}),
    ("scroll", {"x": 1, "y": 1, "direction": None}),
    ("drag", {"x": 0, "y": 0, "to_x": 1023, "to_y": 767, "button": "middle"}),
]


def test_hostile_inputs_get_a_tool_error_or_a_4xx_never_a_500(desktop: LiveServer) -> None:
    headers = {"Content-Type": "application/json"}
    with httpx.Client(base_url=desktop.url, timeout=30) as http:
        episode = http.post("/reset", json={"task_id": "type-00", "seed": 8}).json()["episode_id"]
        for tool, arguments in HOSTILE:
            # json.dumps escapes lone surrogates (\\ud800), as a hostile client would send them.
            body = json.dumps({"action": {"tool": tool, "arguments": arguments}})
            answer = http.post("/step", headers={**headers, "X-Episode-Id": episode}, content=body)
            assert answer.status_code in (200, 422), (tool, arguments, answer.status_code, answer.text)
        assert http.get("/healthz").status_code == 200
        shot = http.post("/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": "screenshot"}})
        assert shot.status_code == 200
        http.delete(f"/episodes/{episode}")
