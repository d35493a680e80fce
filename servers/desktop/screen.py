"""One X display as the tools see it: screenshots (over XCB) and input (libxdo, over XTEST), one connection.

The same class serves both modes: a sim episode's Xvfb display or the prod display named in
``DESKTOP_DISPLAY``. After every action the screen is allowed to settle before the screenshot:
with a ``sync`` function (the sim editor answers once it has handled and drawn every input event
sent before the question) or, without one, by waiting until two frames in a row are identical,
bounded by ``DESKTOP_SETTLE_TIMEOUT_MS``.

Input and screenshots go over one X connection, opened at the first action and kept until the
episode closes (:mod:`openenv_mcp.servers.desktop.xdo`: libxdo, xdotool's own library, for input;
XCB ``GetImage`` on the same connection for pixels). PNG screenshots re-compress only the bands of
the screen that changed (:mod:`openenv_mcp.servers.desktop.png`). A sim display has an
:class:`~openenv_mcp.servers.desktop.authority.Authority`: the connection presents its cookie, and
the rare ``xdotool`` commands (finding the editor's window at start) get its file (``XAUTHORITY``), so
every episode's clients hold that episode's cookie and no other. Prod clients find their cookie as X
clients do.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
import time
from collections.abc import Awaitable, Callable

from PIL import Image as Picture

from openenv_mcp import BackendUnavailable, ToolFailed
from openenv_mcp.environment.tools import Image
from openenv_mcp.servers.desktop.authority import Authority
from openenv_mcp.servers.desktop.keys import parse_keys
from openenv_mcp.servers.desktop.models import Acted, ScreenInfo
from openenv_mcp.servers.desktop.png import BandEncoder
from openenv_mcp.servers.desktop.settings import DesktopSettings
from openenv_mcp.servers.desktop.xdo import XInput

__all__ = ["BUTTONS", "SCROLL_BUTTONS", "Screen"]

BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
Frame = tuple[bytes, int, int]  # BGRX rows, width, height
_FRAME_INTERVAL = 0.03  # seconds between frames when waiting for a settled screen
# Two presses of one button this close (in pixels and seconds) make a double click to Tk (tkBind.c: 5 px, 500 ms)
# and most toolkits: a press asked for alone waits until it cannot join the one before.
_NEARBY_PIXELS = 5
_MULTI_CLICK_S = 0.6


class Screen:
    """Screenshots of, and input to, the X display ``display`` (e.g. ``:0``)."""

    def __init__(
        self,
        display: str,
        settings: DesktopSettings,
        *,
        sync: Callable[[], Awaitable[bool]] | None = None,
        authority: Authority | None = None,
    ) -> None:
        self.display = display
        self.settings = settings
        self._sync = sync
        self._size: tuple[int, int] | None = None
        self._cookie = authority.cookie if authority is not None else None
        self._env = {**os.environ, "DISPLAY": display}
        if authority is not None:
            self._env["XAUTHORITY"] = str(authority.path)
        self._input: XInput | None = None
        self._opening = threading.Lock()
        self._closed = False
        self._png = BandEncoder()
        self._encoding = threading.Lock()  # the band cache is one screen's
        self._last_press: tuple[float, int, int, int] | None = None  # when, where, which button

    def _x(self) -> XInput:
        """The display's connection, opened on first use (blocking: call it in a worker thread)."""
        with self._opening:
            if self._closed:
                raise BackendUnavailable(f"The connection to the X display {self.display} is closed")
            if self._input is None:
                self._input = XInput.open(self.display, self._cookie)
            return self._input

    def close(self) -> None:
        """Close the display's connection (blocking; the episode is over)."""
        with self._opening:
            self._closed = True
            connection, self._input = self._input, None
        if connection is not None:
            connection.close()

    # pictures ---------------------------------------------------------------------------------------

    def _grab(self) -> Frame:
        return self._x().grab_bgrx()

    def _encode(self, frame: Frame) -> Image[ScreenInfo]:
        settings = self.settings
        data, width, height = frame
        self._size = (width, height)
        mime = f"image/{settings.image_format}"
        if settings.image_format == "png" and settings.image_scale >= 1.0:
            with self._encoding:
                encoded = self._png.encode(data, width, height)
            info = ScreenInfo(width=width, height=height, image_width=width, image_height=height, mime_type=mime)
            return Image(data=encoded, mime_type=mime, metadata=info)
        picture = Picture.frombuffer("RGB", (width, height), data, "raw", "BGRX", width * 4, 1)
        if settings.image_scale < 1.0:
            scaled = (max(1, round(width * settings.image_scale)), max(1, round(height * settings.image_scale)))
            picture = picture.resize(scaled, Picture.Resampling.BILINEAR, reducing_gap=2.0)
        out = io.BytesIO()
        if settings.image_format == "jpeg":
            picture.save(out, "JPEG", quality=settings.jpeg_quality)
        else:
            picture.save(out, "PNG", compress_level=1)
        info = ScreenInfo(
            width=width, height=height, image_width=picture.width, image_height=picture.height, mime_type=mime
        )
        return Image(data=out.getvalue(), mime_type=mime, metadata=info)

    async def screenshot(self) -> Image[ScreenInfo]:
        """The whole screen, encoded as the settings say."""
        return await asyncio.to_thread(lambda: self._encode(self._grab()))

    async def size(self) -> tuple[int, int]:
        """The screen's width and height in pixels."""
        if self._size is None:
            self._size = await asyncio.to_thread(lambda: self._x().size())
        return self._size

    async def settle(self) -> tuple[Frame, bool]:
        """Without a ``sync``: the frame once two frames in a row are identical, and whether they were in time."""
        deadline = time.monotonic() + self.settings.settle_timeout_ms / 1000
        previous = await asyncio.to_thread(self._grab)
        while True:
            await asyncio.sleep(_FRAME_INTERVAL)  # the pace of the poll; the deadline bounds it
            frame = await asyncio.to_thread(self._grab)
            if frame == previous:
                return frame, True
            if time.monotonic() > deadline:
                return frame, False
            previous = frame

    async def acted(self, action: str) -> Image[Acted]:
        """The screen after ``action``, as an image with what was done."""
        if self._sync is not None:  # the editor says when it is done: grab and encode in one hop
            settled = await self._sync()
            shot = await asyncio.to_thread(lambda: self._encode(self._grab()))
        else:
            frame, settled = await self.settle()
            shot = await asyncio.to_thread(self._encode, frame)
        return Image(
            data=shot.data,
            mime_type=shot.mime_type,
            metadata=Acted(action=action, settled=settled, screen=shot.metadata),
        )

    # input --------------------------------------------------------------------------------------------

    async def check_point(self, x: int, y: int) -> None:
        width, height = await self.size()
        if not (0 <= x < width and 0 <= y < height):
            raise ToolFailed(
                f"({x}, {y}) is off the screen, which is {width}x{height} pixels: use 0 <= x < {width} and "
                f"0 <= y < {height} (screen pixels, also when the screenshot is scaled down)"
            )

    async def _act(self, action: Callable[[XInput], None]) -> None:
        await asyncio.to_thread(lambda: action(self._x()))

    async def _arrive(self, x: int, y: int) -> None:
        """Move the pointer to (x, y) before a press; with a ``sync``, let the application see it arrive.

        A Tk menu takes a click on an item only when it has handled the pointer entering it, and a
        press sent right behind the motion can overtake what the application is still doing after
        the previous action (a menu just posted), which the spawned xdotool's start-up used to hide.
        """
        await self._act(lambda xi: xi.move(x, y))
        if self._sync is not None:
            await self._sync()

    async def key(self, keys: str, repeat: int) -> str:
        combos = parse_keys(keys)
        # xdotool waits --delay after every key, the last one too: only pay it between keys.
        delay = 12 if len(combos) > 1 or repeat > 1 else 0
        await self._act(lambda x: x.key(combos, repeat, delay))
        return f"key {' '.join(combos)}" + (f" x{repeat}" if repeat > 1 else "")

    async def type(self, text: str) -> str:
        bad = sorted({f"U+{ord(c):04X}" for c in text if not c.isprintable() and c not in "\n\t"})
        if bad:
            raise ToolFailed(
                f"The text holds control characters ({', '.join(bad)}); type only printable text, \\n, \\t"
            )
        await self._act(lambda x: x.type(text, self.settings.type_delay_ms))
        return f"type {len(text)} characters"

    async def _apart(self, x: int, y: int, button: int) -> None:
        """Let a press start a click of its own: never the second half of a double click with the previous press
        (same button, nearby, within the double-click interval), whose timing an agent does not control and a
        replay does not repeat."""
        last = self._last_press
        if last is not None and last[3] == button and max(abs(last[1] - x), abs(last[2] - y)) <= _NEARBY_PIXELS:
            wait = last[0] + _MULTI_CLICK_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)

    async def click(self, x: int, y: int, button: str, clicks: int) -> str:
        await self.check_point(x, y)
        delay = 80 if clicks > 1 else 0  # well inside any double-click interval
        await self._apart(x, y, BUTTONS[button])
        await self._arrive(x, y)
        await self._act(lambda xi: xi.click(BUTTONS[button], clicks, delay))
        self._last_press = (time.monotonic(), x, y, BUTTONS[button])
        return f"click {button} at ({x}, {y})" + (f" x{clicks}" if clicks > 1 else "")

    async def move(self, x: int, y: int) -> str:
        await self.check_point(x, y)
        await self._act(lambda xi: xi.move(x, y))
        return f"move to ({x}, {y})"

    async def drag(self, x: int, y: int, to_x: int, to_y: int, button: str) -> str:
        await self.check_point(x, y)
        await self.check_point(to_x, to_y)
        code = BUTTONS[button]
        await self._apart(x, y, code)
        await self._arrive(x, y)

        def run(xi: XInput) -> None:
            xi.button(code, down=True)
            xi.move((x + to_x) // 2, (y + to_y) // 2)
            xi.move(to_x, to_y)
            xi.button(code, down=False)

        await self._act(run)
        self._last_press = (time.monotonic(), x, y, code)
        return f"drag {button} from ({x}, {y}) to ({to_x}, {to_y})"

    async def scroll(self, x: int, y: int, direction: str, amount: int) -> str:
        await self.check_point(x, y)
        code = SCROLL_BUTTONS[direction]
        delay = 10 if amount > 1 else 0
        await self._arrive(x, y)
        await self._act(lambda xi: xi.click(code, amount, delay))
        return f"scroll {direction} x{amount} at ({x}, {y})"

    async def window_title(self, window: int | None = None) -> str:
        """The title of ``window``, or of the window with the keyboard focus."""
        if window is not None:
            return await asyncio.to_thread(lambda: self._x().window_name(window))
        return (await self.xdotool("getwindowfocus", "-f", "getwindowname")).rstrip("\n")

    async def xdotool(self, *args: str, timeout: float = 10.0) -> str:
        """Run xdotool on this display; its failures become ToolFailed, an unreachable display BackendUnavailable."""
        try:
            process = await asyncio.create_subprocess_exec(
                "xdotool",
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
            )
        except FileNotFoundError:
            raise BackendUnavailable("xdotool is not installed: apt-get install xdotool") from None
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise ToolFailed(f"xdotool {args[0]} did not finish within {timeout:g} s") from None
        message = err.decode(errors="replace").strip()
        if "Can't open display" in message:
            raise BackendUnavailable(f"The X display {self.display} is not reachable (xdotool: {message})")
        if process.returncode != 0 or "No such key name" in message:
            raise ToolFailed(f"xdotool {args[0]} failed: {message or f'exit status {process.returncode}'}")
        return out.decode(errors="replace")
