"""The prod mailbox: IMAP for reading (``imaplib`` in a pool, see :mod:`openenv_mcp.servers.email.imap`), SMTP
for sending.

SMTP goes through ``aiosmtplib``: native asyncio (a send can be cancelled and never holds a
thread), typed, with implicit TLS, STARTTLS and AUTH built in; one connection per message,
as mail clients do. After a send, a copy is appended to the IMAP Sent folder (``EMAIL_SENT_FOLDER``)
so that ``list_emails`` shows sent mail in prod as it does in sim; turn it off with
``EMAIL_SAVE_SENT=false`` for servers that file sent mail themselves (Gmail, for one).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from email.utils import make_msgid

import aiosmtplib
import anyio

from openenv_mcp import BackendUnavailable, ConfigError, OpenEnvError, ToolFailed
from openenv_mcp.servers.email import headers, imap
from openenv_mcp.servers.email.backends import Query, split_id
from openenv_mcp.servers.email.drafts import Draft, check_address, format_address
from openenv_mcp.servers.email.mime import AttachmentData, assemble, attachments_of, render, safe_attachments
from openenv_mcp.servers.email.models import Attachment, Folder, Message, MessageList, MessageSummary, SentMessage
from openenv_mcp.servers.email.settings import EmailSettings

__all__ = ["ProdMailbox"]

log = logging.getLogger(__name__)

FORWARD_LIMIT = 25 * 1024 * 1024
"""The largest message forward_email sends on (its attachments travel whole, so they are read whole)."""


class ProdMailbox:
    """A real mailbox: one owner, an IMAP account and an SMTP server, shared by every prod call."""

    def __init__(self, settings: EmailSettings) -> None:
        if not settings.from_address or not settings.smtp_host:
            raise ConfigError("Prod email needs EMAIL_FROM_ADDRESS and EMAIL_SMTP_HOST")
        try:
            self._owner = check_address(settings.from_address)
        except ValueError as exc:
            raise ConfigError(f"EMAIL_FROM_ADDRESS is invalid: {exc}") from None
        if settings.from_name is not None:
            try:
                headers.check("display name", settings.from_name, limit=200)
            except ToolFailed as exc:
                reason = exc.message.split(";")[0]
                raise ConfigError(f"EMAIL_FROM_NAME must be one line of plain text: {reason}") from None
        if settings.smtp_username and settings.smtp_password is None:
            raise ConfigError("EMAIL_SMTP_USERNAME is set without EMAIL_SMTP_PASSWORD; set both or neither")
        self._settings = settings
        self._imap = imap.ImapPool(settings)
        self._sender = format_address(settings.from_name, self._owner)
        self._smtp_where = f"SMTP at {settings.smtp_host}:{settings.port('smtp')}"
        self._smtp_tls = settings.tls_context() if settings.smtp_security != "none" else None

    @classmethod
    async def open(cls, settings: EmailSettings) -> ProdMailbox:
        """Check the settings; connections are made on first use (so /readyz can report a server down)."""
        return cls(settings)

    @property
    def owner(self) -> str:
        return self._owner.lower()

    async def ping(self) -> None:
        """Both servers must answer (checked at once): an IMAP NOOP when logged in, an SMTP connect (and login)."""
        problems: dict[str, str] = {}

        async def check(name: str, probe: Callable[[], Awaitable[None]]) -> None:
            try:
                await probe()
            except OpenEnvError as exc:
                problems[name] = exc.message

        async with anyio.create_task_group() as group:
            group.start_soon(check, "imap", self._ping_imap)
            group.start_soon(check, "smtp", self._ping_smtp)
        if problems:
            raise BackendUnavailable("; ".join(problems[name] for name in ("imap", "smtp") if name in problems))

    async def _ping_imap(self) -> None:
        await self._imap.run(imap.noop)

    async def _ping_smtp(self) -> None:
        async with self._smtp():
            pass

    async def aclose(self) -> None:
        await self._imap.aclose()

    async def folders(self) -> list[Folder]:
        def work(conn: imap.Conn) -> list[Folder]:
            found = []
            for name in imap.list_folders(conn):
                total, unread = imap.folder_counts(conn, name)
                found.append(Folder(name=name, total=total, unread=unread))
            return found

        return await self._imap.run(work)

    async def find(self, query: Query) -> MessageList:
        keys = imap.criteria(query)

        def work(conn: imap.Conn) -> tuple[int, list[MessageSummary]]:
            folders = [query.folder] if query.folder is not None else imap.list_folders(conn)
            matched, found = 0, []
            for folder in folders:
                imap.select(conn, folder, readonly=True)
                uids = imap.search(conn, keys)
                matched += len(uids)
                # the newest arrivals; the fixture's UIDs follow its dates, as a real mailbox's mostly do
                found += imap.summaries(conn, folder, uids[-query.limit :])
            return matched, found

        matched, found = await self._imap.run(work)
        found.sort(key=_newest_first)
        return MessageList(folder=query.folder, matched=matched, messages=found[: query.limit])

    async def fetch(self, message_id: str, *, mark_read: bool) -> Message:
        folder, uid = split_id(message_id)

        def work(conn: imap.Conn) -> Message:
            imap.select(conn, folder, readonly=not mark_read)
            reading = imap.read(conn, folder, uid)
            unread = reading.unread
            if mark_read and unread:
                imap.mark_read(conn, uid)
                unread = False
            return assemble(reading, message_id=f"{folder}/{uid}", folder=folder, unread=unread)

        return await self._imap.run(work)

    async def _raw(self, message_id: str) -> bytes:
        folder, uid = split_id(message_id)

        def work(conn: imap.Conn) -> bytes:
            imap.select(conn, folder, readonly=True)
            size = imap.message_size(conn, folder, uid)
            if size > FORWARD_LIMIT:
                raise ToolFailed(
                    f"Message {message_id!r} is {size / 2**20:.1f} MiB; forward_email sends on messages of at most "
                    f"{FORWARD_LIMIT // 2**20} MiB. Send its recipients a note with send_email instead"
                )
            return imap.fetch_raw(conn, folder, uid)[0]

        return await self._imap.run(work)

    async def send(self, draft: Draft) -> SentMessage:
        attachments: list[AttachmentData] = []
        if draft.forward_of is not None:
            attachments = safe_attachments(attachments_of(await self._raw(draft.forward_of.id)))
        date = dt.datetime.now(dt.UTC).replace(microsecond=0)
        message_id = make_msgid(domain=self._owner.rsplit("@", 1)[1])
        raw = render(draft, sender=self._sender, date=date, message_id=message_id, attachments=attachments)
        await self._deliver(raw, draft.recipients)
        copy_id = await self._file_copy(raw, message_id, date)
        return SentMessage(
            id=copy_id,
            message_id=message_id,
            from_=self._sender,
            to=list(draft.to),
            cc=list(draft.cc),
            subject=draft.subject,
            date=date,
            in_reply_to=draft.in_reply_to,
            references=list(draft.references),
            attachments=[Attachment(filename=n, content_type=t, size=len(d)) for n, t, d in attachments],
        )

    @asynccontextmanager
    async def _smtp(self) -> AsyncIterator[aiosmtplib.SMTP]:
        """A connected (and, with a username, logged-in) SMTP client; server trouble is BackendUnavailable."""
        settings = self._settings
        password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
        client = aiosmtplib.SMTP(
            hostname=settings.smtp_host,
            port=settings.port("smtp"),
            username=settings.smtp_username or None,
            password=password if settings.smtp_username else None,
            use_tls=settings.smtp_security == "tls",
            start_tls=settings.smtp_security == "starttls",
            tls_context=self._smtp_tls,
            timeout=settings.timeout,
        )
        try:
            await client.connect()
        except aiosmtplib.SMTPAuthenticationError as exc:
            raise BackendUnavailable(
                f"{self._smtp_where} refused the login of {settings.smtp_username!r} ({exc.code} {exc.message}); "
                "check EMAIL_SMTP_USERNAME and EMAIL_SMTP_PASSWORD"
            ) from None
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise BackendUnavailable(f"{self._smtp_where} is unavailable: {_reason(exc)}") from None
        try:
            yield client
        finally:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError):
                client.close()

    async def _deliver(self, raw: bytes, recipients: list[str]) -> None:
        async with self._smtp() as smtp:
            try:
                await smtp.sendmail(self._owner, recipients, raw)
            except aiosmtplib.SMTPRecipientsRefused as exc:
                refused = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in exc.recipients)
                raise ToolFailed(f"The SMTP server refused the recipients ({refused}); nothing was sent") from None
            except aiosmtplib.SMTPSenderRefused as exc:
                raise BackendUnavailable(
                    f"{self._smtp_where} refused the sender {self._owner!r} ({exc.code} {exc.message}); "
                    "check EMAIL_FROM_ADDRESS"
                ) from None
            except aiosmtplib.SMTPResponseException as exc:
                if 500 <= exc.code < 600:
                    raise ToolFailed(f"The SMTP server refused the message: {exc.code} {exc.message}") from None
                raise BackendUnavailable(f"{self._smtp_where} failed: {exc.code} {exc.message}") from None
            except (aiosmtplib.SMTPException, OSError) as exc:
                raise BackendUnavailable(f"{self._smtp_where} is unavailable: {_reason(exc)}") from None

    async def _file_copy(self, raw: bytes, message_id: str, date: dt.datetime) -> str | None:
        if not self._settings.save_sent:
            return None
        folder = self._settings.sent_folder
        try:
            uid = await self._imap.run(lambda conn: imap.append(conn, folder, raw, date))
        except OpenEnvError as exc:
            # The mail went out; failing the call now would invite the agent to send it twice.
            log.warning("sent %s but could not file a copy in %r: %s", message_id, folder, exc.message)
            return None
        return f"{folder}/{uid}" if uid is not None else None


def _newest_first(summary: MessageSummary) -> tuple[float, int]:
    stamp = summary.date.timestamp() if summary.date else 0.0
    return (-stamp, -int(summary.id.rpartition("/")[2]))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
