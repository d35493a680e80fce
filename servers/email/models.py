"""What the email tools return: the same models in sim and prod."""

from __future__ import annotations

import datetime as dt

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

__all__ = ["Attachment", "Folder", "FolderList", "Message", "MessageList", "MessageSummary", "SentMessage"]


class _Model(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True)


# "from" is a Python keyword: the field is ``from_`` in Python and "from" on the wire.
_FROM = Field(serialization_alias="from", validation_alias=AliasChoices("from", "from_"))


class Folder(_Model):
    """A mail folder and its counts."""

    name: str
    total: int
    unread: int


class FolderList(_Model):
    """Every folder of the mailbox."""

    folders: list[Folder]


class Attachment(_Model):
    """An attachment's metadata (its content is not returned)."""

    filename: str
    content_type: str
    size: int = Field(description="Decoded size in bytes")


class MessageSummary(_Model):
    """One message as folder listings and searches show it."""

    id: str = Field(description="The message's id for read_email, reply_email and forward_email: FOLDER/UID")
    folder: str
    from_: str = _FROM
    to: list[str]
    subject: str
    date: dt.datetime | None
    unread: bool
    has_attachments: bool


class Message(MessageSummary):
    """One whole message: headers, plain-text body and attachment metadata."""

    cc: list[str]
    reply_to: list[str]
    message_id: str | None = Field(description="The Message-ID header")
    in_reply_to: str | None
    references: list[str]
    body: str
    attachments: list[Attachment]


class MessageList(_Model):
    """Messages matching a listing or a search, newest first."""

    folder: str | None = Field(description="The folder listed or searched; null when every folder was searched")
    matched: int = Field(description="How many messages matched in all (more than returned when cut by limit)")
    messages: list[MessageSummary]


class SentMessage(_Model):
    """What was sent: the headers as delivered, and where the copy was filed."""

    id: str | None = Field(description="The copy's id in the Sent folder (null when the server keeps no copy)")
    message_id: str
    from_: str = _FROM
    to: list[str]
    cc: list[str]
    subject: str
    date: dt.datetime
    in_reply_to: str | None
    references: list[str]
    attachments: list[Attachment]
