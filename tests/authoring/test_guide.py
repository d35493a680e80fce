"""docs/authoring.md, run as written: every ``bash`` block, in order, in a fresh directory and venv.

The venv sees the project's installed packages (the way a user who installed openenv-mcp has them)
through a ``.pth`` file, so ``pip install -e .`` of the new package installs only that package.
This is also the end-to-end test of ``openenv-mcp new``: scaffold, install, its own tests, list,
serve, validate (live and by name), registry entry, compose, prod on a real SQLite file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import pytest

from tests.support import free_port, record

GUIDE = Path(__file__).parents[2] / "docs" / "authoring.md"


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def user_venv(where: Path) -> Path:
    """A fresh venv over this project's (a .pth adds its site-packages), with an ``openenv-mcp`` command."""
    venv.create(where, with_pip=True)
    bin_dir = where / "bin"
    site = Path(
        subprocess.run(
            [bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()["purelib"]
    (site / "openenv_project.pth").write_text(f"import site; site.addsitedir({ours!r})\n", encoding="utf-8")
    # What `pip install openenv-mcp` would put on PATH, pointing at this venv's interpreter.
    script = bin_dir / "openenv-mcp"
    script.write_text(f'#!/bin/sh\nexec "{bin_dir / "python"}" -m openenv_mcp.cli "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return bin_dir


@pytest.mark.timeout(600)
def test_every_command_of_the_authoring_guide_runs_as_written(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = bash_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 4, "the guide lost its commands"
    bin_dir = user_venv(tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    # set -x shows how far it got; the trap stops a server left in the background by a failed step
    script = "set -xeuo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + "\n".join(blocks)
    environ = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(bin_dir.parent),
        "PORT": str(free_port()),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "OPENENV_TRAJECTORIES": "off",
    }
    environ.pop("PYTHONPATH", None)
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=environ, capture_output=True, text=True, timeout=420, check=False
    )
    elapsed = time.monotonic() - started
    record(request, "guide_seconds", elapsed)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "7 passed" in done.stdout  # the new package's own tests
    assert done.stdout.count("passed: 0 error(s)") == 2  # validate, live and by name
    assert "404" in done.stdout.splitlines(), done.stdout[-3000:]  # /reset in prod
    assert (work / "notes" / "registry" / "notes.server.json").is_file()
    assert sys.executable  # (the project's interpreter made the venv's .pth; nothing else of it is used)
