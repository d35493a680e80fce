"""A private PostgreSQL cluster for tests that stop and start PostgreSQL (the shared one is never touched).

``initdb`` into a temporary directory as the ``postgres`` user (PostgreSQL refuses to run as root),
then ``pg_ctl`` on a free port of 127.0.0.1 with its socket directory in the same temporary
directory, trust authentication. :meth:`PgCluster.stop` and :meth:`PgCluster.start` take it down
and bring it back on the same port, so a server under test sees an outage and a recovery.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.support import free_port, require_service

__all__ = ["PgCluster", "pg_cluster"]

_OWNER = "postgres"


def _bindir() -> Path | None:
    """The newest installed PostgreSQL's binaries (Debian keeps them off PATH)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class PgCluster:
    """A running (or stopped) private cluster: ``url(db)`` for a database on it, as the superuser."""

    bindir: Path
    root: Path
    port: int
    setup_seconds: float = 0.0  # initdb and the first start
    settings: dict[str, str] = field(default_factory=dict)  # extra server settings (-c name=value)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def url(self, database: str = "postgres", *, user: str = _OWNER) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str, timeout: float = 60) -> None:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **_as_owner())
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}\n{self.log}")

    def start(self) -> None:
        """Start the server on :attr:`port` and wait (bounded) until it accepts connections."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options, "-w", "start")

    def stop(self, mode: Literal["smart", "fast", "immediate"] = "fast") -> None:
        """Stop the server: ``fast`` ends sessions (in-flight queries fail), ``immediate`` is a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        status = subprocess.run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "status"],
            capture_output=True,
            timeout=30,
            **_as_owner(),
        )
        return status.returncode == 0


def _as_owner() -> dict[str, Any]:
    """Popen options that run a command as ``postgres`` when this process is root."""
    if os.geteuid() != 0:
        return {}
    owner = pwd.getpwnam(_OWNER)
    return {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": [], "cwd": "/"}


@contextlib.contextmanager
def pg_cluster(settings: dict[str, str] | None = None) -> Iterator[PgCluster]:
    """A fresh cluster, started with ``settings``; stopped and deleted afterwards (whatever state the test
    left it in)."""
    bindir = _bindir()
    if bindir is None:
        require_service("PostgreSQL binaries (Debian package postgresql)", FileNotFoundError("initdb"))
        raise AssertionError("unreachable")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_OWNER)
        except KeyError as exc:
            require_service("a 'postgres' user to run initdb as", exc)
    root = Path(tempfile.mkdtemp(prefix="openenv-pg-"))
    try:
        if os.geteuid() == 0:
            owner = pwd.getpwnam(_OWNER)
            os.chown(root, owner.pw_uid, owner.pw_gid)
        cluster = PgCluster(bindir=bindir, root=root, port=free_port(), settings=dict(settings or {}))
        started = time.monotonic()
        cluster._run("initdb", "-D", str(cluster.data), "-U", _OWNER, "-A", "trust", "-E", "UTF8", "--no-sync")
        cluster.start()
        cluster.setup_seconds = time.monotonic() - started
        try:
            yield cluster
        finally:
            if cluster.running():
                cluster.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)
