"""Attacks on the coding sandbox from outside, through the server's public doors (HTTP /reset and /step).

Each attack is judged by what is seen outside the server: a host listener that accepted no
connection, a PostgreSQL superuser's view (no marker table, no file written by COPY TO PROGRAM),
files on the host, processes of the run's uid in the host's /proc, the key ring of that uid,
the control group's memory peak, the bytes on the host's disk, the secret of a descriptor the
server holds. Where an attempt can have no outside effect unless it succeeds (a system call
refused by the kernel), the kernel's answer inside the run is the evidence, and it says so.

Needs root and namespaces (CI runs it as root); the PostgreSQL attack needs the host's
PostgreSQL on its UNIX socket (in CI it must be there).
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_mcp import EnvClient
from openenv_mcp.servers.coding import environment
from tests.support import (
    IN_CI,
    LiveServer,
    free_port,
    live_server,
    require_service,
    scratch_database,
    wait_ready,
)

pytestmark = pytest.mark.skipif(
    not (os.geteuid() == 0 and os.path.exists("/proc/self/ns/net")) and not IN_CI,
    reason="the sandbox needs root and Linux namespaces; CI runs these as root",
)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=16) as live:  # uvicorn's default loop: uvloop here
        yield live


def run(env: EnvClient, code: str, **arguments: Any) -> dict[str, Any]:
    observation = env.step("run_python", {"code": code, **arguments}).observation
    assert not observation.is_error, observation.text
    assert observation.structured_content is not None
    return observation.structured_content


def uid_of(server: LiveServer, env: EnvClient) -> int:
    return int(server.runtime.episodes.get(env.episode_id or "").backend.workspace.account.uid)


def processes_of(uid: int) -> list[int]:
    """Live (not zombie) processes of ``uid``, from the host's /proc."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                status = Path(f"/proc/{entry.name}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
                found.append(int(entry.name))
    return found


def no_process_of(uid: int) -> bool:
    deadline = time.monotonic() + 3  # a process the kernel killed is reaped by the host's init
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return processes_of(uid) == []


# host UNIX sockets ----------------------------------------------------------------------------------------

PG_ATTACK = """
import socket, struct, sys
def query(path, sql):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    params = b"user\\0postgres\\0database\\0" + DB.encode() + b"\\0\\0"
    s.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    s.recv(65536)
    q = sql.encode() + b"\\0"
    s.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)
    return s.recv(65536)
for path in PATHS:
    try:
        print("reached", path, query(path, SQL))
    except OSError as exc:
        print("refused", path, exc.errno)
"""


def pg_sockets() -> list[str]:
    with open("/proc/net/unix") as table:
        found = [line.split()[-1] for line in table.read().splitlines()[1:] if ".s.PGSQL." in line]
    return sorted({*found, *(p.replace("/var/run/", "/run/") for p in found)})


def test_postgresql_on_its_host_socket_is_out_of_reach(server: LiveServer, tmp_path: Path) -> None:
    """The issue's critical escape: superuser over the host socket, then COPY ... TO PROGRAM on the host."""
    paths = pg_sockets()
    if not paths:
        require_service("PostgreSQL on a UNIX socket", RuntimeError("no .s.PGSQL socket in /proc/net/unix"))
    drop = Path("/var/tmp") / f"openenv-attack-{secrets.token_hex(4)}"
    drop.mkdir(mode=0o777)
    drop.chmod(0o1777)  # the PostgreSQL server's user may write here
    import psycopg

    try:
        with scratch_database() as url:
            database = url.rsplit("/", 1)[1]

            def attack(marker: str) -> str:
                sql = f"CREATE TABLE {marker} (); COPY (SELECT 1) TO PROGRAM 'touch {drop}/{marker}'"
                return f"DB = {database!r}\nPATHS = {paths!r}\nSQL = {sql!r}\n" + PG_ATTACK

            def landed(marker: str) -> bool:
                with psycopg.connect(url, autocommit=True) as admin:
                    row = admin.execute("SELECT to_regclass(%s) IS NOT NULL", (marker,)).fetchone()
                return bool(row and row[0]) or (drop / marker).exists()

            # the control: the same program run on the host does reach PostgreSQL and the host's shell
            control = subprocess.run([sys.executable, "-c", attack("control_marker")], capture_output=True, timeout=30)
            assert control.returncode == 0 and landed("control_marker"), control
            with EnvClient(server.url) as env:
                env.reset(seed=1)
                result = run(env, attack("sandbox_marker"))
            assert not landed("sandbox_marker"), result
            assert "reached" not in result["stdout"], result
    finally:
        shutil.rmtree(drop, ignore_errors=True)


