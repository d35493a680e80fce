"""Prod session recording: off unless turned on, redacted before it is written, capped in size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_mcp.errors import ConfigError
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.sql import environment
from openenv_mcp.settings import Settings
from openenv_mcp.trajectories.sessions import record_sessions


def test_recording_is_off_unless_turned_on_and_never_in_sim(tmp_path: Path) -> None:
    assert record_sessions(build_runtime(environment, Settings(mode="sim", record_sessions=tmp_path / "r"))) is None
    prod = Settings(mode="prod", trajectories="off")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SQL_DATABASE_URL", "postgresql://reader@127.0.0.1:1/shop")
        assert record_sessions(build_runtime(environment, prod)) is None
        bad = prod.model_copy(update={"record_sessions": tmp_path / "r", "record_redact": "tests.support.redaction"})
        with pytest.raises(ConfigError, match="give module:function"):
            record_sessions(build_runtime(environment, bad))


@pytest.mark.prod
@pytest.mark.anyio
@pytest.mark.parametrize("hook", ["leave_out_list_tables", "broken"])
async def test_the_hook_runs_before_anything_is_written_and_the_cap_stops_recording(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str
) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", pg_url)
    path = tmp_path / "sessions.jsonl"
    settings = Settings(
        mode="prod", record_sessions=path, record_max_bytes=1_000, record_redact=f"tests.support.redaction:{hook}"
    )
    runtime = build_runtime(environment, settings)
    recorder = record_sessions(runtime)
    assert recorder is not None
    async with runtime.run():
        await runtime.call("list_tables", {}, None, session="s1")
        for n in range(8):  # each line is about 340 bytes: two fit under the cap
            await runtime.call("run_query", {"sql": f"SELECT {n} AS n"}, None, session="s1")
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if hook == "broken":  # a failing hook stores nothing rather than the unredacted call
        assert lines == [] and recorder.left_out == 9
        return
    assert [line["tool"] for line in lines] == ["run_query", "run_query"]  # list_tables left out by the hook
    assert path.stat().st_size <= 1_000 and (recorder.recorded, recorder.left_out) == (2, 7)
    assert lines[0]["session"] == "s1" and lines[0]["structured_content"]["rows"] == [[0]]


@pytest.mark.prod
@pytest.mark.anyio
async def test_a_hook_that_edits_the_record_in_place_never_changes_the_callers_answer(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", pg_url)
    path = tmp_path / "sessions.jsonl"
    hook = "tests.support.redaction:blank_rows_in_place"
    runtime = build_runtime(environment, Settings(mode="prod", record_sessions=path, record_redact=hook))
    record_sessions(runtime)
    async with runtime.run():
        answer = await runtime.call("run_query", {"sql": "SELECT 7 AS n"}, None, session="s1")
    assert answer.observation.structured_content is not None
    assert answer.observation.structured_content["rows"] == [[7]]  # the agent's answer, untouched
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["structured_content"]["rows"] == [["-"]]  # the stored record, redacted
