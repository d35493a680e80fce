"""The compose runner: its command lines, environment and failures, with fake tools first on PATH
(there is no Docker engine here), plus the real docker client's "no engine" answer."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_mcp.cli import main
from openenv_mcp.deploy.compose import ComposeError, ComposeRunner, compose_file, find_compose
from openenv_mcp.deploy.providers import LocalServer
from tests.support import free_port, require_service
from tests.support.fake_docker import NO_ENGINE, FakeDocker

SIM = compose_file("sim")


@pytest.fixture(scope="module")
def ready_sql() -> Iterator[str]:
    """A real sql server: what the fake 'compose port sql 8000' points at."""
    server = LocalServer("sql", environment={"OPENENV_TRAJECTORIES": "off"})
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _address(url: str) -> str:
    return url.removeprefix("http://")


def test_compose_v2_is_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch, v1=True)
    assert find_compose() == [str(fake.dir / "docker"), "compose"]


def test_compose_v1_is_used_when_the_docker_client_has_no_compose_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch, v1=True)
    fake.configure(compose_v2=False)
    assert find_compose() == [str(fake.dir / "docker-compose")]


def test_no_compose_tool_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(compose_v2=False)
    with pytest.raises(ComposeError, match=r"No compose tool found .*install Docker Compose v2"):
        find_compose()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ComposeError, match="no 'docker' client"):
        find_compose()


def test_up_starts_in_the_background_then_waits_for_readyz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ready_sql: str
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(ports={"sql": _address(ready_sql)})
    runner = ComposeRunner(SIM, project="openenv-sim")
    runner.up(["sql"], build=True, timeout=10)
    head = ["compose", "-f", str(SIM), "-p", "openenv-sim"]
    assert fake.actions() == [[*head, "up", "-d", "--build", "sql"], [*head, "port", "sql", "8000"]]
    assert [c.argv for c in fake.calls()][:2] == [["compose", "version"], ["info", "--format", "{{.ServerVersion}}"]]


def test_the_cli_prints_each_ready_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], ready_sql: str
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(ports={"sql": _address(ready_sql)})
    assert main(["compose", "up", "--mode", "sim", "sql", "--timeout", "10"]) == 0
    assert f"sql          ready at {ready_sql} (MCP at {ready_sql}/mcp)" in capsys.readouterr().out
    assert fake.actions()[0][:6] == ["compose", "-f", str(SIM), "-p", "openenv-sim", "up"]


def test_up_without_a_service_waits_for_every_server_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ready_sql: str
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    runner = ComposeRunner(SIM)
    fake.configure(ports=dict.fromkeys(runner.servers(), _address(ready_sql)))
    urls = runner.wait_ready(timeout=10)
    assert sorted(urls) == sorted(runner.servers())
    assert "sql" in urls


def test_a_server_that_never_gets_ready_fails_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    port = free_port()
    fake.configure(ports={"sql": f"0.0.0.0:{port}"})
    with pytest.raises(ComposeError) as caught:
        ComposeRunner(SIM).up(["sql"], timeout=1)
    assert f"Not ready after 1 s: sql at http://127.0.0.1:{port}: ConnectError" in caught.value.message
    assert "openenv-mcp compose logs sql" in caught.value.message


def test_no_engine_stops_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(engine=False)
    assert main(["compose", "up", "--mode", "sim"]) == 2
    with pytest.raises(ComposeError, match=r"No Docker engine \(Cannot connect to the Docker daemon"):
        ComposeRunner(SIM).ps()
    assert fake.actions() == []


def test_config_needs_no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(engine=False)
    assert ComposeRunner(SIM).config(quiet=True) == "config: done\n"
    assert fake.actions() == [["compose", "-f", str(SIM), "config", "-q"]]


def test_a_failing_compose_command_reports_its_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(fail={"port": "no container found for sql_1"})
    with pytest.raises(ComposeError, match="failed with exit status 1: no container found for sql_1"):
        ComposeRunner(SIM).url("sql")


def test_down_logs_and_ps_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch, v1=True)
    fake.configure(compose_v2=False)
    assert main(["compose", "logs", "--mode", "prod", "--no-follow", "--tail", "10", "sql"]) == 0
    assert main(["compose", "ps", "--mode", "prod", "--project", "demo"]) == 0
    assert main(["compose", "down", "--mode", "prod", "--volumes"]) == 0
    prod = str(compose_file("prod"))
    assert [c.argv for c in fake.calls() if c.tool == "docker-compose"] == [
        ["-f", prod, "-p", "openenv-prod", "logs", "--tail", "10", "sql"],
        ["-f", prod, "-p", "demo", "ps"],
        ["-f", prod, "-p", "openenv-prod", "down", "--remove-orphans", "--volumes"],
    ]


def test_logs_follow_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    ComposeRunner(SIM).logs(["sql"])
    assert fake.actions()[-1][-2:] == ["--follow", "sql"]


def test_the_mode_defaults_to_the_mode_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    monkeypatch.setenv("MODE", "prod")
    assert main(["compose", "ps"]) == 0
    assert fake.actions()[-1][2] == str(compose_file("prod"))


def test_the_runner_passes_its_variables_to_the_tool_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    monkeypatch.setenv("POSTGRES_PASSWORD", "from-the-shell")
    ComposeRunner(SIM, environment={"OPENENV_PORT_SQL": "", "SQL_DATABASE_URL": "postgresql://x"}).ps()
    last = fake.calls()[-1]
    assert last.env == {
        "OPENENV_PORT_SQL": "",
        "SQL_DATABASE_URL": "postgresql://x",
        "POSTGRES_PASSWORD": "from-the-shell",
    }


def test_a_missing_file_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("openenv_mcp.deploy.compose.COMPOSE_DIR", tmp_path)
    with pytest.raises(ComposeError, match="pass --file, or write one with 'openenv-mcp compose generate'"):
        compose_file("sim")
    with pytest.raises(ComposeError, match="Cannot read the compose file"):
        ComposeRunner(tmp_path / "nope.yml").servers()


def test_generate_check_passes_on_the_committed_files() -> None:
    assert main(["compose", "generate", "--check"]) == 0


def test_the_real_docker_client_reports_no_engine() -> None:
    if shutil.which("docker") is None:
        require_service("the docker client", FileNotFoundError("docker"))
    if os.environ.get("DOCKER_HOST"):
        pytest.skip("DOCKER_HOST points at an engine")
    runner = ComposeRunner(SIM)
    try:
        runner.command  # noqa: B018 - finds docker compose or docker-compose
    except ComposeError as exc:
        require_service("a compose tool (docker-compose from scripts/system-packages)", exc)
    with pytest.raises(ComposeError) as caught:
        runner.up(timeout=5)
    assert "No Docker engine (" in caught.value.message
    assert NO_ENGINE.split(" at ")[0] in caught.value.message  # the client's own words
    assert "'openenv-mcp compose config' works without one" in caught.value.message


def test_the_real_compose_tool_validates_the_sim_file_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        find_compose()
    except ComposeError as exc:
        require_service("a compose tool (docker-compose from scripts/system-packages)", exc)
    assert main(["compose", "config", "--mode", "sim", "--quiet"]) == 0