@pytest.fixture
def host_listeners() -> Iterator[dict[str, socket.socket]]:
    """Listening UNIX sockets in each kind of place: fixed places, an odd one, one in /etc, an abstract one."""
    tag = secrets.token_hex(4)
    places = {
        "run": Path(f"/run/openenv-attack-{tag}/s"),
        "var-tmp": Path(f"/var/tmp/openenv-attack-{tag}/s"),
        "var-lib": Path(f"/var/lib/openenv-attack-{tag}/s"),
        "tmp": Path(f"/tmp/openenv-attack-{tag}/s"),
        "opt": Path(f"/opt/openenv-attack-{tag}/s"),  # covered only because /proc/net/unix names it
        "etc": Path(f"/etc/openenv-attack-{tag}.sock"),  # /etc cannot be covered: the socket is, on its own
    }
    listeners: dict[str, socket.socket] = {}
    with ExitStack() as stack:
        for path in places.values():
            if path.parent.name.startswith("openenv-attack"):
                path.parent.mkdir(parents=True, mode=0o755)
                stack.callback(shutil.rmtree, path.parent, ignore_errors=True)
            else:
                stack.callback(lambda p=path: p.unlink(missing_ok=True))
            listener = stack.enter_context(socket.socket(socket.AF_UNIX))
            listener.bind(str(path))
            os.chmod(path, 0o777)  # even a world-writable socket
            listener.listen()
            listener.setblocking(False)
            listeners[str(path)] = listener
        abstract = stack.enter_context(socket.socket(socket.AF_UNIX))
        abstract.bind(f"\0openenv-attack-{tag}")
        abstract.listen()
        abstract.setblocking(False)
        listeners[f"@openenv-attack-{tag}"] = abstract
        tcp = stack.enter_context(socket.socket())
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        tcp.setblocking(False)
        listeners[f"tcp:{tcp.getsockname()[1]}"] = tcp
        yield listeners


CONNECT = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
for target in TARGETS:
    if target.startswith("tcp:"):
        family, address = socket.AF_INET, ("127.0.0.1", int(target[4:]))
    else:
        family, address = socket.AF_UNIX, "\\0" + target[1:] if target.startswith("@") else target
    try:
        with socket.socket(family) as s:
            s.settimeout(2)
            s.connect(address)
            print("connected", target)
    except OSError as exc:
        print("refused", target, exc.errno)
    # the C library directly, in case Python's socket module were the fence
    fd = libc.syscall(41, 1, 1, 0)
    print("raw AF_UNIX socket", fd, ctypes.get_errno())
    if not target.startswith(("@", "tcp:")):
        seen = os.path.exists(target) and os.stat(target).st_mode & 0o170000 == 0o140000
        print("visible" if seen else "hidden", target)
"""


def test_host_sockets_and_services_accept_no_connection_from_a_run(
    server: LiveServer, host_listeners: dict[str, socket.socket]
) -> None:
    targets = list(host_listeners)
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, f"TARGETS = {targets!r}\n" + CONNECT)
    for name, listener in host_listeners.items():  # the host's view: nobody knocked
        with pytest.raises(BlockingIOError):
            listener.accept()
        assert f"connected {name}" not in result["stdout"]
    # defence in depth, seen from inside: no path socket is even visible (each place is covered)
    assert "visible" not in result["stdout"], result["stdout"]
    assert result["stdout"].count("raw AF_UNIX socket -1 97") == len(targets)  # EAFNOSUPPORT from the filter


# outliving the call --------------------------------------------------------------------------------------

HIJACK = """
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace init", libc.ptrace(16, 1, 0, 0), ctypes.get_errno())  # PTRACE_ATTACH to the namespace's init
print("ptrace parent", libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())
if os.fork() == 0:
    libc.prctl(1, 0, 0, 0, 0)  # clear PR_SET_PDEATHSIG
    os.setsid()
    if os.fork() == 0:
        libc.prctl(1, 0, 0, 0, 0)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        os.setsid()
        time.sleep(300)
    os._exit(0)
