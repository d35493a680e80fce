"""Key names: X keysym names (as xdotool takes them), checked before anything is pressed.

``ctrl+shift+s`` presses a combination, ``ctrl+a BackSpace`` two in turn. Names are X keysyms
(``Return``, ``Escape``, ``BackSpace``, ``Page_Down``, ``F5``, ``a``, ``A``, ``slash``...), matched
exactly first, then without regard to case; a few common spellings (``enter``, ``esc``, ``del``,
``pgdn``, ``cmd``...) are accepted too. The check asks libX11's ``XStringToKeysym``, the function
xdotool itself uses, so a name that passes here is a name xdotool presses.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

from openenv_mcp import ToolFailed

__all__ = ["parse_keys"]

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


def _is_keysym(name: str) -> bool:
    lookup = _string_to_keysym()
    if lookup is None:  # no libX11 here: xdotool's own complaint is checked after the call
        return name.isascii() and name.replace("_", "").isalnum()
    return bool(lookup(name.encode("ascii", "replace")))


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
            names.append(found)
        *modifiers, _ = names
        if any(m not in MODIFIERS.values() for m in modifiers):
            raise ToolFailed(f"In {combo!r} only the last key may be a non-modifier; {HOW}")
        parsed.append("+".join(names))
    return parsed
