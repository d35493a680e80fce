"""Providers: the local process for real; the Docker image and compose service through their command
lines (fake docker first on PATH, answering with a real local server's address), and the real
docker client's answer when there is no engine."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from openenv_mcp import AsyncEnvClient, ConfigError, EnvClient
from openenv_mcp.deploy.providers import ComposeService, DockerImage, LocalServer, ProviderError, ThreadServer
from openenv_mcp.deploy.stacks import SERVER_LABEL
from tests.support import free_port, require_service
from tests.support.fake_docker import FakeDocker

QUIET = {"OPENENV_TRAJECTORIES": "off"}


def _gone(pid: int) -> bool:
    """Whether the process group led by ``pid`` has no process left."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def ready_sql() -> Iterator[str]:
    server = LocalServer("sql", environment=QUIET)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


# the local process ------------------------------------------------------------------------------


def test_a_local_server_runs_a_full_episode_and_leaves_no_process() -> None:
    provider = LocalServer("sql", environment=QUIET)
    with provider as env:
        assert isinstance(env, EnvClient)
        pid = provider.pid
        assert pid is not None and not _gone(pid)
        assert env.health() == {"status": "ok", "mode": "sim", "server": "sql"}
        first = env.reset(task_id=env.tasks(split="train").tasks[0].id)
        assert not first.done
        env.step("list_tables")
        result = env.step("submit_answer", {"sql": "SELECT 1"})
        assert result.done
        assert env.state().step_count == 2
    assert _gone(pid)
    assert provider.process is None


def test_an_exception_in_the_block_still_stops_the_server() -> None:
    provider = LocalServer("sql", environment=QUIET)
    pid = None
    with pytest.raises(RuntimeError, match="trainer crashed"), provider as env:
        env.reset(seed=1)
        pid = provider.pid
        raise RuntimeError("trainer crashed")
    assert pid is not None and _gone(pid)


def test_a_server_that_cannot_start_is_reported_with_its_output_and_cleaned_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SQL_DATABASE_URL", raising=False)
    provider = LocalServer("sql", mode="prod", environment=QUIET, startup_timeout=30)
    with pytest.raises(ProviderError) as caught, provider:
        pass
    message = caught.value.message
    assert "'openenv-mcp serve sql --mode prod' exited with status 2 before it was ready" in message
    assert "set SQL_DATABASE_URL" in message
    assert provider.process is None


def test_a_server_that_never_gets_ready_times_out_and_is_killed() -> None:
    # prod sql pointed at a port where no PostgreSQL listens: it serves, but /readyz says 503.
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/nowhere"
    provider = LocalServer("sql", mode="prod", environment={**QUIET, "SQL_DATABASE_URL": url}, startup_timeout=8)
    # Usually /readyz has answered 503 by then; on a loaded machine the server may still be starting.
    with pytest.raises(
        ProviderError,
        match=r"was not ready at http://127\.0\.0\.1:\d+ within 8 s \((/readyz answered 503|ConnectError)",
    ):
        provider.start()
    assert provider.process is None


def test_stop_is_idempotent_and_kill_simulates_a_crash() -> None:
    provider = LocalServer("sql", environment=QUIET)
    provider.start()
    pid = provider.pid
    assert pid is not None
    provider.kill()
    assert provider.process is not None and provider.process.returncode == -signal.SIGKILL
    provider.stop()
    provider.stop()
    assert _gone(pid)


@pytest.mark.anyio
async def test_the_async_twin_yields_an_async_client_and_cleans_up() -> None:
    provider = LocalServer("sql", environment=QUIET)
    async with provider as env:
        assert isinstance(env, AsyncEnvClient)
        pid = provider.pid
        with anyio.fail_after(10):
            first = await env.reset(seed=3)
            result = await env.step("run_query", {"sql": "SELECT COUNT(*) FROM customers"})
        assert first.episode_id == result.episode_id
        assert not result.observation.is_error
    assert pid is not None and _gone(pid)


# the Docker image (fake docker) -----------------------------------------------------------------


def test_a_thread_server_serves_both_doors_from_this_process_and_closes_its_port() -> None:
    server = ThreadServer("sql", settings={"trajectories": "off"})
    with server as env:
        url = server.url
        assert env.reset(seed=1).info["task_id"]
        assert not env.step("list_tables").observation.is_error
        assert httpx.get(f"{url}/healthz").json()["server"] == "sql"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz", timeout=2)


