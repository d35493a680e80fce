"""``--policy harness`` checked before anything starts: each mistake is a ConfigError that says what to do."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from openenv_mcp.cli import main
from openenv_mcp.harnesses import HARNESSES, Job


def failed(*arguments: str) -> str:
    """What ``openenv-mcp`` printed for a command that must fail with exit code 2 (a ConfigError)."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        assert main(list(arguments)) == 2, output.getvalue()
    return output.getvalue()


HARNESS = ["--policy", "harness", "--base-url", "http://127.0.0.1:9", "--model", "m"]


def test_an_unknown_harness_is_refused_listing_the_harnesses() -> None:
    printed = failed("rollout", "http://127.0.0.1:9", *HARNESS, "--harness", "aider", "--store", "sqlite://")
    listed = "claude, cline, codex, continue, copilot, gemini, opencode, qwen, smolagents"
    assert f"No harness 'aider'; harnesses: {listed}" in printed


def test_a_missing_harness_command_names_its_pinned_package_and_the_install_script(tmp_path: Path) -> None:
    missing = str(tmp_path / "cline")
    printed = failed("rollout", "http://127.0.0.1:9", *HARNESS, "--harness", "cline", "--harness-command", missing)
    assert f"No executable {missing!r} for harness 'cline' (looked on --harness-command)" in printed
    assert "npm cline@3.0.65" in printed and "scripts/harnesses" in printed


def test_the_inference_server_and_model_are_required() -> None:
    printed = failed("eval", "http://127.0.0.1:9", "--policy", "harness", "--harness", "cline")
    assert "--policy harness needs --base-url (the inference server's root URL" in printed


def test_a_server_url_needs_the_store_it_records_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENENV_TRAJECTORIES", raising=False)
    fake = tmp_path / "cn"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    printed = failed("rollout", "http://127.0.0.1:9", *HARNESS, "--harness", "continue", "--harness-command", str(fake))
    assert "with a server URL (http://127.0.0.1:9) needs --store (or OPENENV_TRAJECTORIES)" in printed


def test_every_harness_writes_its_configs_into_the_home_it_is_given(tmp_path: Path) -> None:
    job = Job(
        home=tmp_path,
        server="env",
        mcp_url="http://127.0.0.1:9/mcp",
        episode_id="ep-1",
        base_url="http://127.0.0.1:8/ep/ep-1/v1",
        model="m",
        prompt="Do it.",
        max_turns=5,
        time_limit=900,
    )
    for harness in HARNESSES.values():
        launch = harness.prepare(job)
        assert "Do it." in launch.arguments or harness.name == "smolagents"
        written = "".join(path.read_text() for path in tmp_path.rglob("*") if path.is_file())
        assert "ep-1" in written or "ep-1" in "".join(launch.env.values())
        assert all(str(tmp_path) in value for key, value in launch.env.items() if key.endswith("_HOME"))
    # a model request may take the episode's whole time where the harness has a limit of its own on one
    assert HARNESSES["claude"].prepare(job).env["API_TIMEOUT_MS"] == "900000"
    assert HARNESSES["qwen"].prepare(job).env["QWEN_CODE_API_TIMEOUT_MS"] == "900000"
    for name, written, setting in [
        ("codex", ".codex/config.toml", "stream_idle_timeout_ms = 900000"),
        ("opencode", ".config/opencode/opencode.json", '"timeout": 900000'),
    ]:
        HARNESSES[name].prepare(job)
        assert setting in (tmp_path / written).read_text()


def test_the_command_line_lists_the_harnesses_of_the_table() -> None:
    from openenv_mcp.cli.runs import _HARNESSES

    assert tuple(sorted(HARNESSES)) == _HARNESSES
