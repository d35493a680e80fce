# ruff: noqa: RUF001  (look-alike digits and letters are the point of the id attacks)
"""Attacks on the email environment from outside, each judged by an effect outside the server.

Doors: MCP tool calls (prod and sim) and HTTP ``/step`` (sim). Judges: the bytes the real SMTP
server (aiosmtpd) received and its envelope, what Dovecot holds, the sim's mail log, the HTTP
status, the server process's peak memory, and whether listing still works afterwards. Inbound
attacks are messages appended to Dovecot's INBOX, as a delivery would put them there.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from openenv_mcp.servers.email import environment
from openenv_mcp.servers.email.sim import fixture
from tests.support import LiveServer, live_server, wait_for, wait_http
from tests.support.email import Dovecot, SmtpServer, dovecot, smtp_server

OWNER = fixture().owner
EVIL = "inj@evil.example"

# what every message we send carries at its top, in this order (Cc, In-Reply-To, References when set)
SENT_HEADERS = {"from", "to", "cc", "subject", "date", "message-id", "in-reply-to", "references"}
MIME_HEADERS = {"content-type", "content-transfer-encoding", "mime-version"}


def encodable(text: str) -> bool:
    """Whether an MCP client can send ``text`` (its JSON encoder refuses lone surrogates; /step takes them escaped)."""
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def q(text: str) -> str:
    """``text`` as one quoted-printable encoded word."""
    data = text.encode()
    return (
        "=?utf-8?q?"
        + "".join(f"={b:02X}" if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122) else chr(b) for b in data)
        + "?="
    )


def b(text: str, charset: str = "utf-8") -> str:
    """``text`` as one base64 encoded word."""
    return f"=?{charset}?b?" + base64.b64encode(text.encode(charset)).decode() + "?="


# Subjects an agent might send: each must be refused, and nothing may reach the SMTP server.
HOSTILE_SUBJECTS: dict[str, str] = {
    "encoded CRLF Bcc (the issue)": "=?utf-8?q?x=0D=0ABcc=3A_inj@evil.example?=",
    "encoded CRLF Reply-To": "=?utf-8?q?x=0D=0AReply-To=3A_inj@evil.example?=",
    "encoded CRLF second From": "=?utf-8?q?x=0D=0AFrom=3A_inj@evil.example?=",
    "encoded CRLFCRLF new body and Content-Type": "=?utf-8?q?x=0D=0A=0D=0AContent-Type=3A_text/html?=",
    "encoded CRLF Content-Type": q("x\r\nContent-Type: multipart/mixed; boundary=evil"),
    "base64 encoded CRLF Bcc": b("x\r\nBcc: inj@evil.example"),
    "encoded twice": b("=?utf-8?q?x=0D=0ABcc=3A_inj@evil.example?="),
    "encoded three times": b(b("x\r\nBcc: inj@evil.example")),
    "encoded bare LF": "=?utf-8?q?x=0ABcc=3A_inj@evil.example?=",
    "encoded bare CR": "=?utf-8?q?x=0DBcc=3A_inj@evil.example?=",
    "encoded NUL": "=?utf-8?q?x=00Bcc=3A_inj@evil.example?=",
    "encoded U+2028": "=?utf-8?q?x=E2=80=A8Bcc=3A_inj@evil.example?=",
    "encoded U+0085": "=?utf-8?q?x=C2=85Bcc=3A_inj@evil.example?=",
    "latin-1 encoded CRLF": "=?iso-8859-1?q?x=0D=0ABcc=3A_inj@evil.example?=",
    "CRLF split over two encoded words": "=?utf-8?q?x=0D?= =?utf-8?q?=0ABcc=3A_inj@evil.example?=",
    "raw U+2028": "x\u2028Bcc: inj@evil.example",
    "raw U+2029": "x\u2029Bcc: inj@evil.example",
    "raw U+0085": "x\x85Bcc: inj@evil.example",
    "raw CRLF folding": "x\r\n Bcc: inj@evil.example",
    "raw lone surrogate (8-bit)": "x\udcffBcc",
    "raw vertical tab and form feed": "x\x0b\x0cBcc: inj@evil.example",
}

# Sends that must go out, and go out as composed (one message, the headers we set, our recipients).
HARMLESS_SENDS: dict[str, dict[str, Any]] = {
    "encoded word without controls": {"subject": "=?utf-8?q?caf=C3=A9?=", "body": "b"},
    "long subject (500 characters)": {"subject": " ".join(["word"] * 100)[:500], "body": "b"},
    "8-bit subject": {"subject": "Grüße – 日本語 – ☃", "body": "b"},
    "SMTP smuggling in the body": {
        "subject": "s",
        "body": "a\r\n.\r\nMAIL FROM:<x@evil.example>\r\nRCPT TO:<inj@evil.example>\r\nDATA\r\nevil\n.\nb\r.\rc\n.\r\n",
    },
    "MIME boundary injection in the body": {
        "subject": "s",
        "body": "x\n--===============1==\nContent-Type: text/html\n\n<b>evil</b>\n--===============1==--\n",
    },
    "header lines in the body": {"subject": "s", "body": "Bcc: inj@evil.example\r\n\r\nReply-To: inj@evil.example"},
}

BAD_IDS = [
    "INBOX/²",
    "INBOX/١٢",
    "INBOX/𝟙",
    "INBOX/１",
    "INBOX/0",
    "INBOX/-1",
    "INBOX/99999999999",
    "INBOX/4294967296",
    "INBOX/1.5",
    "INBOX/1:*",
    "INBOX/1,2",
    "INBOX/*",
    "/1",
    "INBOX/",
    "../../etc/passwd/1",
    '"INBOX"/1',
    "INBOX\\/1",
    "INBOX)/1",
    "INBOX{5}/1",
    "%/1",
    "NoSuch/1",
    "Entwürfe/1",
    "&Jjo-/1",
    "&/1",
    "&AGE/1",
    "Ｉ/1",
    "INBOX/1\u2028",
    "INBOX/1\x85",
    "INBOX/1\udcff",
    "x" * 300,
]


def _random_ids(count: int) -> list[str]:
    rng = random.Random(18)
    alphabet = "INBOX/0123456789²³¹٣۳߃०১੧૧୧௧౧೧൧๑໑༡၁႑០᠑᥆᧑᪁᪑᭑᮱᱁᱑꘡꣑꤁꧑꩑꯱０１/\\\"'&-%*(){}[] \t\u00a0é日"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(3, 40))) for _ in range(count)]


FUZZ_IDS = BAD_IDS + _random_ids(40)
MCP_IDS = [mid for mid in FUZZ_IDS if encodable(mid)]


# servers --------------------------------------------------------------------------------------------------


class Prod:
    def __init__(self, server: LiveServer, imap: Dovecot, smtp: SmtpServer) -> None:
        self.server, self.imap, self.smtp = server, imap, smtp

    def received_since(self, count: int) -> list[Any]:
        return self.smtp.received[count:]

    def append(self, raw: bytes, folder: str = "INBOX") -> str:
        """Deliver ``raw`` to the mailbox as an MTA would; its tool id."""
        conn = self.imap.connect()
        try:
            typ, data = conn.append(folder, "()", None, raw)  # type: ignore[arg-type]
            assert typ == "OK", data
            uid = int(data[0].split(b"APPENDUID ")[1].split(b" ")[1].rstrip(b"]"))
        finally:
            conn.logout()
        return f"{folder}/{uid}"


@pytest.fixture(scope="module")
def prod() -> Iterator[Prod]:
    with dovecot() as imap, smtp_server() as smtp, pytest.MonkeyPatch.context() as patch:
        for name, value in _prod_env(imap, smtp).items():
            patch.setenv(name, value)
        with live_server(environment, mode="prod") as server:
            yield Prod(server, imap, smtp)


def _prod_env(imap: Dovecot, smtp: SmtpServer) -> dict[str, str]:
    return {
        "EMAIL_FROM_ADDRESS": OWNER,
        "EMAIL_FROM_NAME": "Alex Morgan",
        "EMAIL_SMTP_HOST": smtp.host,
        "EMAIL_SMTP_PORT": str(smtp.port),
        "EMAIL_SMTP_SECURITY": "none",
        "EMAIL_IMAP_HOST": imap.host,
        "EMAIL_IMAP_PORT": str(imap.port),
        "EMAIL_IMAP_SECURITY": "none",
        "EMAIL_IMAP_USERNAME": imap.user,
        "EMAIL_IMAP_PASSWORD": imap.password,
        "EMAIL_TIMEOUT": "10",
    }


class Sim:
    def __init__(self, server: LiveServer, log: Path, http: httpx.Client) -> None:
        self.server, self.log, self.http = server, log, http

    def logged(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def episode(self) -> str:
        answer = self.http.post(f"{self.server.url}/reset", json={"seed": 1})
        assert answer.status_code == 200
        return str(answer.json()["episode_id"])

    def close(self, episode: str) -> None:
        assert self.http.delete(f"{self.server.url}/episodes/{episode}").status_code == 200

    def step(self, episode: str, tool: str, arguments: dict[str, Any]) -> httpx.Response:
        return self.http.post(
            f"{self.server.url}/step",
            headers={"X-Episode-Id": episode, "Content-Type": "application/json"},
            content=json.dumps({"action": {"tool": tool, "arguments": arguments}}),  # lone surrogates escaped
        )


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    log = tmp_path_factory.mktemp("email-attacks") / "sent.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMAIL_SIM_LOG", str(log))
        with live_server(environment, mode="sim", max_episodes=64) as server, httpx.Client(timeout=10) as http:
            yield Sim(server, log, http)


def mcp(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Tool calls over one MCP session: each answer's error flag, text and structured content."""
    from mcp import Client

    async def run() -> list[dict[str, Any]]:
        answers = []
        with anyio.fail_after(120):
            async with Client(url) as client:
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    text = getattr(result.content[0], "text", "") if result.content else ""
                    answers.append({"error": result.is_error, "text": text, "data": result.structured_content})
        return answers

    return anyio.run(run)