def test_a_thread_server_missing_a_prod_setting_names_it_and_holds_no_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SQL_DATABASE_URL", raising=False)
    server = ThreadServer("sql", mode="prod")
    with pytest.raises(ConfigError, match="set SQL_DATABASE_URL"):
        server.start()
    with pytest.raises(ProviderError, match="not started"):
        _ = server.url


def test_docker_image_runs_the_image_and_removes_the_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ready_sql: str
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(ports={"container": ready_sql.removeprefix("http://")})
    provider = DockerImage("sql", mode="prod", image="openenv-mcp:test", environment={"SQL_DATABASE_URL": "s3cret"})
    with provider as env:
        assert env.health()["server"] == "sql"
    run, port, remove = fake.actions()
    assert run == [
        "run", "--detach", "--rm", "--publish", "127.0.0.1::8000", "--env", "MODE=prod",
        "--label", f"{SERVER_LABEL}=sql", "--env", "SQL_DATABASE_URL", "openenv-mcp:test", "serve", "sql",
    ]  # fmt: skip
    assert fake.calls()[0].env["SQL_DATABASE_URL"] == "s3cret"  # in the environment, not on the command line
    assert port == ["port", FakeDocker.CONTAINER, "8000/tcp"]
    assert remove == ["rm", "--force", FakeDocker.CONTAINER]


def test_docker_image_reports_a_container_that_dies_before_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(ports={"container": f"127.0.0.1:{free_port()}"}, running="false", logs="openenv-mcp: set X\n")
    with pytest.raises(ProviderError, match="stopped before it was ready: openenv-mcp: set X"):
        DockerImage("sql", startup_timeout=10).start()
    assert fake.actions()[-1] == ["rm", "--force", FakeDocker.CONTAINER]


def test_docker_image_reports_no_engine_from_the_real_client() -> None:
    docker = shutil.which("docker")
    if docker is None:
        require_service("the docker client", FileNotFoundError("docker"))
    if os.environ.get("DOCKER_HOST"):
        pytest.skip("DOCKER_HOST points at an engine")
    provider = DockerImage("sql")
    with pytest.raises(ProviderError, match="Cannot connect to the Docker daemon"):
        provider.start()
    assert provider.container is None


def test_docker_image_without_a_client_says_to_install_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ProviderError, match="'docker' is not installed"):
        DockerImage("sql").start()


# a compose service (fake docker compose) ----------------------------------------------------------


def test_compose_service_starts_one_service_in_its_own_project_and_takes_it_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ready_sql: str
) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(ports={"sql": ready_sql.removeprefix("http://")})
    provider = ComposeService("sql", mode="sim")
    with provider as env:
        env.reset(seed=2)
    up, port, down = fake.actions()
    project = up[up.index("-p") + 1]
    assert project.startswith("openenv-sql-") and len(project) == len("openenv-sql-") + 6
    assert up[-3:] == ["up", "-d", "sql"]
    assert port[-3:] == ["port", "sql", "8000"]
    assert down[-3:] == ["down", "--remove-orphans", "--volumes"]
    actions = [call for call in fake.calls() if call.argv[:1] == ["compose"] and call.argv[1] != "version"]
    assert [call.env["OPENENV_PORT_SQL"] for call in actions] == ["", "", ""]  # published on a free port


def test_compose_service_that_fails_to_start_is_taken_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDocker(tmp_path, monkeypatch)
    fake.configure(fail={"up": "pull access denied for openenv-mcp"})
    with pytest.raises(ProviderError, match=r"did not start: .*pull access denied"):
        ComposeService("sql", mode="sim", environment={"POSTGRES_PASSWORD": "pw"}).start()
    assert fake.actions()[-1][-3:] == ["down", "--remove-orphans", "--volumes"]
    assert fake.calls()[-1].env["POSTGRES_PASSWORD"] == "pw"


def test_a_docker_provider_runs_desktop_on_the_image_with_the_display_stack() -> None:
    assert DockerImage("desktop").image == "openenv-mcp-desktop:latest"
    assert DockerImage("sql").image == "openenv-mcp:latest"
    assert DockerImage("desktop", image="registry.example/desk:1").image == "registry.example/desk:1"
