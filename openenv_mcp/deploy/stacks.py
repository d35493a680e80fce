"""Compose stacks from the catalog: servers in one mode, plus the services they need in that mode.

    from openenv_mcp.deploy.stacks import build_stack, dump_stack

    doc = build_stack(["sql", "search"], "prod")
    open("docker-compose.yml", "w").write(dump_stack(doc))

The library API (stable; ``openenv-mcp registry compose`` and ``openenv-mcp compose generate`` use it):

* :func:`build_stack` ``(names, mode, *, image=DEFAULT_IMAGE, build=None, bundle=True) -> dict``:
  a compose document as a plain dict, every listed server (one service each, named after the
  server) in ``mode``, plus what they need in that mode.
* :func:`dump_stack` ``(doc) -> str``: that document as YAML, with a header naming the published
  ports and every variable that must be set.
* :func:`shipped_servers` ``() -> list[str]``: the installed servers that import (the default list).

Every server runs one of two images built from ``compose/Dockerfile`` (the slim one, or the one with the display
stack for a server whose declared container needs it), as ``openenv-mcp serve NAME`` with the mode from ``MODE``
only, listens on 0.0.0.0:8000 inside its container, accepts its service name as ``Host`` on ``/mcp``, publishes one
port on the host, has a ``/readyz`` healthcheck, the restart policy :data:`RESTART`, resource limits and
``deploy.replicas`` for Docker Swarm. In sim mode that is all. In prod mode, for each declared
:class:`~openenv_mcp.environment.spec.ProdService` this module knows how to run (PostgreSQL today), the
stack bundles the service, wires the server's URL setting to it, and adds a one-shot loader
(``openenv-mcp provision postgres``) that creates the server's database and a SELECT-only role and
loads the demo data with ``python -m <server package>.load URL`` when the package has such a module.
Every other required prod setting is read from the environment as ``${VAR:?what to set}``; so are
all credentials; the server's optional settings are listed without a value (``VAR: null``), which
passes them through from the shell when set there and leaves them unset otherwise. With
``bundle=False`` nothing is bundled and every required setting comes from the environment (an
operator's own services).

The files are valid for Compose v2 (``docker compose``), Compose v1 (``docker-compose``) and
``docker stack deploy``: no top-level ``name``, ``depends_on`` as a plain list (Swarm rejects
conditions; the loader retries and servers report unready until their data is there).
"""

from __future__ import annotations

import importlib.util
import json
import re
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import yaml

from openenv_mcp.environment.catalog import GROUP, load_environment, server_names
from openenv_mcp.environment.declarations import ContainerNeeds
from openenv_mcp.environment.spec import Environment, ProdService, Variable
from openenv_mcp.errors import ConfigError
from openenv_mcp.settings import Mode

__all__ = [
    "CONTAINER_PORT",
    "DEFAULT_IMAGE",
    "DESKTOP_IMAGE",
    "HEALTHCHECK",
    "POSTGRES_IMAGE",
    "READY_PROBE",
    "RESTART",
    "SERVER_LABEL",
    "build_stack",
    "dump_stack",
    "port_variable",
    "published_port",
    "shipped_servers",
]

DEFAULT_IMAGE = "${OPENENV_IMAGE:-openenv-mcp:latest}"
"""The slim image (every server but those with a display, and the loaders): ``OPENENV_IMAGE`` when set, else the
local tag."""
DESKTOP_IMAGE = "${OPENENV_DESKTOP_IMAGE:-openenv-mcp-desktop:latest}"
"""The image with the display stack (the Dockerfile's ``display`` target): ``OPENENV_DESKTOP_IMAGE`` when set."""
POSTGRES_IMAGE = "postgres:16-alpine"
"""The bundled PostgreSQL's image unless the server declares one; ``OPENENV_POSTGRES_IMAGE`` overrides it."""
RESTART = "always"
"""The one restart policy of every long-running service: ``restart: always`` and, for Swarm, ``condition: any``.

A container that exits or is killed is started again; ``compose stop`` / ``down`` stop it for good."""
CONTAINER_PORT = 8000
FIRST_HOST_PORT = 8001
PORT_SPAN = 998
SERVER_LABEL = "org.openenv-mcp.server"
"""Label naming the server a compose service runs (the runner waits for these services' /readyz)."""
READY_PROBE = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{CONTAINER_PORT}/readyz', timeout=3)"
"""The healthcheck: Python's urllib (no curl in the image); any non-2xx answer raises, exit status 1."""
HEALTHCHECK = ["CMD-SHELL", f'python -c "{READY_PROBE}"']
"""The healthcheck as a shell command: podman's Docker API splits an exec-form test on spaces, a shell
string runs the same on Docker and podman."""


