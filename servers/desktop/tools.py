"""The desktop tools: look at the screen, press keys, type, and use the mouse. The same in sim and prod.

Every action returns the screen as it is once the application has handled the action (an MCP
image block), with what was done as structured content. Coordinates are screen pixels, (0, 0)
at the top left, also when screenshots are scaled down (``DESKTOP_IMAGE_SCALE``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from openenv_mcp import Toolbox
from openenv_mcp.environment.tools import Image
from openenv_mcp.servers.desktop.backends import DesktopBackend
from openenv_mcp.servers.desktop.models import Acted, ScreenInfo

__all__ = ["tools"]

tools: Toolbox[DesktopBackend] = Toolbox("desktop")

X = Annotated[int, Field(ge=0, le=16_383)]
Y = Annotated[int, Field(ge=0, le=16_383)]
Button = Literal["left", "middle", "right"]


@tools.tool(title="Take Screenshot", read_only=True, destructive=False, idempotent=True, open_world=False)
async def screenshot(desk: DesktopBackend) -> Image[ScreenInfo]:
    """Take a screenshot of the whole screen."""
    return await desk.screen.screenshot()


@tools.tool(title="Press Key", read_only=False, destructive=True, idempotent=False, open_world=True)
async def key(
    desk: DesktopBackend,
    keys: Annotated[str, Field(min_length=1, max_length=200)],
    repeat: Annotated[int, Field(ge=1, le=50)] = 1,
) -> Image[Acted]:
    """Press a key or a key combination, e.g. "Return", "ctrl+s", "alt+f", "ctrl+shift+s".

    Names are X key names (Return, Escape, Tab, BackSpace, Delete, Up, Down, Page_Down, Home, F5,
    a, A, slash...) with modifiers ctrl, alt, shift, super joined by '+'. Several keys separated
    by spaces are pressed in turn ("ctrl+a BackSpace").

    Args:
        keys: The key or keys to press.
        repeat: How many times to press them.
    """
    return await desk.screen.acted(await desk.screen.key(keys, repeat))


@tools.tool(title="Type Text", read_only=False, destructive=True, idempotent=False, open_world=True)
async def type_text(desk: DesktopBackend, text: Annotated[str, Field(min_length=1, max_length=2_000)]) -> Image[Acted]:
    """Type text with the keyboard, into whatever has the keyboard focus ("\\n" presses Enter).

    Args:
        text: The text to type.
    """
    return await desk.screen.acted(await desk.screen.type(text))


@tools.tool(title="Click", read_only=False, destructive=True, idempotent=False, open_world=True)
async def click(
    desk: DesktopBackend,
    x: X,
    y: Y,
    button: Button = "left",
    clicks: Annotated[int, Field(ge=1, le=3)] = 1,
) -> Image[Acted]:
    """Move the mouse to (x, y) and click.

    Args:
        x: Pixels from the left edge of the screen.
        y: Pixels from the top edge of the screen.
        button: Which button.
        clicks: 2 for a double click, 3 for a triple click.
    """
    return await desk.screen.acted(await desk.screen.click(x, y, button, clicks))


@tools.tool(title="Move Mouse", read_only=False, destructive=False, idempotent=True, open_world=True)
async def move_mouse(desk: DesktopBackend, x: X, y: Y) -> Image[Acted]:
    """Move the mouse pointer to (x, y) without clicking.

    Args:
        x: Pixels from the left edge of the screen.
        y: Pixels from the top edge of the screen.
    """
    return await desk.screen.acted(await desk.screen.move(x, y))


@tools.tool(title="Drag", read_only=False, destructive=True, idempotent=False, open_world=True)
async def drag(desk: DesktopBackend, x: X, y: Y, to_x: X, to_y: Y, button: Button = "left") -> Image[Acted]:
    """Press a mouse button at (x, y), move to (to_x, to_y) holding it, and release it (select text, move things).

    Args:
        x: Where to press, from the left edge.
        y: Where to press, from the top edge.
        to_x: Where to release, from the left edge.
        to_y: Where to release, from the top edge.
        button: Which button to hold.
    """
    return await desk.screen.acted(await desk.screen.drag(x, y, to_x, to_y, button))


@tools.tool(title="Scroll", read_only=False, destructive=False, idempotent=False, open_world=True)
async def scroll(
    desk: DesktopBackend,
    x: X,
    y: Y,
    direction: Literal["up", "down", "left", "right"] = "down",
    amount: Annotated[int, Field(ge=1, le=25)] = 3,
) -> Image[Acted]:
    """Scroll with the mouse wheel over (x, y).

    Args:
        x: Where to scroll, from the left edge.
        y: Where to scroll, from the top edge.
        direction: Which way.
        amount: How many wheel steps.
    """
    return await desk.screen.acted(await desk.screen.scroll(x, y, direction, amount))
