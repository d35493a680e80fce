"""Header values: checked before we emit them, cleaned when they come from inbound mail, verified once serialized.

Why not trust the ``email`` package: up to 3.11.9 (and 3.12.4) it decodes an encoded word when a
header is set (``=?utf-8?q?x=0D=0ABcc=3A_a@evil.example?=`` becomes ``x\\r\\nBcc: a@evil.example``)
and writes the decoded line break back out unquoted (CVE-2024-6923): a Subject can carry a Bcc, a
second From, or a whole new body. A value encoded twice survives one decoding and strikes on the
next, so one check of the raw text is not enough. Three fences, none relying on the interpreter:

- :func:`check` (what an agent asks us to emit): every decoding layer of the value, down to the
  fixed point, must be one line of text; otherwise a :class:`~openenv_mcp.ToolFailed` naming the field.
- :func:`clean` (what inbound mail hands us for a reply or a forward, and what we show): decoded
  to the fixed point, line breaks and controls turned into spaces, encoded-word syntax left over
  neutralized, length capped. It never raises.
- :func:`verify` (the bytes about to go out): the header block holds exactly the header lines we
  set, each part only the MIME headers a part may have; anything else refuses the send.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from openenv_mcp import ToolFailed

__all__ = [
    "UnsafeMessage",
    "check",
    "clean",
    "clean_filename",
    "decoded",
    "msg_ids",
    "offending",
    "one_line",
    "serialize",
    "verify",
]

_LAYERS = 5  # decodings tried before a value that keeps changing is called hostile
_HEADER = policy.default.header_factory
# C0 and C1 controls (CR, LF, NUL, U+0085...), DEL, unpaired surrogates, and the Unicode line and
# paragraph separators (U+2028, U+2029) that str.splitlines() treats as line ends.
_BAD_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
_FIELD_NAME = re.compile(rb"^[!-9;-~]+:")
_MSG_ID = re.compile(r"<[!-;=?-~]{1,250}>")  # printable ASCII without < and >, no spaces
_PART_HEADERS = frozenset({"content-type", "content-transfer-encoding", "content-disposition", "mime-version"})


class UnsafeMessage(ToolFailed):
    """The serialized message is not the message we composed; it was not sent."""


def offending(text: str) -> str | None:
    """The first character of ``text`` no header may hold (a line break or a control), named; else None."""
    for char in text:
        if unicodedata.category(char) in _BAD_CATEGORIES:
            name = unicodedata.name(char, "") or {"\r": "CARRIAGE RETURN", "\n": "LINE FEED", "\0": "NUL"}.get(
                char, "CONTROL CHARACTER"
            )
            return f"U+{ord(char):04X} {name}".strip()
    return None


def _decode_once(text: str) -> str:
    """``text`` as the email package reads an unstructured header (encoded words decoded)."""
    try:
        return str(_HEADER("subject", text))
    except Exception:
        return text


def _layers(text: str) -> list[str]:
    """``text``, then each decoding of it until nothing changes (at most a few)."""
    layers = [text]
    for _ in range(_LAYERS):
        if not ("=?" in layers[-1] and "?=" in layers[-1]):
            break
        nxt = _decode_once(layers[-1])
        if nxt == layers[-1]:
            break
        layers.append(nxt)
    return layers


def decoded(text: str) -> str:
    """``text`` with its encoded words decoded, repeatedly, to the fixed point."""
    return _layers(text)[-1]


def check(field: str, value: str, *, limit: int = 998) -> str:
    """An agent's header value, decoded; a tool error naming ``field`` when any layer is not one line of text."""
    layers = _layers(value)
    for depth, layer in enumerate(layers):
        bad = offending(layer)
        if bad is not None:
            where = "" if depth == 0 else " once its encoded words (=?charset?q?...?=) are decoded"
            raise ToolFailed(
                f"The {field} holds {bad}{where}; a header must be one line of text without control "
                f"characters. Remove it and try again; nothing was sent"
            )
    final = layers[-1]
    if "=?" in final and _decode_once(final) != final:
        raise ToolFailed(
            f"The {field} nests encoded words (=?charset?q?...?=) more than {_LAYERS} deep; write it as plain "
            "text; nothing was sent"
        )
    if len(final) > limit:
        raise ToolFailed(f"The {field} is {len(final)} characters long; at most {limit} are allowed")
    return final


