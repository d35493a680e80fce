"""The committed sim compose file, up for real in containers (one stack for the whole module).

Brought up by ``openenv-mcp compose up`` (every /readyz within 60 s; see conftest.py), then driven from
the host over HTTP and MCP (the external TypeScript client) and from inside the compose network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal

import httpx
import pytest

from openenv_mcp.client import EnvClient
from openenv_mcp.deploy.pool import EnvPool
from openenv_mcp.deploy.stacks import RESTART
from openenv_mcp.environment.catalog import load_environment
from tests.support import node_client, wait_for
from tests.support.containers import BASE_IMAGE, DESKTOP, ROOT, SIM_SERVERS, SLIM, Stack

# The first test's setup may make the base image and build every image (minutes on a loaded machine).
pytestmark = [pytest.mark.containers, pytest.mark.timeout(1800)]


def replica_urls(stack: Stack, service: str) -> list[str]:
    """Every replica's published URL (``compose port --index N``)."""
    urls = []
    for index in range(1, len(stack.containers(service)) + 1):
        out = stack.runner.run("port", "--index", str(index), service, "8000", capture=True).stdout.strip()
        urls.append(f"http://127.0.0.1:{out.rsplit(':', 1)[1]}")
    return urls


def test_every_server_is_ready_and_healthy_by_the_compose_healthcheck(sim_stack: Stack) -> None:
    assert sorted(sim_stack.urls) == sorted(SIM_SERVERS)
    for name, url in sim_stack.urls.items():
        assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200, name
        [container, *_] = sim_stack.containers(name)
        # The compose file's healthcheck, run by the engine in the container (podman splits an
        # exec-form test on spaces: the old ["CMD", "python", "-c", "..."] failed here).
        checked = sim_stack.engine.podman("healthcheck", "run", container, check=False)
        assert checked.returncode == 0, (name, checked.stdout, checked.stderr)
        assert sim_stack.inspect(container, "{{.HostConfig.RestartPolicy.Name}}") == RESTART


def test_the_typescript_client_lists_the_tools_of_every_server(sim_stack: Stack) -> None:
    for name, url in sim_stack.urls.items():
        [listed] = node_client("--url", f"{url}/mcp", "list")
        assert [tool["name"] for tool in listed["tools"]] == load_environment(name).tools.names, name


