"""IMAP for prod: a small pool of logged-in ``imaplib`` connections, used from worker threads.

Why the standard library: ``imaplib`` is typed, stable and speaks to every server; an IMAP
connection answers one command at a time anyway, so a pool of connections, each used by one
worker thread at a time (``anyio.to_thread``, bounded by a capacity limiter), gives the same
concurrency an async client would. Socket timeouts bound every operation.

Errors: a server that cannot be reached or drops the connection is
:class:`~openenv_mcp.BackendUnavailable` (a stale pooled connection is retried once on a fresh
one); a refused login too, naming the settings to check; a command the server refuses for the
caller's input (no such folder, no such message) is :class:`~openenv_mcp.ToolFailed`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import imaplib
import logging
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from openenv_mcp import BackendUnavailable, ConfigError, ToolFailed
from openenv_mcp.servers.email.backends import Query, folder_order
from openenv_mcp.servers.email.mime import BODY_FETCH_LIMIT, summarize, transfer_decode
from openenv_mcp.servers.email.models import MessageSummary
from openenv_mcp.servers.email.settings import EmailSettings
from openenv_mcp.servers.email.structure import Part, base64_size, estimate, parts_of, text_part

__all__ = ["ImapPool", "Reading", "criteria", "decode_folder", "encode_folder", "mailbox_name", "read"]

HEADER_LIMIT = 128 * 1024
"""Bytes of a message's header block fetched to list or read it (a longer block is cut: hostile or broken)."""


log = logging.getLogger(__name__)

T = TypeVar("T")
Conn = imaplib.IMAP4

_LIST = re.compile(rb'^\((?P<flags>[^)]*)\) (?P<delim>"(?:[^"\\]|\\.)*"|NIL) (?P<name>.*)$')
_FETCH_START = re.compile(rb"^\d+ \(")
_LITERAL_KEY = re.compile(rb"((?:BODY|BINARY)\[[^\]]*\](?:<\d+>)?) ~?\{\d+\}$")
_LITERAL_TAIL = re.compile(rb"~?\{\d+\}$")
_INLINE_ITEM = re.compile(rb'((?:BODY|BINARY)\[[^\]]*\](?:<\d+>)?) ("(?:[^"\\]|\\.)*"|NIL)')
_PROBE = 160  # bytes read at each end of a base64 part to work out its decoded size
_SMALL = 8192  # attachments up to this size are fetched whole to tell their decoded size
_RFC822_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_UID = re.compile(rb"[( ]UID (\d+)")
_FLAGS = re.compile(rb"FLAGS \(([^)]*)\)")
_ATTACHMENT = re.compile(rb'\("attachment"', re.IGNORECASE)
_APPENDUID = re.compile(rb"\[APPENDUID \d+ (\d+)\]")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


# folder names: IMAP's modified UTF-7 (RFC 3501 5.1.3) -------------------------------------------