def _size(mib: int) -> str:
    """A compose size: ``1G`` for whole GiB, else ``256M``."""
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"


def _limits(needs: ContainerNeeds) -> dict[str, dict[str, str]]:
    """The container's resource limits and reservations, its memory as it declares it."""
    return {
        "limits": dict(cpus="1.0", memory=_size(needs.memory_mb)),
        "reservations": dict(cpus="0.25", memory=_size(needs.memory_reserved_mb)),
    }


_HEALTH_TIMING = {"interval": "10s", "timeout": "5s", "retries": 3, "start_period": "30s"}


def _required(variable: str, what: str) -> str:
    """``${VAR:?message}``: compose refuses to start, printing ``message``, when VAR is unset or empty.

    The message avoids ``-``, ``:``, ``}`` and ``$``: the docker CLI's own interpolation (``docker
    stack``) takes a ``-`` inside the message for a default separator.
    """
    what = what.replace(":", ",")
    what = re.sub(r"\s+", " ", re.sub(r"[-}$()]", " ", re.split(r",? e\.g\.|\(", what, maxsplit=1)[0])).strip()
    message = f"set {variable} ({what})" if what else f"set {variable}"
    return "${" + variable + ":?" + message + "}"


@dataclass(frozen=True, slots=True)
class _Wiring:
    """What bundling one prod service gives a server: variables, and services to add to the stack."""

    environment: dict[str, str]
    services: dict[str, dict[str, Any]]
    volumes: tuple[str, ...]
    depends_on: tuple[str, ...]


def _postgres(env: Environment[Any, Any], service: ProdService, image: str) -> _Wiring | None:
    """Bundle PostgreSQL: one shared ``postgres`` service, a database and a SELECT-only role per server."""
    url_field = _url_setting(env, service)
    if url_field is None:
        return None
    [url_variable] = [v.name for v in env.variables((url_field,))]
    prefix = str(env.settings.model_config.get("env_prefix", "")).upper() or f"{env.name.upper()}_"
    password = f"{prefix}READER_PASSWORD"
    database, reader = env.name, f"{env.name}_reader"
    admin_password = _required(
        "POSTGRES_PASSWORD", "the superuser password of the bundled PostgreSQL, letters and digits only"
    )
    reader_password = _required(password, f"the password of the read only role {reader}, letters and digits only")
    server_url = f"postgresql://{reader}:{reader_password}@postgres:5432/{database}"
    postgres = {
        "image": "${OPENENV_POSTGRES_IMAGE:-" + (service.image or POSTGRES_IMAGE) + "}",
        "environment": {"POSTGRES_PASSWORD": admin_password},
        "volumes": ["postgres-data:/var/lib/postgresql/data"],
        "healthcheck": {"test": ["CMD-SHELL", "pg_isready -U postgres -d postgres"], **_HEALTH_TIMING},
        "restart": RESTART,
        "deploy": {
            "replicas": 1,
            "resources": _limits(ContainerNeeds()),
            "restart_policy": {"condition": "any", "delay": "5s"},
        },
    }
    loader_command = ["provision", "postgres", "--database", database, "--reader", reader]
    package = _package(env.name)
    if package is not None and importlib.util.find_spec(f"{package}.load") is not None:
        loader_command += ["--", "python", "-m", f"{package}.load", "{url}"]
    loader = {
        "image": image,
        "command": loader_command,  # the image's entrypoint: openenv-mcp (under tini)
        "environment": {
            "PROVISION_ADMIN_URL": f"postgresql://postgres:{admin_password}@postgres:5432/postgres",
            "PROVISION_READER_PASSWORD": reader_password,
        },
        "depends_on": ["postgres"],
        "healthcheck": {"disable": True},  # a one-shot job: the image's /readyz check does not apply
        "restart": "on-failure",
        "deploy": {"restart_policy": {"condition": "on-failure", "delay": "5s", "max_attempts": 10}},
    }
    return _Wiring(
        environment={url_variable: server_url},
        services={"postgres": postgres, f"{env.name}-load": loader},
        volumes=("postgres-data",),
        depends_on=(f"{env.name}-load",),
    )


