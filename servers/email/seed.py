"""Seed a real IMAP mailbox with the sim's mailbox: ``python -m openenv_mcp.servers.email.seed [--force]``.

Reads the ``EMAIL_IMAP_*`` settings, creates the fixture's folders and appends its messages in
order, with their read flags and dates. On an empty account the IMAP UIDs come out as the sim's,
so message ids (``INBOX/12``) and every listing match sim mode; the prod tests seed Dovecot this way.
"""

from __future__ import annotations

import argparse
import imaplib

import anyio

from openenv_mcp.servers.email.imap import ImapPool, folder_counts, list_folders, mailbox_name
from openenv_mcp.servers.email.mime import fixture_message
from openenv_mcp.servers.email.settings import EmailSettings
from openenv_mcp.servers.email.sim import fixture
from openenv_mcp.settings import load_settings

__all__ = ["main", "seed"]


def seed(conn: imaplib.IMAP4, *, force: bool = False) -> int:
    """Append the fixture to the logged-in ``conn``; returns how many messages were appended.

    Raises ``ValueError`` when a fixture folder already holds mail (its UIDs would not match the
    sim's), unless ``force``.
    """
    mailbox = fixture()
    existing = set(list_folders(conn))
    if not force:
        for folder in mailbox.folders:
            if folder in existing and folder_counts(conn, folder)[0]:
                raise ValueError(
                    f"Folder {folder!r} already holds mail; seed an empty account (or pass --force, "
                    "and the message ids will not match the sim's)"
                )
    appended = 0
    for folder, messages in mailbox.folders.items():
        if folder not in existing:
            typ, data = conn.create(mailbox_name(folder))  # type: ignore[arg-type]
            if typ != "OK":
                raise RuntimeError(f"could not create folder {folder!r}: {data}")
        for stored in messages:
            message = stored.message
            assert message.date is not None
            flags = "()" if message.id in mailbox.unread else "(\\Seen)"
            stamp = imaplib.Time2Internaldate(message.date.timestamp())
            typ, data = conn.append(mailbox_name(folder), flags, stamp, fixture_message(message))  # type: ignore[arg-type]
            if typ != "OK":
                raise RuntimeError(f"could not append {message.id} to {folder!r}: {data}")
            appended += 1
    return appended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m openenv_mcp.servers.email.seed", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--force", action="store_true", help="append even to folders that already hold mail")
    args = parser.parse_args(argv)
    settings = load_settings(EmailSettings, required=("imap_host", "imap_username", "imap_password"))
    pool = ImapPool(settings)

    async def run() -> int:
        try:
            return await pool.run(lambda conn: seed(conn, force=args.force))
        finally:
            await pool.aclose()

    try:
        count = anyio.run(run)
    except ValueError as exc:
        print(f"error: {exc}")
        return 1
    print(f"appended {count} messages to {pool.where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
