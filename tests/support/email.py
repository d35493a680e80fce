"""Real mail servers for the email prod tests: aiosmtpd (SMTP) in process, Debian's Dovecot (IMAP) as a process.

Both listen on 127.0.0.1 on free ports, optionally with TLS from a throwaway CA (trustme).
Dovecot gets its own configuration, passwd file, maildir, state and logs in a temporary
directory; as root its mail processes run as ``nobody`` (Dovecot refuses UID 0 for mail).
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import pwd
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP as SMTPServer
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session

from openenv_mcp.servers.email.seed import seed
from openenv_mcp.servers.email.sim import fixture
from tests.support import free_port, require_service

USER = "alex.morgan@northwind.example"
PASSWORD = "correct horse battery staple"
SMTP_USER = "alex"
SMTP_PASSWORD = "smtp secret"


@dataclass
class Certificates:
    """A throwaway CA and a server certificate for 127.0.0.1, as files."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


@contextlib.contextmanager
def certificates() -> Iterator[Certificates]:
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    with tempfile.TemporaryDirectory(prefix="openenv-tls-") as where:
        root = Path(where)
        ca.cert_pem.write_to_path(str(root / "ca.pem"))
        cert.cert_chain_pems[0].write_to_path(str(root / "cert.pem"))
        cert.private_key_pem.write_to_path(str(root / "key.pem"))
        os.chmod(root, 0o755)  # Dovecot reads them as root, but keep them readable for a non-root run too
        yield Certificates(root / "ca.pem", root / "cert.pem", root / "key.pem")


# SMTP ----------------------------------------------------------------------------------------------


