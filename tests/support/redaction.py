"""Redaction hooks for the session-recording tests (``OPENENV_RECORD_REDACT=tests.support.redaction:NAME``)."""

from __future__ import annotations

import json
import re
from typing import Any

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def hide_emails(record: dict[str, Any]) -> dict[str, Any]:
    """Every email address in the call and its result replaced by ``<email>``."""
    masked: dict[str, Any] = json.loads(EMAIL.sub("<email>", json.dumps(record)))
    return masked


def leave_out_list_tables(record: dict[str, Any]) -> dict[str, Any] | None:
    """``list_tables`` calls are not recorded; the rest are, as they are."""
    return None if record["tool"] == "list_tables" else record


def blank_rows_in_place(record: dict[str, Any]) -> dict[str, Any]:
    """A hook that edits the record it is given in place, as a hook may: each result row's values blanked."""
    for row in (record.get("structured_content") or {}).get("rows", []):
        row[:] = ["-"] * len(row)
    return record


def broken(record: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("a bug in the hook")
