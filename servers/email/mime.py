"""Messages as RFC 5322 bytes and back: what prod sends and reads, and the fixture as real mail.

:func:`render` builds the MIME message prod sends (and files in Sent); :func:`fixture_message`
renders a fixture message the same way, to seed a real IMAP server; :func:`parse` and
:func:`summarize` turn what IMAP returns into the tools' models. Bodies come back with ``\\n``
line ends and without trailing newlines, as the sim stores them.
"""

from __future__ import annotations

import binascii
import codecs
import datetime as dt
import html
import re
from collections.abc import Iterable
from email import policy
from email.message import EmailMessage
from email.parser import BytesHeaderParser, BytesParser
from email.utils import format_datetime, getaddresses
from typing import TYPE_CHECKING

from openenv_mcp.servers.email import headers
from openenv_mcp.servers.email.drafts import Draft, format_address
from openenv_mcp.servers.email.models import Attachment, Message, MessageSummary

if TYPE_CHECKING:
    from openenv_mcp.servers.email.imap import Reading

__all__ = [
    "BODY_LIMIT",
    "AttachmentData",
    "assemble",
    "cap_body",
    "fixture_message",
    "render",
    "safe_attachments",
    "summarize",
    "transfer_decode",
]

BODY_LIMIT = 100_000
"""Characters of a message's text that read_email returns; longer text is cut, with a note saying so."""
BODY_FETCH_LIMIT = 1_000_000
"""Bytes of a message's text part fetched over IMAP to read it (more than BODY_LIMIT characters need)."""
_CONTENT_TYPE = re.compile(r"^[a-z0-9!#$&^_.+-]{1,64}/[a-z0-9!#$&^_.+-]{1,64}$")

# 7bit: non-ASCII bodies go out as quoted-printable or base64, which every server accepts.
_POLICY = policy.default.clone(linesep="\r\n", cte_type="7bit")
_TAG = re.compile(r"<[^>]+>")

AttachmentData = tuple[str, str, bytes]
"""An attachment to send: filename, content type, content."""


