"""Who may use a server over HTTP: one ASGI middleware checks every request on every route.

:class:`Guard` wraps the whole app (control plane, ``/ws``, ORS and ``/mcp`` alike) and checks,
in this order:

1. **Host** (DNS-rebinding protection, always on). The ``Host`` header must name this server:
   ``localhost``, an IP address, the machine's own hostname, or an entry of
   ``OPENENV_ALLOWED_HOSTS``. Else 421 ``host_not_allowed``. IP addresses are accepted because a
   rebinding attack needs a name the attacker controls: a request addressed by IP was not
   rebound, and replicas are reached by IP (Kubernetes probes, Prometheus, :class:`EnvPool`).
   The rule does not depend on the bind address, so serving on 0.0.0.0 keeps the check on.
2. **Origin** (sent by browsers, absent for other clients). When present it must be the
   server's own origin (the accepted Host), a loopback origin, an allowed host's, or an entry of
   ``OPENENV_ALLOWED_ORIGINS``. Else 403 ``origin_not_allowed``. This is what stops a web page
   from driving the server through the visitor's browser (WebSockets are not subject to CORS).
3. **Bearer token**, when ``OPENENV_AUTH_TOKEN`` or ``OPENENV_AUTH_TOKEN_FILE`` is set. Every
   route but the probes ``/healthz`` and ``/readyz`` (and the page's static files, which hold no
   data) needs ``Authorization: Bearer <token>``.
   Else 401 ``unauthorized`` with ``WWW-Authenticate: Bearer``. Tokens are kept as SHA-256
   digests and compared in constant time; the file is re-read when it changes (rotation).

Refusals carry the app's error body, ``{"error": {"code", "message"}}``. stdio has no HTTP and
none of this applies to it: whoever can start the process already has its privileges.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from openenv_mcp.errors import AccessDenied, ConfigError, HostNotAllowed, OriginNotAllowed, Unauthorized
from openenv_mcp.settings import Settings

__all__ = ["AUTHENTICATED", "PAGES", "PROBES", "AccessPolicy", "Guard", "HostRule", "Tokens", "serving_warning"]

log = logging.getLogger(__name__)

PROBES = frozenset({"/healthz", "/readyz"})
# The page's static files (openenv_mcp/doors/web) hold no data; a browser cannot send a header when it
# opens them, and the page asks for the token before calling anything else.
PAGES = frozenset({"/web", "/web/app.js", "/web/style.css"})
"""Paths open without a token: orchestrators' liveness and readiness probes carry no secret."""
AUTHENTICATED = "openenv_mcp.authenticated"
"""The scope key the guard sets: whether the request carried a valid token (or none is needed)."""
MIN_TOKEN_LENGTH = 16
_LOOPBACK_NAMES = frozenset({"localhost"})
_RELOAD_EVERY = 1.0  # seconds between checks that the token file changed


