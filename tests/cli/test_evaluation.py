"""``openenv-mcp eval`` as users run it: figures from a policy whose success is known, resuming, reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp.servers.email import environment as email
from openenv_mcp.servers.sql import environment as sql
from tests.support import LiveServer, live_server

CLI = [sys.executable, "-m", "openenv_mcp.cli"]

# Succeeds on even seeds, fails on odd ones; writes down every episode it plays.
HALF_RIGHT = """
from pathlib import Path

from openenv_mcp.servers.sql import environment

TASKS = environment.tasks()


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


def test_the_scripted_policy_solves_a_sample_of_every_tier_and_the_report_stands_alone(workdir: Path) -> None:
    done = run_eval(workdir, "sql", "-k", "2", "--sample", "12", "--seed", "5")
    assert done.returncode == 0, done.stderr
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    assert results["overall"]["tasks"] == 12 and results["overall"]["pass^k"]["2"] == 1.0
    assert all(sql.tasks().get(task_id).split == "test" for task_id in results["run"]["tasks"])
    tiers = results["tiers"]  # pass rates per difficulty: every tier is in the sample
    assert list(tiers) == ["easy", "medium", "hard"] and sum(t["tasks"] for t in tiers.values()) == 12
    assert all(t["pass^k"]["2"] == 1.0 and t["trials"] == 2 * t["tasks"] for t in tiers.values())
    assert {t["difficulty"] for t in results["tasks"]} == set(tiers)
    assert "  hard " in done.stdout  # the terminal table has a line per tier
    page = (workdir / "eval-results" / "report.html").read_text()
    assert page.count("<svg") == 3 and page.count("<title>sql-") == 12  # one bar per task
    assert "<h2>Per difficulty</h2>" in page and page.count("<tr><td>hard</td>") == 1
    assert "src=" not in page and "href=" not in page and "<script" not in page
    again = run_eval(workdir, "sql", "-k", "1", "--sample", "4", "--difficulty", "hard", "--restart")
    assert again.returncode == 0, again.stderr
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    assert list(results["tiers"]) == ["hard"] and results["overall"]["tasks"] == 4


@pytest.mark.parametrize("name", ["email", "coding", "memory"])
def test_the_scripted_policy_solves_a_sample_of_the_test_tasks_of_each_shipped_environment(
    workdir: Path, name: str
) -> None:
    # a seeded sample of every tier (every task is played by 'openenv-mcp tasks NAME --check --all' and each
    # environment's own tests)
    done = run_eval(workdir, name, "-k", "1", "--sample", "12", "--seed", "0")  # the server started by name, in sim
    assert done.returncode == 0, done.stderr
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    assert results["run"]["policy"] == "scripted"
    overall = results["overall"]
    assert (overall["tasks"], overall["errors"], overall["pass^k"]["1"]) == (12, 0, 1.0), results["tasks"]
    assert all(t["rewards"] == [1.0] for t in results["tasks"])


def test_unknown_split_or_task_is_a_clear_error(sim_server: LiveServer, workdir: Path) -> None:
    split = run_eval(workdir, sim_server.url, "--split", "dev")
    assert split.returncode == 2 and "No split 'dev'; splits: train, test" in split.stderr
    tier = run_eval(workdir, sim_server.url, "--difficulty", "brutal")
    assert tier.returncode == 2 and "No difficulty 'brutal'; difficulties: easy, medium, hard" in tier.stderr
    task = run_eval(workdir, sim_server.url, "--task", "sql-001")
    assert task.returncode == 2 and "No task sql-001 in split 'test'" in task.stderr


# Trial 1 of sql-025 meets a model endpoint that is down while the file "down" exists (an infrastructure failure);
# trial 1 of sql-024 insists on a tool that does not exist (the policy's own failure); the rest submit the answer.
FLAKY = """
from pathlib import Path

from openenv_mcp.rollout import PolicyError
from openenv_mcp.servers.sql import environment

TASKS = environment.tasks()


async def policy(episode):
    with Path("played.txt").open("a") as out:
        out.write(f"{episode.task_id} {episode.seed}\\n")
    if (episode.task_id, episode.seed) == ("sql-025", 1) and Path("down").exists():
        raise PolicyError("The chat endpoint http://127.0.0.1:9/v1 refused the connection")
    if (episode.task_id, episode.seed) == ("sql-024", 1):
        await episode.step("drop_everything", {})
    await episode.step("submit_answer", {"sql": TASKS.get(episode.task_id).gold_sql})
"""