time.sleep(0.3)
print("returning")
"""


def test_the_issues_escape_leaves_no_process_after_the_call_or_the_episode(server: LiveServer) -> None:
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        uid = uid_of(server, env)
        result = run(env, HIJACK)
        assert "returning" in result["stdout"]
        assert no_process_of(uid)
        run(env, HIJACK, timeout_s=1)
        episode = env.episode_id
    assert httpx.delete(f"{server.url}/episodes/{episode}").status_code in (200, 204, 404)
    assert no_process_of(uid)


def test_an_init_that_does_not_exit_is_killed_with_its_namespace(server: LiveServer) -> None:
    """Simulates a taken-over init: the host stops it, so it cannot exit when its program is killed."""
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        uid = uid_of(server, env)
        stopped: list[int] = []

        def stop_init() -> None:
            deadline = time.monotonic() + 10
            while not stopped and time.monotonic() < deadline:
                for pid in processes_of(uid):
                    with_ns = Path(f"/proc/{pid}/status").read_text()
                    if "\nNSpid:" in with_ns and with_ns.split("\nNSpid:")[1].split("\n")[0].split()[-1] == "1":
                        os.kill(pid, signal.SIGSTOP)
                        stopped.append(pid)
                        return
                time.sleep(0.02)

        stopper = threading.Thread(target=stop_init)
        stopper.start()
        started = time.monotonic()
        result = run(env, "import os, time\nif os.fork() == 0:\n    os.setsid()\ntime.sleep(60)", timeout_s=2)
        stopper.join(timeout=10)
        assert stopped and result["timed_out"]
        assert time.monotonic() - started < 15
        assert no_process_of(uid)


# descriptors ---------------------------------------------------------------------------------------------


def test_a_descriptor_the_server_holds_does_not_reach_a_run(tmp_path: Path) -> None:
    """The server (``openenv-mcp serve``, under uvloop) starts holding a descriptor on a root-only file."""
    secret = f"root-only-{secrets.token_hex(8)}"
    shadow = tmp_path / "shadow"
    shadow.write_text(secret)
    shadow.chmod(0o600)
    fd = os.open(shadow, os.O_RDONLY)  # inheritable: passed on to the server as a careless parent would
    port = free_port()
    command = [sys.executable, "-m", "openenv_mcp.cli", "serve", "coding", "--port", str(port)]
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(command, pass_fds=(fd,), stdout=log, stderr=log)
    os.close(fd)
    log.close()
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_ready(url, timeout=60).status_code == 200
        held = [os.readlink(f"/proc/{server.pid}/fd/{n}") for n in os.listdir(f"/proc/{server.pid}/fd")]
        assert str(shadow) in held  # the precondition: the server holds it
        assert "uvloop" in Path(f"/proc/{server.pid}/maps").read_text()  # and runs under uvloop
        code = (
            "import os\n"
            "print(sorted(int(n) for n in os.listdir('/proc/self/fd')))\n"
            "for n in range(3, 1024):\n"
            "    try:\n"
            "        os.lseek(n, 0, 0)\n"
            "        print(n, os.read(n, 200))\n"
            "    except OSError:\n"
            "        pass\n"
            f"print(open({str(shadow)!r}).read())\n"
        )
        with EnvClient(url) as env:
            env.reset(seed=1)
            observation = env.step("run_python", {"code": code}).observation
        content = observation.structured_content or {}
        assert secret not in observation.text and secret not in str(content)
        assert content["stdout"].splitlines()[0] == "[0, 1, 2, 3]"  # 3: the listing's own descriptor
    finally:
        server.terminate()
        server.wait(timeout=30)


# bounds --------------------------------------------------------------------------------------------------


def group_dir(uid: int, name: str) -> Path:
    found = glob.glob(f"/sys/fs/cgroup/**/uid-{uid}-*/{name}", recursive=True)
    if not found:
        if IN_CI:
            pytest.fail(f"no control group for uid {uid} ({name}): the host gives none")
        pytest.skip("this host gives the sandbox no control group")
    return Path(found[0])


def test_memory_across_processes_is_bounded_per_episode(server: LiveServer) -> None:
    """The issue: 2.4 GiB across processes. Eight processes each touch 300 MiB (each under the per-process cap)."""
    hog = (
        "import os, time\n"
        "kids = []\n"
        "for _ in range(8):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        block = bytearray(300 * 1024 * 1024)\n"
        "        for i in range(0, len(block), 4096):\n"
        "            block[i] = 1\n"
        "        time.sleep(3)\n"
        "        os._exit(0)\n"
        "    kids.append(pid)\n"
        "print([os.waitpid(k, 0)[1] for k in kids])\n"
    )
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        uid = uid_of(server, env)
        result = run(env, hog, timeout_s=10)
        peak_file = group_dir(uid, "memory.peak") if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else None
        peak_file = peak_file or group_dir(uid, "memory.max_usage_in_bytes")
        peak = int(peak_file.read_text())
    bound = (512 + 64) * 2**20
    assert peak <= bound, (peak, result)
    assert "9" in result["stdout"] or result["exit_code"] != 0  # some were killed: they did not all get 300 MiB


def test_disk_use_is_bounded_by_the_working_directory(server: LiveServer) -> None:
    fill = (
        "n = 0\n"
        "try:\n"
        "    while n < 100:\n"
        "        with open(f'fill{n}', 'wb') as f:\n"
        "            f.write(b'x' * (8 * 1024 * 1024))\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print('stopped', exc.errno)\n"
        "print(n)\n"
    )
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, fill, timeout_s=20)
        path = server.runtime.episodes.get(env.episode_id or "").backend.workspace.path
        used = sum(entry.stat().st_size for entry in os.scandir(path))  # the host's view of the files
        disk = shutil.disk_usage(path)
    assert used <= 64 * 2**20 and disk.total <= 64 * 2**20, (used, disk, result)


def test_a_fork_bomb_is_bounded_by_the_process_limit_and_leaves_nothing(server: LiveServer) -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        uid = uid_of(server, env)
        seen: list[int] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                seen.append(len(processes_of(uid)))
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            assert run(env, bomb, timeout_s=2)["timed_out"]
        finally:
            done.set()
            watcher.join(timeout=10)
        assert no_process_of(uid)
    assert max(seen) <= 64 + 2  # the run's processes, its init shell and the root-owned unshare


# writing and reading outside --------------------------------------------------------------------------------


def test_nothing_is_written_outside_the_working_directory(server: LiveServer, tmp_path: Path) -> None:
    tag = secrets.token_hex(4)
    open_dir = Path("/var/tmp") / f"openenv-open-{tag}"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o1777)
    try:
        with EnvClient(server.url) as env:
            env.reset(seed=1)
            workspace = server.runtime.episodes.get(env.episode_id or "").backend.workspace.path
            targets = [
                f"{open_dir}/a",  # a world-writable host directory
                f"/proc/1/root{open_dir}/b",  # through the init's root
                f"/proc/self/root{open_dir}/c",
                f"/proc/1/cwd/../{open_dir.name}/d",
                f"{workspace.parent}/e",  # the scratch directory, by its host path
                f"/dev/shm/{tag}",  # private to the run
                f"/etc/openenv-{tag}",
                f"/usr/local/openenv-{tag}",
            ]
            code = (
                f"for t in {targets!r}:\n"
                "    try:\n"
                "        open(t, 'w').write('x')\n"
                "    except OSError as exc:\n"
                "        print('refused', t, exc.errno)\n"
            )
            run(env, code)
        on_host = [f"{open_dir}/{name}" for name in "abcd"]  # where the paths through /proc would land
        on_host += [f"{workspace.parent}/e", f"/dev/shm/{tag}", f"/etc/openenv-{tag}", f"/usr/local/openenv-{tag}"]
        assert [path for path in on_host if os.path.exists(path)] == []  # the host's view
    finally:
        shutil.rmtree(open_dir, ignore_errors=True)


def test_the_servers_secrets_are_not_reachable_through_proc(server: LiveServer) -> None:
    env_secret = f"server-env-{secrets.token_hex(8)}"
    os.environ["OPENENV_ATTACK_CANARY"] = env_secret  # in the server's environment (same process here)
    try:
        code = (
            "import glob, os\n"
            f"me = {os.getpid()}\n"
            "for pattern in [f'/proc/{me}/environ', f'/proc/{me}/fd/*', f'/proc/1/root/proc/{me}/environ',\n"
            "                '/proc/*/environ', '/proc/*/fd/*', '/proc/1/root/proc/1/environ']:\n"
            "    for path in glob.glob(pattern) or [pattern]:\n"
            "        try:\n"
            "            print(path, open(path, 'rb').read(300))\n"
            "        except OSError as exc:\n"
            "            print(path, exc.errno)\n"
        )
        with EnvClient(server.url) as env:
            env.reset(seed=1)
            observation = env.step("run_python", {"code": code}).observation
        assert env_secret not in observation.text
    finally:
        del os.environ["OPENENV_ATTACK_CANARY"]


def test_keys_are_not_added_to_the_kernels_key_ring(server: LiveServer) -> None:
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.syscall(248, b'user', b'openenv', b'x', 1, -4), ctypes.get_errno())\n"  # add_key, user keyring
        "print(libc.syscall(250, 0, -4, 1), ctypes.get_errno())\n"  # keyctl(GET_KEYRING_ID, create)
    )
    if os.uname().machine != "x86_64":
        pytest.skip("the system-call numbers in this attack are x86-64's")
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        uid = uid_of(server, env)
        run(env, code)
    users = Path("/proc/key-users").read_text() if os.path.exists("/proc/key-users") else ""
    assert not [line for line in users.splitlines() if line.split(":")[0].strip() == str(uid)]


# kernel surfaces: no outside effect unless they succeed, so the kernel's answer in the run is the evidence ------

SURFACES = {
    "user namespace": "os.unshare(os.CLONE_NEWUSER) if hasattr(os, 'unshare') else libc.unshare(0x10000000) and fail()",
    "mount": "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0 or fail()",
    "unshare mount ns": "libc.unshare(0x20000) == 0 or fail()",
    "setns": "libc.setns(os.open('/proc/1/ns/mnt', os.O_RDONLY), 0) == 0 or fail()",
    "setns into a user namespace": "libc.setns(os.open('/proc/1/ns/user', os.O_RDONLY), 0x10000000) == 0 or fail()",
    "setns into the parent user namespace": (
        "libc.setns(fcntl.ioctl(os.open('/proc/self/ns/user', os.O_RDONLY), 0xB702), 0x10000000) == 0 or fail()"
    ),
    "ptrace traceme": "libc.ptrace(0, 0, 0, 0) == 0 or fail()",
    "bpf": "libc.syscall(321, 0, 0, 0) >= 0 or fail()",
    "perf_event_open": "libc.syscall(298, 0, 0, -1, -1, 0) >= 0 or fail()",
    "io_uring_setup": "libc.syscall(425, 8, bytes(120)) >= 0 or fail()",
    "userfaultfd": "libc.syscall(323, 0) >= 0 or fail()",
    "netlink socket": "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
    "vsock socket": "socket.socket(40, socket.SOCK_STREAM)",
    "packet socket": "socket.socket(socket.AF_PACKET, socket.SOCK_RAW)",
    "clone with a new user namespace": "libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0) >= 0 or fail()",
}


@pytest.mark.parametrize("attempt", list(SURFACES), ids=list(SURFACES))
def test_kernel_surfaces_are_refused(server: LiveServer, attempt: str) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("the system-call numbers in these attempts are x86-64's")
    code = (
        "import ctypes, fcntl, os, socket, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def fail():\n"
        "    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n"
        "try:\n"
        f"    {SURFACES[attempt]}\n"
        "    print('ALLOWED')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        result = run(env, code)
    assert result["stdout"].startswith("refused"), result


def test_the_run_sees_only_its_own_working_directory_of_the_hosts_file_system(server: LiveServer) -> None:
    """Sockets aside, the covered places show nothing of the host: a database's files, home directories."""
    code = (
        "import os\n"
        "places = ['/run', '/var/run', '/var/lib', '/var/tmp', '/root', '/home', '/var/lib/postgresql']\n"
        "for place in places:\n"
        "    try:\n"
        "        print(place, sorted(os.listdir(place)))\n"
        "    except OSError as exc:\n"
        "        print(place, type(exc).__name__)\n"
    )
    with EnvClient(server.url) as env:
        env.reset(seed=1)
        lines = run(env, code)["stdout"].splitlines()
    assert len(lines) == 7 and all(line.endswith(("[]", "Error")) for line in lines), lines
    assert stat.S_ISDIR(os.stat("/var/lib").st_mode) and os.listdir("/var/lib")  # the host's, not empty
