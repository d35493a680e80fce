"""Fake ``docker`` and ``docker-compose`` executables for tests: they record every call and answer
like the real tools (``docker compose version``, ``docker info``, ``run``, ``port``, ``inspect``,
``logs``, ``rm``, and the compose actions), as a JSON file beside them says.

    fake = FakeDocker(tmp_path, monkeypatch)           # first on PATH from now on
    fake.configure(engine=False)                       # docker info fails like the real client
    ... run the code under test ...
    assert fake.calls()[-1].argv == ["compose", "-f", ...]
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NO_ENGINE = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"

_SCRIPT = r"""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "fake.json")) as f:
    cfg = json.load(f)
tool = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(os.path.join(here, "calls.jsonl"), "a") as f:
    f.write(json.dumps({"tool": tool, "argv": args, "env": {k: os.environ.get(k) for k in cfg["watch"]}}) + "\n")

def done(out="", err="", code=0):
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.exit(code)

def compose(args):
    i = 0
    while i < len(args) and args[i] in ("-f", "-p"):
        i += 2
    action, rest = args[i], args[i + 1:]
    if action in cfg["fail"]:
        done(err=cfg["fail"][action] + "\n", code=1)
    if action == "port":
        done(cfg["ports"].get(rest[0], "") + "\n")
    if action == "version":
        done("docker-compose version 1.29.2, build unknown\n")
    done(f"{action}: done\n")

if tool == "docker":
    if args[:1] == ["info"]:
        if cfg["engine"]:
            done("28.2.2\n")
        done(err=cfg["no_engine"] + "\n", code=1)
    if args[:1] == ["compose"]:
        if not cfg["compose_v2"]:
            done(err="docker: unknown command: docker compose\n", code=1)
        if args[1:2] == ["version"]:
            done("Docker Compose version v2.29.7\n")
        compose(args[1:])
    command = args[0]
    if command in cfg["fail"]:
        done(err=cfg["fail"][command] + "\n", code=125)
    if command == "run":
        done(cfg["container"] + "\n")
    if command == "port":
        done(cfg["ports"].get("container", "") + "\n")
    if command == "inspect":
        done(cfg["running"] + "\n")
    if command == "logs":
        done(cfg["logs"])
    if command == "rm":
        done(args[-1] + "\n")
    done(err=f"fake docker: unexpected {args}\n", code=2)
compose(args)
"""


@dataclass(frozen=True)
class Call:
    tool: str
    argv: list[str]
    env: dict[str, str | None]


class FakeDocker:
    """Fake ``docker`` (and, with ``v1=True``, ``docker-compose``) first on PATH."""

    CONTAINER = "f00dcafe" * 8

    def __init__(self, directory: Path, monkeypatch: pytest.MonkeyPatch, *, docker: bool = True, v1: bool = False):
        self.dir = directory / "fake-bin"
        self.dir.mkdir()
        self.config: dict[str, Any] = {
            "compose_v2": True,
            "engine": True,
            "no_engine": NO_ENGINE,
            "ports": {},
            "fail": {},
            "running": "true",
            "logs": "",
            "container": self.CONTAINER,
            "watch": ["OPENENV_PORT_SQL", "SQL_DATABASE_URL", "POSTGRES_PASSWORD"],
        }
        self._write_config()
        tools = (["docker"] if docker else []) + (["docker-compose"] if v1 else [])
        for tool in tools:
            path = self.dir / tool
            path.write_text(f"#!{sys.executable}\n{_SCRIPT}")
            path.chmod(0o755)
        # Only the fakes: the real docker and docker-compose must not be found.
        monkeypatch.setenv("PATH", str(self.dir))
        self.path = os.environ["PATH"]

    def _write_config(self) -> None:
        (self.dir / "fake.json").write_text(json.dumps(self.config))

    def configure(self, **changes: Any) -> None:
        self.config.update(changes)
        self._write_config()

    def calls(self) -> list[Call]:
        log = self.dir / "calls.jsonl"
        if not log.exists():
            return []
        return [Call(**json.loads(line)) for line in log.read_text().splitlines()]

    def actions(self) -> list[list[str]]:
        """The argv of each call, without the probes (``compose version``, ``info``)."""
        return [c.argv for c in self.calls() if c.argv[:1] != ["info"] and c.argv[:2] != ["compose", "version"]]
