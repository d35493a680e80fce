"""The email environment: read, search, send, reply to and forward mail in one person's mailbox.

Sim: a per-episode copy of a shipped mailbox (``data/mailbox.json``); sent mail goes to the
episode's Sent folder (and to ``EMAIL_SIM_LOG`` when set), and grading reads it from there.
Prod: a real mailbox, read over IMAP and sent through SMTP (``EMAIL_*`` settings).
"""

from __future__ import annotations

from openenv_mcp import Environment, ProdService
from openenv_mcp.servers.email.backends import MailBackend
from openenv_mcp.servers.email.declarations import declarations
from openenv_mcp.servers.email.generator import load_all
from openenv_mcp.servers.email.prod import ProdMailbox
from openenv_mcp.servers.email.settings import EmailSettings
from openenv_mcp.servers.email.sim import SimMailbox
from openenv_mcp.servers.email.tasks import EmailTask, grade, solve
from openenv_mcp.servers.email.tools import tools

__all__ = ["environment"]

environment: Environment[MailBackend, EmailTask] = Environment(
    name="email",
    description=(
        "Work through one person's mailbox: list_folders, list_emails, search_emails and read_email to find "
        "messages; send_email, reply_email and forward_email to act on them. Tasks are graded on what is sent."
    ),
    tools=tools,
    tasks=load_all,
    settings=EmailSettings,
    sim_backend=SimMailbox.open,
    prod_backend=ProdMailbox.open,
    grade=grade,
    prod_requires=("from_address", "smtp_host", "imap_host", "imap_username", "imap_password"),
    sim_summary="an in-memory copy of the shipped mailbox per episode; sent mail goes to its Sent folder",
    prod_services=(
        ProdService(
            name="imap",
            title="IMAP server",
            role="the mailbox: folders and messages to list, search and read; the Sent copy of sent mail",
            settings=(
                "imap_host",
                "imap_port",
                "imap_security",
                "imap_username",
                "imap_password",
                "imap_connections",
                "sent_folder",
                "save_sent",
                "tls_ca_file",
                "timeout",
            ),
            tested="in CI against Debian's Dovecot 2.3, started by the tests on a free port (plaintext and "
            "implicit TLS) and seeded with the sim's mailbox",
        ),
        ProdService(
            name="smtp",
            title="SMTP server",
            role="sends mail (new messages, replies, forwards) from EMAIL_FROM_ADDRESS",
            settings=(
                "from_address",
                "from_name",
                "smtp_host",
                "smtp_port",
                "smtp_security",
                "smtp_username",
                "smtp_password",
                "tls_ca_file",
                "timeout",
            ),
            tools=("send_email", "reply_email", "forward_email"),
            tested="in CI against aiosmtpd, started by the tests on a free port (plain, and with AUTH over STARTTLS "
            "and over implicit TLS); no third-party provider is tested",
        ),
    ),
    solve=solve,
    examples=(
        ("list_folders", {}),
        ("list_emails", {"folder": "INBOX", "unread_only": True, "limit": 5}),
        ("read_email", {"message_id": "INBOX/12"}),
        ("search_emails", {"query": "invoice", "limit": 5}),
    ),
    max_steps=25,
    sim_fork=SimMailbox.fork,
    declares=declarations,
)