def _split(value: str) -> tuple[str, str | None] | None:
    """``name[:port]`` or ``[v6]:port`` -> (lower-case name without a trailing dot, port); None if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, port = value.split(":")
    else:
        name, port = value, None  # a bare IPv6 address has several colons and no port
    if not name or (port is not None and port != "*" and not port.isdigit()):
        return None
    return name.rstrip("."), port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _is_loopback(name: str) -> bool:
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class HostRule:
    """One ``OPENENV_ALLOWED_HOSTS`` entry: ``name``, ``name:port``, ``name:*``, ``*.domain`` or ``*``.

    A name without a port matches on any port: rebinding is about names, not ports.
    """

    name: str
    port: str | None

    @classmethod
    def parse(cls, entry: str) -> HostRule:
        if entry.strip() == "*":
            return cls("*", None)
        parts = _split(entry)
        if parts is None or not parts[0] or "*" in parts[0].removeprefix("*."):
            raise ConfigError(
                f"OPENENV_ALLOWED_HOSTS has {entry!r}: use 'name', 'name:port', 'name:*', '*.domain' or '*'"
            )
        name, port = parts
        return cls(name, None if port == "*" else port)

    def matches(self, name: str, port: str | None) -> bool:
        if self.name == "*":
            return True
        if self.port is not None and self.port != port:
            return False
        if self.name.startswith("*."):
            return name.endswith(self.name[1:]) and len(name) > len(self.name) - 1
        return name == self.name


class Tokens:
    """The accepted bearer tokens: from a setting and/or a file (one per line, ``#`` comments).

    Only SHA-256 digests are kept. The file is re-read (at most once a second) when its size,
    inode or modification time changes; if it cannot be read then, the last tokens stay.
    """

    def __init__(self, token: str | None = None, path: Path | None = None) -> None:
        self._fixed = [_digest(token, "OPENENV_AUTH_TOKEN")] if token is not None else []
        self._path = path
        self._from_file: list[bytes] = []
        self._seen: tuple[int, int, int] | None = None
        self._checked = 0.0
        if path is not None:
            try:
                self._load(path)
            except OSError as exc:
                raise ConfigError(f"OPENENV_AUTH_TOKEN_FILE {str(path)!r} cannot be read: {exc.strerror}") from None
            if not self._from_file:
                raise ConfigError(f"OPENENV_AUTH_TOKEN_FILE {str(path)!r} holds no token: put one per line")

    @property
    def enabled(self) -> bool:
        return bool(self._fixed) or self._path is not None

    def _load(self, path: Path) -> None:
        stat = os.stat(path)
        self._seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        lines = path.read_text(encoding="utf-8").splitlines()
        tokens = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
        self._from_file = [_digest(token, f"OPENENV_AUTH_TOKEN_FILE {str(path)!r}") for token in tokens]

    def _refresh(self) -> None:
        if self._path is None or time.monotonic() - self._checked < _RELOAD_EVERY:
            return
        self._checked = time.monotonic()
        try:
            stat = os.stat(self._path)
            if (stat.st_ino, stat.st_size, stat.st_mtime_ns) == self._seen:
                return
            self._load(self._path)
        except (OSError, ConfigError) as exc:
            log.warning("kept the previous bearer tokens: cannot re-read %s (%s)", self._path, exc)
            return
        if self._from_file:
            log.info("re-read %d bearer token(s) from %s", len(self._from_file), self._path)
        else:
            log.warning("%s now holds no token: every request that needs one is refused", self._path)

    def accepts(self, token: str) -> bool:
        """Whether ``token`` is one of the accepted tokens, in time independent of which one or where it differs."""
        self._refresh()
        given = hashlib.sha256(token.encode("latin-1", "replace")).digest()  # how Starlette decodes headers
        found = False
        for known in (*self._fixed, *self._from_file):
            found |= hmac.compare_digest(given, known)
        return found


def _digest(token: str, where: str) -> bytes:
    if len(token) < MIN_TOKEN_LENGTH or not token.isascii() or not token.isprintable() or " " in token:
        raise ConfigError(
            f"{where}: a bearer token needs at least {MIN_TOKEN_LENGTH} characters, ASCII without spaces; "
            'make one with: python -c "import secrets; print(secrets.token_urlsafe(32))"'
        )
    return hashlib.sha256(token.encode("ascii")).digest()


_HOST_CACHE = 1024


class AccessPolicy:
    """The three checks, without ASGI: which Host, which Origin, which token."""

    def __init__(
        self,
        *,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        tokens: Tokens | None = None,
        hostname: str | None = None,
    ) -> None:
        self.hosts = [HostRule.parse(entry) for entry in allowed_hosts]
        self.any_origin = False
        self.origins: list[tuple[str, str, str | None]] = []  # (scheme, name, port: None for none, "*" for any)
        for entry in allowed_origins:
            self._add_origin(entry)
        self.tokens = tokens or Tokens()
        own = (hostname if hostname is not None else socket.gethostname()).strip().lower().rstrip(".")
        self.hostname = own or None
        self._hosts_seen: dict[str, bool] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessPolicy:
        """The policy ``settings`` describe; a malformed entry or token is a :class:`ConfigError`."""
        token = settings.auth_token.get_secret_value().strip() if settings.auth_token is not None else ""
        tokens = Tokens(token or None, settings.auth_token_file)
        return cls(allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins, tokens=tokens)

    def _add_origin(self, entry: str) -> None:
        if entry.strip() == "*":
            self.any_origin = True
            return
        parts = urlsplit(entry.strip().lower())
        host = _split(parts.netloc) if parts.scheme and parts.netloc and parts.path in ("", "/") else None
        if host is None:
            raise ConfigError(
                f"OPENENV_ALLOWED_ORIGINS has {entry!r}: use 'scheme://host', 'scheme://host:port', "
                "'scheme://host:*' or '*'"
            )
        self.origins.append((parts.scheme, *host))

    # the checks -------------------------------------------------------------------------------

    def host_allowed(self, host: str | None) -> bool:
        # Every request asks this of its Host; the answer depends on the value alone, and a server sees few
        # values, so they are remembered (at most _HOST_CACHE, so a flood of made-up names cannot grow it).
        key = host or ""
        known = self._hosts_seen.get(key)
        if known is None:
            known = self._host_allowed(host)
            if len(self._hosts_seen) < _HOST_CACHE:
                self._hosts_seen[key] = known
        return known

    def _host_allowed(self, host: str | None) -> bool:
        parts = _split(host) if host else None
        if parts is None:
            return any(rule.name == "*" for rule in self.hosts) and bool(host)
        name, port = parts
        if _is_loopback(name) or _is_ip(name) or name == self.hostname:
            return True
        return any(rule.matches(name, port) for rule in self.hosts)

    def origin_allowed(self, origin: str, host: str) -> bool:
        if self.any_origin:
            return True
        try:
            parts = urlsplit(origin.strip().lower())
            explicit = parts.port
        except ValueError:
            return False
        if not parts.scheme or not parts.hostname:
            return False  # "null" (sandboxed frames, files) and other opaque origins
        name, port = parts.hostname.rstrip("."), (str(explicit) if explicit is not None else None)
        for scheme, allowed, allowed_port in self.origins:
            if scheme == parts.scheme and allowed == name and allowed_port in ("*", port):
                return True
        if parts.scheme not in ("http", "https"):
            return False
        if _is_loopback(name) or ((name, port) == _split(host) and self.host_allowed(host)):
            return True
        return any(rule.name != "*" and rule.matches(name, port) for rule in self.hosts)

    def check(self, path: str, headers: Mapping[str, str]) -> bool:
        """Raise the :class:`AccessDenied` a request earns; else whether it carried a valid token."""
        host = headers.get("host", "")
        if not self.host_allowed(host):
            shown = host[:100] or "(none)"
            raise HostNotAllowed(
                f"Host {shown!r} is not one this server answers to (DNS-rebinding protection); "
                "address it by IP or localhost, or add the name to OPENENV_ALLOWED_HOSTS"
            )
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin, host):
            raise OriginNotAllowed(
                f"Requests from pages at {origin[:100]!r} are not allowed; add the origin to "
                "OPENENV_ALLOWED_ORIGINS if this page should reach the server"
            )
        if not self.tokens.enabled:
            return True
        scheme, _, token = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip() and self.tokens.accepts(token.strip()):
            return True
        if path in PROBES or path in PAGES:
            return False
        if scheme:
            raise Unauthorized("The bearer token is not valid: send Authorization: Bearer <one of the server's tokens>")
        raise Unauthorized(
            "This server needs a bearer token: send Authorization: Bearer <token> "
            "(EnvClient(url, token=...); the token is the server's OPENENV_AUTH_TOKEN)"
        )


class Guard:
    """The ASGI middleware applying an :class:`AccessPolicy` to every HTTP and WebSocket request."""

    def __init__(self, app: ASGIApp, *, policy: AccessPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        try:
            authenticated = self.policy.check(scope["path"], _guarded_headers(scope))
        except AccessDenied as exc:
            await _refuse(exc, scope, receive, send)
            return
        scope.setdefault("state", {})[AUTHENTICATED] = authenticated
        await self.app(scope, receive, send)


_GUARDED = {b"host": "host", b"origin": "origin", b"authorization": "authorization"}


def _guarded_headers(scope: Scope) -> dict[str, str]:
    """The headers the checks read, in one pass over the request's (the first of each, as Starlette's ``Headers``
    gives it; a ``Headers`` object lowers and encodes the name on each lookup: 10k instructions a request more)."""
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        key = _GUARDED.get(name)
        if key is not None and key not in found:
            found[key] = value.decode("latin-1")
    return found


async def _refuse(exc: AccessDenied, scope: Scope, receive: Receive, send: Send) -> None:
    headers = {}
    if isinstance(exc, Unauthorized):
        invalid = _guarded_headers(scope).get("authorization")
        headers["WWW-Authenticate"] = 'Bearer realm="openenv-mcp"' + (', error="invalid_token"' if invalid else "")
    response = JSONResponse({"error": {"code": exc.code, "message": exc.message}}, exc.status, headers=headers)
    if scope["type"] == "http" or "websocket.http.response" in scope.get("extensions", {}):
        await response(scope, receive, send)
    else:  # a server without the denial-response extension answers a close before accept with 403
        await send({"type": "websocket.close", "code": 1008, "reason": exc.code})


def serving_warning(settings: Settings, policy: AccessPolicy) -> str | None:
    """What to warn about at start: listening beyond loopback without a token."""
    if policy.tokens.enabled or _is_loopback(settings.host.strip("[]").lower()):
        return None
    return (
        f"serving on {settings.host} without OPENENV_AUTH_TOKEN: anyone who can reach port {settings.port} "
        "can call the tools (and, in sim mode, open and step episodes)"
    )
