"""What goes wrong at the capture proxy, by who is to fix it; each wire format words them in its own shape.

    OpenEnvError
    ├── RequestInvalid        the request is not one this route takes (400): malformed JSON, a missing field
    │   └── BodyTooLarge      its body is over the proxy's limit (413)
    ├── EpisodeNotFound       no episode in the store has the id the path (or key) names (404)
    └── BackendUnavailable    the inference server does not answer (503)
        ├── UpstreamTimeout   it did not answer within the proxy's time limit (504)
        └── UpstreamRejected  it answered with an error (its status when 4xx, else 502; its message)

``RecordFailed`` (503) is the trajectory store refusing a turn: the reply is not sent, since a turn that is not
recorded cannot be trained on.
"""

from __future__ import annotations

from typing import ClassVar

from openenv_mcp.errors import BackendUnavailable, EpisodeNotFound, OpenEnvError

__all__ = [
    "BackendUnavailable",
    "BodyTooLarge",
    "EpisodeNotFound",
    "RecordFailed",
    "RequestInvalid",
    "UpstreamRejected",
    "UpstreamTimeout",
    "http_status",
]


class RequestInvalid(OpenEnvError):
    code: ClassVar[str] = "invalid_request"
    status: ClassVar[int] = 400


class BodyTooLarge(RequestInvalid):
    code: ClassVar[str] = "request_too_large"
    status: ClassVar[int] = 413


class UpstreamTimeout(BackendUnavailable):
    code: ClassVar[str] = "upstream_timeout"
    status: ClassVar[int] = 504


class UpstreamRejected(BackendUnavailable):
    """The inference server answered with an error status; ``http_status`` is what the client gets."""

    code: ClassVar[str] = "upstream_error"
    status: ClassVar[int] = 502

    def __init__(self, message: str, *, http_status: int = 502) -> None:
        super().__init__(message)
        self.http_status = http_status


class RecordFailed(BackendUnavailable):
    code: ClassVar[str] = "record_failed"
    status: ClassVar[int] = 503


def http_status(error: OpenEnvError) -> int:
    """The HTTP status ``error`` is answered with."""
    return error.http_status if isinstance(error, UpstreamRejected) else error.status