_Bundler = Callable[[Environment[Any, Any], ProdService, str], "_Wiring | None"]
_BUNDLERS: dict[str, _Bundler] = {"postgresql": _postgres}
"""Prod services a stack can run itself, by :attr:`ProdService.name`; others come from the environment."""


def shipped_servers() -> list[str]:
    """The installed servers whose package imports and that have prod services (a registered server not written yet
    is left out, and so is a world, whose prod serves the world itself per session: docs/worlds.md)."""
    names = []
    for name in server_names():
        try:
            env = load_environment(name)
        except (ImportError, AttributeError, ConfigError):
            continue  # registered, but its package is not (completely) there yet
        if not env.prod_sessions:
            names.append(name)
    return names


def port_variable(name: str) -> str:
    """The variable that overrides a server's published host port, e.g. ``OPENENV_PORT_SQL``."""
    return "OPENENV_PORT_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


def published_port(name: str, taken: Collection[int] = ()) -> int:
    """The default host port of server ``name``: the same in every stack, whatever else is in it.

    It is derived from the name (8001-8998), so adding a server never moves another; on a clash
    within one stack (``taken``), the next free port.
    """
    port = FIRST_HOST_PORT + zlib.crc32(name.encode()) % PORT_SPAN
    while port in taken:
        port = FIRST_HOST_PORT + (port - FIRST_HOST_PORT + 1) % PORT_SPAN
    return port


