"""What the coding tools return."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["Failure", "RunResult", "SandboxInfo", "SubmitResult"]


class RunResult(BaseModel):
    """One run of a program in the sandbox."""

    stdout: str
    stderr: str
    exit_code: int = Field(description="The exit status as a shell reports it: 128 + N when signal N ended it")
    timed_out: bool = Field(description="The wall-clock timeout or the CPU-time limit ended the program")
    truncated: bool = Field(description="Output went past the cap: it was cut and the program was stopped")
    duration_ms: float | None = Field(
        description="Wall-clock time of the run; null in training (sim) so observations stay deterministic"
    )


class Failure(BaseModel):
    """A hidden test that did not pass, summarised without its input or expected output."""

    test: int = Field(description="The test's number, from 1")
    verdict: str = Field(description="e.g. 'wrong answer', 'time limit exceeded', 'runtime error: ValueError'")


class SubmitResult(BaseModel):
    """How a submitted solution fared on the hidden tests."""

    passed: int
    total: int
    score: float = Field(description="passed / total (0 when there are no tests)")
    failures: list[Failure]
    message: str


class SandboxInfo(BaseModel):
    """What code runs with: interpreter, working directory, limits and isolation."""

    python: str = Field(description="Version of the sandbox's Python")
    working_directory: str = Field(description="Where code runs; files there persist between calls")
    max_timeout_s: float = Field(description="The most run_python's timeout_s may be; CPU time is limited alike")
    memory_mb: int = Field(description="Address space of each process")
    max_processes: int | None = Field(description="Processes and threads at once (null: not limited here)")
    max_file_mb: int = Field(description="Largest file a program may write")
    max_output_bytes: int = Field(description="Stdout and stderr kept per run, each; more stops the program")
    network: bool = Field(description="Whether code can reach any network (false: no interfaces but a down loopback)")
    isolation: list[str] = Field(description="The isolation measures in force")
