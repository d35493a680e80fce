"""Key names: X keysym names (as xdotool takes them), checked before anything is pressed.

``ctrl+shift+s`` presses a combination, ``ctrl+a BackSpace`` two in turn. Names are X keysyms
(``Return``, ``Escape``, ``BackSpace``, ``Page_Down``, ``F5``, ``a``, ``A``, ``slash``...), matched
exactly first, then without regard to case; a few common spellings (``enter``, ``esc``, ``del``,
``pgdn``, ``cmd``...) are accepted too. The check asks libX11's ``XStringToKeysym``, the function
xdotool itself uses, so a name that passes here is a name xdotool presses.

Keys that act on the X server rather than the application are refused, by keysym value (so a
spelling such as ``0xfed5`` is caught too): ``Terminate_Server`` (XKB's zap: the display exits),
the XFree86 server-action keysyms (``XF86Switch_VT_1``..., ``XF86Ungrab``, ``XF86ClearGrab``,
``XF86LogWindowTree``, ``XF86LogGrabInfo``, video-mode switching), ``Sys_Req``, and the XKB
keyboard-control and mouse-keys keysyms (``AccessX_Enable``, ``Pointer_Button1``...), which change
how the server treats every later key and click.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

from openenv_mcp import ToolFailed

__all__ = ["REFUSED_KEYSYMS", "parse_keys"]

MODIFIERS = {"ctrl": "ctrl", "control": "ctrl", "alt": "alt", "shift": "shift", "super": "super", "meta": "meta"}
ALIASES = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "del": "Delete",
    "delete": "Delete",
    "backspace": "BackSpace",
    "bksp": "BackSpace",
    "tab": "Tab",
    "space": "space",
    "spacebar": "space",
    "pageup": "Page_Up",
    "pgup": "Page_Up",
    "pagedown": "Page_Down",
    "pgdn": "Page_Down",
    "ins": "Insert",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "cmd": "super",
    "win": "super",
    "windows": "super",
    "option": "alt",
    "plus": "plus",
    "minus": "minus",
}
# Keysyms that act on the X server itself, as (first, last) ranges.
REFUSED_KEYSYMS = (
    (0xFED5, 0xFED5),  # Terminate_Server
    (0xFF15, 0xFF15),  # Sys_Req
    (0xFE70, 0xFE7F),  # AccessX_Enable ... AudibleBell_Enable: keyboard controls
    (0xFEE0, 0xFEFF),  # Pointer_Left ... Pointer_Drag5: mouse keys
    (0x1008FE01, 0x1008FEFF),  # XF86Switch_VT_1..12, XF86Ungrab, XF86ClearGrab, XF86*_VMode, XF86Log*
)
_REFUSED_NAMES: tuple[str, ...] = ("terminate_server", "sys_req", "accessx", "pointer_", "xf86switch_vt")
_REFUSED_NAMES += ("xf86ungrab", "xf86cleargrab", "xf86next_vmode", "xf86prev_vmode", "xf86log")
HOW = (
    "use X key names such as Return, Escape, Tab, BackSpace, Delete, Up, Page_Down, F5, a, A, slash, "
    "with modifiers ctrl, alt, shift, super joined by '+' (ctrl+shift+s); separate successive keys with spaces"
)


@functools.cache
def _string_to_keysym() -> Callable[[bytes], int] | None:
    name = ctypes.util.find_library("X11")
    try:
        library = ctypes.CDLL(name or "libX11.so.6")
    except OSError:
        return None
    function = library.XStringToKeysym
    function.argtypes = [ctypes.c_char_p]
    function.restype = ctypes.c_ulong
    lookup: Callable[[bytes], int] = function
    return lookup


def _keysym(name: str) -> int | None:
    """The keysym ``name`` stands for (-1: plausible, but no libX11 to ask), or None."""
    lookup = _string_to_keysym()
    if lookup is None:  # no libX11 here: xdotool's own complaint is checked after the call
        return -1 if name.isascii() and name.replace("_", "").isalnum() else None
    return lookup(name.encode("ascii", "replace")) or None


def _is_keysym(name: str) -> bool:
    return _keysym(name) is not None


def _acts_on_the_server(name: str) -> bool:
    value = _keysym(name)
    if value is not None and any(first <= value <= last for first, last in REFUSED_KEYSYMS):
        return True
    return name.lower().startswith(_REFUSED_NAMES)


def _key(name: str) -> str | None:
    """The keysym or modifier name xdotool understands for ``name``, or None."""
    lowered = name.lower()
    if lowered in MODIFIERS:
        return MODIFIERS[lowered]
    if lowered in ALIASES and len(name) > 1:
        alias = ALIASES[lowered]
        return alias if alias in MODIFIERS or _is_keysym(alias) else None
    for candidate in dict.fromkeys((name, name.capitalize(), name.upper(), lowered)):
        if candidate.isascii() and _is_keysym(candidate):
            return candidate
    return None


def parse_keys(keys: str) -> list[str]:
    """Split ``keys`` into xdotool combinations (``["ctrl+s"]``); unknown names raise ToolFailed with the fix."""
    combos = keys.split()
    if not combos:
        raise ToolFailed(f"No key given; {HOW}")
    parsed = []
    for combo in combos:
        names = []
        for part in combo.split("+"):
            found = _key(part) if part else None
            if found is None:
                shown = part or "(empty: write plus for the + key)"
                raise ToolFailed(f"Unknown key name {shown!r} in {combo!r}; {HOW}")
            if _acts_on_the_server(found):
                raise ToolFailed(
                    f"The key {part!r} in {combo!r} acts on the X server itself (it could end or lock this "
                    f"episode's display), so it is refused and nothing was pressed; press keys the application "
                    f"handles instead: {HOW}"
                )
            names.append(found)
        *modifiers, _ = names
        if any(m not in MODIFIERS.values() for m in modifiers):
            raise ToolFailed(f"In {combo!r} only the last key may be a non-modifier; {HOW}")
        parsed.append("+".join(names))
    return parsed