@dataclass
class Received:
    """One message an SMTP server accepted: the envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    raw: bytes


@dataclass
class SmtpServer:
    host: str
    port: int
    received: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    _arrived: threading.Condition = field(default_factory=threading.Condition)
    _controller: Controller | None = None

    def stop(self) -> None:
        """Stop listening (the test's way to take SMTP down); harmless when already stopped."""
        controller, self._controller = self._controller, None
        if controller is not None:
            controller.stop()

    def wait_for(self, count: int, *, timeout: float = 10.0) -> list[Received]:
        """Block until ``count`` messages arrived (bounded), then return them all."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout):
                raise AssertionError(
                    f"the SMTP server received {len(self.received)} of {count} messages in {timeout} s"
                )
            return list(self.received)


class _Recorder:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_DATA(self, server: SMTPServer, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        parsed = BytesParser(policy=policy.default).parsebytes(raw)
        assert isinstance(parsed, EmailMessage)
        with self.server._arrived:
            self.server.received.append(
                Received(str(envelope.mail_from), [str(r) for r in envelope.rcpt_tos], parsed, raw)
            )
            self.server._arrived.notify_all()
        return "250 OK"


@contextlib.contextmanager
def smtp_server(
    *, auth: bool = False, starttls: Certificates | None = None, implicit_tls: Certificates | None = None
) -> Iterator[SmtpServer]:
    """aiosmtpd on 127.0.0.1:free port, recording what it receives; optionally with AUTH and TLS."""
    server = SmtpServer("127.0.0.1", free_port())

    def authenticate(smtp: SMTPServer, session: Session, envelope: Envelope, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            SMTP_USER.encode(),
            SMTP_PASSWORD.encode(),
        )
        if ok:
            server.logins.append(SMTP_USER)
        return AuthResult(success=ok)

    options: dict[str, Any] = {}
    if auth:
        options.update(authenticator=authenticate, auth_require_tls=starttls is not None)
    if starttls is not None:
        options.update(tls_context=starttls.server_context(), require_starttls=True)
    controller = Controller(
        _Recorder(server),
        hostname=server.host,
        port=server.port,
        ssl_context=implicit_tls.server_context() if implicit_tls else None,
        ready_timeout=10,
        **options,
    )
    controller.start()
    server._controller = controller
    try:
        yield server
    finally:
        server.stop()


# IMAP: Dovecot -----------------------------------------------------------------------------------------


@dataclass
class Dovecot:
    host: str
    port: int
    user: str
    password: str
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else "(no log)"

    def connect(self) -> imaplib.IMAP4:
        conn = imaplib.IMAP4(self.host, self.port, timeout=10)
        conn.login(self.user, self.password)
        return conn

    def stop(self) -> None:
        """Stop Dovecot and every process it started (its own session), bounded."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # imap processes still serving old connections
            os.killpg(self.process.pid, signal.SIGKILL)


def _dovecot_binary() -> str:
    found = shutil.which("dovecot") or ("/usr/sbin/dovecot" if Path("/usr/sbin/dovecot").exists() else None)
    if found is None:
        require_service(
            "Dovecot (Debian package dovecot-imapd, see scripts/debian-packages)", FileNotFoundError("dovecot")
        )
    assert found is not None
    return found


def _users() -> tuple[str, str, str, str]:
    """(internal user, login user, mail uid, mail gid) for this process: root hands mail to nobody."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid()).pw_name
        return me, me, str(os.geteuid()), str(os.getegid())

    def exists(name: str) -> bool:
        try:
            pwd.getpwnam(name)
        except KeyError:
            return False
        return True

    nobody = pwd.getpwnam("nobody")
    internal = "dovecot" if exists("dovecot") else "nobody"
    login = "dovenull" if exists("dovenull") else "nobody"
    return internal, login, str(nobody.pw_uid), str(nobody.pw_gid)


_CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
instance_name = openenv-test-{port}
listen = 127.0.0.1
protocols = imap
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
log_path = {root}/dovecot.log
mail_location = maildir:{root}/mail/%n
default_internal_user = {internal}
default_login_user = {login}
first_valid_uid = 1
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/mail/%n
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
  }}
}}
"""


@contextlib.contextmanager
def dovecot(*, tls: Certificates | None = None, seed: bool = True) -> Iterator[Dovecot]:
    """Dovecot on 127.0.0.1:free port with one user, seeded with the sim's mailbox (plaintext, or implicit TLS)."""
    binary = _dovecot_binary()
    root = Path(tempfile.mkdtemp(prefix="openenv-dovecot-"))
    try:
        os.chmod(root, 0o755)  # the mail processes (nobody, when run as root) must reach their maildir
        internal, login, uid, gid = _users()
        (root / "mail").mkdir()
        if os.geteuid() == 0:
            os.chown(root / "mail", int(uid), int(gid))
        (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        port = free_port()
        if tls is None:
            ssl_lines, imap_port, imaps_port = "ssl = no", port, 0
        else:
            ssl_lines = f"ssl = required\nssl_cert = <{tls.cert_file}\nssl_key = <{tls.key_file}"
            imap_port, imaps_port = 0, port
        (root / "dovecot.conf").write_text(
            _CONFIG.format(
                root=root,
                port=port,
                ssl=ssl_lines,
                internal=internal,
                login=login,
                uid=uid,
                gid=gid,
                imap_port=imap_port,
                imaps_port=imaps_port,
            )
        )
        with (root / "stderr.log").open("wb") as stderr:
            command = [binary, "-F", "-c", str(root / "dovecot.conf")]
            process = subprocess.Popen(command, stdout=stderr, stderr=stderr, start_new_session=True)
        server = Dovecot("127.0.0.1", port, USER, PASSWORD, root, process)
        try:
            _wait_for_port(server, tls)
            if seed:
                seed_mailbox(server, tls)
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_port(server: Dovecot, tls: Certificates | None) -> None:
    import socket

    deadline = time.monotonic() + 15
    while True:
        if server.process.poll() is not None:
            stderr = (server.root / "stderr.log").read_text(errors="replace")
            raise RuntimeError(f"dovecot exited with {server.process.returncode}: {stderr}\n{server.log}")
        try:
            with socket.create_connection((server.host, server.port), timeout=1) as sock:
                if tls is None:
                    sock.settimeout(2)
                    if sock.recv(64).startswith(b"* OK"):
                        return
                else:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"dovecot did not listen on {server.port} within 15 s:\n{server.log}")
        time.sleep(0.02)


def seed_mailbox(server: Dovecot, tls: Certificates | None = None) -> None:
    """Seed the account the way users seed theirs (``python -m openenv_mcp.servers.email.seed``)."""
    if tls is None:
        conn = imaplib.IMAP4(server.host, server.port, timeout=10)
    else:
        context = ssl.create_default_context(cafile=str(tls.ca_file))
        conn = imaplib.IMAP4_SSL(server.host, server.port, ssl_context=context, timeout=10)
    with conn:
        conn.login(server.user, server.password)
        assert seed(conn) == sum(len(messages) for messages in fixture().folders.values())
