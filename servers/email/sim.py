"""The sim mailbox: a per-episode copy of the shipped fixture (``data/mailbox.json``).

The fixture is parsed once into immutable messages; an episode copies only its folder lists
and unread set (microseconds), so resets stay cheap. Sent mail lands in the episode's Sent
folder, is kept in :attr:`SimMailbox.outbox` for grading, and is appended to ``EMAIL_SIM_LOG``
as a JSON line when that is set. Clock and Message-IDs are deterministic under the seed.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv_mcp import Task, ToolFailed
from openenv_mcp.models import construct
from openenv_mcp.servers.email.backends import Query, folder_order, split_id
from openenv_mcp.servers.email.drafts import Draft, format_address
from openenv_mcp.servers.email.mime import BODY_LIMIT, cap_body
from openenv_mcp.servers.email.models import Attachment, Folder, Message, MessageList, MessageSummary, SentMessage
from openenv_mcp.servers.email.settings import EmailSettings

__all__ = ["Fixture", "Scenario", "SimMailbox", "fixture", "mailbox_of"]

SENT = "Sent"


@dataclass(frozen=True, slots=True)
class Stored:
    """A fixture message, with what searching needs precomputed."""

    message: Message
    summary: MessageSummary
    haystack: str  # subject, sender and body, case-folded
    sender: str  # the From header, case-folded

    @classmethod
    def of(cls, message: Message) -> Stored:
        summary = MessageSummary.model_validate(message.model_dump(include=set(MessageSummary.model_fields)))
        haystack = "\n".join((message.subject, message.from_, message.body)).casefold()
        return cls(message, summary, haystack, message.from_.casefold())

    def relabel(self, message_id: str) -> Stored:
        """This message under another tool id (its UID moved when scenario messages were filed before it)."""
        message = construct(Message, **{**self.message.__dict__, "id": message_id})
        summary = construct(MessageSummary, **{**self.summary.__dict__, "id": message_id})
        return Stored(message, summary, self.haystack, self.sender)


@dataclass(frozen=True, slots=True)
class Fixture:
    """The shipped mailbox: its owner, its "now", its folders and messages (in UID order)."""

    owner_name: str
    owner: str
    now: dt.datetime
    folders: dict[str, tuple[Stored, ...]]
    unread: frozenset[str]
    by_message_id: dict[str, Message]


@functools.cache
def _raw() -> dict[str, Any]:
    text = resources.files("openenv_mcp.servers.email").joinpath("data/mailbox.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@functools.cache
def fixture() -> Fixture:
    """The shipped mailbox, parsed once."""
    raw = _raw()
    folders: dict[str, list[Stored]] = {name: [] for name in raw["folders"]}
    unread: set[str] = set()
    for m in raw["messages"]:
        stored = Stored.of(_message(m, f"{m['folder']}/{m['uid']}"))
        folders[m["folder"]].append(stored)
        if m["unread"]:
            unread.add(stored.message.id)
    return _assemble(raw, {name: tuple(stored) for name, stored in folders.items()}, unread)


def _message(m: dict[str, Any], message_id: str) -> Message:
    """One raw message (``data/mailbox.json``'s shape) as the tools show it, with its tool id."""

    def person(p: dict[str, str]) -> str:
        return format_address(p["name"], p["address"])

    attachments = [Attachment(**a) for a in m["attachments"]]
    return Message(
        id=message_id,
        folder=m["folder"],
        from_=person(m["from"]),
        to=[person(p) for p in m["to"]],
        cc=[person(p) for p in m["cc"]],
        reply_to=[person(m["reply_to"])] if m["reply_to"] else [],
        subject=m["subject"],
        date=dt.datetime.fromisoformat(m["date"].replace("Z", "+00:00")),
        unread=False,
        has_attachments=bool(attachments),
        message_id=m["message_id"],
        in_reply_to=m["in_reply_to"],
        references=m["references"],
        body=m["body"],
        attachments=attachments,
    )


def _assemble(raw: dict[str, Any], folders: dict[str, tuple[Stored, ...]], unread: set[str]) -> Fixture:
    by_message_id = {s.message.message_id: s.message for f in folders.values() for s in f if s.message.message_id}
    return Fixture(
        owner_name=raw["owner"]["name"],
        owner=raw["owner"]["address"],
        now=dt.datetime.fromisoformat(raw["now"].replace("Z", "+00:00")),
        folders={name: folders[name] for name in sorted(folders, key=folder_order)},
        unread=frozenset(unread),
        by_message_id=by_message_id,
    )


@dataclass(frozen=True, slots=True)
class Scenario:
    """Messages a task adds to the shipped mailbox: ``key`` names them (a task id), ``messages`` builds them.

    ``messages`` returns raw messages in ``data/mailbox.json``'s shape without a ``uid``; it is called when an
    episode of the task first opens (and again after the cache lets it go), never at load time, and must
    return the same messages every time: a task's mailbox is a function of the task alone.
    """

    key: str
    messages: Callable[[], Sequence[dict[str, Any]]]


def mailbox_of(scenario: Scenario | None) -> Fixture:
    """The mailbox a task starts from: the shipped one, or the shipped one with the scenario's messages filed in."""
    return fixture() if scenario is None else _with_scenario(scenario.key, scenario.messages)


@functools.lru_cache(maxsize=256)
def _with_scenario(key: str, build: Callable[[], Sequence[dict[str, Any]]]) -> Fixture:
    """The shipped mailbox plus ``build()``'s messages: each folder's messages in date order get UIDs 1, 2, ...
    (as an IMAP server seeded in that order would assign them), so a scenario message's id says nothing about
    it. Shipped messages whose UID is unchanged are shared with the fixture; the others are relabelled."""
    base, raw = fixture(), _raw()
    added: dict[str, list[tuple[dt.datetime, dict[str, Any]]]] = {}
    for m in build():
        added.setdefault(m["folder"], []).append((dt.datetime.fromisoformat(m["date"].replace("Z", "+00:00")), m))
    folders = dict(base.folders)
    unread = set(base.unread)
    for name, extra in added.items():
        merged: list[tuple[dt.datetime, int, Stored | dict[str, Any]]] = [
            (s.message.date or base.now, 0, s) for s in base.folders.get(name, ())
        ]
        merged += [(date, 1, m) for date, m in extra]
        merged.sort(key=lambda item: (item[0], item[1]))
        stored: list[Stored] = []
        for uid, (_, _, item) in enumerate(merged, start=1):
            message_id = f"{name}/{uid}"
            if isinstance(item, Stored):
                stored.append(item if item.message.id == message_id else item.relabel(message_id))
                if item.message.id in base.unread:
                    unread.discard(item.message.id)
                    unread.add(message_id)
            else:
                stored.append(Stored.of(_message(item, message_id)))
                if item["unread"]:
                    unread.add(message_id)
        folders[name] = tuple(stored)
    return _assemble(raw, folders, unread)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message the episode sent: the draft (what the agent asked for) and what went out."""

    draft: Draft
    sent: SentMessage


class SimMailbox:
    """One episode's mailbox: the fixture plus what the episode did (read flags, sent mail)."""

    def __init__(self, task: Task, seed: int, settings: EmailSettings) -> None:
        scenario = getattr(task, "scenario", None)  # an EmailTask's (tasks.py builds on this module)
        base = mailbox_of(scenario if isinstance(scenario, Scenario) else None)
        self._fixture = base
        self._task_id = task.id
        self._seed = seed
        self._log = settings.sim_log
        self._folders = {name: list(messages) for name, messages in base.folders.items()}
        self._unread = set(base.unread)
        self._rng = random.Random(seed)
        self._clock = base.now
        self.outbox: list[Outgoing] = []
        self.awarded = 0.0  # the task score already paid out as reward (see tasks.grade)

    @classmethod
    async def open(cls, task: Task, seed: int, settings: EmailSettings) -> SimMailbox:
        return cls(task, seed, settings)

    @property
    def owner(self) -> str:
        return self._fixture.owner

    @property
    def fixture(self) -> Fixture:
        return self._fixture

    async def fork(self) -> SimMailbox:
        """Fast-path fork: a copy of this mailbox (folders, read flags, sent mail, clock, Message-ID draws, score)."""
        twin = copy.copy(self)
        twin._folders = {name: list(messages) for name, messages in self._folders.items()}
        twin._unread = set(self._unread)
        twin._rng = random.Random()
        twin._rng.setstate(self._rng.getstate())
        twin.outbox = list(self.outbox)
        return twin

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def folders(self) -> list[Folder]:
        return [
            Folder(name=name, total=len(messages), unread=sum(s.message.id in self._unread for s in messages))
            for name, messages in self._folders.items()
        ]

    def _folder(self, name: str) -> list[Stored]:
        if name.upper() == "INBOX":
            name = "INBOX"
        try:
            return self._folders[name]
        except KeyError:
            raise ToolFailed(f"No folder {name!r}; folders: {', '.join(self._folders)}") from None

    async def find(self, query: Query) -> MessageList:
        pools = [self._folder(query.folder)] if query.folder is not None else list(self._folders.values())
        words = [w.casefold() for w in query.words]
        sender = query.sender.casefold() if query.sender else None
        matches: list[Stored] = []
        for pool in pools:
            for stored in pool:
                message = stored.message
                day = message.date.date() if message.date else None
                if (
                    (query.unread_only and message.id not in self._unread)
                    or (sender is not None and sender not in stored.sender)
                    or (query.since is not None and (day is None or day < query.since))
                    or (query.until is not None and (day is None or day > query.until))
                    or any(word not in stored.haystack for word in words)
                ):
                    continue
                matches.append(stored)
        matches.sort(key=_newest_first)
        return MessageList(
            folder=query.folder,
            matched=len(matches),
            messages=[self._summary(s) for s in matches[: query.limit]],
        )

    def _summary(self, stored: Stored) -> MessageSummary:
        unread = stored.message.id in self._unread
        if unread == stored.summary.unread:
            return stored.summary
        return stored.summary.model_copy(update={"unread": unread})

    async def fetch(self, message_id: str, *, mark_read: bool) -> Message:
        folder, uid = split_id(message_id)
        pool = self._folder(folder)
        # UIDs are 1, 2, ... in each folder, and the sim never deletes, so the UID is the index + 1.
        if uid > len(pool):
            raise ToolFailed(f"No message {message_id!r} in folder {folder!r}; list_emails shows its messages")
        message = pool[uid - 1].message
        if len(message.body) > BODY_LIMIT:  # as prod shows it (only sent copies can be this long)
            message = message.model_copy(update={"body": cap_body(message.body)})
        unread = message.id in self._unread
        if mark_read:
            self._unread.discard(message.id)
            unread = False
        return message if unread == message.unread else message.model_copy(update={"unread": unread})

    async def send(self, draft: Draft) -> SentMessage:
        self._clock += dt.timedelta(minutes=1)
        domain = self.owner.rsplit("@", 1)[1]
        sent_folder = self._folders.setdefault(SENT, [])
        sent = SentMessage(
            id=f"{SENT}/{len(sent_folder) + 1}",
            message_id=f"<{self._rng.getrandbits(64):016x}.sim@{domain}>",
            from_=format_address(self._fixture.owner_name, self.owner),
            to=list(draft.to),
            cc=list(draft.cc),
            subject=draft.subject,
            date=self._clock,
            in_reply_to=draft.in_reply_to,
            references=list(draft.references),
            attachments=draft.attachments,
        )
        copy = Message(
            **sent.model_dump(exclude={"id"}),
            id=str(sent.id),
            folder=SENT,
            reply_to=[],
            unread=False,
            has_attachments=bool(sent.attachments),
            body=draft.body.replace("\r\n", "\n").rstrip("\n"),
        )
        sent_folder.append(Stored.of(copy))
        self.outbox.append(Outgoing(draft, sent))
        if self._log is not None:
            line = {"task_id": self._task_id, "seed": self._seed, **sent.model_dump(mode="json"), "body": draft.body}
            with self._log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(line, ensure_ascii=False) + "\n")
        return sent


def _newest_first(stored: Stored) -> tuple[float, int]:
    message = stored.message
    stamp = message.date.timestamp() if message.date else 0.0
    return (-stamp, -int(message.id.rpartition("/")[2]))
