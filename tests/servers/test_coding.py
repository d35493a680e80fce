"""The coding environment: a sandbox that contains runaway code, hidden tests that grade, same tools in prod.

The sandbox tests need what CI has: root on Linux with namespaces. Elsewhere they skip.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from openenv_mcp import ConfigError, EnvClient, EpisodeFinished
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.coding import environment
from openenv_mcp.servers.coding.accounts import UidPool
from openenv_mcp.servers.coding.backends import ProdBackend
from openenv_mcp.servers.coding.host import Capabilities, require
from openenv_mcp.servers.coding.judge import verdict
from openenv_mcp.servers.coding.problem import Written
from openenv_mcp.servers.coding.sandbox import RunOutcome, Sandbox, Workspace
from openenv_mcp.servers.coding.settings import CodingSettings
from openenv_mcp.settings import Settings
from tests.support import IN_CI, LiveServer, live_server

TASKS = json.loads(resources.files("openenv_mcp.servers.coding").joinpath("data/tasks.json").read_text())
DATA = Path(str(resources.files("openenv_mcp.servers.coding").joinpath("data/tasks.json")))
REFERENCES = {task["id"]: task["reference"] for task in TASKS}
REWARD, DONE = "openenv-mcp/reward", "openenv-mcp/done"


def _can_sandbox() -> bool:
    return os.geteuid() == 0 and os.path.exists("/proc/self/ns/net")


pytestmark = pytest.mark.skipif(
    not _can_sandbox() and not IN_CI, reason="the sandbox needs root and Linux namespaces; CI runs these as root"
)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=64, mcp_reward_meta=True) as live:
        yield live


def run(env: EnvClient, code: str, **arguments: Any) -> dict[str, Any]:
    observation = env.step("run_python", {"code": code, **arguments}).observation
    assert not observation.is_error, observation.text
    assert observation.structured_content is not None
    return observation.structured_content


def uid_of(server: LiveServer, episode_id: str) -> int:
    return int(server.runtime.episodes.get(episode_id).backend.workspace.account.uid)


def processes_of(uid: int, *, zombies: bool = True) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid and (zombies or _state(entry.name) != "Z"):
                    found.append(int(entry.name))
            except (FileNotFoundError, IndexError):
                continue
    return found


def _state(pid: str) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


# run_python --------------------------------------------------------------------------------------


def test_run_returns_stdout_stderr_exit_code_and_reads_stdin(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(
            env,
            "import sys\nprint(sys.stdin.read().upper(), end='')\nprint('oops', file=sys.stderr)\nsys.exit(3)",
            stdin="hello\nworld\n",
        )
    assert result == {
        "stdout": "HELLO\nWORLD\n",
        "stderr": "oops\n",
        "exit_code": 3,
        "timed_out": False,
        "truncated": False,
        "duration_ms": None,
    }


def test_an_exception_is_a_result_with_its_traceback_not_a_tool_error(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, "def f():\n    return 1 / 0\nf()")
    assert result["exit_code"] == 1
    assert 'File "/tmp/main.py", line 2, in f' in result["stderr"] and "ZeroDivisionError" in result["stderr"]


def test_files_persist_between_runs_in_the_episodes_working_directory(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        run(env, "open('helper.py', 'w').write('def twice(x):\\n    return 2 * x\\n')")
        result = run(env, "import os, helper\nprint(os.getcwd(), sorted(os.listdir('.')), helper.twice(21))")
    assert result["stdout"] == "/tmp ['helper.py', 'main.py'] 42\n"


def test_an_infinite_loop_is_stopped_at_the_timeout(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        started = time.monotonic()
        result = run(env, "while True:\n    pass", timeout_s=1)
        elapsed = time.monotonic() - started
        assert result["timed_out"] and result["exit_code"] in (137, 152)  # SIGKILL or SIGXCPU, shell-style
        assert elapsed < 3
        assert run(env, "print('still here')")["stdout"] == "still here\n"


def test_a_sleeping_program_is_stopped_at_the_timeout(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        started = time.monotonic()
        result = run(env, "import time\ntime.sleep(60)", timeout_s=0.5)
    assert result["timed_out"] and time.monotonic() - started < 2.5


def test_the_server_caps_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODING_MAX_TIMEOUT_S", "1")
    with live_server(environment, mode="sim") as capped, EnvClient(capped.url) as env:
        env.reset(seed=1)
        assert env.step("describe_sandbox").observation.structured_content["max_timeout_s"] == 1.0  # type: ignore[index]
        started = time.monotonic()
        assert run(env, "while True:\n    pass", timeout_s=60)["timed_out"]
        assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    "bomb",
    ["x = bytearray(8 * 1024**3)", "hog = []\nwhile True:\n    hog.append(bytearray(32 * 1024**2))"],
    ids=["one-allocation", "growing"],
)
def test_a_memory_bomb_is_contained(server: LiveServer, bomb: str) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, bomb, timeout_s=5)
        assert result["exit_code"] != 0 and not result["timed_out"]
        assert "MemoryError" in result["stderr"]
        assert run(env, "print(sum(range(10)))")["stdout"] == "45\n"


def test_a_fork_bomb_is_contained_and_leaves_nothing_behind(server: LiveServer) -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        started = time.monotonic()
        result = run(env, bomb, timeout_s=2)
        assert result["timed_out"] and time.monotonic() - started < 5
        assert processes_of(uid_of(server, env.episode_id or "")) == []
        forks = "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nprint('forked')"
        assert run(env, forks)["stdout"] == "forked\n"
    with EnvClient(server.url) as other:
        other.reset(seed=2)
        assert run(other, "print('another episode serves')")["stdout"] == "another episode serves\n"
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_processes_started_by_a_run_do_not_outlive_it(server: LiveServer) -> None:
    daemon = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\nprint('parent exits')"
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        assert run(env, daemon)["stdout"] == "parent exits\n"
        assert processes_of(uid_of(server, env.episode_id or "")) == []


def test_an_output_flood_is_truncated_and_stopped(server: LiveServer) -> None:
    cap = CodingSettings().max_output_bytes
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        started = time.monotonic()
        result = run(env, "while True:\n    print('x' * 1000)", timeout_s=10)
    assert result["truncated"] and not result["timed_out"]
    assert len(result["stdout"]) == cap
    assert time.monotonic() - started < 3


def test_the_network_is_unreachable(server: LiveServer) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # open from the host
        code = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('connected')\n"
            "except OSError as exc:\n"
            "    print('refused', exc.errno)\n"
            "print([line.split(':')[0].strip() for line in open('/proc/net/dev').readlines()[2:]])"
        )
        with EnvClient(server.url) as env:
            env.reset(seed=1)
            result = run(env, code)
    assert result["stdout"] == "refused 101\n['lo']\n"  # ENETUNREACH: the loopback is down


def test_another_episodes_files_cannot_be_read(server: LiveServer) -> None:
    with EnvClient(server.url) as owner, EnvClient(server.url) as intruder:
        owner.reset(seed=1)
        run(owner, "open('secret.txt', 'w').write('the secret')")
        path = server.runtime.episodes.get(owner.episode_id or "").backend.workspace.path
        assert (path / "secret.txt").read_text() == "the secret"
        intruder.reset(seed=2)
        code = (
            "import os\n"
            f"for target in [{str(path / 'secret.txt')!r}, {str(path)!r}, {str(path.parent)!r}]:\n"
            "    try:\n"
            "        print(open(target).read() if target.endswith('.txt') else os.listdir(target))\n"
            "    except OSError as exc:\n"
            "        print(type(exc).__name__)\n"
            "print(os.listdir('/tmp'))"
        )
        result = run(intruder, code)
    assert "the secret" not in result["stdout"]
    assert result["stdout"] == "FileNotFoundError\nFileNotFoundError\nFileNotFoundError\n['main.py']\n"


def test_the_hidden_tests_and_reference_solutions_cannot_be_read(server: LiveServer) -> None:
    solutions = DATA.with_name("references.py")  # the hand-written tasks' reference programs
    generator = DATA.parents[1] / "families" / "lists.py"  # a generator of tasks, their references and tests
    assert solutions.is_file() and generator.is_file()
    code = (
        "import os\n"
        f"for target in [{str(DATA)!r}, {str(solutions)!r}, {str(generator)!r}]:\n"
        "    try:\n"
        "        open(target).read()\n"
        "        print('read')\n"
        "    except OSError as exc:\n"
        "        print(type(exc).__name__)\n"
        "try:\n"
        "    import openenv_mcp.servers.coding.generator\n"
        "    print('imported')\n"
        "except ImportError:\n"
        "    print('ImportError')\n"
        "try:\n"
        f"    print(os.listdir({str(DATA.parents[3])!r}))\n"
        "except FileNotFoundError:\n"
        "    print([])  # the checkout lies under the episode's /tmp mount: hidden altogether\n"
    )
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, code)
    assert result["stdout"] == "FileNotFoundError\n" * 3 + "ImportError\n[]\n", result["stderr"]


def test_code_runs_unprivileged_with_a_read_only_view_of_the_system(server: LiveServer) -> None:
    code = (
        "import os\n"
        "print(os.getuid() > 0, os.getgid() > 0, os.getgroups(), os.getpid())\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "for target in ['/var/tmp/x', '/etc/x', '/dev/shm/x', 'x']:\n"
        "    try:\n"
        "        open(target, 'w').write('1')\n"
        "        print('wrote', target)\n"
        "    except OSError as exc:\n"
        "        print(exc.strerror)"
    )
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, code)
    assert result["stdout"].splitlines() == [
        "True True [] 2",  # pid 2: the namespace's init is pid 1
        "[1, 2]",
        "No such file or directory",  # /var is covered: an empty read-only filesystem
        "Read-only file system",
        "wrote /dev/shm/x",
        "wrote x",
    ]


def test_links_planted_in_the_workspace_are_never_followed_by_the_server(server: LiveServer, tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched")
    plant = (
        f"import os\nos.remove('main.py')\nos.symlink({str(canary)!r}, 'main.py')\n"
        f"os.symlink({str(canary)!r}, 'solution.py')"
    )
    with EnvClient(server.url) as env:
        env.reset(task_id="coding-001")
        run(env, plant)
        assert run(env, "print('fresh file')")["stdout"] == "fresh file\n"
        env.step("submit_solution", {"code": "print(0)"})
    assert canary.read_text() == "untouched"


def test_a_directory_named_main_py_is_refused_with_a_clear_error(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        run(env, "import os\nos.remove('main.py')\nos.mkdir('main.py')")
        refused = env.step("run_python", {"code": "print(1)"}).observation
    assert refused.is_error and "main.py in the working directory is a directory" in refused.text


def test_bad_arguments_are_refused_with_the_schema_error(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        for arguments in ({"code": ""}, {"code": "print(1)", "timeout_s": 0}, {"code": "x", "timeout_s": 61}):
            answer = httpx.post(
                f"{server.url}/step",
                headers={"X-Episode-Id": env.episode_id or ""},
                json={"action": {"tool": "run_python", "arguments": arguments}},
            )
            assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_arguments"


# submit_solution ---------------------------------------------------------------------------------


def test_every_hand_written_reference_earns_full_reward_over_http(server: LiveServer) -> None:
    def solve(task_id: str) -> tuple[str, float, bool, Any]:
        with EnvClient(server.url, timeout=120) as env:
            env.reset(task_id=task_id)
            result = env.step("submit_solution", {"code": REFERENCES[task_id]})
            return task_id, result.reward, result.done, result.observation.structured_content

    async def solve_all() -> list[tuple[str, float, bool, Any]]:
        limiter = anyio.CapacityLimiter(3)
        results: list[tuple[str, float, bool, Any]] = []

        async def one(task_id: str) -> None:
            results.append(await anyio.to_thread.run_sync(solve, task_id, limiter=limiter))

        async with anyio.create_task_group() as group:
            for task in TASKS:
                group.start_soon(one, task["id"])
        return results

    for task_id, reward, done, content in anyio.run(solve_all):
        assert (reward, done) == (1.0, True), (task_id, content)


def lookup_solution(tests: list[dict[str, str]], known: int) -> str:
    """A 'solution' that knows the answers to the first ``known`` tests and prints nonsense otherwise."""
    table = {test["input"]: test["output"] for test in tests[:known]}
    return f"import sys\nprint({table!r}.get(sys.stdin.read(), 'no idea'), end='')"


def test_a_partial_solution_earns_the_fraction_of_tests_passed(server: LiveServer) -> None:
    task = next(t for t in TASKS if t["id"] == "coding-017")
    total = len(task["tests"])
    with EnvClient(server.url) as env:
        for known in (0, 2, total):
            env.reset(task_id=task["id"])
            result = env.step("submit_solution", {"code": lookup_solution(task["tests"], known)})
            content = result.observation.structured_content or {}
            assert (result.reward, result.done) == (round(known / total, 4), True)
            assert (content["passed"], content["total"]) == (known, total)
            assert [f["test"] for f in content["failures"]] == list(range(known + 1, total + 1))
            assert {f["verdict"] for f in content["failures"]} <= {"wrong answer"}


def test_failures_are_summarised_without_the_hidden_data(server: LiveServer) -> None:
    task = next(t for t in TASKS if t["id"] == "coding-012")
    crash = "import sys\nvalues = sys.stdin.read().split()\nraise ValueError('saw ' + ' '.join(values[:3]))"
    with EnvClient(server.url) as env:
        env.reset(task_id=task["id"])
        result = env.step("submit_solution", {"code": crash})
    text = result.observation.text
    assert result.reward == 0.0 and result.done
    assert {f["verdict"] for f in result.observation.structured_content["failures"]} == {"runtime error: ValueError"}  # type: ignore[index]
    distinctive = [test["output"].strip() for test in task["tests"] if len(test["output"].strip()) > 3]
    assert distinctive and not [output for output in distinctive if output in text]
    assert "saw" not in text


def test_a_slow_solution_fails_on_time(server: LiveServer) -> None:
    task = next(t for t in TASKS if t["id"] == "coding-024")
    quadratic = (
        "import sys\nd = list(map(int, sys.stdin.read().split()))\nn, t, a = d[0], d[1], d[2:]\n"
        "print(sum(1 for i in range(n) for j in range(i + 1, n) if a[i] + a[j] == t))"
    )
    with EnvClient(server.url, timeout=120) as env:
        env.reset(task_id=task["id"])
        result = env.step("submit_solution", {"code": quadratic})
    content = result.observation.structured_content or {}
    assert content["failures"] == [{"test": len(task["tests"]), "verdict": "time limit exceeded"}]
    assert result.reward == round((len(task["tests"]) - 1) / len(task["tests"]), 4)


def test_the_episode_is_done_after_submit(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(task_id="coding-001")
        assert env.step("run_python", {"code": "print(1)"}).done is False
        assert env.step("submit_solution", {"code": "print(0)"}).done is True
        assert env.state().done
        with pytest.raises(EpisodeFinished):
            env.step("run_python", {"code": "print(1)"})


def test_the_solution_is_saved_in_the_working_directory(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(task_id="coding-001")
        env.step("submit_solution", {"code": "print('mine')"})
        path = server.runtime.episodes.get(env.episode_id or "").backend.workspace.path
        assert (path / "solution.py").read_text() == "print('mine')"


def test_reset_prompt_states_the_problem_and_examples(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        first = env.reset(task_id="coding-003")
    assert first.observation.text.startswith("FizzBuzz\n\nRead n")
    assert "Example 1\nInput:\n5\nOutput:\n1\n2\nFizz\n4\nBuzz\n\n" in first.observation.text
    assert "submit_solution" in first.observation.text


# determinism and MCP -----------------------------------------------------------------------------


def test_same_seed_gives_same_task_and_observations(server: LiveServer) -> None:
    calls = [
        ("describe_sandbox", {}),
        ("run_python", {"code": "import os\nprint({'apple', 'pear', 'plum', 'fig', 'kiwi'}, os.getpid())"}),
        ("run_python", {"code": "import random\nrandom.seed(3)\nprint(random.random())"}),
        ("run_python", {"code": "print(open('nothing.txt').read())"}),
        ("submit_solution", {"code": "print(42)"}),
    ]

    def play(seed: int) -> list[Any]:
        with EnvClient(server.url) as env:
            first = env.reset(seed=seed)
            seen: list[Any] = [first.info["task_id"], first.observation.model_dump()]
            for name, arguments in calls:
                result = env.step(name, arguments)
                seen.append((result.observation.model_dump(), result.reward, result.done))
            return seen

    assert play(77) == play(77)


@asynccontextmanager
async def mcp_client(url: str, episode: str | None = None) -> AsyncIterator[Client]:
    headers = {"X-Episode-Id": episode} if episode else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport) as client:  # type: ignore[arg-type]
            yield client


def test_mcp_calls_run_code_and_carry_the_reward_of_submit(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        episode = env.reset(task_id="coding-009").episode_id

        async def play() -> tuple[Any, Any]:
            async with mcp_client(server.mcp_url, episode) as client:
                ran = await client.call_tool("run_python", {"code": "print(6 * 7)"})
                submitted = await client.call_tool("submit_solution", {"code": REFERENCES["coding-009"]})
                return ran, submitted

        ran, submitted = anyio.run(play)
        env.episode_id = None  # closed below by the server's DELETE, not twice
        httpx.delete(f"{server.url}/episodes/{episode}")
    assert not ran.is_error and ran.structured_content["stdout"] == "42\n"
    assert submitted.meta is not None and submitted.meta[REWARD] == 1.0 and submitted.meta[DONE] is True


# prod --------------------------------------------------------------------------------------------

PROD_UID = 0x6FFE_0000 + os.getpid() % 0x1_0000  # a dedicated "account" for this test process


@pytest.fixture(scope="module")
def prod_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("coding-prod") / "workspace"
    path.mkdir(mode=0o700)
    os.chown(path, PROD_UID, PROD_UID)
    return path


@pytest.fixture(scope="module")
def prod_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("coding-acceptance") / "tests.json"
    tests = [
        {"input": "2 3\n", "output": "5\n"},
        {"input": "10 -4\n", "output": "6\n"},
        {"input": "0 0\n", "output": "0\n"},
    ]
    path.write_text(json.dumps({"time_limit_s": 2, "tests": tests}))
    return path


@pytest.fixture(scope="module")
def prod_server(prod_workspace: Path, prod_tests: Path) -> Iterator[LiveServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODING_WORKSPACE", str(prod_workspace))
        patch.setenv("CODING_TESTS_FILE", str(prod_tests))
        with live_server(environment, mode="prod") as live:
            yield live


def mcp_call(url: str, name: str, arguments: dict[str, Any]) -> Any:
    async def call() -> Any:
        async with mcp_client(url) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(call)


def test_prod_lists_the_same_tools_as_sim(server: LiveServer, prod_server: LiveServer) -> None:
    async def listing(url: str) -> list[dict[str, Any]]:
        async with mcp_client(url) as client:
            tools = (await client.list_tools()).tools
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]

    sim, prod = anyio.run(listing, server.mcp_url), anyio.run(listing, prod_server.mcp_url)
    assert [tool["name"] for tool in sim] == ["describe_sandbox", "run_python", "submit_solution"]
    assert sim == prod


def test_prod_runs_code_for_real_in_the_persistent_workspace(prod_server: LiveServer, prod_workspace: Path) -> None:
    wrote = mcp_call(prod_server.mcp_url, "run_python", {"code": "import os\nopen('notes.txt', 'w').write('kept')"})
    assert not wrote.is_error and wrote.structured_content["exit_code"] == 0
    assert wrote.structured_content["duration_ms"] > 0  # prod reports wall-clock time
    read = mcp_call(
        prod_server.mcp_url, "run_python", {"code": "import os\nprint(open('notes.txt').read(), os.getuid())"}
    )
    assert read.structured_content["stdout"] == f"kept {PROD_UID}\n"
    notes = prod_workspace / "notes.txt"
    assert notes.read_text() == "kept" and notes.stat().st_uid == PROD_UID
    assert httpx.get(f"{prod_server.url}/readyz").status_code == 200
    assert httpx.post(f"{prod_server.url}/reset", json={}).status_code == 404


def test_prod_submit_runs_the_operators_acceptance_tests(prod_server: LiveServer, prod_workspace: Path) -> None:
    right = "a, b = map(int, input().split())\nprint(a + b)"
    result = mcp_call(prod_server.mcp_url, "submit_solution", {"code": right})
    assert (result.structured_content["passed"], result.structured_content["total"]) == (3, 3)
    assert (prod_workspace / "solution.py").read_text() == right
    wrong = mcp_call(prod_server.mcp_url, "submit_solution", {"code": "print(5)"})
    assert wrong.structured_content["passed"] == 1 and wrong.structured_content["score"] == round(1 / 3, 4)
    outside = mcp_call(prod_server.mcp_url, "run_python", {"code": f"print(open({str(DATA)!r}).read())"})
    assert outside.structured_content["exit_code"] == 1


def test_prod_without_a_workspace_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODING_WORKSPACE", raising=False)
    with pytest.raises(ConfigError, match="CODING_WORKSPACE"):
        build_runtime(environment, Settings(mode="prod"))


def test_prod_refuses_a_workspace_owned_by_root(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="owned by root"):
        anyio.run(ProdBackend.open, CodingSettings(workspace=tmp_path))


# the pieces -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capabilities", "setting"),
    [
        (Capabilities(users=False, namespaces=False, problems=("not root",)), "CODING_REQUIRE_USER_ISOLATION"),
        (Capabilities(users=True, namespaces=False, problems=("no unshare",)), "CODING_REQUIRE_NETWORK_ISOLATION"),
    ],
)
def test_missing_isolation_fails_closed_naming_the_setting(capabilities: Capabilities, setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        require(capabilities, CodingSettings())
    require(capabilities, CodingSettings(require_user_isolation=False, require_network_isolation=False))


def outcome(**fields: Any) -> RunOutcome:
    base: dict[str, Any] = {"stdout": "", "stderr": "", "exit_code": 0, "timed_out": False, "truncated": False}
    return RunOutcome(**{**base, **fields, "duration_s": 0.1})


def test_without_namespaces_runs_fall_back_to_a_uid_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("openenv_mcp.servers.coding.sandbox.find_tools", lambda: None)
    monkeypatch.setattr(Sandbox, "_cache", {})
    with pytest.raises(ConfigError, match="CODING_REQUIRE_NETWORK_ISOLATION"):
        anyio.run(Sandbox.for_settings, CodingSettings())
    daemon = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\n"
    daemon += "print(os.getuid(), os.getcwd())"

    async def play() -> tuple[Sandbox, RunOutcome, int, Path]:
        sandbox = await Sandbox.for_settings(CodingSettings(require_network_isolation=False))
        workspace = await sandbox.open_workspace()
        outcome = await sandbox.run(workspace, daemon, stdin="", timeout_s=5)
        uid = workspace.account.uid
        # the setsid'd child was killed by the sweep (it may wait a while as a zombie for the host's init)
        assert processes_of(uid, zombies=False) == []
        await sandbox.close_workspace(workspace)
        assert not workspace.path.exists()
        return sandbox, outcome, uid, workspace.path

    sandbox, outcome, uid, path = anyio.run(play)
    assert not sandbox.capabilities.namespaces and "util-linux" in " ".join(sandbox.capabilities.problems)
    assert outcome.stdout == f"{uid} {path}\n"


def test_a_cancelled_call_leaves_no_process_behind() -> None:
    async def play() -> int:
        sandbox = await Sandbox.for_settings(CodingSettings())
        workspace = await sandbox.open_workspace()
        with anyio.move_on_after(0.5):
            await sandbox.run(workspace, "import time\ntime.sleep(30)", stdin="", timeout_s=30)
        uid = workspace.account.uid
        await sandbox.close_workspace(workspace)
        return uid

    uid = anyio.run(play)
    deadline = time.monotonic() + 3
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)  # the namespace's init exits through the host's init here
    assert processes_of(uid) == []


def test_a_uid_held_by_one_server_process_is_not_handed_out_by_another(tmp_path: Path) -> None:
    lock = tmp_path / "uids.lock"
    pool = UidPool(lock, base=0x6000_0000, count=2)
    mine = pool.acquire()
    probe = (
        "import sys\nfrom pathlib import Path\nfrom openenv_mcp.servers.coding.accounts import UidPool\n"
        f"pool = UidPool(Path({str(lock)!r}), base=0x6000_0000, count=2)\n"
        "print(pool.acquire().uid)\n"
        "try:\n    pool.acquire()\nexcept Exception as exc:\n    print(type(exc).__name__)"
    )
    other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True)
    assert other.stdout.split() == [str(0x6000_0000 + (1 - (mine.uid - 0x6000_0000))), "BackendUnavailable"]
    pool.release(mine)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"stdout": "5  \n\n"}, "passed"),
        ({"stdout": "6\n"}, "wrong answer"),
        ({"timed_out": True, "exit_code": 137}, "time limit exceeded"),
        ({"truncated": True, "exit_code": 137}, "output limit exceeded"),
        (
            {"exit_code": 1, "stderr": "Traceback (most recent call last):\n  ...\nKeyError: 'the input'\n"},
            "runtime error: KeyError",
        ),
        ({"exit_code": 3, "stderr": "bye\n"}, "runtime error: exit status 3"),
    ],
)
def test_verdicts_name_the_failure_but_not_the_data(fields: dict[str, Any], expected: str) -> None:
    assert verdict(outcome(**fields), "5\n") == expected


def test_the_hand_written_tasks_have_splits_hidden_tests_and_outputs_within_the_cap() -> None:
    written = [task for task in environment.tasks() if isinstance(task.problem, Written)]
    assert Counter(task.split for task in written) == {"train": 16, "test": 8}
    cap = CodingSettings().max_output_bytes
    for task in TASKS:
        assert len(task["tests"]) >= 5, task["id"]
        assert all(len(test["output"].encode()) < cap for test in task["tests"]), task["id"]


REMOUNT_IN_A_PRIVATE_NAMESPACE = """
import ctypes, os, sys
from openenv_mcp.servers.coding.confinement import remount_read_only
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(0x20000) == 0 and libc.mount(None, b"/", None, 16384 | (1 << 18), None) == 0
table = open("/proc/self/mountinfo", "rb").read()
gone = b"999 1 0:99 / /openenv-gone-%s rw,relatime - tmpfs none rw" % sys.argv[1].encode()  # ENOENT
plain = b"998 1 0:98 / %s rw,relatime - tmpfs none rw" % sys.argv[2].encode()  # a directory, not a mount: EINVAL
remount_read_only(gone + b"\\n" + table + b"\\n" + plain)
print(bool(os.statvfs("/").f_flag & os.ST_RDONLY), bool(os.statvfs(sys.argv[2]).f_flag & os.ST_RDONLY))
"""


def test_a_mount_that_has_gone_is_skipped_and_the_rest_stays_read_only(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    remount = [sys.executable, "-c", REMOUNT_IN_A_PRIVATE_NAMESPACE, os.urandom(4).hex(), str(plain)]
    done = subprocess.run(remount, capture_output=True, text=True, timeout=30, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_runs_and_start_up_go_on_while_host_mounts_come_and_go(tmp_path: Path) -> None:
    """Issue 12: a container starting or stopping on the host adds and removes mounts at any moment."""
    churn = Path("/opt") / f"openenv-churn-{os.urandom(4).hex()}"
    points = [churn / str(n) for n in range(4)]
    for point in points:
        point.mkdir(parents=True)
    stop = False

    def come_and_go() -> None:
        while not stop:
            for point in points:
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=1777", "churn", str(point)], check=False)
            for point in points:
                subprocess.run(["umount", "-l", str(point)], check=False)

    thread = threading.Thread(target=come_and_go)
    thread.start()
    try:

        async def play() -> list[RunOutcome]:
            sandbox = await Sandbox.for_settings(CodingSettings(scratch=tmp_path / "scratch"))  # start-up's probe
            workspace = await sandbox.open_workspace()
            code = f"import os\nfor p in {[str(p / 'x') for p in points]!r}:\n"
            code += "    try:\n        open(p, 'w')\n        print('wrote', p)\n    except OSError:\n        pass"
            try:
                return [await sandbox.run(workspace, code, stdin="", timeout_s=5) for _ in range(30)]
            finally:
                await sandbox.close_workspace(workspace)

        outcomes = anyio.run(play)
    finally:
        stop = True
        thread.join(timeout=30)
        for point in points:
            subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)
        subprocess.run(["rm", "-rf", str(churn)], check=False)
    assert [o.exit_code for o in outcomes] == [0] * 30, [o.stderr for o in outcomes if o.exit_code]
    assert not [o.stdout for o in outcomes if "wrote" in o.stdout]  # a mount present during a run is read-only too


def test_one_episode_cannot_hold_every_run_slot(tmp_path: Path) -> None:
    settings = CodingSettings(scratch=tmp_path / "slots", max_concurrent_runs=2, max_runs_per_episode=1)
    finished: list[str] = []

    async def play() -> None:
        sandbox = await Sandbox.for_settings(settings)
        greedy, other = await sandbox.open_workspace(), await sandbox.open_workspace()

        async def one(workspace: Workspace, name: str, seconds: float) -> None:
            await sandbox.run(workspace, f"import time\ntime.sleep({seconds})", stdin="", timeout_s=10)
            finished.append(name)

        try:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for n in range(3):
                        group.start_soon(one, greedy, f"greedy-{n}", 2.0)
                    await anyio.sleep(0)  # the greedy episode's runs are queued first
                    group.start_soon(one, other, "other", 0.1)
        finally:
            await sandbox.close_workspace(greedy)
            await sandbox.close_workspace(other)

    anyio.run(play)
    assert finished[0] == "other", finished  # it did not wait behind the greedy episode's runs


def test_a_dead_servers_mounts_and_control_groups_are_removed_at_start_up(tmp_path: Path) -> None:
    """A server killed with SIGKILL leaves its working directories mounted and its control groups behind."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    point = tmp_path / "left-behind"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", f"openenv-coding-{pid}", str(point)], check=True)
    anyio.run(Sandbox.for_settings, CodingSettings())  # this process's groups: the dead server's go next to them
    ours = glob.glob(f"/sys/fs/cgroup/**/openenv-coding-{os.getpid()}/", recursive=True)
    groups = {Path(path).parent / f"openenv-coding-{pid}" for path in ours}
    assert groups or not IN_CI, "CI's host gives control groups"
    for group in groups:
        group.mkdir(exist_ok=True)
        (group / "uid-1-1").mkdir(exist_ok=True)
    try:
        anyio.run(Sandbox.for_settings, CodingSettings(scratch=tmp_path / "fresh"))
        assert f"openenv-coding-{pid} " not in Path("/proc/self/mounts").read_text()
        assert [group for group in groups if group.exists()] == []
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)