def test_infrastructure_failures_are_not_scored_and_a_resumed_eval_retries_exactly_those(
    sim_server: LiveServer, workdir: Path
) -> None:
    (workdir / "flaky.py").write_text(FLAKY)
    (workdir / "down").touch()
    args = (sim_server.url, "--policy", "flaky:policy", "-k", "2", "--task", "sql-024", "--task", "sql-025")
    first = run_eval(workdir, *args)
    assert first.returncode == 1, first.stderr  # trials are left to play again
    results = json.loads((workdir / "eval-results" / "results.json").read_text())
    overall = results["overall"]
    assert (overall["trials"], overall["infra_failures"], overall["errors"]) == (3, 1, 2)
    assert overall["end_reasons"] == {"done": 2, "model_error": 1, "policy_error": 1}
    assert overall["mean_reward"] == pytest.approx(2 / 3)  # the refused tool scores 0; the endpoint's failure nothing
    assert [t["rewards"] for t in results["tasks"]] == [[1.0, 0.0], [1.0]]
    assert [(e["task_id"], e["trial"], e["end_reason"], e["infra"]) for e in results["errors"]] == [
        ("sql-024", 1, "policy_error", False),
        ("sql-025", 1, "model_error", True),
    ]
    assert "1 trials ended by infrastructure failures" in first.stdout
    page = (workdir / "eval-results" / "report.html").read_text()
    assert "<tr><th>infra failures</th><td>1 (left out of the figures" in page
    assert "sql-025 trial 1 (model_error, infrastructure)" in page

    (workdir / "down").unlink()
    (workdir / "played.txt").unlink()
    again = run_eval(workdir, *args)
    assert again.returncode == 0, again.stderr
    assert "1 to run (3 already in" in again.stderr
    assert (workdir / "played.txt").read_text().splitlines() == ["sql-025 1"]
    overall = json.loads((workdir / "eval-results" / "results.json").read_text())["overall"]
    assert (overall["trials"], overall["infra_failures"], overall["mean_reward"]) == (4, 0, 0.75)


def _resets(*servers: LiveServer) -> list[float]:
    return [server.runtime.metrics.registry.get_sample_value("openenv_resets_total") or 0.0 for server in servers]


def test_an_eval_given_two_replicas_spreads_its_trials_over_both(workdir: Path) -> None:
    with live_server(sql, mode="sim") as first, live_server(sql, mode="sim") as second:
        for given, restart in (((first.url, second.url), ()), ((f"{first.url},{second.url}",), ("--restart",))):
            before = _resets(first, second)
            done = run_eval(
                workdir, *given, "--policy", "half_right:policy", "-k", "4", "--task", "sql-024", "-c", "4", *restart
            )
            opened = [after - b for after, b in zip(_resets(first, second), before, strict=True)]
            assert done.returncode == 0, done.stderr
            assert f"at 2 replicas ({first.url}, {second.url})" in done.stderr
            assert sum(opened) == 4 and min(opened) >= 1, opened  # both played, and nothing was played twice
            results = json.loads((workdir / "eval-results" / "results.json").read_text())
            assert results["overall"]["trials"] == 4 and results["tasks"][0]["rewards"] == [1.0, 0.0, 1.0, 0.0]


def test_servers_that_are_not_replicas_of_one_server_are_refused(sim_server: LiveServer, workdir: Path) -> None:
    with live_server(email, mode="sim") as other:
        done = run_eval(workdir, f"{sim_server.url},{other.url}", "-k", "1")
    assert done.returncode == 2
    assert "are not replicas of one server" in done.stderr and f"{other.url} serves 'email'" in done.stderr
