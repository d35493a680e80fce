"""What the email tools need from a mailbox, and the pieces both backends share.

Sim (:class:`~openenv_mcp.servers.email.sim.SimMailbox`): a per-episode copy of the shipped fixture.
Prod (:class:`~openenv_mcp.servers.email.prod.ProdMailbox`): IMAP for reading, SMTP for sending.

A message's id is ``FOLDER/UID`` (``INBOX/12``): its IMAP UID in its folder. The sim numbers
the fixture the way an IMAP server does when the fixture is appended in order, so ids agree.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Protocol

from openenv_mcp import Backend, ToolFailed
from openenv_mcp.servers.email.drafts import Draft
from openenv_mcp.servers.email.models import Folder, Message, MessageList, SentMessage

__all__ = ["MailBackend", "Query", "folder_order", "split_id"]

_UID = re.compile(r"[0-9]{1,10}")


@dataclass(frozen=True, slots=True)
class Query:
    """What to list or search for. Every given filter must match.

    ``words`` each must appear (case-insensitive substring) in the subject, the sender or the
    plain-text body; ``sender`` in the From header; ``since``/``until`` bound the day written in
    the Date header, both inclusive. ``folder=None`` means every folder.
    """

    folder: str | None
    words: tuple[str, ...] = ()
    unread_only: bool = False
    sender: str | None = None
    since: dt.date | None = None
    until: dt.date | None = None
    limit: int = 20


class MailBackend(Backend, Protocol):
    """A mailbox: folders to list and search, messages to read, and a way to send."""

    @property
    def owner(self) -> str:
        """The owner's bare address (the From of sent mail; never a reply's recipient)."""
        ...

    async def folders(self) -> list[Folder]: ...
    async def find(self, query: Query) -> MessageList: ...
    async def fetch(self, message_id: str, *, mark_read: bool) -> Message: ...
    async def send(self, draft: Draft) -> SentMessage: ...


def split_id(message_id: str) -> tuple[str, int]:
    """``"INBOX/12"`` -> ``("INBOX", 12)``; anything else is a tool error that shows the format."""
    folder, _, uid = message_id.strip().rpartition("/")
    # ASCII digits only: "²".isdigit() is true and int("²") a ValueError; UIDs are 32-bit (RFC 3501)
    if not folder or not _UID.fullmatch(uid) or not 1 <= int(uid) <= 0xFFFFFFFF:
        raise ToolFailed(
            f"No message {message_id!r}: ids look like 'INBOX/12' (folder/uid), as list_emails and "
            "search_emails return them"
        )
    return folder, int(uid)


def folder_order(name: str) -> tuple[bool, str]:
    """Sort key: INBOX first, then the other folders by name (the order both backends list them in)."""
    return (name.upper() != "INBOX", name.casefold())
