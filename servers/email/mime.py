"""Messages as RFC 5322 bytes and back: what prod sends and reads, and the fixture as real mail.

:func:`render` builds the MIME message prod sends (and files in Sent); :func:`fixture_message`
renders a fixture message the same way, to seed a real IMAP server; :func:`parse` and
:func:`summarize` turn what IMAP returns into the tools' models. Bodies come back with ``\\n``
line ends and without trailing newlines, as the sim stores them.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Iterable
from email import policy
from email.message import EmailMessage
from email.parser import BytesHeaderParser, BytesParser
from email.utils import format_datetime, getaddresses

from servers.email.drafts import Draft, format_address
from servers.email.models import Attachment, Message, MessageSummary

__all__ = ["AttachmentData", "fixture_message", "parse", "render", "summarize"]

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
) -> EmailMessage:
    """The MIME message for ``draft``, as prod sends it."""
    return _build(
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
        attachments=attachments,
    )


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
            found.append((part.get_filename() or "attachment", part.get_content_type(), data))
    return found


def _addresses(msg: EmailMessage, name: str) -> list[str]:
    header = msg.get(name)
    if header is None:
        return []
    found = getattr(header, "addresses", None)
    if found is not None:
        return [format_address(a.display_name, a.addr_spec) for a in found if a.addr_spec]
    return [format_address(n, a) for n, a in getaddresses([str(header)]) if a]


def _date(msg: EmailMessage) -> dt.datetime | None:
    header = msg.get("Date")
    value = getattr(header, "datetime", None)
    if not isinstance(value, dt.datetime):
        return None
    return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _text(msg: EmailMessage, name: str) -> str:
    header = msg.get(name)
    return " ".join(str(header).split()) if header is not None else ""


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


def summarize(header: bytes, *, message_id: str, folder: str, unread: bool, has_attachments: bool) -> MessageSummary:
    """A summary from a message's header block (IMAP ``BODY.PEEK[HEADER]``)."""
    msg = BytesHeaderParser(policy=policy.default).parsebytes(header)
    assert isinstance(msg, EmailMessage)
    return MessageSummary.model_validate(
        _head(msg, message_id=message_id, folder=folder, unread=unread, has_attachments=has_attachments)
    )


def parse(raw: bytes, *, message_id: str, folder: str, unread: bool) -> Message:
    """A whole message from its RFC 5322 bytes: headers, plain-text body, attachment metadata."""
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(msg, EmailMessage)
    attachments = []
    for part in msg.walk():
        if part.get_content_disposition() == "attachment":
            payload = part.get_payload(decode=True)
            size = len(payload) if isinstance(payload, bytes) else 0
            name = part.get_filename() or "attachment"
            attachments.append(Attachment(filename=name, content_type=part.get_content_type(), size=size))
    refs = _text(msg, "References").split()
    in_reply_to = _text(msg, "In-Reply-To").split()
    own_id = _text(msg, "Message-ID")
    return Message.model_validate(
        {
            **_head(msg, message_id=message_id, folder=folder, unread=unread, has_attachments=bool(attachments)),
            "cc": _addresses(msg, "Cc"),
            "reply_to": _addresses(msg, "Reply-To"),
            "message_id": own_id or None,
            "in_reply_to": in_reply_to[0] if in_reply_to else None,
            "references": refs,
            "body": _body(msg),
            "attachments": attachments,
        }
    )


def _body(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        text = part.get_content()
    except (LookupError, UnicodeDecodeError):
        payload = part.get_payload(decode=True)
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(text, str):
        return ""
    if part.get_content_subtype() == "html":
        text = html.unescape(_TAG.sub("", re.sub(r"(?i)<br\s*/?>|</p>", "\n", text)))
    return text.replace("\r\n", "\n").rstrip("\n")
