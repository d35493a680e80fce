"""Screenshots over XCB: the root window's pixels (``GetImage``, Z format) on an open connection.

The connection is the episode's one X connection (:mod:`openenv_mcp.servers.desktop.xdo` opens it with
libX11, presenting the episode's cookie, and hands over its XCB side): no connection per grab. Pixels
come back as the server keeps them (24-bit depth, ``BGRX`` rows, as Pillow's own grab takes them);
Pillow's ``ImageGrab`` could not be used, as it finds its cookie through the process-wide ``XAUTHORITY``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from dataclasses import dataclass
from typing import Any

from openenv_mcp import BackendUnavailable

__all__ = ["XConnection"]

_Z_PIXMAP = 2


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
    """The XCB side of an open connection (owned, and closed, by whoever opened it) and its screen number."""

    display: str
    handle: int
    screen: int

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
