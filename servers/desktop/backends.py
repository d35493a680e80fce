"""The desktop backends: a private Xvfb display and editor per sim episode; an existing display in prod.

Sim (:class:`SimDesktop`): each episode gets a folder of its own (``Documents/`` with the task's
starting files, the editor's control socket, logs), an Xvfb server on a display number it claims
itself, and the Tk editor (``editor.py``) on it. Closing the episode closes the control socket: the
editor exits, Xvfb (started with ``-terminate``) follows, both are reaped, the folder is removed.

Containment (sim): the display has its own authority (a random cookie in a 0600 file in the
episode's 0700 folder; only the server and the episode's editor hold it), listens on no TCP and no
abstract socket, and its socket file is connectable by the server's user only; the editor serves
no Tk ``send``. The editor and Xvfb each have an address-space limit (``RLIMIT_AS``) and no core
files; the editor refuses to grow a document past ``DESKTOP_MAX_DOCUMENT_CHARS`` and the step that
hit the limit is a tool error saying so. The file dialogs list the episode's ``Documents`` only.

Prod (:class:`ProdDesktop`): the display named by ``DESKTOP_DISPLAY``, whatever runs on it. The
same :class:`~openenv_mcp.servers.desktop.screen.Screen` drives both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openenv_mcp import Backend, BackendUnavailable, ConfigError, ToolFailed
from openenv_mcp.servers.desktop.authority import Authority
from openenv_mcp.servers.desktop.channel import ChannelClosed, EditorChannel
from openenv_mcp.servers.desktop.display import VirtualDisplay, limit_memory, stop_process
from openenv_mcp.servers.desktop.screen import Screen
from openenv_mcp.servers.desktop.settings import DesktopSettings

__all__ = ["AppState", "DesktopBackend", "ProdDesktop", "Scenario", "SimDesktop"]

log = logging.getLogger(__name__)

EDITOR = Path(__file__).with_name("editor.py")
MAX_DOCUMENTS = 64
MAX_DOCUMENT_BYTES = 256 * 1024
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Scenario:
    """An episode's starting documents and its goal: ``expect_file`` holding ``expect_text``."""

    documents: dict[str, str]
    expect_file: str
    expect_text: str
    open: str | None = None
    unsaved: str | None = None


@dataclass(frozen=True, slots=True)
class AppState:
    """What grading looks at: the documents saved so far and the application's window title."""

    title: str
    documents: dict[str, str] = field(default_factory=dict)


class HasScenario(Protocol):
    def scenario(self, seed: int) -> Scenario: ...


class DesktopBackend(Backend, Protocol):
    """What the desktop tools and grading need."""

    screen: Screen
    scenario: Scenario | None
    progress: float

    async def documents(self) -> dict[str, str]: ...
    async def title(self) -> str: ...