def test_sql_reset_and_step_through_the_container(sim_stack: Stack) -> None:
    with EnvClient(sim_stack.urls["sql"]) as env:
        env.reset(task_id="sql-001")
        tables = env.step("list_tables")
        assert "orders" in tables.observation.text
        answer = env.step("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})
        assert answer.reward == 1.0 and answer.done


def test_the_coding_sandbox_runs_code_in_the_container_as_a_uid_per_episode(sim_stack: Stack) -> None:
    # A seeded run sees one fixed uid (sim is deterministic: docs/security.md); its user namespace's map shows the
    # host uid behind it, which is the episode's own.
    code = (
        "import os\n"
        "maps = [line.split() for line in open('/proc/self/uid_map')]\n"
        "print(os.getuid(), os.getgid() > 0, *[o for i, o, _ in maps if int(i) == os.getuid()])"
    )
    uids = []
    for _ in range(2):
        with EnvClient(sim_stack.urls["coding"]) as env:
            env.reset(task_id="coding-001")
            ran = env.step("run_python", {"code": code})
            assert not ran.observation.is_error, ran.observation.text
            result = ran.observation.structured_content or {}
            seen_text, gid_set, uid_text = str(result.get("stdout", "")).split()
            uid = int(uid_text)
            assert gid_set == "True" and int(seen_text) > 0
            assert uid > 0 and uid not in (10001, 10002), "code runs neither as root nor as the server's user"
            uids.append(uid)
    assert uids[0] != uids[1], "each episode has a uid of its own"


def test_desktop_answers_a_step_with_an_image(sim_stack: Stack) -> None:
    with EnvClient(sim_stack.urls["desktop"], timeout=60) as env:
        env.reset()
        shot = env.step("screenshot")
        images = [block for block in shot.observation.content if block.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_service_calls_another_over_the_compose_network(sim_stack: Stack) -> None:
    [container, *_] = sim_stack.containers("sql")
    probe = (
        "import json, urllib.request;"
        "r = urllib.request.urlopen(urllib.request.Request('http://search:8000/reset', data=b'{}',"
        " headers={'Content-Type': 'application/json', 'Host': 'search'}), timeout=10);"
        "print(json.load(r)['episode_id'])"
    )
    done = sim_stack.engine.podman("exec", container, "python", "-c", probe)
    assert len(done.stdout.strip()) >= 8, done.stdout


def test_the_cli_lists_and_shows_the_logs_of_the_stack(sim_stack: Stack) -> None:
    common = ["--mode", "sim", "--project", sim_stack.project]
    ps = sim_stack.engine.cli("compose", "ps", *common)
    assert ps.returncode == 0, ps.stderr
    for name in SIM_SERVERS:
        assert f"{sim_stack.project}-{name}-1" in ps.stdout or f"{sim_stack.project}_{name}_1" in ps.stdout, ps.stdout
    logs = sim_stack.engine.cli("compose", "logs", *common, "--no-follow", "--tail", "50", "sql")
    assert logs.returncode == 0, logs.stderr
    assert "/readyz" in logs.stdout or "Uvicorn running" in logs.stdout or "started" in logs.stdout.lower(), logs.stdout


def test_a_killed_server_is_restarted_and_the_pool_rebuilds_its_episodes(sim_stack: Stack) -> None:
    first, second = replica_urls(sim_stack, "sql")
    containers = sim_stack.containers("sql")
    assert len(containers) == 2
    by_url = {}
    for container in containers:
        port = sim_stack.inspect(container, '{{(index (index .NetworkSettings.Ports "8000/tcp") 0).HostPort}}')
        by_url[f"http://127.0.0.1:{port}"] = container
    with EnvPool([first, second], timeout=10, retry_after=1) as pool:
        episodes = [pool.reset(task_id="sql-001").episode_id for _ in range(4)]
        placed = {episode: pool.replica_of(episode) for episode in episodes}
        assert set(placed.values()) == {first, second}, "episodes are balanced over both replicas"
        victim_url = first
        victim = by_url[victim_url]
        restarts = int(sim_stack.inspect(victim, "{{.RestartCount}}") or 0)
        os.kill(int(sim_stack.inspect(victim, "{{.State.Pid}}")), signal.SIGKILL)  # a crash, not a stop
        for episode in placed:  # the victim's are rebuilt where a replica answers: a slower step, no error
            result = pool.step(episode, "list_tables")
            assert "orders" in result.observation.text and result.info["step_count"] == 1
        assert len(pool.resumes) == sum(url == victim_url for url in placed.values()) == 2
        # The pool carries on: new episodes open and run.
        fresh = pool.reset(task_id="sql-001")
        assert "orders" in pool.step(fresh.episode_id, "list_tables").observation.text
    # The engine starts the killed container again (restart: always) and it becomes ready.
    wait_for(lambda: _ready(victim_url), "the killed replica to be restarted and ready", timeout=60)
    assert int(sim_stack.inspect(victim, "{{.RestartCount}}") or 0) > restarts
    assert json.loads(sim_stack.inspect(victim, "{{json .State.Running}}")) is True


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_slim_image_has_no_display_stack_and_the_desktop_image_has_it(sim_stack: Stack) -> None:
    engine = sim_stack.engine

    def has_xvfb(image: str) -> bool:
        done = engine.podman("run", "--rm", "--entrypoint", "sh", image, "-c", "command -v Xvfb", check=False)
        return done.returncode == 0

    assert not has_xvfb(SLIM) and has_xvfb(DESKTOP)
    sizes = {
        image: int(engine.podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
        for image in (SLIM, DESKTOP)
    }
    assert sizes[DESKTOP] - sizes[SLIM] > 150e6, sizes
    if BASE_IMAGE == "localhost/openenv-python:3.11-bookworm":  # the base scripts/containers makes
        # 300 MB until the capture proxy brought jinja2 and markupsafe (it renders a model's chat template itself):
        # the slim image measured 300.7 MB with them
        assert sizes[SLIM] <= 305e6, sizes


def test_both_images_hold_this_checkouts_code(sim_stack: Stack) -> None:
    # A rebuild after a change must install the new wheels, not keep a cached layer of the old ones (podman caches a
    # RUN that bind-mounts another stage by its command alone: compose/Dockerfile copies the wheels' checksums first).
    probe = (
        "import hashlib, openenv_mcp.doors.http as m, openenv_mcp.servers.sql;"
        "print(hashlib.sha256(open(m.__file__, 'rb').read()).hexdigest())"
    )
    ours = hashlib.sha256((ROOT / "openenv_mcp" / "doors" / "http.py").read_bytes()).hexdigest()
    for image in (SLIM, DESKTOP):
        done = sim_stack.engine.podman("run", "--rm", "--entrypoint", "python", image, "-c", probe)
        assert done.stdout.strip() == ours, f"{image} holds another openenv_mcp/doors/http.py than this checkout"
