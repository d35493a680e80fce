"""The exceptions of openenv-mcp: one base, a shallow tree by failure kind.

    OpenEnvError
    ├── ConfigError            a setting is missing or wrong; names the variable to set
    ├── ToolError              something about a tool call
    │   ├── ToolNotFound       no such tool on this server
    │   ├── InvalidToolArguments  the arguments do not match the tool's input schema
    │   └── ToolFailed         the tool ran and refused (a tool result with is_error, not a crash)
    ├── BackendUnavailable     a backend (database, mail server, ...) did not answer
    │   └── JudgeUnavailable   an LLM judge (a rubric component) failed: timeout, HTTP error, garbage
    ├── EpisodeError           something about an episode
    │   ├── ResetNeeded        a sim call without an episode where one is required
    │   ├── EpisodeNotFound    unknown or already closed episode id
    │   ├── EpisodeFinished    the episode is done; reset to start another
    │   ├── GradePending       a step ran but its grade failed: resend that action to grade it
    │   ├── SnapshotRejected   a snapshot this server did not make, or one altered since
    │   └── ReplayDiverged     replaying an episode's actions gave other observations (names the step)
    ├── CapacityExceeded       too many open episodes
    ├── ModeError              a sim-only operation asked of a prod server (or the reverse)
    ├── AccessDenied           an HTTP request refused before any route (openenv_mcp.doors.guard)
    │   ├── Unauthorized       missing or wrong bearer token (401)
    │   ├── HostNotAllowed     a Host header this server does not answer to (421)
    │   └── OriginNotAllowed   a browser page from an origin not allowed (403)
    └── RegistryError          a registry entry is missing, invalid or out of date

Every error carries a stable machine-readable ``code`` and an HTTP ``status``; the wire
surfaces (HTTP control plane, MCP adapter, typed client) map errors in one place each.
Every message says what to do next.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AccessDenied",
    "BackendUnavailable",
    "CapacityExceeded",
    "ConfigError",
    "EnvironmentCrashed",
    "EpisodeError",
    "EpisodeFinished",
    "EpisodeNotFound",
    "GradePending",
    "HostNotAllowed",
    "InvalidToolArguments",
    "JudgeUnavailable",
    "ModeError",
    "OpenEnvError",
    "OriginNotAllowed",
    "RegistryError",
    "ReplayDiverged",
    "ResetNeeded",
    "SnapshotRejected",
    "ToolError",
    "ToolFailed",
    "ToolNotFound",
    "Unauthorized",
    "error_for_code",
]


class OpenEnvError(Exception):
    """Base of every error raised by openenv-mcp."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(OpenEnvError):
    code = "config_error"
    status = 500


class ToolError(OpenEnvError):
    code = "tool_error"
    status = 400


class ToolNotFound(ToolError):
    code = "tool_not_found"
    status = 404


class InvalidToolArguments(ToolError):
    code = "invalid_arguments"
    status = 422


class ToolFailed(ToolError):
    """Raised inside a tool body to refuse a call; the caller sees a tool result with is_error."""

    code = "tool_failed"
    status = 200


class BackendUnavailable(OpenEnvError):
    code = "backend_unavailable"
    status = 503


class JudgeUnavailable(BackendUnavailable):
    """An LLM judge did not give a verdict (timeout, HTTP error, an answer that is not a verdict)."""

    code = "judge_unavailable"
    status = 503


class EnvironmentCrashed(OpenEnvError):
    """The environment's own code (a tool, its grader, its sim backend or fork, a replayed step) raised something
    unexpected: a bug.

    The server logs the traceback and answers this on every door (a JSON 500 over HTTP, an error frame on
    ``/ws``, a tool error over MCP), so the connection and every other episode go on; the step does not count.
    """

    code = "environment_crashed"
    status = 500


class EpisodeError(OpenEnvError):
    code = "episode_error"
    status = 400


class ResetNeeded(EpisodeError):
    code = "reset_needed"
    status = 400


class EpisodeNotFound(EpisodeError):
    code = "episode_not_found"
    status = 404


class EpisodeFinished(EpisodeError):
    code = "episode_finished"
    status = 409


class GradePending(EpisodeError):
    """A step ran but its grade failed (a judge or backend did not answer); until the same action is sent
    again (which grades it, without running the tool again) the episode takes no other action."""

    code = "grade_pending"
    status = 409


class SnapshotRejected(EpisodeError):
    """A snapshot made by another server (another environment or tool table), or altered since it was made."""

    code = "snapshot_rejected"
    status = 400


class ReplayDiverged(EpisodeError):
    """Replaying recorded actions gave another observation, reward or done flag: the environment is not
    deterministic under its seed (or the snapshot was made by another version of it)."""

    code = "replay_diverged"
    status = 409


class CapacityExceeded(OpenEnvError):
    code = "capacity_exceeded"
    status = 503


class ModeError(OpenEnvError):
    code = "not_in_this_mode"
    status = 404


class AccessDenied(OpenEnvError):
    code = "access_denied"
    status = 403


class Unauthorized(AccessDenied):
    code = "unauthorized"
    status = 401


class HostNotAllowed(AccessDenied):
    code = "host_not_allowed"
    status = 421


class OriginNotAllowed(AccessDenied):
    code = "origin_not_allowed"
    status = 403


class RegistryError(OpenEnvError):
    code = "registry_error"
    status = 400


def _all_subclasses(cls: type[OpenEnvError]) -> list[type[OpenEnvError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found.extend(_all_subclasses(sub))
    return found


def error_for_code(code: str, message: str) -> OpenEnvError:
    """Rebuild the exception a server reported, from its wire ``code``; unknown codes give the base class."""
    for cls in _all_subclasses(OpenEnvError):
        if cls.code == code:
            return cls(message)
    return OpenEnvError(message)