def encode_folder(name: str) -> str:
    """A folder name as IMAP spells it (``Entwürfe`` -> ``Entw&APw-rfe``)."""
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            packed = base64.b64encode("".join(pending).encode("utf-16-be")).decode("ascii")
            out.append("&" + packed.rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for char in name:
        if 0x20 <= ord(char) <= 0x7E:
            flush()
            out.append("&-" if char == "&" else char)
        else:
            pending.append(char)
    flush()
    return "".join(out)


def decode_folder(name: str) -> str:
    """The readable name of an IMAP folder name (the inverse of :func:`encode_folder`)."""

    def unpack(match: re.Match[str]) -> str:
        packed = match.group(1)
        if not packed:
            return "&"
        packed = packed.replace(",", "/")
        return base64.b64decode(packed + "=" * (-len(packed) % 4)).decode("utf-16-be")

    return re.sub(r"&([^-]*)-", unpack, name)


def _quote(text: str) -> bytes:
    cleaned = " ".join(text.splitlines())
    return b'"' + cleaned.replace("\\", "\\\\").replace('"', '\\"').encode("utf-8") + b'"'


def mailbox_name(name: str) -> bytes:
    """A folder name as a quoted IMAP mailbox argument."""
    return _quote(encode_folder(name))


def _imap_date(day: dt.date) -> bytes:
    return f"{day.day}-{_MONTHS[day.month - 1]}-{day.year}".encode("ascii")


def criteria(query: Query) -> list[bytes]:
    """The IMAP SEARCH keys for ``query`` (the folder is chosen by SELECT)."""
    keys: list[bytes] = []
    if query.unread_only:
        keys.append(b"UNSEEN")
    if query.sender:
        keys += [b"FROM", _quote(query.sender)]
    if query.since:
        keys += [b"SENTSINCE", _imap_date(query.since)]
    if query.until:
        keys += [b"SENTBEFORE", _imap_date(query.until + dt.timedelta(days=1))]
    for word in query.words:
        quoted = _quote(word)
        keys += [b"OR", b"OR", b"SUBJECT", quoted, b"BODY", quoted, b"FROM", quoted]
    return keys or [b"ALL"]


# responses -------------------------------------------------------------------------------------


def _ok(answer: tuple[str, list[Any]], what: str) -> list[Any]:
    typ, data = answer
    if typ != "OK":
        raise ToolFailed(f"The IMAP server refused to {what}: {_text(data)}")
    return data


def _text(data: list[Any]) -> str:
    parts = [d.decode("utf-8", "replace") if isinstance(d, bytes) else str(d) for d in data if d is not None]
    return " ".join(parts).strip() or "(no reason given)"


@dataclass
class _Fetched:
    text: bytes
    literals: dict[bytes, bytes] = field(default_factory=dict)

    @property
    def uid(self) -> int | None:
        found = _UID.search(self.text)
        return int(found.group(1)) if found else None

    @property
    def unread(self) -> bool:
        found = _FLAGS.search(self.text)
        return found is None or b"\\Seen" not in found.group(1).split()


def _fetched(data: list[Any]) -> list[_Fetched]:
    """Group imaplib's FETCH answer per message: its text, and its body items keyed by name.

    A literal that is not a body item (a filename in BODYSTRUCTURE, say) is put back into the
    text as a quoted string, so the text parses as one expression.
    """
    groups: list[_Fetched] = []
    for item in data:
        if isinstance(item, tuple):
            prefix, literal = item[0], item[1]
            key = _LITERAL_KEY.search(prefix)
            if key:
                text = prefix
            else:
                quoted = literal.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
                text = _LITERAL_TAIL.sub(b"", prefix) + b'"' + quoted + b'"'
            if _FETCH_START.match(prefix) or not groups:
                groups.append(_Fetched(text))
            else:
                groups[-1].text += text
            if key:
                groups[-1].literals[key.group(1)] = literal
        elif isinstance(item, bytes):
            if _FETCH_START.match(item) or not groups:
                groups.append(_Fetched(item))
            else:
                groups[-1].text += item
    for group in groups:  # small items may come as quoted strings (or NIL) instead of literals
        for found in _INLINE_ITEM.finditer(group.text):
            if found.group(1) not in group.literals:
                value = found.group(2)
                group.literals[found.group(1)] = b"" if value == b"NIL" else re.sub(rb"\\(.)", rb"\1", value[1:-1])
    return groups


# operations, run on one connection in a worker thread ----------------------------------------------


def noop(conn: Conn) -> None:
    _ok(conn.noop(), "answer NOOP")


def list_folders(conn: Conn) -> list[str]:
    names = []
    for item in _ok(conn.list(), "list folders"):
        if item is None:
            continue
        line, literal = (item[0], item[1]) if isinstance(item, tuple) else (item, None)
        found = _LIST.match(line)
        if not found or b"\\noselect" in found.group("flags").lower():
            continue
        raw = literal if literal is not None else found.group("name")
        if literal is None and raw.startswith(b'"'):
            raw = re.sub(rb"\\(.)", rb"\1", raw[1:-1])
        names.append(decode_folder(raw.decode("utf-8", "replace")))
    return sorted(names, key=folder_order)


def folder_counts(conn: Conn, name: str) -> tuple[int, int]:
    data = _ok(conn.status(mailbox_name(name), "(MESSAGES UNSEEN)"), f"count folder {name!r}")  # type: ignore[arg-type]
    line = b" ".join(d for d in data if isinstance(d, bytes))
    total = re.search(rb"MESSAGES (\d+)", line)
    unseen = re.search(rb"UNSEEN (\d+)", line)
    return (int(total.group(1)) if total else 0, int(unseen.group(1)) if unseen else 0)


def select(conn: Conn, name: str, *, readonly: bool) -> None:
    typ, data = conn.select(mailbox_name(name), readonly)  # type: ignore[arg-type]
    if typ != "OK":
        raise ToolFailed(f"No folder {name!r} ({_text(data)}); folders: {', '.join(list_folders(conn))}")


def search(conn: Conn, keys: list[bytes]) -> list[int]:
    needs_charset = any(not key.isascii() for key in keys)
    args: list[Any] = ["CHARSET", "UTF-8", *keys] if needs_charset else keys
    data = _ok(conn.uid("SEARCH", *args), "search")
    return sorted(int(uid) for line in data if isinstance(line, bytes) for uid in line.split())


def summaries(conn: Conn, folder: str, uids: list[int]) -> list[MessageSummary]:
    if not uids:
        return []
    wanted = set(uids)
    items = f"(UID FLAGS BODYSTRUCTURE BODY.PEEK[HEADER]<0.{HEADER_LIMIT}>)"
    data = _ok(conn.uid("FETCH", ",".join(map(str, uids)), items), "fetch messages")
    found = []
    for fetched in _fetched(data):
        uid, header = fetched.uid, fetched.literals.get(b"BODY[HEADER]<0>")
        if uid not in wanted or header is None:
            continue  # an unsolicited update about another message
        found.append(
            summarize(
                header,
                message_id=f"{folder}/{uid}",
                folder=folder,
                unread=fetched.unread,
                has_attachments=bool(_ATTACHMENT.search(fetched.text)),
            )
        )
    return found


_CAPABILITIES: weakref.WeakKeyDictionary[Conn, frozenset[str]] = weakref.WeakKeyDictionary()


def capabilities(conn: Conn) -> frozenset[str]:
    """What the server offers once logged in (asked once per connection)."""
    known = _CAPABILITIES.get(conn)
    if known is None:
        data = _ok(conn.capability(), "list its capabilities")
        words = b" ".join(d for d in data if isinstance(d, bytes)).decode("ascii", "replace").upper().split()
        known = _CAPABILITIES[conn] = frozenset(words)
    return known


@dataclass
class Reading:
    """What reading one message takes from the server: never the attachments' content.

    ``body`` is the start of the text part (at most ``BODY_FETCH_LIMIT`` bytes), already decoded
    from its transfer encoding when the server speaks BINARY (RFC 3516), else as stored with
    ``body_encoding`` saying how to decode it. Attachment sizes are exact for base64 in lines of equal length (what
    mail software writes), estimated otherwise.
    """

    header: bytes
    unread: bool
    body: bytes = b""
    body_encoding: str | None = None
    body_header: bytes = b""
    body_type: str = "text/plain"
    attachments: list[tuple[bytes, str, int]] = field(default_factory=list)


def read(conn: Conn, folder: str, uid: int) -> Reading:
    """Read a message's header, the start of its text and its attachments' headers and sizes, not their content."""
    items = f"(UID FLAGS BODYSTRUCTURE BODY.PEEK[HEADER]<0.{HEADER_LIMIT}>)"
    data = _ok(conn.uid("FETCH", str(uid), items), "fetch the message")
    first = next((f for f in _fetched(data) if f.uid == uid and b"BODY[HEADER]<0>" in f.literals), None)
    if first is None:
        raise ToolFailed(f"No message '{folder}/{uid}' in folder {folder!r}; list_emails shows its messages")
    reading = Reading(header=first.literals[b"BODY[HEADER]<0>"], unread=first.unread)
    parts = parts_of(first.text)
    single = len(parts) == 1 and parts[0].number == "1" and b'BODYSTRUCTURE ("' in first.text.upper()
    text = text_part(parts)
    attached = [p for p in parts if p.disposition == "attachment" and p is not text]
    binary = "BINARY" in capabilities(conn)
    try:
        second = _parts(conn, uid, text, attached, single=single, binary=binary)
    except ToolFailed:
        if not binary:
            raise
        binary = False  # e.g. [UNKNOWN-CTE]: the server cannot decode the part; take it as stored
        second = _parts(conn, uid, text, attached, single=single, binary=binary)

    def header_of(part: Part) -> bytes:
        return reading.header if single else second.literals.get(f"BODY[{part.number}.MIME]".encode(), b"")

    def size_of(part: Part) -> int:
        whole = second.literals.get(f"BODY[{part.number}]".encode())
        if whole is not None:
            return len(transfer_decode(whole, part.encoding))
        head = second.literals.get(f"BODY[{part.number}]<0>".encode())
        tail = second.literals.get(f"BODY[{part.number}]<{part.size - _PROBE}>".encode())
        return base64_size(part.size, head, tail) if head and tail else estimate(part)

    if text is not None:
        key = f"{'BINARY' if binary else 'BODY'}[{text.number}]<0>".encode()
        reading.body = second.literals.get(key, b"")
        reading.body_encoding = None if binary else text.encoding
        reading.body_header = header_of(text)
        reading.body_type = text.content_type
    reading.attachments = [(header_of(p), p.content_type, size_of(p)) for p in attached]
    return reading


def _parts(conn: Conn, uid: int, text: Part | None, attached: list[Part], *, single: bool, binary: bool) -> _Fetched:
    """One FETCH of the parts' MIME headers, base64 ends (for sizes) and the start of the text."""
    wanted: list[str] = []
    for part in ([text] if text else []) + attached:
        if not single:
            wanted.append(f"BODY.PEEK[{part.number}.MIME]")
        if part is text:
            continue
        if part.size <= _SMALL:  # small: fetched whole, its size counted once decoded
            wanted.append(f"BODY.PEEK[{part.number}]")
        elif part.encoding == "base64":
            # Dovecot 2.3's BINARY.SIZE can be wrong; a base64 part's two ends tell its size exactly
            wanted.append(f"BODY.PEEK[{part.number}]<0.{_PROBE}>")
            wanted.append(f"BODY.PEEK[{part.number}]<{part.size - _PROBE}.{_PROBE}>")
    if text is not None:
        verb = "BINARY.PEEK" if binary else "BODY.PEEK"
        wanted.append(f"{verb}[{text.number}]<0.{BODY_FETCH_LIMIT}>")
    if not wanted:
        return _Fetched(b"")
    data = _ok(conn.uid("FETCH", str(uid), f"(UID {' '.join(wanted)})"), "fetch the message's parts")
    return next((f for f in _fetched(data) if f.uid == uid), _Fetched(b""))


def message_size(conn: Conn, folder: str, uid: int) -> int:
    """The message's size in octets (RFC822.SIZE); ToolFailed when the folder has no such UID."""
    data = _ok(conn.uid("FETCH", str(uid), "(UID RFC822.SIZE)"), "fetch the message's size")
    for fetched in _fetched(data):
        found = _RFC822_SIZE.search(fetched.text)
        if fetched.uid == uid and found:
            return int(found.group(1))
    raise ToolFailed(f"No message '{folder}/{uid}' in folder {folder!r}; list_emails shows its messages")


def fetch_raw(conn: Conn, folder: str, uid: int) -> tuple[bytes, bool]:
    """The message's bytes and whether it is unread; ToolFailed when the folder has no such UID."""
    data = _ok(conn.uid("FETCH", str(uid), "(UID FLAGS BODY.PEEK[])"), "fetch the message")
    for fetched in _fetched(data):
        raw = fetched.literals.get(b"BODY[]")
        if fetched.uid == uid and raw is not None:
            return raw, fetched.unread
    raise ToolFailed(f"No message '{folder}/{uid}' in folder {folder!r}; list_emails shows its messages")


def mark_read(conn: Conn, uid: int) -> None:
    _ok(conn.uid("STORE", str(uid), "+FLAGS.SILENT", "(\\Seen)"), "mark the message read")


def append(conn: Conn, folder: str, raw: bytes, date: dt.datetime) -> int | None:
    """File ``raw`` in ``folder`` as read (creating the folder if needed); its UID when the server says."""
    stamp = imaplib.Time2Internaldate(date.timestamp())
    typ, data = conn.append(mailbox_name(folder), "(\\Seen)", stamp, raw)  # type: ignore[arg-type]
    if typ != "OK" and "TRYCREATE" in _text(data).upper():
        _ok(conn.create(mailbox_name(folder)), f"create folder {folder!r}")  # type: ignore[arg-type]
        typ, data = conn.append(mailbox_name(folder), "(\\Seen)", stamp, raw)  # type: ignore[arg-type]
    _ok((typ, data), f"file the message in {folder!r}")
    found = _APPENDUID.search(b" ".join(d for d in data if isinstance(d, bytes)))
    return int(found.group(1)) if found else None


# the pool ----------------------------------------------------------------------------------------


class ImapPool:
    """Logged-in IMAP connections, at most ``imap_connections`` of them, each used by one thread at a time."""

    def __init__(self, settings: EmailSettings) -> None:
        if not settings.imap_host or not settings.imap_username or settings.imap_password is None:
            raise ConfigError(
                "Prod email reads over IMAP: set EMAIL_IMAP_HOST, EMAIL_IMAP_USERNAME and EMAIL_IMAP_PASSWORD"
            )
        self._settings = settings
        self._host = settings.imap_host
        self._port = settings.port("imap")
        self._user = settings.imap_username
        self._password = settings.imap_password
        self.where = f"IMAP at {self._host}:{self._port}"
        self._idle: list[Conn] = []
        self._limiter = anyio.CapacityLimiter(settings.imap_connections)
        self._tls = settings.tls_context() if settings.imap_security != "none" else None

    async def run(self, work: Callable[[Conn], T]) -> T:
        """Run ``work`` on a pooled connection in a worker thread."""
        return await anyio.to_thread.run_sync(self._run, work, limiter=self._limiter)

    def _run(self, work: Callable[[Conn], T]) -> T:
        try:
            conn, reused = self._idle.pop(), True
        except IndexError:
            conn, reused = self._connect(), False
        try:
            result = work(conn)
        except (imaplib.IMAP4.abort, OSError) as exc:
            _close(conn)
            if reused:  # a pooled connection may have gone stale (server restart, idle timeout): retry once
                log.info("%s: pooled connection failed (%s); retrying on a new one", self.where, exc)
                return self._run(work)
            raise BackendUnavailable(f"{self.where} is unavailable: {_reason(exc)}") from None
        except imaplib.IMAP4.error as exc:
            self._idle.append(conn)
            raise ToolFailed(f"The IMAP server refused the command: {exc}") from None
        except BaseException:
            self._idle.append(conn)
            raise
        self._idle.append(conn)
        return result

    def _connect(self) -> Conn:
        security, timeout = self._settings.imap_security, self._settings.timeout
        try:
            if security == "tls":
                conn: Conn = imaplib.IMAP4_SSL(self._host, self._port, ssl_context=self._tls, timeout=timeout)
            else:
                conn = imaplib.IMAP4(self._host, self._port, timeout=timeout)
        except (OSError, imaplib.IMAP4.error) as exc:
            raise BackendUnavailable(f"{self.where} is unavailable: {_reason(exc)}") from None
        if security == "starttls":
            try:
                conn.starttls(ssl_context=self._tls)
            except (OSError, imaplib.IMAP4.error) as exc:
                _close(conn)
                raise BackendUnavailable(
                    f"{self.where}: STARTTLS failed ({_reason(exc)}); check EMAIL_IMAP_SECURITY and EMAIL_TLS_CA_FILE"
                ) from None
        try:
            conn.login(self._user, self._password.get_secret_value())
        except imaplib.IMAP4.abort as exc:
            _close(conn)
            raise BackendUnavailable(f"{self.where} is unavailable: {_reason(exc)}") from None
        except imaplib.IMAP4.error as exc:
            _close(conn)
            raise BackendUnavailable(
                f"{self.where} refused the login of {self._user!r} ({_reason(exc)}); "
                "check EMAIL_IMAP_USERNAME and EMAIL_IMAP_PASSWORD"
            ) from None
        except OSError as exc:
            _close(conn)
            raise BackendUnavailable(f"{self.where} is unavailable: {_reason(exc)}") from None
        return conn

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []

        def logout() -> None:
            for conn in idle:
                try:
                    conn.logout()
                except (OSError, imaplib.IMAP4.error):
                    _close(conn)

        if idle:
            await anyio.to_thread.run_sync(logout)


def _close(conn: Conn) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, TimeoutError) and not text:
        return "timed out"
    return text.splitlines()[0] if text else type(exc).__name__
