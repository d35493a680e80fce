"""docs/episodes.md runs: its Python blocks are pieces of examples/episodes.py, which runs against a sim server."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import LiveServer

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "episodes.py"
DOC = ROOT / "docs" / "episodes.md"


def test_every_python_block_of_the_document_is_a_piece_of_the_example() -> None:
    pieces = {
        name: textwrap.dedent(body).strip()
        for name, body in re.findall(r"# --- (\w+)\n(.*?)\n\s*# --- end \1", EXAMPLE.read_text(), re.S)
    }
    blocks = [block.strip() for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)]
    assert len(blocks) == 4
    for block in blocks:
        assert block in pieces.values(), f"docs/episodes.md has a block that examples/episodes.py lacks:\n{block}"


def test_the_example_forks_snapshots_restores_and_runs_a_curriculum(sim_server: LiveServer) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), sim_server.url], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "fork: 2 steps, via fast" in done.stdout
    assert "continuations: 1.0 0.0" in done.stdout
    assert "group of 4 forks, each after 2 steps" in done.stdout
    assert "members' rewards: [0.0, 0.0, 1.0, 0.0]" in done.stdout
    assert "restored: 1 steps, via replay" in done.stdout
    assert "curriculum draws: 20" in done.stdout
