"""An X display's authority: a random MIT-MAGIC-COOKIE-1 in an Xauthority file only its owner can read.

Each sim episode's Xvfb is started with ``-auth FILE`` (the server accepts only clients that present
the cookie, on every transport) and the episode's editor and the server's own input and screenshot
clients are given the same file or cookie; no other process holds it. The file is written in the
Xauthority format (the one ``xauth`` reads and writes): one entry, every field a big-endian 16-bit
length and its bytes, with the family ``FamilyWild`` and no display number, so it matches whatever
display number Xvfb picks (``-displayfd``) without being rewritten.
"""

from __future__ import annotations

import os
import secrets
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COOKIE_NAME", "Authority", "xauthority_entry"]

COOKIE_NAME = b"MIT-MAGIC-COOKIE-1"
FAMILY_WILD = 0xFFFF  # any address: the file is private to one display anyway


def xauthority_entry(cookie: bytes, *, family: int = FAMILY_WILD, address: bytes = b"", number: bytes = b"") -> bytes:
    """One Xauthority entry granting ``cookie`` (empty ``number``: any display)."""
    fields = (address, number, COOKIE_NAME, cookie)
    return struct.pack(">H", family) + b"".join(struct.pack(">H", len(field)) + field for field in fields)


@dataclass(frozen=True, slots=True)
class Authority:
    """A display's cookie and the file (mode 0600) that holds it."""

    path: Path
    cookie: bytes

    @classmethod
    def create(cls, path: Path) -> Authority:
        """Draw a fresh 128-bit cookie and write it to ``path``, readable and writable by this user only."""
        cookie = secrets.token_bytes(16)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(descriptor, xauthority_entry(cookie))
        finally:
            os.close(descriptor)
        return cls(path=path, cookie=cookie)

    def __repr__(self) -> str:  # never print the cookie (logs, tracebacks)
        return f"Authority(path={str(self.path)!r})"
