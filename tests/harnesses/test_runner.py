"""The harness policy through the command line: each supported agent CLI, its real pinned package, plays a task of
the sql sim server with its model behind the capture proxy (in front of the token-level stand-in), and the exported
episode holds the model's turns beside the tool steps and the reward; nothing it started is left running.

The CLIs come from scripts/harnesses (scripts/test puts them on PATH); outside CI a missing one is skipped.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_mcp.cli import main
from openenv_mcp.harnesses import HARNESSES
from tests.support.harnesses import exported, installed, left_running, play
from tests.support.token_model import ProxyStack, detokenize, proxy_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyStack]:
    with proxy_stack(tmp_path_factory.mktemp("harnesses")) as made:
        made.model.n_ctx = 1_000_000  # a byte is a token in the stand-in: Claude Code's first prompt is 400k
        made.model.tool = "list_tables"  # every harness lists tools of its own first; call the server's
        yield made


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_each_harness_plays_a_task_and_its_turns_land_beside_the_steps(stack: ProxyStack, name: str) -> None:
    installed(name)
    code, printed, record = play(stack, name)
    assert code == 0, printed
    assert "ended         stopped 1" in printed  # it answered after its call; the task stays open
    assert record["server"] == "sql" and record["rewards"] == [0.0] and record["reward"] == 0.0
    turns = record["turns"]
    assert len(turns) >= 2
    served = {json.dumps(s["prompt_ids"]): s for s in stack.model.served}
    for turn in turns:  # token for token what the model read and sampled
        generated = served[json.dumps(turn["prompt_ids"])]
        assert (turn["completion_ids"], turn["logprobs"]) == (generated["completion_ids"], generated["logprobs"])
    call, answer = (detokenize(turn["completion_ids"]) for turn in turns[-2:])
    assert "list_tables" in call and "<tool_call>" in call
    assert "the tool's result" in answer or "final_answer" in answer
    result = detokenize(turns[-1]["prompt_ids"])
    assert "customers" in result and "order_items" in result  # the step's result reached the model's next prompt
    assert left_running(name) == []
    if name == "cline":  # its hub daemon outlives it, and was stopped
        assert "processes the harness left running" in printed, printed


def test_nothing_the_trainer_reads_reaches_a_model_shown_the_whole_tool_result(stack: ProxyStack) -> None:
    """Cline hands its model the whole CallToolResult, _meta included: the reward, the done flag and the reward's
    parts stay out of it (the trainer reads them from the trajectory)."""
    installed("cline")
    submit = '<tool_call>\n{"name": "sql__submit_answer", "arguments": {"rows": [["nothing"]]}}\n</tool_call>'
    stack.model.script += [submit, "Submitted."]
    code, printed, record = play(stack, "cline")
    assert code == 0 and "ended         done 1" in printed, printed
    assert record["done"] is True and record["rewards"] == [0.0]
    (scores,) = record["scores"]
    parts = [score["name"] for score in scores]
    assert parts, record  # the reward has its parts (exact_rows, row_f1: the grader's)
    shown = detokenize(record["turns"][-1]["prompt_ids"])
    result = shown[shown.rindex("<tool_response>") :]
    assert '"_meta"' in result and "openenv-mcp/step_count" in result  # the whole result, as Cline sends it
    for secret in ("reward", "done", "scores", "reasons", *parts):
        assert secret not in result, secret


def test_a_harness_past_its_time_limit_is_stopped_with_its_own_end_reason(stack: ProxyStack) -> None:
    installed("cline")  # about 12 s for a task with the stand-in; its hub daemon starts in the first seconds
    output = io.StringIO()
    command = ["rollout", stack.env_url, "--policy", "harness", "--harness", "cline", "--base-url", stack.upstream]
    command += ["--model", "m", "--store", stack.store, "-n", "1", "--no-progress", "--harness-timeout", "4"]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        assert main(command) == 0
    assert "ended         harness_timeout 1" in output.getvalue(), output.getvalue()
    assert left_running("cline") == []


def test_a_harness_that_fails_ends_its_episode_with_its_stderr(stack: ProxyStack, tmp_path: Path) -> None:
    fake = tmp_path / "cn"
    fake.write_text("#!/bin/sh\necho 'cannot read config: bad model' >&2\nexit 3\n")
    fake.chmod(0o755)
    output = io.StringIO()
    command = ["rollout", stack.env_url, "--policy", "harness", "--harness", "continue", "--harness-command", str(fake)]
    command += ["--base-url", stack.upstream, "--model", "m", "--store", stack.store, "-n", "1", "--no-progress"]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        assert main(command) == 1
    printed = output.getvalue()
    assert "ended         harness_error 1" in printed
    assert "HarnessFailed: continue exited with code 3: cannot read config: bad model" in printed


def test_eval_runs_a_harness_and_reports_its_trials(stack: ProxyStack, tmp_path: Path) -> None:
    installed("continue")
    output = io.StringIO()
    command = ["eval", stack.env_url, "--policy", "harness", "--harness", "continue", "--base-url", stack.upstream]
    command += ["--model", "stand-in", "--store", stack.store, "--sample", "1", "-k", "1", "--no-progress"]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        assert main([*command, "--out", str(tmp_path)]) == 0, output.getvalue()
    (trial,) = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()[1:]]
    assert trial["end_reason"] == "stopped" and trial["steps"] == 1 and trial["turns"] == 2
    run = json.loads((tmp_path / "trials.jsonl").read_text().splitlines()[0])["run"]
    assert (run["policy"], run["harness"], run["model"]) == ("harness", "continue", "stand-in")


def test_two_cline_episodes_at_once_keep_to_their_own_daemon_and_turns(stack: ProxyStack) -> None:
    """Cline's hub daemon listens on one fixed port for the whole machine unless told otherwise: each episode gets
    a port of its own, so two at once each reach their own daemon, configs and episode."""
    installed("cline")
    before = set(exported(stack.store))
    output = io.StringIO()
    command = ["rollout", stack.env_url, "--policy", "harness", "--harness", "cline", "--base-url", stack.upstream]
    command += ["--model", "m", "--store", stack.store, "-n", "2", "-c", "2", "--no-progress"]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        assert main(command) == 0, output.getvalue()
    assert "ended         stopped 2" in output.getvalue(), output.getvalue()
    deadline = time.monotonic() + 10
    while True:
        new = [record for key, record in exported(stack.store).items() if key not in before]
        if len(new) == 2 and all(record["rewards"] for record in new):
            break
        assert time.monotonic() < deadline, new
        time.sleep(0.1)
    for record in new:
        assert record["rewards"] == [0.0] and len(record["turns"]) == 2
    assert left_running("cline") == []


def test_eval_starting_its_own_server_records_it_into_the_store_its_proxy_writes(
    stack: ProxyStack, tmp_path: Path
) -> None:
    installed("codex")
    store = f"sqlite:///{tmp_path / 'own.db'}"
    output = io.StringIO()
    command = ["eval", "sql", "--policy", "harness", "--harness", "codex", "--base-url", stack.upstream]
    command += ["--model", "m", "--store", store, "--sample", "1", "-k", "1", "--no-progress", "--out", str(tmp_path)]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        assert main(command) == 0, output.getvalue()
    (record,) = exported(store).values()  # the server stopped with the run: its steps are written
    assert record["rewards"] == [0.0] and len(record["turns"]) == 2
