"""The email tools: list, search and read mail; send, reply and forward. The same in sim and prod."""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, ParamSpec, TypeVar

from pydantic import AfterValidator, Field

from openenv_mcp import OpenEnvError, Toolbox, ToolFailed
from openenv_mcp.servers.email import drafts, headers
from openenv_mcp.servers.email.backends import MailBackend, Query
from openenv_mcp.servers.email.models import FolderList, Message, MessageList, SentMessage

__all__ = ["tools"]

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


def contained(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn any unexpected exception of a tool into a tool error (logged with its traceback), never a 500.

    Errors of ours (:class:`~openenv_mcp.OpenEnvError`: a tool error, a server down) pass unchanged.
    """

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except OpenEnvError:
            raise
        except Exception as exc:
            name = getattr(fn, "__name__", "tool")
            log.exception("email tool %s failed on unexpected input", name)
            reason = headers.clean(f"{type(exc).__name__}: {exc}", limit=200)
            raise ToolFailed(
                f"{name} could not handle this input ({reason}); check the arguments (ids look like "
                "'INBOX/12', as list_emails gives them) or try another message"
            ) from None

    return run


tools: Toolbox[MailBackend] = Toolbox("email")

_NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"  # one line: no C0/C1 control, no Unicode line break

Address = Annotated[
    str,
    Field(max_length=254, json_schema_extra={"format": "email"}),
    AfterValidator(drafts.check_address),
]
Recipients = Annotated[list[Address], Field(min_length=1, max_length=drafts.MAX_RECIPIENTS)]
Copies = Annotated[list[Address], Field(max_length=drafts.MAX_RECIPIENTS)]
FolderName = Annotated[str, Field(min_length=1, max_length=200, pattern=_NO_CONTROL)]
MessageId = Annotated[str, Field(min_length=3, max_length=300, pattern=_NO_CONTROL)]
Subject = Annotated[str, Field(max_length=500, pattern=_NO_CONTROL)]
Body = Annotated[str, Field(max_length=100_000)]
Limit = Annotated[int, Field(ge=1, le=100)]
Text = Annotated[str, Field(min_length=1, max_length=200, pattern=_NO_CONTROL)]


@tools.tool(title="List Folders", read_only=True, destructive=False, idempotent=True, open_world=False)
@contained
async def list_folders(mail: MailBackend) -> FolderList:
    """List the mail folders, with how many messages each holds and how many are unread."""
    return FolderList(folders=await mail.folders())


@tools.tool(title="List Emails", read_only=True, destructive=False, idempotent=True, open_world=False)
@contained
async def list_emails(
    mail: MailBackend,
    folder: FolderName = "INBOX",
    unread_only: bool = False,
    sender: Text | None = None,
    since: dt.date | None = None,
    until: dt.date | None = None,
    limit: Limit = 20,
) -> MessageList:
    """List the messages in a folder, newest first, optionally filtered. Listing does not mark messages read.

    Args:
        folder: The folder to list, e.g. INBOX, Sent or Archive (list_folders names them all).
        unread_only: Only messages not read yet.
        sender: Only messages whose From contains this text (a name or an address, any case).
        since: Only messages dated on or after this day (YYYY-MM-DD).
        until: Only messages dated on or before this day (YYYY-MM-DD).
        limit: At most this many messages (1-100); 'matched' tells how many matched in all.
    """
    _check_range(since, until)
    query = Query(folder=folder, unread_only=unread_only, sender=sender, since=since, until=until, limit=limit)
    return await mail.find(query)


@tools.tool(title="Search Emails", read_only=True, destructive=False, idempotent=True, open_world=False)
@contained
async def search_emails(
    mail: MailBackend, query: Text, folder: FolderName | None = None, limit: Limit = 20
) -> MessageList:
    """Search messages by text, newest first: each word of the query must be in the subject, sender or body.

    Matching ignores case and finds words inside longer ones ("invoice" finds "Invoices").

    Args:
        query: Words to look for, e.g. "globex renewal".
        folder: Search only this folder; every folder when omitted.
        limit: At most this many messages (1-100); 'matched' tells how many matched in all.
    """
    words = tuple(query.split())
    if not words:
        raise ToolFailed("The query has no words; give at least one word to search for")
    return await mail.find(Query(folder=folder, words=words, limit=limit))


@tools.tool(title="Read Email", read_only=False, destructive=False, idempotent=True, open_world=False)
@contained
async def read_email(mail: MailBackend, message_id: MessageId) -> Message:
    """Read one message: its headers, plain-text body and attachment list. Marks it read.

    Args:
        message_id: The message's id as list_emails or search_emails give it, e.g. "INBOX/12".
    """
    return await mail.fetch(message_id, mark_read=True)


@tools.tool(title="Send Email", read_only=False, destructive=False, idempotent=False, open_world=True)
@contained
async def send_email(
    mail: MailBackend, to: Recipients, subject: Subject, body: Body, cc: Copies | None = None
) -> SentMessage:
    """Send a new email from the mailbox owner. Sent mail cannot be recalled; a copy is filed in Sent.

    One message goes to at most 50 addresses, To and Cc together.

    Args:
        to: Recipients' addresses, e.g. ["ana@example.com"] (bare addresses, at least one).
        subject: The subject line (one line of text).
        body: The message text (plain text).
        cc: Addresses to copy.
    """
    return await mail.send(drafts.compose(to=list(to), cc=list(cc or ()), subject=subject, body=body))


@tools.tool(title="Reply to Email", read_only=False, destructive=False, idempotent=False, open_world=True)
@contained
async def reply_email(mail: MailBackend, message_id: MessageId, body: Body, reply_all: bool = False) -> SentMessage:
    """Reply to a message, in its thread: "Re:" subject, In-Reply-To and References set. The original is not quoted.

    The reply goes to the sender (or to the Reply-To address); with reply_all, also to the other
    recipients, except you. Replying to a message you sent goes to its recipients.

    Args:
        message_id: The id of the message to answer, e.g. "INBOX/12".
        body: The reply's text.
        reply_all: Also reply to everyone else the message was sent to.
    """
    original = await mail.fetch(message_id, mark_read=False)
    return await mail.send(drafts.reply(original, me=mail.owner, body=body, reply_all=reply_all))


@tools.tool(title="Forward Email", read_only=False, destructive=False, idempotent=False, open_world=True)
@contained
async def forward_email(mail: MailBackend, message_id: MessageId, to: Recipients, note: Body = "") -> SentMessage:
    """Forward a message with its attachments: "Fwd:" subject, your note above the original headers and body.

    Args:
        message_id: The id of the message to forward, e.g. "INBOX/12".
        to: Recipients' addresses (bare addresses, at least one).
        note: Text to put above the forwarded message.
    """
    original = await mail.fetch(message_id, mark_read=False)
    return await mail.send(drafts.forward(original, to=list(to), note=note))


def _check_range(since: dt.date | None, until: dt.date | None) -> None:
    if since is not None and until is not None and since > until:
        raise ToolFailed(f"'since' ({since}) is after 'until' ({until}); no message can match")
