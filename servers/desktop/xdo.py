"""Input over one X connection per display: libxdo (xdotool's own library) through ``ctypes``.

``xdotool`` as a process per action cost 3-4 ms of fork, exec, connect and keymap reading before
it pressed anything. :class:`XInput` opens the display once (libX11, presenting the episode's
cookie when there is one) and hands that connection to libxdo, the library the ``xdotool``
command is built on (Debian's ``libxdo3``, which ``xdotool`` depends on): every action calls the
same functions, with the same arguments, that ``xdotool key --clearmodifiers``, ``type``,
``mousemove``, ``click``, ``mousedown`` and ``mouseup`` call, so key names, typing (any character,
a spare keycode remapped when the keymap lacks one), clicks and delays behave exactly as before.
Each action ends with ``XSync``: the X server has handled its input before the caller asks the
application whether it has.

Xlib's defaults end the process on an X error (a window that went away) or a broken connection
(the display exited). Here protocol errors are ignored (libxdo reports failures by return value),
and a broken connection marks the connection dead (``XSetIOErrorExitHandler``, libX11 1.7+): the
action raises BackendUnavailable and the server carries on. The cookie is given to libX11 with
``XSetAuthorization`` just for the connect, under a lock, and cleared again: it is process-wide.
Calls on one connection are serialised by its lock; libX11 is put into its thread-safe mode.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from openenv_mcp import BackendUnavailable, ToolFailed
from openenv_mcp.servers.desktop.authority import COOKIE_NAME
from openenv_mcp.servers.desktop.capture import XConnection

__all__ = ["XInput"]

CURRENT_WINDOW = 0
T = TypeVar("T")

_connect_lock = threading.Lock()  # XSetAuthorization is process-wide: one connect at a time
_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_IO_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_IO_EXIT_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


_dead: set[int] = set()  # displays whose connection broke


def _ignore_error(_display: int | None, _event: int | None) -> int:
    return 0  # a BadWindow and the like: libxdo's return value says the call failed


def _io_error(_display: int | None) -> int:
    return 0  # then the display's exit handler runs (below): no exit()


def _io_exit(display: int | None, _data: int | None) -> None:
    if display:
        _dead.add(display)


# Kept referenced for as long as the process lives: libX11 calls them.
_ERROR_CALLBACK = _ERROR_HANDLER(_ignore_error)
_IO_ERROR_CALLBACK = _IO_ERROR_HANDLER(_io_error)
_IO_EXIT_CALLBACK = _IO_EXIT_HANDLER(_io_exit)


@functools.cache
def _libraries() -> tuple[Any, Any, Any, Any]:
    try:
        x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        x11_xcb = ctypes.CDLL(ctypes.util.find_library("X11-xcb") or "libX11-xcb.so.1")
        xdo = ctypes.CDLL(ctypes.util.find_library("xdo") or "libxdo.so.3")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError as exc:
        raise BackendUnavailable(
            f"libxdo or libX11 is not installed ({exc}): apt-get install xdotool (it brings libxdo3)"
        ) from None
    p, i, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
    x11.XInitThreads.argtypes, x11.XInitThreads.restype = [], ctypes.c_int
    x11.XInitThreads()
    x11.XSetAuthorization.argtypes, x11.XSetAuthorization.restype = [ctypes.c_char_p, i, ctypes.c_char_p, i], None
    x11.XOpenDisplay.argtypes, x11.XOpenDisplay.restype = [ctypes.c_char_p], p
    x11.XCloseDisplay.argtypes, x11.XCloseDisplay.restype = [p], i
    x11.XSync.argtypes, x11.XSync.restype = [p, i], i
    x11.XFree.argtypes, x11.XFree.restype = [p], i
    x11.XDefaultScreen.argtypes, x11.XDefaultScreen.restype = [p], i
    x11.XInternAtom.argtypes, x11.XInternAtom.restype = [p, ctypes.c_char_p, i], ctypes.c_ulong
    ul, pul = ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong)
    x11.XGetWindowProperty.argtypes = [p, ul, ul, ctypes.c_long, ctypes.c_long, i, ul, pul, ctypes.POINTER(i)]
    x11.XGetWindowProperty.argtypes += [pul, pul, ctypes.POINTER(p)]
    x11.XGetWindowProperty.restype = i
    x11_xcb.XGetXCBConnection.argtypes, x11_xcb.XGetXCBConnection.restype = [p], p
    x11.XSetErrorHandler.argtypes, x11.XSetErrorHandler.restype = [_ERROR_HANDLER], p
    x11.XSetIOErrorHandler.argtypes, x11.XSetIOErrorHandler.restype = [_IO_ERROR_HANDLER], p
    x11.XSetIOErrorExitHandler.argtypes = [p, _IO_EXIT_HANDLER, p]
    x11.XSetIOErrorExitHandler.restype = None
    x11.XSetErrorHandler(_ERROR_CALLBACK)
    x11.XSetIOErrorHandler(_IO_ERROR_CALLBACK)
    xdo.xdo_new_with_opened_display.argtypes, xdo.xdo_new_with_opened_display.restype = [p, ctypes.c_char_p, i], p
    xdo.xdo_free.argtypes, xdo.xdo_free.restype = [p], None
    xdo.xdo_send_keysequence_window.argtypes = [p, ctypes.c_ulong, ctypes.c_char_p, u]
    xdo.xdo_enter_text_window.argtypes = [p, ctypes.c_ulong, ctypes.c_char_p, u]
    xdo.xdo_move_mouse.argtypes = [p, i, i, i]
    xdo.xdo_click_window_multiple.argtypes = [p, ctypes.c_ulong, i, i, u]
    xdo.xdo_mouse_down.argtypes = [p, ctypes.c_ulong, i]
    xdo.xdo_mouse_up.argtypes = [p, ctypes.c_ulong, i]
    xdo.xdo_get_active_modifiers.argtypes = [p, ctypes.POINTER(p), ctypes.POINTER(i)]
    xdo.xdo_clear_active_modifiers.argtypes = [p, ctypes.c_ulong, p, i]
    xdo.xdo_set_active_modifiers.argtypes = [p, ctypes.c_ulong, p, i]
    for name in (
        "xdo_send_keysequence_window",
        "xdo_enter_text_window",
        "xdo_move_mouse",
        "xdo_click_window_multiple",
        "xdo_mouse_down",
        "xdo_mouse_up",
        "xdo_get_active_modifiers",
        "xdo_clear_active_modifiers",
        "xdo_set_active_modifiers",
    ):
        getattr(xdo, name).restype = i
    libc.free.argtypes, libc.free.restype = [p], None
    return x11, xdo, libc, x11_xcb


class XInput:
    """One display's keyboard and mouse (XTEST through libxdo), over one persistent connection."""

    def __init__(self, display: str, x11_display: int, context: int) -> None:
        x11, _, _, x11_xcb = _libraries()
        self.display = display
        self._dpy = x11_display
        self._xdo = context
        # The same connection, seen through XCB, for screenshots.
        self._xcb = XConnection(display, x11_xcb.XGetXCBConnection(x11_display), x11.XDefaultScreen(x11_display))
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def open(cls, display: str, cookie: bytes | None = None) -> XInput:
        """Connect to ``display`` presenting ``cookie`` (None: as X clients do); BackendUnavailable if refused."""
        x11, xdo, _, _ = _libraries()
        with _connect_lock:
            if cookie is not None:
                x11.XSetAuthorization(COOKIE_NAME, len(COOKIE_NAME), cookie, len(cookie))
            try:
                dpy = x11.XOpenDisplay(display.encode())
            finally:
                if cookie is not None:
                    x11.XSetAuthorization(None, 0, None, 0)
        if not dpy:
            raise BackendUnavailable(
                f"The X display {display} is not reachable (refused, or it wants a cookie this client does not have)"
            )
        x11.XSetIOErrorExitHandler(dpy, _IO_EXIT_CALLBACK, None)
        context = xdo.xdo_new_with_opened_display(dpy, display.encode(), 1)
        if not context:
            x11.XCloseDisplay(dpy)
            raise BackendUnavailable(f"libxdo could not use the X display {display}")
        return cls(display, dpy, context)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _, xdo, _, _ = _libraries()
            xdo.xdo_free(self._xdo)  # closes the display too
            _dead.discard(self._dpy)

    def _run(self, what: str, action: Callable[[Any, int], T], *, sync: bool = True) -> T:
        """Run ``action(libxdo, context)`` on this connection, then XSync; a broken connection is a 503."""
        x11, xdo, _, _ = _libraries()
        with self._lock:
            if self._closed:
                raise BackendUnavailable(f"The connection to the X display {self.display} is closed")
            self._check(what)
            result = action(xdo, self._xdo)
            if sync:
                x11.XSync(self._dpy, 0)
            self._check(what)
            return result

    def _check(self, what: str) -> None:
        if self._dpy in _dead:
            raise BackendUnavailable(f"The X display {self.display} went away (its connection broke; {what})")

    def _cleared(self, what: str, action: Callable[[Any, int], int]) -> None:
        """``action`` with the active modifiers released around it (xdotool's ``--clearmodifiers``)."""
        _, _, libc, _ = _libraries()

        def run(xdo: Any, context: int) -> int:
            active, count = ctypes.c_void_p(), ctypes.c_int(0)
            xdo.xdo_get_active_modifiers(context, ctypes.byref(active), ctypes.byref(count))
            xdo.xdo_clear_active_modifiers(context, CURRENT_WINDOW, active, count)
            try:
                return action(xdo, context)
            finally:
                xdo.xdo_set_active_modifiers(context, CURRENT_WINDOW, active, count)
                libc.free(active)

        if self._run(what, run) != 0:
            raise ToolFailed(f"{what} failed on the X display {self.display}")

    def grab_bgrx(self) -> tuple[bytes, int, int]:
        """The screen's pixels (BGRX rows), width and height, over this connection."""
        return self._run("screenshot", lambda _xdo, _c: self._xcb.grab_bgrx(), sync=False)

    def size(self) -> tuple[int, int]:
        """The screen's width and height in pixels."""
        return self._xcb.size()

    # xdotool's commands, one call each -------------------------------------------------------------

    def key(self, combos: list[str], repeat: int, delay_ms: int) -> None:
        """``xdotool key --clearmodifiers --repeat R --delay D COMBO...``."""

        def run(xdo: Any, context: int) -> int:
            failed = 0
            for _ in range(repeat):
                for combo in combos:
                    failed += xdo.xdo_send_keysequence_window(context, CURRENT_WINDOW, combo.encode(), delay_ms * 1000)
            return failed

        self._cleared("key", run)

    def type(self, text: str, delay_ms: int) -> None:
        """``xdotool type --clearmodifiers --delay D -- TEXT``."""
        data = text.encode()
        self._cleared("type", lambda xdo, c: xdo.xdo_enter_text_window(c, CURRENT_WINDOW, data, delay_ms * 1000))

    def move(self, x: int, y: int) -> None:
        """``xdotool mousemove X Y`` (screen 0)."""
        if self._run("mousemove", lambda xdo, c: xdo.xdo_move_mouse(c, x, y, 0)) != 0:
            raise ToolFailed(f"mousemove failed on the X display {self.display}")

    def click(self, button: int, clicks: int, delay_ms: int) -> None:
        """``xdotool click --repeat N --delay D BUTTON``."""
        run: Callable[[Any, int], int] = lambda xdo, c: xdo.xdo_click_window_multiple(  # noqa: E731
            c, CURRENT_WINDOW, button, clicks, delay_ms * 1000
        )
        if self._run("click", run) != 0:
            raise ToolFailed(f"click failed on the X display {self.display}")

    def button(self, button: int, down: bool) -> None:
        """``xdotool mousedown BUTTON`` or ``mouseup BUTTON``."""
        if down:
            failed = self._run("mousedown", lambda xdo, c: xdo.xdo_mouse_down(c, CURRENT_WINDOW, button))
        else:
            failed = self._run("mouseup", lambda xdo, c: xdo.xdo_mouse_up(c, CURRENT_WINDOW, button))
        if failed != 0:
            raise ToolFailed(f"mouse{'down' if down else 'up'} failed on the X display {self.display}")

    def window_name(self, window: int) -> str:
        """``xdotool getwindowname WINDOW``: its ``_NET_WM_NAME``, else its ``WM_NAME``.

        Read here rather than with libxdo's ``xdo_get_window_name``, which keeps the atoms it interns
        in process-wide variables: right for the one display a ``xdotool`` process knows, not for a
        process talking to many displays, each with its own atom numbers.
        """
        x11, _, _, _ = _libraries()

        def run(_xdo: Any, _context: int) -> str:
            for name in (b"_NET_WM_NAME", b"WM_NAME"):
                atom = x11.XInternAtom(self._dpy, name, 0)
                kind, size, count, after = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong()
                data = ctypes.c_void_p()
                status = x11.XGetWindowProperty(
                    self._dpy, window, atom, 0, 0x7FFFFFFF, 0, 0,  # AnyPropertyType
                    ctypes.byref(kind), ctypes.byref(size), ctypes.byref(count), ctypes.byref(after),
                    ctypes.byref(data),
                )  # fmt: skip
                if status != 0:
                    raise ToolFailed(f"getwindowname failed for window {window} on the X display {self.display}")
                try:
                    if count.value and data.value and size.value == 8:
                        return ctypes.string_at(data.value, count.value).decode(errors="replace")
                finally:
                    if data.value:
                        x11.XFree(data)
            return ""

        return self._run("getwindowname", run, sync=False)
