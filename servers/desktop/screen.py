"""One X display as the tools see it: screenshots (Pillow, over XCB) and input (xdotool, over XTEST).

The same class serves both modes: a sim episode's Xvfb display or the prod display named in
``DESKTOP_DISPLAY``. After every action the screen is allowed to settle before the screenshot:
with a ``sync`` function (the sim editor answers once it has handled and drawn every input event
sent before the question) or, without one, by waiting until two frames in a row are identical,
bounded by ``DESKTOP_SETTLE_TIMEOUT_MS``.

A sim display has an :class:`~openenv_mcp.servers.desktop.authority.Authority`: xdotool gets its file
(``XAUTHORITY``), screenshots its cookie (:mod:`openenv_mcp.servers.desktop.capture`), so every episode's
clients hold that episode's cookie and no other. Prod clients find their cookie as X clients do.
"""

from __future__ import annotations

import asyncio
import io
import os
import time
from collections.abc import Awaitable, Callable

from PIL import Image as Picture

from openenv_mcp import BackendUnavailable, ToolFailed
from openenv_mcp.servers.desktop.authority import Authority
from openenv_mcp.servers.desktop.capture import grab
from openenv_mcp.servers.desktop.keys import parse_keys
from openenv_mcp.servers.desktop.models import Acted, ScreenInfo
from openenv_mcp.servers.desktop.settings import DesktopSettings
from openenv_mcp.tools import Image

__all__ = ["BUTTONS", "SCROLL_BUTTONS", "Screen"]

BUTTONS = {"left": "1", "middle": "2", "right": "3"}
SCROLL_BUTTONS = {"up": "4", "down": "5", "left": "6", "right": "7"}
_FRAME_INTERVAL = 0.03  # seconds between frames when waiting for a settled screen


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

    # pictures ---------------------------------------------------------------------------------------

    def _grab(self) -> Picture.Image:
        return grab(self.display, self._cookie)

    def _encode(self, frame: Picture.Image) -> Image[ScreenInfo]:
        settings = self.settings
        self._size = frame.size
        if settings.image_scale < 1.0:
            scaled = (
                max(1, round(frame.width * settings.image_scale)),
                max(1, round(frame.height * settings.image_scale)),
            )
            frame = frame.resize(scaled, Picture.Resampling.BILINEAR, reducing_gap=2.0)
        out = io.BytesIO()
        if settings.image_format == "jpeg":
            frame.convert("RGB").save(out, "JPEG", quality=settings.jpeg_quality)
        else:
            frame.save(out, "PNG", compress_level=1)
        mime = f"image/{settings.image_format}"
        width, height = self._size
        info = ScreenInfo(
            width=width, height=height, image_width=frame.width, image_height=frame.height, mime_type=mime
        )
        return Image(data=out.getvalue(), mime_type=mime, metadata=info)

    async def screenshot(self) -> Image[ScreenInfo]:
        """The whole screen, encoded as the settings say."""
        return await asyncio.to_thread(lambda: self._encode(self._grab()))

    async def size(self) -> tuple[int, int]:
        """The screen's width and height in pixels."""
        if self._size is None:
            answer = await self.xdotool("getdisplaygeometry")
            width, height = answer.split()
            self._size = (int(width), int(height))
        return self._size

    async def settle(self) -> tuple[Picture.Image, bool]:
        """The frame once the screen has settled after an action, and whether it is known to have settled."""
        timeout = self.settings.settle_timeout_ms / 1000
        if self._sync is not None:
            settled = await self._sync()
            return await asyncio.to_thread(self._grab), settled
        deadline = time.monotonic() + timeout
        previous = await asyncio.to_thread(self._grab)
        while True:
            await asyncio.sleep(_FRAME_INTERVAL)  # the pace of the poll; the deadline bounds it
            frame = await asyncio.to_thread(self._grab)
            if frame.tobytes() == previous.tobytes():
                return frame, True
            if time.monotonic() > deadline:
                return frame, False
            previous = frame

    async def acted(self, action: str) -> Image[Acted]:
        """The screen after ``action``, as an image with what was done."""
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

    async def key(self, keys: str, repeat: int) -> str:
        combos = parse_keys(keys)
        # xdotool waits --delay after every key, the last one too: only pay it between keys.
        delay = "12" if len(combos) > 1 or repeat > 1 else "0"
        await self.xdotool("key", "--clearmodifiers", "--repeat", str(repeat), "--delay", delay, *combos)
        return f"key {' '.join(combos)}" + (f" x{repeat}" if repeat > 1 else "")

    async def type(self, text: str) -> str:
        bad = sorted({f"U+{ord(c):04X}" for c in text if not c.isprintable() and c not in "\n\t"})
        if bad:
            raise ToolFailed(
                f"The text holds control characters ({', '.join(bad)}); type only printable text, \\n, \\t"
            )
        delay = self.settings.type_delay_ms
        await self.xdotool(
            "type", "--clearmodifiers", "--delay", str(delay), "--", text, timeout=5 + len(text) * (delay + 5) / 1000
        )
        return f"type {len(text)} characters"

    async def click(self, x: int, y: int, button: str, clicks: int) -> str:
        await self.check_point(x, y)
        delay = "80" if clicks > 1 else "0"  # well inside any double-click interval
        await self.xdotool(
            "mousemove", str(x), str(y), "click", "--repeat", str(clicks), "--delay", delay, BUTTONS[button]
        )
        return f"click {button} at ({x}, {y})" + (f" x{clicks}" if clicks > 1 else "")

    async def move(self, x: int, y: int) -> str:
        await self.check_point(x, y)
        await self.xdotool("mousemove", str(x), str(y))
        return f"move to ({x}, {y})"

    async def drag(self, x: int, y: int, to_x: int, to_y: int, button: str) -> str:
        await self.check_point(x, y)
        await self.check_point(to_x, to_y)
        code = BUTTONS[button]
        middle = (str((x + to_x) // 2), str((y + to_y) // 2))
        await self.xdotool(
            "mousemove", str(x), str(y), "mousedown", code, "mousemove", *middle,
            "mousemove", str(to_x), str(to_y), "mouseup", code,
        )  # fmt: skip
        return f"drag {button} from ({x}, {y}) to ({to_x}, {to_y})"

    async def scroll(self, x: int, y: int, direction: str, amount: int) -> str:
        await self.check_point(x, y)
        code = SCROLL_BUTTONS[direction]
        delay = "10" if amount > 1 else "0"
        await self.xdotool("mousemove", str(x), str(y), "click", "--repeat", str(amount), "--delay", delay, code)
        return f"scroll {direction} x{amount} at ({x}, {y})"

    async def window_title(self, window: int | None = None) -> str:
        """The title of ``window``, or of the window with the keyboard focus."""
        args = ["getwindowname", str(window)] if window is not None else ["getwindowfocus", "-f", "getwindowname"]
        return (await self.xdotool(*args)).rstrip("\n")

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