def build_stack(
    names: Sequence[str],
    mode: Mode,
    *,
    image: str = DEFAULT_IMAGE,
    desktop_image: str = DESKTOP_IMAGE,
    build: str | None = None,
    bundle: bool = True,
) -> dict[str, Any]:
    """A compose document running ``names`` in ``mode``, with the services they need in that mode.

    Args:
        names: Server names as ``openenv-mcp list`` shows them (see :func:`shipped_servers`); each
            becomes a service of the same name, publishing :func:`published_port` on 127.0.0.1
            unless ``OPENENV_BIND`` / ``OPENENV_PORT_<NAME>`` say otherwise.
        mode: ``"sim"`` (no external services, no credentials) or ``"prod"``.
        image: The slim image every server without a display (and every loader) runs; by default
            ``$OPENENV_IMAGE`` or ``openenv-mcp:latest``.
        desktop_image: The image with the display stack, for the servers whose container declares the ``display``
            target; by default
            ``$OPENENV_DESKTOP_IMAGE`` or ``openenv-mcp-desktop:latest``.
        build: If given, the build context (relative to the compose file) of ``compose/Dockerfile``,
            so ``docker compose build`` builds the images: the first service of each image carries
            the ``build:`` (one build per image), the others only name the image; ``None`` leaves
            building out.
        bundle: Prod only. ``True`` runs the prod services this module knows (PostgreSQL, with each
            server's demo data loaded) inside the stack; ``False`` reads every required prod setting
            from the environment instead.

    Returns:
        The document: ``services``, and ``volumes`` when any is used. Plain dicts, lists and strings,
        ready for :func:`dump_stack` or ``yaml.safe_dump``.

    Raises:
        ConfigError: A name is not an installed server.
        ValueError: ``mode`` is neither sim nor prod, or a name is listed twice.
    """
    if mode not in ("sim", "prod"):
        raise ValueError(f"mode must be 'sim' or 'prod', not {mode!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"servers listed twice: {sorted({n for n in names if list(names).count(n) > 1})}")
    services: dict[str, dict[str, Any]] = {}
    support: dict[str, dict[str, Any]] = {}
    volumes: list[str] = []
    ports: list[int] = []
    images = {"slim": image, "display": desktop_image}
    built: set[str] = set()
    for name in names:
        env = load_environment(name)
        ports.append(published_port(name, ports))
        target = env.declares.container.target
        if target not in images:
            known = ", ".join(images)
            raise ConfigError(f"{name} declares the image target {target!r}; compose/Dockerfile has: {known}")
        builds = build if build is not None and target not in built else None
        built.add(target)
        service = _server_service(env, mode, image=images[target], build=builds, port=ports[-1])
        volumes.extend(v.split(":", 1)[0] for v in service.get("volumes", []) if not v.startswith(("/", "$", ".")))
        if mode == "prod":
            for wiring in _complete_prod(env, service, image=image, bundle=bundle):
                support.update(wiring.services)
                volumes.extend(wiring.volumes)
        services[name] = service
    doc: dict[str, Any] = {"services": {**services, **dict(sorted(support.items()))}}
    if volumes:
        doc["volumes"] = {volume: {} for volume in sorted(set(volumes))}
    return doc


def _complete_prod(env: Environment[Any, Any], service: dict[str, Any], *, image: str, bundle: bool) -> list[_Wiring]:
    """Give a server's prod ``service`` its settings: from the prod services bundled (returned, for the stack to
    add), else asked of the environment; and name the upstream MCP servers its image must hold."""
    wirings = _wire(env, image, bundle)
    for wiring in wirings:
        service["environment"].update(wiring.environment)
    depends = [d for wiring in wirings for d in wiring.depends_on]
    if depends:
        service["depends_on"] = depends
    for variable in _unset_required(env, service["environment"]):
        service["environment"][variable.name] = _required(variable.name, variable.description)
    for variable in env.variables():  # the rest pass through from the shell when set there
        service["environment"].setdefault(variable.name, None)
    if env.declares.container.system_packages:  # what the prod image must add to its target (docs/deploy.md)
        service["x-system-packages"] = list(env.declares.container.system_packages)
    upstreams = [prod.upstream for prod in env.prod_services if prod.upstream is not None]
    if upstreams:  # an existing MCP server the prod backend forwards to: what the image must hold
        service["x-upstream"] = [
            {"package": u.package, "registry": u.registry, "version": u.version, "command": list(u.command),
             "install": u.install}
            for u in upstreams
        ]  # fmt: skip
    return wirings


def _server_service(
    env: Environment[Any, Any], mode: Mode, *, image: str, build: str | None, port: int
) -> dict[str, Any]:
    name = env.name
    needs = env.declares.container
    environment = {
        "MODE": mode,
        "OPENENV_HOST": "0.0.0.0",
        "OPENENV_PORT": str(CONTAINER_PORT),
        "OPENENV_ALLOWED_HOSTS": json.dumps([name, f"{name}:*"]),
        "OPENENV_AUTH_TOKEN": None,  # from the shell when set there: then every route but the probes needs it
    }
    volume_map: dict[str, str] = {}
    if mode == "sim":
        # Every sim step is recorded (openenv-mcp export reads it); replicas share the file (WAL).
        environment["OPENENV_TRAJECTORIES"] = "sqlite:////data/trajectories.db"
        volume_map[f"{name}-data"] = "/data"
    else:
        environment.update(needs.prod_environment)
        volume_map.update(needs.prod_volumes)
    service: dict[str, Any] = {"image": image}
    if build is not None:
        service["build"] = {"context": build, "dockerfile": "compose/Dockerfile", "target": needs.target}
    service["command"] = ["serve", name]
    if needs.user is not None:
        service["user"] = needs.user
    if needs.cap_add:
        service["cap_add"] = list(needs.cap_add)
    if needs.security_opt:
        service["security_opt"] = list(needs.security_opt)
    if needs.devices:
        service["devices"] = list(needs.devices)
    service["environment"] = environment
    # ``${VAR-default}``: an empty OPENENV_PORT_<NAME> publishes on a free port the engine picks.
    service["ports"] = [f"${{OPENENV_BIND:-127.0.0.1}}:${{{port_variable(name)}-{port}}}:{CONTAINER_PORT}"]
    mounts = [f"{volume}:{path}" for volume, path in volume_map.items()]
    if mode == "prod":
        mounts.extend(needs.prod_mounts)
        environment.update(needs.mount_environment)
    if mounts:
        service["volumes"] = mounts
    service["labels"] = {SERVER_LABEL: name, "org.openenv-mcp.mode": mode}
    service["healthcheck"] = {"test": list(HEALTHCHECK), **_HEALTH_TIMING}
    service["restart"] = RESTART
    replicas = "${OPENENV_REPLICAS_" + port_variable(name).removeprefix("OPENENV_PORT_") + ":-1}"
    service["deploy"] = {
        "replicas": replicas,
        "resources": _limits(needs),
        "restart_policy": {"condition": "any", "delay": "5s"},
        "update_config": {"parallelism": 1, "order": "start-first"},
    }
    return service


def _wire(env: Environment[Any, Any], image: str, bundle: bool) -> list[_Wiring]:
    """Bundle each prod service that can be; an unbundled one's settings come from the environment."""
    if not bundle:
        return []
    wirings = []
    for service in env.prod_services:
        bundler = _BUNDLERS.get(service.name)
        wiring = bundler(env, service, image) if bundler is not None else None
        if wiring is not None:
            wirings.append(wiring)
    return wirings


def _unset_required(env: Environment[Any, Any], environment: Mapping[str, str]) -> list[Variable]:
    """Required prod settings this stack does not supply: the operator sets them."""
    return [v for v in env.variables() if v.required and v.name not in environment]


def _url_setting(env: Environment[Any, Any], service: ProdService) -> str | None:
    """The setting that points the server at ``service``: a required one it reads, else one named like a URL."""
    for name in service.settings:
        if name in env.prod_requires:
            return name
    return next((name for name in service.settings if "url" in name), None)


def _package(name: str) -> str | None:
    """The package a server's entry point lives in (``openenv_mcp.servers.sql:environment`` -> its package)."""
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            return ep.value.split(":", 1)[0]
    return None


class _Dumper(yaml.SafeDumper):
    """Safe YAML without anchors and aliases (a shared dict is written out each time)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_REQUIRED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?([^}]*)\}")


def dump_stack(doc: Mapping[str, Any]) -> str:
    """``doc`` as YAML, after a comment header: the published ports and the variables to set."""
    lines = [
        "# Generated by openenv_mcp.deploy.stacks (openenv-mcp compose generate); edit the generator, not this file."
    ]
    servers = {n: s for n, s in doc.get("services", {}).items() if SERVER_LABEL in s.get("labels", {})}
    modes = sorted({s["labels"].get("org.openenv-mcp.mode", "?") for s in servers.values()})
    if modes:
        lines.append(f"# Mode: {', '.join(modes)}. Every server runs openenv-mcp serve NAME (image: slim or display).")
    if servers:
        lines.append(
            "# Published on the host (OPENENV_BIND, default 127.0.0.1; MCP at /mcp, health at /healthz, /readyz):"
        )
        for name, service in servers.items():
            for port in service.get("ports", []):
                match = re.search(r"\$\{(\w+)-(\d+)\}", str(port))
                if match:
                    lines.append(f"#   {name:<10} http://127.0.0.1:{match.group(2)}  (override with {match.group(1)})")
    text = yaml.dump(
        dict(doc), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=200, allow_unicode=True
    )
    images = sorted(set(re.findall(r"\$\{(OPENENV_(?:\w+_)?IMAGE):-([^}]+)\}", text)))
    if images:
        lines.append("# Images (override for a private registry or mirror):")
        lines.extend(f"#   {variable:<24} default {default}" for variable, default in images)
    lines.append(f"# Restart policy: {RESTART} (Swarm: condition any); 'compose stop' or 'down' stops a service.")
    if any("/tmp/.X11-unix" in str(v) for s in servers.values() for v in s.get("volumes", [])):
        lines.append(
            "# Prod desktop needs the host's X server: its sockets in OPENENV_X11_SOCKETS (default /tmp/.X11-unix),"
        )
        lines.append("#   DESKTOP_DISPLAY (e.g. :0), and XAUTHORITY when the server wants a cookie.")
    for name, service in servers.items():
        adds = [*service.get("x-system-packages", ()), *(u["package"] for u in service.get("x-upstream", ()))]
        if adds:
            lines.append(f"# {name} needs an image that adds {', '.join(adds)} (x-system-packages, x-upstream).")
    required = dict(_REQUIRED.findall(text))
    if required:
        lines.append("# Variables that must be set (compose stops with the message when one is missing):")
        lines.extend(f"#   {variable:<24} {message}" for variable, message in sorted(required.items()))
    return "\n".join(lines) + "\n" + text