def _build(
    *,
    sender: str,
    to: Iterable[str],
    cc: Iterable[str],
    reply_to: Iterable[str],
    subject: str,
    date: dt.datetime,
    message_id: str,
    in_reply_to: str | None,
    references: Iterable[str],
    body: str,
    attachments: Iterable[AttachmentData],
) -> EmailMessage:
    msg = EmailMessage(policy=_POLICY)
    msg["From"] = sender
    for name, values in (("To", list(to)), ("Cc", list(cc)), ("Reply-To", list(reply_to))):
        if values:
            msg[name] = ", ".join(values)
    msg["Subject"] = subject
    msg["Date"] = format_datetime(date)
    msg["Message-ID"] = message_id
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
    refs = list(references)
    if refs:
        msg["References"] = " ".join(refs)
    msg.set_content(body)
    for filename, content_type, data in attachments:
        maintype, _, subtype = content_type.partition("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype or "octet-stream", filename=filename)
    return msg


def render(
    draft: Draft, *, sender: str, date: dt.datetime, message_id: str, attachments: Iterable[AttachmentData] = ()
) -> bytes:
    """The MIME message for ``draft`` as the bytes prod sends, verified to be exactly what was composed.

    Every header value here was checked or cleaned when the draft was made (:mod:`.headers`);
    attachments' filenames and types are cleaned here. :func:`headers.verify` then refuses bytes
    whose header block differs from the headers set (an injection the generator let through).
    """
    safe = safe_attachments(attachments)
    try:
        message = _build(
            sender=sender,
            to=draft.to,
            cc=draft.cc,
            reply_to=(),
            subject=draft.subject,
            date=date,
            message_id=message_id,
            in_reply_to=draft.in_reply_to,
            references=draft.references,
            body=draft.body,
            attachments=safe,
        )
    except ValueError as exc:  # the email package's own refusals (a raw line break, a bad address part)
        raise headers.UnsafeMessage(f"The message could not be composed safely ({exc}); nothing was sent") from None
    raw = headers.serialize(message)
    headers.verify(raw, headers=list(message.keys()), attachments=len(safe))
    return raw


def safe_attachments(attachments: Iterable[AttachmentData]) -> list[AttachmentData]:
    """Inbound attachments fit to send on: filenames cleaned (no path, no line break), types well-formed."""
    return [
        (headers.clean_filename(name), kind if _CONTENT_TYPE.match(kind) else "application/octet-stream", data)
        for name, kind, data in attachments
    ]


def fixture_message(message: Message) -> bytes:
    """A fixture message as RFC 5322 bytes; attachments get filler content of their stated size."""
    assert message.date is not None and message.message_id is not None
    filler = [
        (a.filename, a.content_type, (b" " if a.content_type.startswith("text/") else b"\0") * a.size)
        for a in message.attachments
    ]
    return _build(
        sender=message.from_,
        to=message.to,
        cc=message.cc,
        reply_to=message.reply_to,
        subject=message.subject,
        date=message.date,
        message_id=message.message_id,
        in_reply_to=message.in_reply_to,
        references=message.references,
        body=message.body,
        attachments=filler,
    ).as_bytes()


def attachments_of(raw: bytes) -> list[AttachmentData]:
    """The attachments of a raw message (to forward them)."""
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    found = []
    for part in msg.walk():
        if part.get_content_disposition() == "attachment":
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            try:
                name = part.get_filename()
            except Exception:
                name = None
            found.append((name or "attachment", part.get_content_type(), data))
    return found


def _raw(msg: EmailMessage, name: str) -> str | None:
    """The header as it came, undecoded (when the policy's parser cannot read it)."""
    for key, value in msg.raw_items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _addresses(msg: EmailMessage, name: str) -> list[str]:
    """The addresses of a header, each ``Name <address>`` with the name cleaned; hostile headers never raise.

    A header with encoded words is read by :func:`_hostile_addresses`: the email package decodes an
    encoded word inside a display name and then splits on what it decoded (an "@", a ",").
    """
    raw = _raw(msg, name)
    if raw is None:
        return []
    if "=?" in raw:
        pairs = _hostile_addresses(raw)
    else:
        try:
            header = msg.get(name)
            found = getattr(header, "addresses", None)
            pairs = [(a.display_name, a.addr_spec) for a in found] if found is not None else getaddresses([raw])
        except Exception:
            pairs = _hostile_addresses(raw)
    return [
        format_address(headers.clean(n, limit=200), headers.clean(a, limit=254))
        for n, a in pairs
        if a and headers.clean(a, limit=254)
    ]


_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=")


def _hostile_addresses(raw: str) -> list[tuple[str, str]]:
    """The addresses of a header the email package refused: each encoded word decoded, cleaned and quoted first.

    So a display name that decodes to a line break, an "@" or a "," stays one display name.
    """

    def quoted(found: re.Match[str]) -> str:
        return '"' + headers.clean(headers.decoded(found.group(0))).replace("\\", "").replace('"', "'") + '"'

    tamed = _ENCODED_WORD.sub(quoted, headers.one_line(raw))
    try:
        found = getattr(policy.default.header_factory("to", tamed), "addresses", ())
        return [(a.display_name, a.addr_spec) for a in found]
    except Exception:
        return getaddresses([tamed])


def _date(msg: EmailMessage) -> dt.datetime | None:
    try:
        value = getattr(msg.get("Date"), "datetime", None)
    except Exception:
        return None
    if not isinstance(value, dt.datetime):
        return None
    return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _text(msg: EmailMessage, name: str, *, limit: int = 998) -> str:
    """A one-line header (Subject): read raw and decoded by :func:`headers.clean`, which looks at a bounded part."""
    return headers.clean(_raw(msg, name) or "", limit=limit)


def _head(msg: EmailMessage, *, message_id: str, folder: str, unread: bool, has_attachments: bool) -> dict[str, object]:
    sender = _addresses(msg, "From")
    return {
        "id": message_id,
        "folder": folder,
        "from_": sender[0] if sender else "",
        "to": _addresses(msg, "To"),
        "subject": _text(msg, "Subject"),
        "date": _date(msg),
        "unread": unread,
        "has_attachments": has_attachments,
    }


def _headers(block: bytes) -> EmailMessage:
    msg = BytesHeaderParser(policy=policy.default).parsebytes(block)
    assert isinstance(msg, EmailMessage)
    return msg


def summarize(header: bytes, *, message_id: str, folder: str, unread: bool, has_attachments: bool) -> MessageSummary:
    """A summary from a message's header block (IMAP ``BODY.PEEK[HEADER]``)."""
    return MessageSummary.model_validate(
        _head(_headers(header), message_id=message_id, folder=folder, unread=unread, has_attachments=has_attachments)
    )


def cap_body(text: str, *, more: bool = False) -> str:
    """``text`` cut to :data:`BODY_LIMIT` characters, with a note when anything was left out.

    ``more`` says the text fetched was already cut (the part is longer than was fetched).
    """
    if len(text) <= BODY_LIMIT and not more:
        return text
    return (
        text[:BODY_LIMIT].rstrip("\n")
        + f"\n\n[Cut: this message's text is longer than read_email shows; these are its first "
        f"{min(len(text), BODY_LIMIT):,} characters.]"
    )


def assemble(reading: Reading, *, message_id: str, folder: str, unread: bool) -> Message:
    """A whole message from what :func:`openenv_mcp.servers.email.imap.read` fetched: headers, capped text,
    attachment list."""
    msg = _headers(reading.header)
    attachments = []
    for part_header, content_type, size in reading.attachments:
        part = _headers(part_header)
        try:
            name = part.get_filename()
        except Exception:
            name = None
        attachments.append(
            Attachment(filename=headers.clean(name or "attachment", limit=255), content_type=content_type, size=size)
        )
    refs = headers.msg_ids(_raw(msg, "References") or "", keep=100)
    in_reply_to = headers.msg_ids(_raw(msg, "In-Reply-To") or "")
    own_id = headers.msg_ids(_raw(msg, "Message-ID") or "")
    return Message.model_validate(
        {
            **_head(msg, message_id=message_id, folder=folder, unread=unread, has_attachments=bool(attachments)),
            "cc": _addresses(msg, "Cc"),
            "reply_to": _addresses(msg, "Reply-To"),
            "message_id": own_id[0] if own_id else None,
            "in_reply_to": in_reply_to[0] if in_reply_to else None,
            "references": refs,
            "body": _body(reading),
            "attachments": attachments,
        }
    )


def transfer_decode(data: bytes, encoding: str | None) -> bytes:
    """The start of a part, decoded from its transfer encoding (a cut at the end is tolerated)."""
    try:
        if encoding == "base64":
            compact = re.sub(rb"[^A-Za-z0-9+/=]", b"", data)
            return binascii.a2b_base64(compact[: len(compact) // 4 * 4])
        if encoding == "quoted-printable":
            cut = data.rfind(b"=", max(0, len(data) - 2))
            return binascii.a2b_qp(data[:cut] if cut >= 0 else data)
    except (binascii.Error, ValueError):
        return data
    return data


def _body(reading: Reading) -> str:
    if not reading.body_header and not reading.body:
        return ""
    part = _headers(reading.body_header)
    try:
        charset = part.get_content_charset() or "us-ascii"
        codecs.lookup(charset)
    except (LookupError, Exception):
        charset = "utf-8"
    data = transfer_decode(reading.body, reading.body_encoding)
    more = len(reading.body) >= BODY_FETCH_LIMIT
    text = codecs.getincrementaldecoder(charset)(errors="replace").decode(data, final=not more)
    text = text.replace("\0", "\ufffd")
    if reading.body_type == "text/html":
        text = html.unescape(_TAG.sub("", re.sub(r"(?i)<br\s*/?>|</p>", "\n", text)))
    text = text.replace("\r\n", "\n").rstrip("\n")
    return cap_body(text, more=more)
