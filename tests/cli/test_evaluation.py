"""``openenv-mcp eval`` as users run it: figures from a policy whose success is known, resuming, reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import LiveServer

CLI = [sys.executable, "-m", "openenv_mcp.cli"]

# Succeeds on even seeds, fails on odd ones; writes down every episode it plays.
HALF_RIGHT = """
from pathlib import Path

from openenv_mcp.servers.sql.tasks import load_tasks

TASKS = load_tasks()


async def policy(episode):
    with Path("played.txt").open("a") as out:
        out.write(f"{episode.task_id} {episode.seed}\\n")
    gold = TASKS.get(episode.task_id).gold_sql
    await episode.step("submit_answer", {"sql": gold if episode.seed % 2 == 0 else "SELECT 1 AS wrong"})
"""


def run_eval(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "eval", *args, "--no-progress"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "half_right.py").write_text(HALF_RIGHT)
    return tmp_path


def test_figures_match_a_policy_whose_success_is_known(sim_server: LiveServer, workdir: Path) -> None:
    done = run_eval(
        workdir, sim_server.url, "--policy", "half_right:policy", "-k", "4", "--task", "sql-024", "--task", "sql-025"
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    overall = results["overall"]
    assert (overall["tasks"], overall["trials"], overall["errors"]) == (2, 8, 0)
    assert overall["mean_reward"] == pytest.approx(0.5)
    assert overall["pass@k"]["1"] == pytest.approx(0.5) and overall["pass^k"]["1"] == pytest.approx(0.5)
    assert overall["pass@k"]["2"] == pytest.approx(5 / 6) and overall["pass^k"]["2"] == pytest.approx(1 / 6)
    assert overall["pass@k"]["4"] == 1.0 and overall["pass^k"]["4"] == 0.0
    assert [t["rewards"] for t in results["tasks"]] == [[1.0, 0.0, 1.0, 0.0]] * 2
    assert "overall                       8   0.500    1.000    0.000" in done.stdout


def test_an_interrupted_run_resumes_without_redoing_finished_trials(sim_server: LiveServer, workdir: Path) -> None:
    args = (sim_server.url, "--policy", "half_right:policy", "-k", "3", "--task", "sql-024", "--task", "sql-030")
    assert run_eval(workdir, *args).returncode == 0
    trials = workdir / "eval-results" / "trials.jsonl"
    lines = trials.read_text().splitlines()
    trials.write_text("\n".join(lines[:-2]) + "\n")  # the run was stopped before its last two trials were written
    (workdir / "played.txt").unlink()
    again = run_eval(workdir, *args)
    assert again.returncode == 0, again.stderr
    assert "2 to run (4 already in" in again.stderr
    assert len((workdir / "played.txt").read_text().splitlines()) == 2
    assert json.loads((workdir / "eval-results" / "results.json").read_text())["overall"]["trials"] == 6


def test_a_different_run_in_the_same_directory_is_refused(sim_server: LiveServer, workdir: Path) -> None:
    assert run_eval(workdir, sim_server.url, "-k", "1", "--task", "sql-024").returncode == 0
    other = run_eval(workdir, sim_server.url, "-k", "2", "--task", "sql-024")
    assert other.returncode == 2
    assert "holds another evaluation (k 1 there, 2 now)" in other.stderr and "--restart" in other.stderr
    assert run_eval(workdir, sim_server.url, "-k", "2", "--task", "sql-024", "--restart").returncode == 0


def test_the_scripted_policy_solves_the_shipped_tasks_and_the_report_stands_alone(workdir: Path) -> None:
    done = run_eval(workdir, "sql", "-k", "2")
    assert done.returncode == 0, done.stderr
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    assert results["overall"]["tasks"] == 11 and results["overall"]["pass^k"]["2"] == 1.0
    page = (workdir / "eval-results" / "report.html").read_text()
    assert page.count("<svg") == 3 and page.count("<title>sql-") == 11  # one bar per task
    assert "src=" not in page and "href=" not in page and "<script" not in page


# Test splits too large to evaluate whole here: a fixed sample of their test tasks (their task-set tests play more).
SAMPLES = {
    "coding": [
        "coding-017",
        "coding-019",
        "coding-021",
        "coding-024",
        "coding-g1-line-pipeline-2b24c0",
        "coding-g1-list-pipeline-fec640",
        "coding-g1-components-3ff3f9",
        "coding-g1-string-functions-075927",
    ],
}


@pytest.mark.parametrize(("name", "tasks"), [("email", 6), ("coding", 8), ("memory", 6)])
def test_the_scripted_policy_solves_every_test_task_of_each_shipped_environment(
    workdir: Path, name: str, tasks: int
) -> None:
    only = [argument for task in SAMPLES.get(name, []) for argument in ("--task", task)]
    done = run_eval(workdir, name, "-k", "1", *only)  # the server started by name, in sim mode
    assert done.returncode == 0, done.stderr
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    assert results["run"]["policy"] == "scripted"
    overall = results["overall"]
    assert (overall["tasks"], overall["errors"], overall["pass^k"]["1"]) == (tasks, 0, 1.0), results["tasks"]
    assert all(t["rewards"] == [1.0] for t in results["tasks"])


def test_unknown_split_or_task_is_a_clear_error(sim_server: LiveServer, workdir: Path) -> None:
    split = run_eval(workdir, sim_server.url, "--split", "dev")
    assert split.returncode == 2 and "has no split 'dev'; splits: train, test" in split.stderr
    task = run_eval(workdir, sim_server.url, "--task", "sql-001")
    assert task.returncode == 2 and "No task sql-001 in split 'test'" in task.stderr
