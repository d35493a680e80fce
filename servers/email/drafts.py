"""Outgoing mail, composed once for both modes: addresses, replies (threading, "Re:") and forwards ("Fwd:").

The tools compose a :class:`Draft` here and hand it to the backend, so sim and prod send
exactly the same recipients, subject, body and threading headers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import format_datetime, getaddresses

from openenv_mcp import ToolFailed
from servers.email.models import Attachment, Message

__all__ = [
    "Draft",
    "address_of",
    "check_address",
    "format_address",
    "forward",
    "forward_subject",
    "reply",
    "reply_subject",
    "subject_base",
]

_ADDRESS = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+$"
)
_SPECIALS = re.compile(r'[()<>\[\]:;@\\,."]')
_PREFIX = re.compile(r"^\s*(?:re|fwd?|aw|wg|sv)\s*:\s*", re.IGNORECASE)


def check_address(value: str) -> str:
    """Validate a bare email address (``name@example.com``); the error says what is expected."""
    value = value.strip()
    if len(value) > 254 or not _ADDRESS.match(value):
        raise ValueError(f"{value!r} is not an email address; give a bare address like name@example.com")
    return value


def format_address(name: str | None, address: str) -> str:
    """``Name <address>``, quoting the name when it needs it; the bare address without a name."""
    if not name:
        return address
    if _SPECIALS.search(name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{name} <{address}>"


def address_of(formatted: str) -> str:
    """The bare, lower-cased address in ``Name <address>`` (or in a bare address)."""
    pairs = getaddresses([formatted])
    return (pairs[0][1] if pairs and pairs[0][1] else formatted).strip().lower()


def subject_base(subject: str) -> str:
    """The subject without its ``Re:``/``Fwd:`` prefixes, whitespace collapsed and lower-cased."""
    previous = None
    while previous != subject:
        previous, subject = subject, _PREFIX.sub("", subject)
    return " ".join(subject.split()).lower()


def reply_subject(subject: str) -> str:
    return subject if re.match(r"^\s*re\s*:", subject, re.IGNORECASE) else f"Re: {subject}"


def forward_subject(subject: str) -> str:
    return subject if re.match(r"^\s*fwd?\s*:", subject, re.IGNORECASE) else f"Fwd: {subject}"


@dataclass(frozen=True, slots=True)
class Draft:
    """A message ready to send. ``text`` is what the agent wrote; ``body`` what is sent."""

    to: tuple[str, ...]
    cc: tuple[str, ...]
    subject: str
    body: str
    text: str
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    forward_of: Message | None = None

    @property
    def kind(self) -> str:
        return "forward" if self.forward_of is not None else "reply" if self.in_reply_to else "send"

    @property
    def recipients(self) -> list[str]:
        """Every bare address the message goes to (To, then Cc), without duplicates."""
        return list(dict.fromkeys(address_of(a) for a in (*self.to, *self.cc)))

    @property
    def attachments(self) -> list[Attachment]:
        return list(self.forward_of.attachments) if self.forward_of is not None else []


def _unique(addresses: list[str], exclude: set[str]) -> list[str]:
    kept: list[str] = []
    for formatted in addresses:
        bare = address_of(formatted)
        if bare not in exclude:
            kept.append(formatted)
            exclude.add(bare)
    return kept


def reply(original: Message, *, me: str, body: str, reply_all: bool) -> Draft:
    """A reply to ``original``: to its sender (its Reply-To when set), or to its recipients when I sent it.

    With ``reply_all`` the other recipients come along (To stays To, Cc stays Cc), never me.
    The subject gains "Re:", In-Reply-To is the original's Message-ID and References its chain.
    """
    me = me.lower()
    if address_of(original.from_) == me:
        primary, others_to = list(original.to), []
    else:
        primary, others_to = list(original.reply_to or [original.from_]), list(original.to)
    seen = {me}
    to = _unique(primary + (others_to if reply_all else []), seen)
    cc = _unique(list(original.cc), seen) if reply_all else []
    if not to and not cc:
        raise ToolFailed(f"Message {original.id!r} has nobody to reply to but you; use send_email instead")
    if not to:
        to, cc = cc[:1], cc[1:]
    references = list(original.references)
    if original.message_id and original.message_id not in references:
        references.append(original.message_id)
    return Draft(
        to=tuple(to),
        cc=tuple(cc),
        subject=reply_subject(original.subject),
        body=body,
        text=body,
        in_reply_to=original.message_id,
        references=tuple(references),
    )


def forward(original: Message, *, to: list[str], note: str) -> Draft:
    """``original`` forwarded to ``to``: the note, then the original's headers and body; its attachments travel."""
    header = [
        "---------- Forwarded message ---------",
        f"From: {original.from_}",
        f"Date: {format_datetime(original.date) if original.date else '(unknown)'}",
        f"Subject: {original.subject}",
        f"To: {', '.join(original.to)}",
    ]
    if original.cc:
        header.append(f"Cc: {', '.join(original.cc)}")
    body = "\n".join(header) + "\n\n" + original.body
    if note.strip():
        body = note.rstrip() + "\n\n" + body
    return Draft(
        to=tuple(dict.fromkeys(to)),
        cc=(),
        subject=forward_subject(original.subject),
        body=body,
        text=note,
        forward_of=original,
    )