def one_line(text: str) -> str:
    """``text`` with every line break and control turned into a space (surrogates into U+FFFD), spaces collapsed."""
    out = []
    for char in text:
        category = unicodedata.category(char)
        out.append("\ufffd" if category == "Cs" else " " if category in _BAD_CATEGORIES else char)
    return " ".join("".join(out).split())


def clean(value: str, *, limit: int = 998) -> str:
    """An inbound header value made safe to show and to emit again: one line, decoded, capped. Never raises.

    Only the first ``4 * limit`` characters are looked at, so a huge hostile header costs little.
    """
    text = one_line(value[: 4 * limit])
    for _ in range(_LAYERS):
        nxt = one_line(decoded(text))
        if nxt == text:
            break
        text = nxt
    if "=?" in text and _decode_once(text) != text:
        text = text.replace("=?", "= ?")  # still decodes to something else: no encoded word survives
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def clean_filename(name: str | None) -> str:
    """An inbound attachment's filename made safe: one line, no directories, no encoded words, capped."""
    text = clean(name or "", limit=1000)
    text = re.split(r"[/\\]", text)[-1].strip().lstrip(".").replace("=?", "= ?").replace('"', "'")
    return text[:200] or "attachment"


def msg_ids(value: str, *, keep: int = 30) -> list[str]:
    """The well-formed ``<id@host>`` tokens of an inbound In-Reply-To or References (the last ``keep``).

    Anything else (encoded words included) is dropped: a Message-ID is printable ASCII by definition.
    """
    found = [token for token in _MSG_ID.findall(value) if "=?" not in token and "?=" not in token]
    return list(dict.fromkeys(found))[-keep:]


def verify(raw: bytes, *, headers: list[str], attachments: int) -> None:
    """Refuse ``raw`` unless its header block is exactly the ``headers`` we set and its parts are ours.

    Checks every line of every header block: a field line or a folded continuation, CRLF-ended,
    without NUL; the top block's field names, in order, must be ``headers``; each part may hold
    only its MIME headers, each once; the attachments must be the ``attachments`` we added.
    """
    head, sep, _ = raw.partition(b"\r\n\r\n")
    if not sep:
        raise UnsafeMessage("The message has no header block; nothing was sent")
    names = _block_names(head)
    if [n.lower() for n in names] != [h.lower() for h in headers]:
        extra = sorted(set(n.lower() for n in names) ^ set(h.lower() for h in headers)) or names
        raise UnsafeMessage(
            f"The composed message would carry other headers than it should ({', '.join(extra)}); nothing was sent"
        )
    parsed = BytesParser(policy=policy.compat32).parsebytes(raw)
    found = 0
    for part in parsed.walk():
        if part is parsed:
            continue
        counts = Counter(k.lower() for k in part)
        if not set(counts) <= _PART_HEADERS or any(c > 1 for c in counts.values()):
            raise UnsafeMessage(f"A part of the message carries unexpected headers ({dict(counts)}); nothing was sent")
        if part.get_content_disposition() == "attachment":
            found += 1
    if found != attachments:
        raise UnsafeMessage(
            f"The message would carry {found} attachments, not the {attachments} meant; nothing was sent"
        )


def _block_names(block: bytes) -> list[str]:
    names: list[str] = []
    for line in block.split(b"\r\n"):
        if b"\r" in line or b"\n" in line or b"\0" in line:
            raise UnsafeMessage("A header line holds a bare line break or NUL; nothing was sent")
        if line[:1] in (b" ", b"\t"):
            if not names:
                raise UnsafeMessage("The header block starts with a continuation line; nothing was sent")
            continue
        field = _FIELD_NAME.match(line)
        if field is None:
            raise UnsafeMessage(f"A header line is not a header field ({line[:40]!r}); nothing was sent")
        names.append(field.group(0)[:-1].decode("ascii"))
    return names


def serialize(message: EmailMessage) -> bytes:
    """``message`` as bytes, with the interpreter's own header check on where it has one (3.12.5+, 3.11.10+)."""
    strict = message.policy
    if hasattr(strict, "verify_generated_headers"):
        strict = strict.clone(verify_generated_headers=True)
    try:
        return message.as_bytes(policy=strict)
    except Exception as exc:
        raise UnsafeMessage(f"The message could not be serialized safely ({exc}); nothing was sent") from None
