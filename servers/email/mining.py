"""A recorded prod session of email as a sim task (``openenv-mcp tasks mine``), as far as its recording allows.

What a recording holds: every call and prod's answer, so each message the session sent (a ``SentMessage``: its
recipients, subject, and for a reply the message it answers) and, for a forward, which message it forwarded.
That makes the task's expectations: a reply in the same thread to the same people, a forward of the same message
to them, a new message to them with the words of its subject.

What it does not hold: the facts a message had to state (half of a hand-written task's grade), which no recording
separates from the rest of the text, so a mined task grades recipients and form only (``facts`` empty: 0.4 and
0.6); and the mailbox the session started from, which a real mailbox changes with every delivery. The task starts
from the shipped mailbox (the one the prod mailbox is seeded with: its IMAP UIDs are the sim's message ids); the
replay then checks every call answered as prod did, so a session that read mail the shipped mailbox does not hold
is rejected with the step that differs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.utils import getaddresses
from typing import Any

from openenv_mcp.environment.declarations import Recorded, Rejected
from openenv_mcp.environment.tasks import Task
from openenv_mcp.servers.email.sim import fixture
from openenv_mcp.servers.email.tasks import EmailTask, Expectation, common_tail

__all__ = ["mine_session"]

_SENDS = ("send_email", "reply_email", "forward_email")


def mine_session(template: Task, session: Recorded, task_id: str, prompt: str) -> tuple[Task, int]:
    """The task of the messages ``session`` sent, starting from the shipped mailbox; its reference is the calls up
    to the last message sent (the episode is done when every expected message was attempted)."""
    sends = [(n, call) for n, call in enumerate(session.calls, start=1) if call["tool"] in _SENDS]
    sent = [
        (n, call) for n, call in sends if not call.get("is_error") and isinstance(call.get("structured_content"), dict)
    ]
    if not sent:
        raise Rejected("no message was sent: an email task is graded on what is sent")
    expect = tuple(_expectation(call) for _, call in sent)
    steps = sent[-1][0]
    difficulty = "easy" if len(expect) == 1 and steps <= 2 else "medium" if len(expect) <= 2 else "hard"
    task = EmailTask(
        id=task_id, split="train", prompt=prompt + common_tail(), difficulty=difficulty, expect=expect, scenario=None
    )
    return task, steps


def _expectation(call: Mapping[str, Any]) -> Expectation:
    message: Mapping[str, Any] = call["structured_content"]
    headers = [str(address) for address in [*message["to"], *message["cc"]]]  # 'Rita Chen <rita.chen@...>'
    to = frozenset(address.lower() for _, address in getaddresses(headers) if address)
    if call["tool"] == "reply_email":
        thread = tuple(dict.fromkeys([*message["references"], message["in_reply_to"]]))
        return Expectation(kind="reply", to=to, targets=thread)
    if call["tool"] == "forward_email":
        return Expectation(kind="forward", to=to, targets=(_message_id(str(call["arguments"]["message_id"])),))
    words = tuple((word,) for word in re.findall(r"\w+", str(message["subject"]).casefold()))
    return Expectation(kind="new", to=to, subject=words)


def _message_id(mailbox_id: str) -> str:
    """The Message-ID of the shipped mailbox's message ``INBOX/12``."""
    for message_id, message in fixture().by_message_id.items():
        if message.id == mailbox_id:
            return message_id
    raise Rejected(f"the session forwarded {mailbox_id}, which the shipped mailbox does not hold")
