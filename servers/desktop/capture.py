"""Screenshots over XCB with an explicit cookie: one connection per grab, as Pillow's ``ImageGrab`` does.

Pillow's ``ImageGrab.grab(xdisplay=...)`` finds its cookie through the process-wide ``XAUTHORITY``,
so one process could not hold a different cookie for every episode's display. This module calls
libxcb (through ``ctypes``) with the cookie given, asks for the root window's pixels (``GetImage``,
Z format) and hands them to Pillow as Pillow's own grab does (24-bit depth, ``BGRX`` rows). With no
cookie it connects as any X client would (``XAUTHORITY``, then ``~/.Xauthority``): prod's display.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from dataclasses import dataclass
from typing import Any

from PIL import Image as Picture

from openenv_mcp import BackendUnavailable
from openenv_mcp.servers.desktop.authority import COOKIE_NAME

__all__ = ["ConnectionRefused", "XConnection", "grab"]

_Z_PIXMAP = 2
_ERRORS = {
    1: "refused or broken (no X server there, or it wants a cookie this client does not have)",
    2: "an extension is missing",
    3: "out of memory",
    4: "request too long",
    5: "the display name could not be parsed",
    6: "no such screen",
}


class ConnectionRefused(BackendUnavailable):
    """The X server could not be reached or refused this client."""


class _AuthInfo(ctypes.Structure):
    _fields_ = [
        ("namelen", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("datalen", ctypes.c_int),
        ("data", ctypes.c_char_p),
    ]


class _ScreenIterator(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rem", ctypes.c_int), ("index", ctypes.c_int)]


class _Screen(ctypes.Structure):  # the fixed start of xcb_screen_t
    _fields_ = [
        ("root", ctypes.c_uint32),
        ("default_colormap", ctypes.c_uint32),
        ("white_pixel", ctypes.c_uint32),
        ("black_pixel", ctypes.c_uint32),
        ("current_input_masks", ctypes.c_uint32),
        ("width_in_pixels", ctypes.c_uint16),
        ("height_in_pixels", ctypes.c_uint16),
    ]


class _Cookie(ctypes.Structure):
    _fields_ = [("sequence", ctypes.c_uint)]


class _ImageReply(ctypes.Structure):  # the fixed start of xcb_get_image_reply_t
    _fields_ = [("response_type", ctypes.c_uint8), ("depth", ctypes.c_uint8)]


@functools.cache
def _library() -> Any:
    try:
        xcb = ctypes.CDLL(ctypes.util.find_library("xcb") or "libxcb.so.1")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError as exc:
        raise BackendUnavailable(f"libxcb is not installed ({exc}): apt-get install libxcb1") from None
    pointer = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    xcb.xcb_connect.restype = pointer
    xcb.xcb_connect_to_display_with_auth_info.argtypes = [
        ctypes.c_char_p,
        ctypes.POINTER(_AuthInfo),
        ctypes.POINTER(ctypes.c_int),
    ]
    xcb.xcb_connect_to_display_with_auth_info.restype = pointer
    xcb.xcb_connection_has_error.argtypes = [pointer]
    xcb.xcb_connection_has_error.restype = ctypes.c_int
    xcb.xcb_disconnect.argtypes = [pointer]
    xcb.xcb_disconnect.restype = None
    xcb.xcb_get_setup.argtypes = [pointer]
    xcb.xcb_get_setup.restype = pointer
    xcb.xcb_setup_roots_iterator.argtypes = [pointer]
    xcb.xcb_setup_roots_iterator.restype = _ScreenIterator
    xcb.xcb_screen_next.argtypes = [ctypes.POINTER(_ScreenIterator)]
    xcb.xcb_screen_next.restype = None
    xcb.xcb_get_image.argtypes = [
        pointer,
        ctypes.c_uint8,
        ctypes.c_uint32,
        ctypes.c_int16,
        ctypes.c_int16,
        ctypes.c_uint16,
        ctypes.c_uint16,
        ctypes.c_uint32,
    ]
    xcb.xcb_get_image.restype = _Cookie
    xcb.xcb_get_image_reply.argtypes = [pointer, _Cookie, ctypes.POINTER(pointer)]
    xcb.xcb_get_image_reply.restype = pointer
    xcb.xcb_get_image_data.argtypes = [pointer]
    xcb.xcb_get_image_data.restype = ctypes.POINTER(ctypes.c_uint8)
    xcb.xcb_get_image_data_length.argtypes = [pointer]
    xcb.xcb_get_image_data_length.restype = ctypes.c_int
    libc.free.argtypes = [pointer]
    libc.free.restype = None
    return xcb, libc


@dataclass(eq=False)
class XConnection:
    """An open XCB connection; use as a context manager (it disconnects on exit)."""

    display: str
    handle: int
    screen: int

    @classmethod
    def open(cls, display: str, cookie: bytes | None = None) -> XConnection:
        """Connect to ``display`` presenting ``cookie`` (None: as X clients do); ConnectionRefused if not."""
        xcb, _ = _library()
        screen = ctypes.c_int(0)
        name = display.encode()
        if cookie is None:
            handle = xcb.xcb_connect(name, ctypes.byref(screen))
        else:
            auth = _AuthInfo(len(COOKIE_NAME), COOKIE_NAME, len(cookie), cookie)
            handle = xcb.xcb_connect_to_display_with_auth_info(name, ctypes.byref(auth), ctypes.byref(screen))
        error = xcb.xcb_connection_has_error(handle)
        if error:
            xcb.xcb_disconnect(handle)  # xcb hands back a static error object: disconnecting it is a no-op
            raise ConnectionRefused(f"The X display {display} is not reachable: connection {_ERRORS.get(error, error)}")
        return cls(display=display, handle=handle, screen=screen.value)

    def __enter__(self) -> XConnection:
        return self

    def __exit__(self, *_: object) -> None:
        xcb, _ = _library()
        xcb.xcb_disconnect(self.handle)

    def grab(self) -> Picture.Image:
        """The root window's pixels (24-bit depth)."""
        data, width, height = self.grab_bgrx()
        return Picture.frombuffer("RGB", (width, height), data, "raw", "BGRX", width * 4, 1)

    def size(self) -> tuple[int, int]:
        """The screen's width and height in pixels (from the connection's setup: no round trip)."""
        screen = self._screen()
        return screen.width_in_pixels, screen.height_in_pixels

    def _screen(self) -> _Screen:
        xcb, _ = _library()
        roots = xcb.xcb_setup_roots_iterator(xcb.xcb_get_setup(self.handle))
        for _ in range(self.screen):
            xcb.xcb_screen_next(ctypes.byref(roots))
        if not roots.data:
            raise BackendUnavailable(f"The X display {self.display} has no screen {self.screen}")
        return _Screen.from_address(roots.data)

    def grab_bgrx(self) -> tuple[bytes, int, int]:
        """The root window's pixels as the server sends them (BGRX rows, 24-bit depth), its width and height."""
        xcb, libc = _library()
        screen = self._screen()
        width, height = screen.width_in_pixels, screen.height_in_pixels
        request = xcb.xcb_get_image(self.handle, _Z_PIXMAP, screen.root, 0, 0, width, height, 0x00FFFFFF)
        error = ctypes.c_void_p()
        reply = xcb.xcb_get_image_reply(self.handle, request, ctypes.byref(error))
        if error.value:
            libc.free(error)
        if not reply:
            raise BackendUnavailable(f"The X display {self.display} refused to give its pixels (GetImage failed)")
        try:
            depth = _ImageReply.from_address(reply).depth
            if depth != 24:
                raise BackendUnavailable(f"The X display {self.display} has depth {depth}; screenshots need 24")
            length = xcb.xcb_get_image_data_length(reply)
            data = ctypes.string_at(xcb.xcb_get_image_data(reply), length)
        finally:
            libc.free(reply)
        if length != width * height * 4:
            raise BackendUnavailable(f"The X display {self.display} sent {length} bytes for a {width}x{height} screen")
        return data, width, height


def grab(display: str, cookie: bytes | None = None) -> Picture.Image:
    """One screenshot of ``display``'s first screen, connecting with ``cookie``."""
    with XConnection.open(display, cookie) as connection:
        return connection.grab()