class SimDesktop:
    """One sim episode: its folder, its Xvfb display and its editor."""

    def __init__(
        self,
        *,
        root: Path,
        scenario: Scenario,
        display: VirtualDisplay,
        editor: asyncio.subprocess.Process,
        channel: EditorChannel,
        window: int,
        settings: DesktopSettings,
    ) -> None:
        self.root = root
        self.folder = root / "Documents"
        self.scenario: Scenario | None = scenario
        self.progress = 0.0
        self.display = display
        self.editor = editor
        self.channel = channel
        self.window = window
        self.settings = settings
        self.screen = Screen(display.name, settings, sync=self.sync, authority=display.authority)
        self.loop = asyncio.get_running_loop()  # for callers on other threads (tests, diagnostics)
        self._closed = False
        # Our X connection keeps the display alive (Xvfb -terminate waits for its last client): let it go with the
        # editor, so that a dead editor still takes its display with it.
        self._watch = self.loop.create_task(self._close_screen_when_the_editor_exits())

    async def _close_screen_when_the_editor_exits(self) -> None:
        await self.editor.wait()
        await asyncio.to_thread(self.screen.close)

    @classmethod
    async def open(cls, task: HasScenario, seed: int, settings: DesktopSettings) -> SimDesktop:
        """Start a display and the editor for ``task`` under ``seed``; BackendUnavailable if they cannot start."""
        scenario = task.scenario(seed)
        root = Path(tempfile.mkdtemp(prefix="openenv-desktop-"))
        documents = root / "Documents"
        documents.mkdir()
        for name, text in scenario.documents.items():
            (documents / name).write_text(text, encoding="utf-8")
        args = ["--documents", str(documents), "--control", str(root / "control.sock")]
        args += ["--width", str(settings.screen_width), "--height", str(settings.screen_height)]
        args += ["--max-chars", str(settings.max_document_chars)]
        if scenario.open is not None:
            args += ["--open", scenario.open]
        elif scenario.unsaved is not None:
            (root / "unsaved.txt").write_text(scenario.unsaved, encoding="utf-8")
            args += ["--text", str(root / "unsaved.txt")]

        display: VirtualDisplay | None = None
        channel: EditorChannel | None = None
        editor: asyncio.subprocess.Process | None = None
        try:
            async with asyncio.timeout(settings.startup_timeout):
                # A state answer carries the document as JSON: up to 6 bytes a character (\uXXXX escapes).
                line_limit = 6 * settings.max_document_chars + MIB
                channel = await EditorChannel.listen(root / "control.sock", line_limit=line_limit)
                authority = Authority.create(root / "Xauthority")
                display = await VirtualDisplay.start(
                    width=settings.screen_width,
                    height=settings.screen_height,
                    terminate_with_clients=True,  # it goes when the editor goes
                    log=root / "xvfb.log",
                    timeout=settings.startup_timeout,
                    authority=authority,
                    memory_limit=settings.display_memory_mb * MIB,
                )
                environment = {"DISPLAY": display.name, "XAUTHORITY": str(authority.path), "HOME": str(root)}
                with (root / "editor.log").open("ab") as editor_log:
                    editor = await asyncio.create_subprocess_exec(
                        settings.editor_python,
                        "-I",
                        str(EDITOR),
                        *args,
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=editor_log,
                        stderr=editor_log,
                        env={**environment, "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
                        start_new_session=True,
                    )
                limit_memory(editor.pid, settings.editor_memory_mb * MIB)
                exited = asyncio.ensure_future(editor.wait())
                try:
                    await channel.wait_ready(exited)
                finally:
                    exited.cancel()
                # The title lives on Tk's wrapper window (the one of class Editor), not on ".".
                found = await Screen(display.name, settings, authority=authority).xdotool(
                    "search", "--class", "^Editor$"
                )
                window = int(found.split()[0])
        except (TimeoutError, ChannelClosed, OSError, ToolFailed) as exc:
            reason = f"did not start within {settings.startup_timeout:g} s" if isinstance(exc, TimeoutError) else exc
            logs = _tail(root / "editor.log")
            await _shut_down(channel, editor, display, root)
            raise BackendUnavailable(
                f"The sim desktop could not start: {reason}" + (f"; editor said: {logs}" if logs else "")
            ) from None
        except BaseException:
            await _shut_down(channel, editor, display, root)
            raise
        return cls(
            root=root,
            scenario=scenario,
            display=display,
            editor=editor,
            channel=channel,
            window=window,
            settings=settings,
        )

    @property
    def pids(self) -> tuple[int, int]:
        """The Xvfb and editor process ids (for tests and diagnostics)."""
        return self.display.process.pid, self.editor.pid

    async def sync(self) -> bool:
        """Wait until the editor has handled and drawn every input sent so far; False if it took too long.

        ToolFailed when the editor refused insertions at its document size limit meanwhile.
        """
        answer = await self._settle()
        refused = answer.get("refused", 0) if answer is not None else 0
        if refused:
            limit = self.settings.max_document_chars
            raise ToolFailed(
                f"The document reached the editor's limit of {limit:,} characters: {refused} insertion"
                f"{'s were' if refused != 1 else ' was'} refused (typing or pasting stopped there; the document "
                "holds what fit). Delete text, or save and start a new document, before adding more."
            )
        return answer is not None

    async def _settle(self) -> dict[str, Any] | None:
        try:
            async with asyncio.timeout(self.settings.settle_timeout_ms / 1000):
                return await self.channel.request("sync")
        except TimeoutError:
            return None
        except ChannelClosed as exc:
            raise BackendUnavailable(f"The editor of this episode has stopped ({exc}); start a new episode") from None

    async def state(self) -> dict[str, Any]:
        """The editor's own account of itself: title, file, modified, text, open find dialog."""
        try:
            async with asyncio.timeout(5):
                return await self.channel.request("state")
        except (TimeoutError, ChannelClosed) as exc:
            raise BackendUnavailable(f"The editor of this episode does not answer: {exc or 'timeout'}") from None

    async def documents(self) -> dict[str, str]:
        """The documents in the episode's folder, by name (the first 64, up to 256 KiB each)."""
        found = {}
        for path in sorted(self.folder.iterdir())[:MAX_DOCUMENTS]:
            if path.is_file() and not path.is_symlink():
                with path.open("rb") as handle:
                    found[path.name] = handle.read(MAX_DOCUMENT_BYTES).decode("utf-8", errors="replace")
        return found

    async def title(self) -> str:
        """The editor's window title, as the X server has it."""
        return await self.screen.window_title(self.window)

    async def ping(self) -> None:
        if self.editor.returncode is not None or self.display.process.returncode is not None:
            raise BackendUnavailable("The sim desktop's editor or display has exited")
        if await self._settle() is None:
            raise BackendUnavailable("The sim desktop's editor does not answer")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._watch.cancel()
        await asyncio.to_thread(self.screen.close)  # our connection first: Xvfb ends with its last client
        await _shut_down(self.channel, self.editor, self.display, self.root)


async def _shut_down(
    channel: EditorChannel | None,
    editor: asyncio.subprocess.Process | None,
    display: VirtualDisplay | None,
    root: Path,
) -> None:
    """Stop whatever of an episode was started, in order, and remove its folder."""
    if channel is not None:
        await channel.aclose()  # the editor exits when its control socket closes...
    if editor is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(editor.wait()), 2.0)
        await stop_process(editor)  # ...or is made to
    if display is not None:
        await display.stop()
    shutil.rmtree(root, ignore_errors=True)


def _tail(path: Path, limit: int = 400) -> str:
    try:
        return path.read_text(errors="replace").strip()[-limit:]
    except OSError:
        return ""


class ProdDesktop:
    """The display named by ``DESKTOP_DISPLAY``, shared by every caller; no tasks, no grading."""

    scenario: Scenario | None = None

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.progress = 0.0

    @classmethod
    async def open(cls, settings: DesktopSettings) -> ProdDesktop:
        if settings.display is None:
            raise ConfigError("Prod desktop needs a display: set DESKTOP_DISPLAY (e.g. :0)")
        return cls(Screen(settings.display, settings))

    async def ping(self) -> None:
        try:
            await self.screen.xdotool("getdisplaygeometry")
        except ToolFailed as exc:
            raise BackendUnavailable(f"The X display {self.screen.display} does not answer: {exc.message}") from None

    async def documents(self) -> dict[str, str]:
        return {}  # prod has no episode folder

    async def title(self) -> str:
        return await self.screen.window_title()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.screen.close)
