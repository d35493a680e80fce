"""``openenv-mcp tasks`` as users run it: counts and samples, the check of a whole set, and a broken one caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "openenv_mcp.cli", "tasks"]

PROJECT = """
[project]
name = "sums"
version = "0.1.0"

[project.entry-points."openenv_mcp.servers"]
sums = "sums_env:environment"
"""

MODULE = """
from tests.support.sums import sum_tasks, sums_environment

environment = sums_environment(sum_tasks(40, broken={7: "wrong", 12: "refused"}))
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env, check=False)


def test_counts_per_split_and_difficulty_and_a_few_samples() -> None:
    done = run("sql", "--show", "4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("sql: ") and lines[1].split() == ["split", "all", "easy", "medium", "hard"]
    train = lines[2].split()
    assert train[0] == "train" and int(train[1]) >= 1000 and int(train[1]) == sum(map(int, train[2:]))
    assert lines[3].split()[0] == "test" and int(lines[3].split()[1]) >= 200
    assert len([line for line in lines if line.startswith("- sql-")]) == 4


def test_check_plays_a_sample_and_answers_json() -> None:
    done = run("sql", "--check", "--sample", "12", "--seed", "2", "--json", "--no-progress")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["check"]["ok"] is True and document["check"]["played"] == 12
    assert document["check"]["problems"] == [] and document["check"]["failures"] == []
    assert set(document["counts"]) == {"train", "test"} and len(document["samples"]) == 3


def test_a_broken_task_set_fails_the_check_and_says_which_tasks(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    (tmp_path / "sums_env.py").write_text(MODULE)
    done = run(str(tmp_path), "--check", "--all", "--no-progress")
    assert done.returncode == 1
    assert "sum-00007: the reference earned 0, not 1.0, in 2 calls" in done.stdout
    assert "sum-00012: step 2 (answer) of the reference was refused" in done.stdout
    assert "FAILED: 0 problems; 2 of 40 references played fell short" in done.stdout
    only = run(str(tmp_path), "--check", "--all", "--split", "test", "--difficulty", "hard", "--json")
    document = json.loads(only.stdout)  # the broken two are train tasks: not in this part
    assert only.returncode == 0 and document["check"]["played"] == document["tasks"] == 3


def test_an_unknown_split_is_a_clear_error() -> None:
    done = run("sql", "--split", "dev")
    assert done.returncode == 2 and "No split 'dev'; splits: train, test" in done.stderr
