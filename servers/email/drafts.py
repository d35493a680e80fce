"""Outgoing mail, composed once for both modes: addresses, replies (threading, "Re:") and forwards ("Fwd:").

The tools compose a :class:`Draft` here and hand it to the backend, so sim and prod send
exactly the same recipients, subject, body and threading headers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import format_datetime, getaddresses

from openenv_mcp import ToolFailed
from openenv_mcp.servers.email import headers
from openenv_mcp.servers.email.models import Attachment, Message

__all__ = [
    "MAX_RECIPIENTS",
    "Draft",
    "address_of",
    "check_address",
    "check_body",
    "compose",
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

MAX_RECIPIENTS = 50
"""The most addresses one message goes to, To and Cc together (every envelope recipient), for every tool."""


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
    name = name.replace("=?", "= ?")  # a display name never carries an encoded word of its own making
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

    def __post_init__(self) -> None:
        count = len(self.recipients)
        if count > MAX_RECIPIENTS:
            raise ToolFailed(
                f"This message would go to {count} addresses (To and Cc together); one message may go to at "
                f"most {MAX_RECIPIENTS}. Send fewer, or split the recipients over several messages; nothing was sent"
            )

    @property
    def kind(self) -> str:
        return "forward" if self.forward_of is not None else "reply" if self.in_reply_to else "send"

    @property
    def recipients(self) -> list[str]:
        """Every bare address the message goes to (To, then Cc), without duplicates."""
        return list(dict.fromkeys(address_of(a) for a in (*self.to, *self.cc)))

    @property
    def attachments(self) -> list[Attachment]:
        if self.forward_of is None:
            return []
        return [
            a.model_copy(update={"filename": headers.clean_filename(a.filename)}) for a in self.forward_of.attachments
        ]


def check_body(field: str, text: str) -> str:
    """A body the agent wrote: any text but NUL and unpaired surrogates (which no mail can carry)."""
    for char in text:
        if char == "\0" or 0xD800 <= ord(char) <= 0xDFFF:
            raise ToolFailed(
                f"The {field} holds U+{ord(char):04X}, which mail cannot carry; remove it and try again; "
                "nothing was sent"
            )
    return text


def compose(*, to: list[str], cc: list[str], subject: str, body: str) -> Draft:
    """A new message from the agent's fields: the subject checked after decoding (see :mod:`.headers`)."""
    subject = headers.check("subject", subject, limit=500)
    return Draft(to=tuple(to), cc=tuple(cc), subject=subject, body=check_body("body", body), text=body)


def _inbound(formatted: str, message: Message, field: str) -> str:
    """An address from an inbound header, fit to emit: a valid bare address, its display name cleaned."""
    pairs = getaddresses([formatted])
    name, address = pairs[0] if pairs else ("", "")
    try:
        address = check_address(address)
    except ValueError:
        shown = headers.clean(formatted, limit=80)
        raise ToolFailed(
            f"Message {message.id!r} names {shown!r} in its {field}, which is not an address mail can be sent to; "
            "write to the people you mean with send_email"
        ) from None
    return format_address(headers.clean(name, limit=200), address)


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
        primary, others_to = [(a, "To") for a in original.to], []
    else:
        field = "Reply-To" if original.reply_to else "From"
        primary = [(a, field) for a in original.reply_to or [original.from_]]
        others_to = [(a, "To") for a in original.to]
    wanted = primary + (others_to + [(a, "Cc") for a in original.cc] if reply_all else [])
    if len({address_of(a) for a, _ in wanted} - {me}) > MAX_RECIPIENTS:
        raise ToolFailed(
            f"A reply to {original.id!r} would go to {len(wanted)} addresses (its "
            f"{'/'.join(sorted({f for _, f in wanted}))}); one message may go to at most {MAX_RECIPIENTS}. "
            "Write to the people you mean with send_email; nothing was sent"
        )
    checked = {a: _inbound(a, original, f) for a, f in wanted}
    seen = {me}
    to = _unique([checked[a] for a, _ in primary + (others_to if reply_all else [])], seen)
    cc = _unique([checked[a] for a in original.cc], seen) if reply_all else []
    if not to and not cc:
        raise ToolFailed(f"Message {original.id!r} has nobody to reply to but you; use send_email instead")
    if not to:
        to, cc = cc[:1], cc[1:]
    own = headers.msg_ids(original.message_id or "")
    references = headers.msg_ids(" ".join([*original.references, *own]))
    return Draft(
        to=tuple(to),
        cc=tuple(cc),
        subject=reply_subject(headers.clean(original.subject, limit=900)),
        body=check_body("body", body),
        text=body,
        in_reply_to=own[0] if own else None,
        references=tuple(references),
    )


def forward(original: Message, *, to: list[str], note: str) -> Draft:
    """``original`` forwarded to ``to``: the note, then the original's headers and body; its attachments travel."""
    header = [
        "---------- Forwarded message ---------",
        f"From: {headers.clean(original.from_)}",
        f"Date: {format_datetime(original.date) if original.date else '(unknown)'}",
        f"Subject: {headers.clean(original.subject)}",
        f"To: {headers.clean(', '.join(original.to), limit=5000)}",
    ]
    if original.cc:
        header.append(f"Cc: {headers.clean(', '.join(original.cc), limit=5000)}")
    body = "\n".join(header) + "\n\n" + original.body.replace("\0", "\ufffd")
    if note.strip():
        body = check_body("note", note).rstrip() + "\n\n" + body
    return Draft(
        to=tuple(dict.fromkeys(to)),
        cc=(),
        subject=forward_subject(headers.clean(original.subject, limit=900)),
        body=body,
        text=note,
        forward_of=original,
    )
