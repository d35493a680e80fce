"""What email declares for the toolkit: what parity forgives between the sim mailbox and a real IMAP/SMTP server,
which tasks the prod mailbox can be compared on, and how a recorded prod session is mined."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv_mcp.environment.declarations import COMMON, Declarations, Mining, Normaliser, Parity
from openenv_mcp.environment.tasks import Task
from openenv_mcp.servers.email.mining import mine_session

__all__ = ["declarations", "normalise", "on_shipped_mailbox"]

_SENDS = ("send_email", "reply_email", "forward_email")


def normalise(tool: str, arguments: Mapping[str, Any], value: Any) -> Any:
    """What a send stamps on its message: its Message-ID, its date, and the number of its copy in Sent."""
    if tool in _SENDS and isinstance(value, dict):
        value = {key: item for key, item in value.items() if key not in ("message_id", "date")}
        if isinstance(value.get("id"), str):
            value["id"] = value["id"].rpartition("/")[0] + "/#"
    return value


def on_shipped_mailbox(task: Task) -> bool:
    """Whether ``task`` starts from the shipped mailbox (a generated task files messages of its own into it)."""
    return getattr(task, "scenario", None) is None


declarations = Declarations(
    parity=Parity(
        normaliser=Normaliser(
            forgives=(
                *COMMON,
                "a sent message's Message-ID and date: the sim makes them from the episode's seed and its fixed "
                "clock (the mailbox's 'now', so an episode replays exactly); a real server makes a unique id and "
                "stamps the wall clock",
                "the number of a sent message's copy in Sent (Sent/8 against Sent/23): a sim episode starts from "
                "the shipped mailbox, while the prod Sent folder keeps every message sent before it (the run's "
                "earlier scripts included); the folder, recipients, subject, threading headers and attachments "
                "still count",
            ),
            rule=normalise,
        ),
        compared=on_shipped_mailbox,
        not_compared="a generated email task files messages of its own into the mailbox it starts from; the prod "
        "mailbox (Dovecot, seeded by python -m openenv_mcp.servers.email.seed) holds the shipped mailbox only, whose "
        "IMAP UIDs are the sim's message ids, so only the tasks on the shipped mailbox are compared",
    ),
    mining=Mining(miner=mine_session),  # what a recording allows, and what not: servers/email/mining.py
)
"""email's declarations (``Environment.declares``)."""
