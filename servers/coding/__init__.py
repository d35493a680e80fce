"""The coding environment: solve programming problems by running Python in a sandbox.

Sim: a fresh working directory and uid per episode; submit_solution runs the task's hidden tests.
Prod: the operator's persistent workspace (``CODING_WORKSPACE``); submit_solution runs the
operator's acceptance tests (``CODING_TESTS_FILE``), if any. Both modes run code in the same
sandbox (see :mod:`openenv_mcp.servers.coding.sandbox`).
"""

from __future__ import annotations

from openenv_mcp import Environment, ProdService
from openenv_mcp.servers.coding.backends import CodingBackend, ProdBackend, SimBackend
from openenv_mcp.servers.coding.declarations import declarations
from openenv_mcp.servers.coding.problem import CodingTask
from openenv_mcp.servers.coding.settings import CodingSettings
from openenv_mcp.servers.coding.tasks import grade, load_tasks, solve
from openenv_mcp.servers.coding.tools import tools

__all__ = ["environment"]

environment: Environment[CodingBackend, CodingTask] = Environment(
    name="coding",
    description=(
        "Solve small programming problems in Python: try code with run_python in a sandbox (no network, "
        "limited CPU, memory and processes), then submit_solution, which runs hidden tests."
    ),
    tools=tools,
    tasks=load_tasks,
    settings=CodingSettings,
    sim_backend=SimBackend.open,
    prod_backend=ProdBackend.open,
    grade=grade,
    prod_requires=("workspace",),
    sim_summary="a fresh working directory (a 64 MiB tmpfs) and uid per episode in a Linux sandbox (namespaces, "
    "seccomp, a control group per episode, no container); the task's hidden tests grade submit_solution",
    prod_services=(
        ProdService(
            name="sandbox",
            title="Linux process sandbox on the server's host",
            role="runs the code as the workspace's unprivileged owner in mount, network, PID and IPC namespaces "
            "with resource limits; acceptance tests, if configured, grade submit_solution",
            settings=(
                "workspace",
                "tests_file",
                "python",
                "max_timeout_s",
                "memory_mb",
                "max_processes",
                "max_file_mb",
                "max_output_bytes",
                "require_network_isolation",
                "require_user_isolation",
            ),
            tested="in CI as root on Linux 6.x: per-run namespaces, uid drop, limits, containment of runaway code",
        ),
    ),
    solve=solve,
    examples=(
        ("describe_sandbox", {}),
        ("run_python", {"code": "print('hello from the sandbox')"}),
        ("run_python", {"code": "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))", "stdin": "1 2 3"}),
    ),
    max_steps=20,
    sim_fork=SimBackend.fork,
    declares=declarations,
)