def assert_sent_as_composed(raw: bytes, *, extra: set[str] = frozenset()) -> dict[str, str]:  # type: ignore[assignment]
    """The delivered bytes' top header block holds only our headers, each once, and no injected one."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert b"\r\n\r\n" in raw
    names = []
    for line in head.split(b"\r\n"):
        assert b"\r" not in line and b"\n" not in line and b"\0" not in line, line
        if line[:1] in (b" ", b"\t"):
            continue
        names.append(line.split(b":", 1)[0].decode().lower())
    assert len(names) == len(set(names)), names
    assert set(names) <= SENT_HEADERS | MIME_HEADERS | extra, names
    assert not {"bcc", "reply-to", "x-injected", "sender"} & set(names)
    parsed = BytesParser(policy=policy.default).parsebytes(raw)
    return {k.lower(): str(v) for k, v in parsed.items()}


# agent-side header injection --------------------------------------------------------------------------


@pytest.mark.prod
def test_prod_refuses_hostile_subjects_and_nothing_reaches_smtp(prod: Prod) -> None:
    before = len(prod.smtp.received)
    subjects = {name: s for name, s in HOSTILE_SUBJECTS.items() if encodable(s)}
    calls = [("send_email", {"to": ["ana@example.com"], "subject": s, "body": "b"}) for s in subjects.values()]
    answers = mcp(prod.server.mcp_url, calls)
    for name, answer in zip(subjects, answers, strict=True):
        assert answer["error"], name
        assert "Internal" not in answer["text"], (name, answer["text"])
    # judged outside: the SMTP server got nothing, Dovecot's Sent holds only the fixture's 7, listing works
    assert prod.received_since(before) == []
    listing = mcp(prod.server.mcp_url, [("list_emails", {"folder": "Sent", "limit": 100})])[0]
    assert not listing["error"] and all("evil" not in m["subject"] for m in listing["data"]["messages"])


def test_sim_refuses_hostile_subjects_over_step_and_logs_nothing(sim: Sim) -> None:
    episode = sim.episode()
    before = len(sim.logged())
    for name, subject in HOSTILE_SUBJECTS.items():
        answer = sim.step(episode, "send_email", {"to": ["ana@example.com"], "subject": subject, "body": "b"})
        assert answer.status_code in (200, 422), (name, answer.status_code, answer.text)
        if answer.status_code == 200:
            assert answer.json()["observation"]["is_error"], name
    assert len(sim.logged()) == before
    sent = sim.step(episode, "list_emails", {"folder": "Sent", "limit": 100}).json()["observation"]
    assert sent["structured_content"]["matched"] == 7


@pytest.mark.prod
def test_prod_harmless_sends_go_out_exactly_as_composed(prod: Prod) -> None:
    before = len(prod.smtp.received)
    calls = [("send_email", {"to": ["ana@example.com"], **fields}) for fields in HARMLESS_SENDS.values()]
    answers = mcp(prod.server.mcp_url, calls)
    for name, answer in zip(HARMLESS_SENDS, answers, strict=True):
        assert not answer["error"], (name, answer["text"])
    received = prod.smtp.wait_for(before + len(HARMLESS_SENDS))[before:]
    assert len(received) == len(HARMLESS_SENDS)  # no smuggled second message
    for name, got in zip(HARMLESS_SENDS, received, strict=True):
        assert got.rcpt_tos == ["ana@example.com"] and got.mail_from == OWNER, name
        headers = assert_sent_as_composed(got.raw)
        assert "\n" not in headers["subject"] and "\r" not in headers["subject"]
        assert len(list(got.message.iter_parts())) == 0, name  # one text/plain part, no injected parts
        assert got.message.get_content_type() == "text/plain"
    assert received[0].message["Subject"] == "café"
    assert received[2].message["Subject"] == HARMLESS_SENDS["8-bit subject"]["subject"]
    smuggled = received[3].message.get_content()
    assert "RCPT TO:<inj@evil.example>" in smuggled  # delivered as text of the one message


def test_sim_harmless_sends_are_logged_as_composed(sim: Sim) -> None:
    episode = sim.episode()
    before = len(sim.logged())
    for fields in HARMLESS_SENDS.values():
        answer = sim.step(episode, "send_email", {"to": ["ana@example.com"], **fields})
        assert answer.status_code == 200 and not answer.json()["observation"]["is_error"], answer.text
    logged = sim.logged()[before:]
    assert [line["to"] for line in logged] == [["ana@example.com"]] * len(HARMLESS_SENDS)
    assert logged[0]["subject"] == "café"  # decoded as prod sends it


BAD_RECIPIENTS: dict[str, dict[str, Any]] = {
    "51 in To": {"to": [f"p{i}@example.com" for i in range(51)]},
    "50 To + 1 Cc": {"to": [f"p{i}@example.com" for i in range(50)], "cc": ["c@example.com"]},
    "2,000 in Cc": {"to": ["a@example.com"], "cc": [f"c{i}@example.com" for i in range(2000)]},
    "CRLF RCPT in an address": {"to": ["a@example.com\r\nRCPT TO:<inj@evil.example>"]},
    "encoded display name": {"to": ["=?utf-8?q?x=0D=0ABcc=3A_inj@evil.example?= <a@example.com>"]},
    "display name in Cc": {"to": ["a@example.com"], "cc": ['"x\r\nBcc: inj@evil.example" <c@example.com>']},
    "address with U+2028": {"to": ["a@example.com\u2028inj@evil.example"]},
    "address with NUL": {"to": ["a@example.com\x00inj@evil.example"]},
}


@pytest.mark.prod
def test_prod_recipient_limits_and_address_tricks_are_refused(prod: Prod) -> None:
    before = len(prod.smtp.received)
    calls = [("send_email", {"subject": "s", "body": "b", **fields}) for fields in BAD_RECIPIENTS.values()]
    calls.append(("send_email", {"to": ["a@example.com"], "subject": "s", "body": "x\x00y"}))  # NUL in body
    answers = mcp(prod.server.mcp_url, calls)
    for name, answer in zip([*BAD_RECIPIENTS, "NUL in body"], answers, strict=True):
        assert answer["error"], name
    assert "at most 50" in answers[1]["text"]
    assert prod.received_since(before) == []


def test_sim_recipient_limits_are_refused(sim: Sim) -> None:
    episode = sim.episode()
    for name, fields in BAD_RECIPIENTS.items():
        answer = sim.step(episode, "send_email", {"subject": "s", "body": "b", **fields})
        assert answer.status_code in (200, 422), name
        assert answer.status_code == 422 or answer.json()["observation"]["is_error"], name
    assert (
        sim.step(episode, "list_emails", {"folder": "Sent"}).json()["observation"]["structured_content"]["matched"] == 7
    )


# inbound: hostile mail in the mailbox ---------------------------------------------------------------------


def inbound(headers: str, body: str = "hello", *, extra: bytes = b"") -> bytes:
    """A message as an attacker would deliver it (headers given raw, CRLF line ends)."""
    head = headers.strip("\n").replace("\n", "\r\n")
    return (
        head + "\r\nMIME-Version: 1.0\r\n" + ("" if extra else "Content-Type: text/plain; charset=utf-8\r\n")
    ).encode("utf-8", "surrogateescape") + (extra or ("\r\n" + body + "\r\n").encode())


HOSTILE_INBOUND: dict[str, bytes] = {
    "From with encoded CRLF (the issue)": inbound(
        "From: =?utf-8?q?Mallory=0D=0AX-Injected_yes?= <m@evil.example>\nTo: alex.morgan@northwind.example\n"
        "Subject: hostile from\nMessage-ID: <h1@evil.example>\nDate: Fri, 14 Jun 2024 10:00:00 +0000"
    ),
    "Subject encoded twice": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\n"
        f"Subject: {b('=?utf-8?q?x=0D=0ABcc=3A_inj@evil.example?=')}\n"
        "Message-ID: <h2@evil.example>\nDate: Fri, 14 Jun 2024 10:01:00 +0000"
    ),
    "Subject encoded once": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\n"
        "Subject: =?utf-8?q?x=0D=0ABcc=3A_inj@evil.example=0D=0AReply-To=3A_inj@evil.example?=\n"
        "Message-ID: <h3@evil.example>\nDate: Fri, 14 Jun 2024 10:02:00 +0000"
    ),
    "References encoded twice": inbound(
        f"From: m@evil.example\nTo: alex.morgan@northwind.example\nSubject: refs\n"
        f"References: <a@x.example> {b('=?utf-8?q?=0D=0ABcc=3A_inj@evil.example?=')}\n"
        "Message-ID: <h4@evil.example>\nDate: Fri, 14 Jun 2024 10:03:00 +0000"
    ),
    "In-Reply-To and Message-ID encoded": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\nSubject: ids\n"
        "In-Reply-To: =?utf-8?q?<a@x>=0D=0ABcc=3A_inj@evil.example?=\n"
        "Message-ID: =?utf-8?q?<h5@evil.example>=0D=0AReply-To=3A_inj@evil.example?=\n"
        "Date: Fri, 14 Jun 2024 10:04:00 +0000"
    ),
    "Reply-To display name encoded CRLF": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\nSubject: rt\n"
        "Reply-To: =?utf-8?q?Eve=0D=0ABcc=3A_inj@evil.example?= <eve@evil.example>\n"
        "Message-ID: <h6@evil.example>\nDate: Fri, 14 Jun 2024 10:05:00 +0000"
    ),
    "Subject with U+2028 and U+0085": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\n"
        "Subject: =?utf-8?q?a=E2=80=A8Bcc=3A_inj@evil.example=C2=85Reply-To=3A_inj@evil.example?=\n"
        "Message-ID: <h7@evil.example>\nDate: Fri, 14 Jun 2024 10:06:00 +0000"
    ),
    "raw 8-bit headers (latin-1)": inbound(
        "From: M\udce4llory <m@evil.example>\nTo: alex.morgan@northwind.example\nSubject: Gr\udcfc\udcdfe \udcff\n"
        "Message-ID: <h8@evil.example>\nDate: Fri, 14 Jun 2024 10:07:00 +0000"
    ),
    "200 KB Subject": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\nSubject: " + "long " * 40_000 + "\n"
        "Message-ID: <h9@evil.example>\nDate: Fri, 14 Jun 2024 10:08:00 +0000"
    ),
    "broken Date and From": inbound(
        'From: <<<@@@>>> "\nTo: ,,,,\nSubject: broken\nMessage-ID: <h10@evil.example>\nDate: Caturday 99 Foo 20x'
    ),
    "attachment filename traversal and CRLF": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\nSubject: files\n"
        "Message-ID: <h11@evil.example>\nDate: Fri, 14 Jun 2024 10:10:00 +0000",
        extra=(
            b'Content-Type: multipart/mixed; boundary="B"\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nsee files\r\n'
            b"--B\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n"
            b'Content-Disposition: attachment; filename="../../../etc/passwd"\r\n\r\naGVsbG8=\r\n'
            b"--B\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n"
            b"Content-Disposition: attachment; filename*=utf-8''a%0D%0ABcc%3A%20inj%40evil.example.pdf\r\n"
            b"\r\naGVsbG8=\r\n"
            b"--B\r\nContent-Type: text/html\r\nContent-Disposition: attachment; "
            b'filename="=?utf-8?q?x=0D=0AContent-Type=3A_text/html?=.html"\r\n\r\n<b>x</b>\r\n--B--\r\n'
        ),
    ),
    "hostile charset and part headers": inbound(
        "From: m@evil.example\nTo: alex.morgan@northwind.example\nSubject: charset\n"
        "Message-ID: <h12@evil.example>\nDate: Fri, 14 Jun 2024 10:11:00 +0000",
        extra=b'Content-Type: text/plain; charset="x\\"; evil=\\r\\n"\r\n'
        b"Content-Transfer-Encoding: bogus\r\n\r\nhi\r\n",
    ),
}


@pytest.fixture(scope="module")
def hostile(prod: Prod) -> dict[str, str]:
    """The hostile messages, delivered to INBOX; their ids."""
    return {name: prod.append(raw) for name, raw in HOSTILE_INBOUND.items()}


@pytest.mark.prod
def test_prod_shows_hostile_inbound_mail_and_keeps_listing(prod: Prod, hostile: dict[str, str]) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [("list_emails", {"limit": 100}), ("search_emails", {"query": "evil"})]
    calls += [("read_email", {"message_id": mid}) for mid in hostile.values()]
    calls += [("search_emails", {"query": "Mallory"}), ("list_emails", {"sender": "evil", "limit": 100})]
    answers = mcp(prod.server.mcp_url, calls)
    for (name, arguments), answer in zip(calls, answers, strict=True):
        assert not answer["error"], (name, arguments, answer["text"])
    listed = {m["id"]: m for m in answers[0]["data"]["messages"]}
    assert set(hostile.values()) <= set(listed)
    for message in [*listed.values(), *(a["data"] for a in answers[2 : 2 + len(hostile)])]:
        for value in [message["from"], message["subject"], *message["to"]]:
            assert not any(c in value for c in "\r\n\x00\u2028\u2029\x85"), value
    mallory = listed[hostile["From with encoded CRLF (the issue)"]]
    assert mallory["from"] == "Mallory X-Injected yes <m@evil.example>"
    assert len(listed[hostile["200 KB Subject"]]["subject"]) <= 998
    files = answers[2 + list(hostile).index("attachment filename traversal and CRLF")]["data"]
    assert [a["size"] for a in files["attachments"]] == [5, 5, 8]
    assert answers[-2]["data"]["matched"] >= 1


@pytest.mark.prod
def test_prod_replies_and_forwards_of_hostile_mail_emit_no_injected_header(prod: Prod, hostile: dict[str, str]) -> None:
    before = len(prod.smtp.received)
    calls: list[tuple[str, dict[str, Any]]] = []
    for mid in hostile.values():
        calls.append(("reply_email", {"message_id": mid, "body": "ok", "reply_all": True}))
        calls.append(("forward_email", {"message_id": mid, "to": ["fw@example.com"], "note": "fyi"}))
    answers = mcp(prod.server.mcp_url, calls)
    went = [c for c, a in zip(calls, answers, strict=True) if not a["error"]]
    refused = [(c, a["text"]) for c, a in zip(calls, answers, strict=True) if a["error"]]
    assert len(refused) <= 1, refused  # the broken From leaves no one to reply to
    for answer in answers:
        assert "Internal" not in answer["text"] and "could not handle" not in answer["text"], answer["text"]
    received = prod.smtp.wait_for(before + len(went))[before:]
    assert len(received) == len(went)
    for (name, _), got in zip(went, received, strict=True):
        headers = assert_sent_as_composed(got.raw)
        assert EVIL not in got.rcpt_tos and all(r.count("@") == 1 for r in got.rcpt_tos), got.rcpt_tos
        if name == "forward_email":
            assert got.rcpt_tos == ["fw@example.com"]
        else:
            assert got.rcpt_tos in (["m@evil.example"], ["eve@evil.example"]), got.rcpt_tos
        for part in got.message.walk():  # no part carries headers of its own making
            assert {k.lower() for k in part} <= SENT_HEADERS | MIME_HEADERS | {"content-disposition"}
            filename = part.get_filename()
            if filename is not None:
                assert "/" not in filename and "\r" not in filename and "\n" not in filename, filename
        for value in headers.values():
            assert "\n" not in value and "\r" not in value
        assert "inj@evil.example" not in headers.get("references", "") + headers.get("in-reply-to", "")


@pytest.mark.prod
def test_prod_reply_to_a_mail_with_3000_reply_to_addresses_is_refused(prod: Prod) -> None:
    many = ", ".join(f"r{i}@evil.example" for i in range(3000))
    mid = prod.append(
        inbound(
            f"From: m@evil.example\nTo: alex.morgan@northwind.example\nReply-To: {many}\nSubject: many\n"
            "Message-ID: <many@evil.example>\nDate: Fri, 14 Jun 2024 11:00:00 +0000"
        )
    )
    before = len(prod.smtp.received)
    answer, listing = mcp(
        prod.server.mcp_url,
        [("reply_email", {"message_id": mid, "body": "hi"}), ("list_emails", {"limit": 5})],
    )
    assert answer["error"] and "at most 50" in answer["text"] and "Reply-To" in answer["text"]
    assert prod.received_since(before) == [] and not listing["error"]


# memory ----------------------------------------------------------------------------------------------------


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.prod
def test_prod_reading_a_40_mb_attachment_does_not_load_it(request: pytest.FixtureRequest) -> None:
    size = 40 * 1024 * 1024
    with dovecot() as imap, smtp_server() as smtp:
        encoded = base64.b64encode(random.Random(17).randbytes(size))
        data = b"".join(encoded[i : i + 76] + b"\r\n" for i in range(0, len(encoded), 76))  # as MUAs write it
        raw = inbound(
            "From: big@example.com\nTo: alex.morgan@northwind.example\nSubject: big\n"
            "Message-ID: <big@example.com>\nDate: Fri, 14 Jun 2024 12:00:00 +0000",
            extra=b'Content-Type: multipart/mixed; boundary="B"\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n'
            + b"see attached\r\n--B\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n"
            b'Content-Disposition: attachment; filename="big.bin"\r\n\r\n' + data + b"--B--\r\n",
        )
        del data
        conn = imap.connect()
        typ, _ = conn.append("INBOX", "()", None, raw)  # type: ignore[arg-type]
        conn.logout()
        del raw
        assert typ == "OK"
        env = {**os.environ, **_prod_env(imap, smtp)}
        process = subprocess.Popen(  # port 0: the server picks a free one and logs it (no race for a port)
            [sys.executable, "-m", "openenv_mcp.cli", "serve", "email", "--mode", "prod", "--port", "0"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        logged: list[str] = []

        def drain() -> None:  # keep reading the log, so the pipe never fills
            assert process.stderr is not None
            for line in process.stderr:
                logged.append(line)

        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        try:
            wait_for(lambda: any("running on" in line for line in logged) or process.poll() is not None, "the server")
            started = next((line for line in logged if "running on" in line), None)
            assert started is not None, "".join(logged)
            url = started.split("running on ", 1)[1].split()[0].rstrip("/")
            wait_http(f"{url}/healthz")
            warm = mcp(f"{url}/mcp", [("list_emails", {"limit": 3}), ("read_email", {"message_id": "INBOX/1"})])
            assert not any(a["error"] for a in warm)
            before = _peak_rss(process.pid)
            answers = mcp(f"{url}/mcp", [("read_email", {"message_id": "INBOX/39"})] * 4)
            after = _peak_rss(process.pid)
            forward = mcp(f"{url}/mcp", [("forward_email", {"message_id": "INBOX/39", "to": ["a@example.com"]})])[0]
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)
            drainer.join(timeout=10)
            assert process.stderr is not None
            process.stderr.close()
    for answer in answers:
        assert not answer["error"], answer["text"]
        assert answer["data"]["attachments"] == [
            {"filename": "big.bin", "content_type": "application/octet-stream", "size": size}
        ]
        assert answer["data"]["body"] == "see attached"
    growth = after - before
    request.node.user_properties.append(("peak_rss_growth_bytes", growth))
    print(f"peak RSS before {before / 2**20:.0f} MiB, after four reads {after / 2**20:.0f} MiB")
    assert growth < 20 * 2**20, f"reading a 40 MB attachment raised peak RSS by {growth / 2**20:.0f} MiB"
    assert forward["error"] and "at most 25 MiB" in forward["text"] and smtp.received == []


def test_body_text_is_capped_with_a_note(sim: Sim) -> None:
    episode = sim.episode()
    long = ("word " * 20) + "\n"
    sent = sim.step(episode, "send_email", {"to": ["a@example.com"], "subject": "long", "body": long * 990})
    copy_id = sent.json()["observation"]["structured_content"]["id"]
    forward = sim.step(episode, "forward_email", {"message_id": copy_id, "to": ["b@example.com"], "note": "x" * 5000})
    fwd_id = forward.json()["observation"]["structured_content"]["id"]
    read = sim.step(episode, "read_email", {"message_id": fwd_id}).json()["observation"]["structured_content"]
    assert len(read["body"]) < 100_200 and read["body"].endswith("characters.]") and "[Cut:" in read["body"]


# ids -------------------------------------------------------------------------------------------------------

ID_TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("read_email", {}),
    ("reply_email", {"body": "x"}),
    ("forward_email", {"to": ["a@example.com"]}),
]


@pytest.mark.prod
def test_prod_garbage_ids_and_folders_are_tool_errors(prod: Prod) -> None:
    before = len(prod.smtp.received)
    calls = [(tool, {"message_id": mid, **extra}) for mid in MCP_IDS for tool, extra in ID_TOOLS]
    folders = {mid.rpartition("/")[0] or mid for mid in MCP_IDS} - {"INBOX", "Sent", "Archive", "Newsletters"}
    calls += [("list_emails", {"folder": folder}) for folder in sorted(folders)]
    answers = mcp(prod.server.mcp_url, calls)
    for (name, arguments), answer in zip(calls, answers, strict=True):
        assert answer["error"], (name, arguments)
        assert "Internal" not in answer["text"] and "could not handle" not in answer["text"], (
            arguments,
            answer["text"],
        )
    assert prod.received_since(before) == []
    assert not mcp(prod.server.mcp_url, [("list_emails", {"limit": 1})])[0]["error"]


def test_sim_garbage_ids_are_4xx_or_tool_errors_never_500(sim: Sim) -> None:
    for mid in FUZZ_IDS:
        episode = sim.episode()  # a refused call is a step too; an episode ends after 25
        for tool, extra in ID_TOOLS:
            answer = sim.step(episode, tool, {"message_id": mid, **extra})
            assert answer.status_code in (200, 422), (tool, mid, answer.status_code, answer.text)
            if answer.status_code == 200:
                observation = answer.json()["observation"]
                assert observation["is_error"], (tool, mid)
                assert "could not handle" not in observation["content"][0]["text"], (tool, mid)
        sim.close(episode)
    # over MCP too: tool errors, never "Internal server error"
    answers = mcp(sim.server.mcp_url, [("read_email", {"message_id": mid}) for mid in MCP_IDS])
    assert all(a["error"] and "Internal" not in a["text"] for a in answers)
    assert sim.step(sim.episode(), "list_emails", {"limit": 1}).status_code == 200


def test_an_unexpected_exception_in_a_tool_is_a_tool_error(sim: Sim) -> None:
    """A tool body that trips on something unforeseen answers a tool error, and the server keeps serving."""
    from openenv_mcp.servers.email.sim import SimMailbox

    episode = sim.episode()
    original = SimMailbox.folders

    async def broken(self: SimMailbox) -> Any:
        raise ValueError("something unforeseen")

    SimMailbox.folders = broken  # type: ignore[method-assign]
    try:
        answer = sim.step(episode, "list_folders", {})
    finally:
        SimMailbox.folders = original  # type: ignore[method-assign]
    assert answer.status_code == 200
    observation = answer.json()["observation"]
    assert observation["is_error"] and "could not handle" in observation["content"][0]["text"]
    assert sim.step(episode, "list_folders", {}).json()["observation"]["is_error"] is False


def test_the_serializer_refuses_what_the_generator_lets_through() -> None:
    """The last fence alone: a draft that skipped the checks still cannot go out with an injected header."""
    import datetime as dt

    from openenv_mcp.servers.email.drafts import Draft
    from openenv_mcp.servers.email.headers import UnsafeMessage
    from openenv_mcp.servers.email.mime import render

    date = dt.datetime(2024, 6, 14, tzinfo=dt.UTC)
    for subject in HOSTILE_SUBJECTS.values():
        if not encodable(subject):
            continue
        draft = Draft(to=("a@example.com",), cc=(), subject=subject, body="b", text="b")
        try:
            raw = render(draft, sender=OWNER, date=date, message_id="<x@northwind.example>")
        except UnsafeMessage:
            continue
        assert_sent_as_composed(raw)  # what the generator wrote is harmless (e.g. U+2028 folded away)
    injected = Draft(to=("a@example.com",), cc=(), subject=HOSTILE_SUBJECTS["encoded twice"], body="b", text="b")
    render(injected, sender=OWNER, date=date, message_id="<x@northwind.example>")  # one decoding: harmless text
    raw_bcc = Draft(
        to=("a@example.com",), cc=(), subject=HOSTILE_SUBJECTS["encoded CRLF Bcc (the issue)"], body="b", text="b"
    )
    with pytest.raises(UnsafeMessage, match="other headers than it should"):
        render(raw_bcc, sender=OWNER, date=date, message_id="<x@northwind.example>")


def test_an_operators_display_name_with_an_encoded_line_break_stops_the_start() -> None:
    from openenv_mcp import ConfigError
    from openenv_mcp.servers.email.prod import ProdMailbox
    from openenv_mcp.servers.email.settings import EmailSettings

    settings = EmailSettings(
        from_address=OWNER,
        from_name="=?utf-8?q?Alex=0D=0ABcc=3A_inj@evil.example?=",
        smtp_host="127.0.0.1",
        imap_host="127.0.0.1",
        imap_username="alex",
        imap_password="x",  # type: ignore[arg-type]
    )
    with pytest.raises(ConfigError, match="EMAIL_FROM_NAME must be one line"):
        ProdMailbox(settings)
