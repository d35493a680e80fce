"""A message's MIME tree as IMAP's BODYSTRUCTURE describes it (RFC 3501 7.4.2), read without fetching the parts.

:func:`parts_of` parses the structure out of a FETCH answer into its leaves; :func:`text_part`
picks the part shown as the body (as the ``email`` package's ``get_body`` does); :func:`base64_size`
works out an attachment's decoded size from the two ends of its encoded form.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

__all__ = ["Part", "base64_size", "estimate", "parts_of", "text_part"]


@dataclass(frozen=True, slots=True)
class Part:
    """One leaf of a message's MIME tree, as BODYSTRUCTURE describes it."""

    number: str  # the IMAP part specifier ("1", "2.1")
    content_type: str
    disposition: str | None
    encoding: str
    size: int  # octets as transferred (encoded)


def _sexp(text: bytes, pos: int, depth: int = 0) -> tuple[Any, int]:
    """One IMAP value at ``pos``: a parenthesized list, a quoted string, NIL (None) or an atom."""
    while pos < len(text) and text[pos : pos + 1] == b" ":
        pos += 1
    if pos >= len(text) or depth > 50:
        raise ValueError("truncated or too deeply nested BODYSTRUCTURE")
    char = text[pos : pos + 1]
    if char == b"(":
        items: list[Any] = []
        pos += 1
        while True:
            while text[pos : pos + 1] == b" ":
                pos += 1
            if text[pos : pos + 1] == b")":
                return items, pos + 1
            item, pos = _sexp(text, pos, depth + 1)
            items.append(item)
    if char == b'"':
        out = bytearray()
        pos += 1
        while pos < len(text) and text[pos : pos + 1] != b'"':
            if text[pos : pos + 1] == b"\\":
                pos += 1
            out += text[pos : pos + 1]
            pos += 1
        return bytes(out), pos + 1
    end = pos
    while end < len(text) and text[end : end + 1] not in (b" ", b"(", b")"):
        end += 1
    atom = text[pos:end]
    return (None if atom.upper() == b"NIL" else atom), end


def _str(value: Any) -> str:
    return value.decode("utf-8", "replace").lower() if isinstance(value, bytes) else ""


def _walk(node: Any, prefix: str) -> list[Part]:
    if not isinstance(node, list) or not node:
        return []
    if isinstance(node[0], list):  # multipart: its parts, then its subtype and extensions
        found: list[Part] = []
        for index, child in enumerate(itertools.takewhile(lambda c: isinstance(c, list), node)):
            found += _walk(child, f"{prefix}.{index + 1}" if prefix else str(index + 1))
        return found
    maintype, subtype = _str(node[0]), _str(node[1]) if len(node) > 1 else ""
    size = node[6] if len(node) > 6 else b"0"
    extension = 8 if maintype == "text" else 10 if (maintype, subtype) == ("message", "rfc822") else 7
    disposition = node[extension + 1] if len(node) > extension + 1 else None
    return [
        Part(
            number=prefix or "1",
            content_type=f"{maintype}/{subtype}",
            disposition=_str(disposition[0]) if isinstance(disposition, list) and disposition else None,
            encoding=_str(node[5]) if len(node) > 5 else "7bit",
            size=int(size) if isinstance(size, bytes) and size.isdigit() else 0,
        )
    ]


def parts_of(text: bytes) -> list[Part]:
    """The leaves of the BODYSTRUCTURE in a FETCH answer's text (empty when it has none or it is malformed)."""
    start = text.find(b"BODYSTRUCTURE ")
    if start < 0:
        return []
    try:
        tree, _ = _sexp(text, start + len(b"BODYSTRUCTURE "))
    except (ValueError, IndexError):
        return []
    return _walk(tree, "")


def base64_size(size: int, head: bytes, tail: bytes) -> int:
    """The decoded size of a base64 part of ``size`` octets in lines of equal length, from its two ends.

    With lines of L characters and CRLF, a part of k lines is ``size = (k - 1)(L + 2) + r + 2``:
    k = ceil(size / (L + 2)), the characters are ``size - 2k``, and ``=`` padding ends the last line.
    Anything else (other line ends, ragged lines) falls back to an estimate.
    """
    line = head.find(b"\r\n")
    if line <= 0 or line % 4:
        return size * 57 // 78
    whole = size if tail.endswith(b"\r\n") else size + 2  # the last line's CRLF may belong to the boundary
    lines = -(-whole // (line + 2))
    chars = whole - 2 * lines
    padding = len(tail.rstrip(b"\r\n")) - len(tail.rstrip(b"\r\n").rstrip(b"="))
    if chars % 4 or padding > 2:
        return size * 57 // 78
    return chars // 4 * 3 - padding


def estimate(part: Part) -> int:
    if part.encoding == "base64":
        return part.size * 57 // 78  # 76 characters of base64 and CRLF carry 57 bytes
    return part.size


def text_part(parts: list[Part]) -> Part | None:
    """The part shown as the body: the first plain-text part that is not an attachment, else the first HTML one."""
    for wanted in ("text/plain", "text/html"):
        for part in parts:
            if part.content_type == wanted and part.disposition != "attachment":
                return part
    return None
