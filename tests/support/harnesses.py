"""Helpers of the harness policy's tests (tests/harnesses): the harness CLIs' presence, a harness run through the
command line, the store's export, and the processes a harness left living in its home."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.cli import main
from openenv_mcp.harnesses import HARNESSES
from tests.support import IN_CI
from tests.support.token_model import ProxyStack

__all__ = ["exported", "installed", "left_running", "play"]


def installed(name: str) -> None:
    harness = HARNESSES[name]
    if shutil.which(harness.command) is None:
        message = f"{harness.command} ({harness.package}) is not on PATH: run scripts/harnesses (scripts/test does)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def exported(store: str) -> dict[str, dict[str, Any]]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(io.StringIO()):
        assert main(["trajectories", "export", "--url", store]) == 0
    return {record["episode_id"]: record for record in map(json.loads, output.getvalue().splitlines())}


def play(stack: ProxyStack, name: str, *extra: str) -> tuple[int, str, dict[str, Any]]:
    """``openenv-mcp rollout URL --policy harness --harness NAME`` for one episode: its exit code, what it printed
    and the episode as ``trajectories export`` writes it (once the server has recorded its steps)."""
    before = set(exported(stack.store))
    served = len(stack.model.served)
    command = ["rollout", stack.env_url, "--policy", "harness", "--harness", name, "--base-url", stack.upstream]
    command += ["--model", "stand-in", "--store", stack.store, "-n", "1", "--no-progress", *extra]
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(command)
    assert len(stack.model.served) > served, output.getvalue()
    deadline = time.monotonic() + 10
    while True:  # the server's recorder writes the steps within its flush interval
        new = {key: value for key, value in exported(stack.store).items() if key not in before}
        if new and all(record["rewards"] for record in new.values()):
            break
        assert time.monotonic() < deadline, f"no new episode with steps exported within 10 s: {output.getvalue()}"
        time.sleep(0.1)
    (record,) = new.values()
    return code, output.getvalue(), record


def left_running(name: str) -> list[int]:
    """Processes still living in a home the harness policy made for ``name`` (``HOME`` under the temp folder)."""
    prefix = str(Path(tempfile.gettempdir()) / f"openenv-{name}-").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if any(item.startswith(b"HOME=" + prefix) for item in (entry / "environ").read_bytes().split(b"\0")):
                    found.append(int(entry.name))
    return found
