"""The coding tools: describe the sandbox, run a program, submit a solution. The same in sim and prod."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from openenv_mcp import Toolbox
from openenv_mcp.servers.coding.backends import CodingBackend
from openenv_mcp.servers.coding.models import RunResult, SandboxInfo, SubmitResult

__all__ = ["tools"]

tools: Toolbox[CodingBackend] = Toolbox("coding")

Code = Annotated[str, Field(min_length=1, max_length=100_000)]
Stdin = Annotated[str, Field(max_length=1_000_000)]
Timeout = Annotated[float, Field(gt=0, le=60)]


@tools.tool(title="Describe Sandbox", read_only=True, destructive=False, idempotent=True, open_world=False)
async def describe_sandbox(sandbox: CodingBackend) -> SandboxInfo:
    """Describe where code runs: Python version, working directory, limits, and what is isolated."""
    return sandbox.describe()


@tools.tool(title="Run Python", read_only=False, destructive=True, idempotent=False, open_world=False)
async def run_python(sandbox: CodingBackend, code: Code, stdin: Stdin = "", timeout_s: Timeout = 5.0) -> RunResult:
    """Run a Python 3 program and return its stdout, stderr and exit code.

    The code is saved as main.py in the working directory and run as 'python main.py'; files
    written there persist between calls. There is no network. A program is stopped when it runs
    longer than timeout_s (wall-clock, or as much CPU time) or prints past the output cap; the
    result says which.

    Args:
        code: The program's source.
        stdin: Text given to the program on standard input.
        timeout_s: Seconds the program may run; the server may cap it lower (see describe_sandbox).
    """
    return await sandbox.run(code, stdin=stdin, timeout_s=timeout_s)


@tools.tool(title="Submit Solution", read_only=False, destructive=True, idempotent=False, open_world=False)
async def submit_solution(sandbox: CodingBackend, code: Code) -> SubmitResult:
    """Submit the final program; it is saved as solution.py and run on the hidden tests.

    Each test runs the program in a fresh process and directory with the test's input on
    standard input, and compares its standard output with the expected one. The result says
    how many passed; failed tests are named by number and verdict only. Submitting ends the task.

    Args:
        code: The whole program.
    """
    return await sandbox.submit(code)
