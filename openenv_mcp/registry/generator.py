"""Registry entries generated from the servers' declarations, and the drift check against the files.

Everything in an entry comes from code: the description, version and settings from the
:class:`~openenv_mcp.environment.spec.Environment`, the tools and their schemas exactly as ``tools/list``
sends them (:meth:`~openenv_mcp.doors.mcp.McpDoor.tool_list`), and the HTTP endpoints from the
app each mode serves. ``openenv-mcp registry generate --check`` fails on any difference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from openenv_mcp.environment.spec import Environment, ProdService
from openenv_mcp.errors import ConfigError, RegistryError
from openenv_mcp.registry.entry import (
    FORMAT,
    META_KEY,
    NAMESPACE,
    PUBLISHER_KEY,
    SCHEMA_URL,
    Endpoint,
    Modes,
    OpenEnvMeta,
    ServiceBinding,
    SettingRef,
    SimBinding,
    ToolEntry,
    UpstreamRef,
    schema_hash,
    validate_entry,
)
from openenv_mcp.registry.lookup import SUFFIX
from openenv_mcp.settings import Mode

__all__ = [
    "DISTRIBUTION",
    "GenerateReport",
    "build_document",
    "dump_document",
    "entry_drift",
    "generate",
    "short_description",
]

DISTRIBUTION = "openenv-mcp"
"""The package (on the Python package index) that serves every shipped server."""
MAX_DESCRIPTION = 100
_MODES: tuple[Mode, ...] = ("sim", "prod")
_MCP_METHODS = ("DELETE", "GET", "POST")  # Streamable HTTP
_WIDTH = 100


def short_description(env: Environment[Any, Any]) -> str:
    """The registry's description (at most 100 characters), derived from the declaration.

    The first that fits: the description; its first sentence; that sentence's lead clause (up to
    a colon or semicolon); that clause without parenthetical asides.

    Raises:
        RegistryError: when none fits, asking for a shorter first sentence.
    """
    text = " ".join(env.description.split())
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    clause = re.split(r"[:;]\s", sentence, maxsplit=1)[0].rstrip(".")
    bare = " ".join(re.sub(r"\s*\([^()]*\)", "", clause).split())
    for candidate in (text, sentence, clause, bare):
        if 0 < len(candidate) <= MAX_DESCRIPTION:
            return candidate
    raise RegistryError(
        f"Server {env.name!r}: its description's first sentence is {len(sentence)} characters and the registry "
        f"allows {MAX_DESCRIPTION}; start the Environment's description with a sentence of at most "
        f"{MAX_DESCRIPTION} characters"
    )


def build_document(env: Environment[Any, Any]) -> dict[str, Any]:
    """The ``server.json`` of one server, from its declaration (validated before it is returned)."""
    problems = []
    if not env.sim_summary:
        problems.append("declares no sim_summary (what its sim backend is, in one sentence)")
    if not env.prod_services:
        problems.append("declares no prod_services (what runs its tools in production)")
    if problems:
        raise RegistryError(f"Server {env.name!r} " + "; ".join(problems) + ": add them to its Environment")
    try:
        variables = env.variables()
        services = {service.name: _service(env, service) for service in env.prod_services}
    except TypeError as exc:
        raise RegistryError(f"Server {env.name!r}: {exc}") from None
    tools = []
    for tool in _tool_list(env):
        prod = [services[s.name] for s in env.prod_services if not s.tools or tool["name"] in s.tools]
        if not prod:
            raise RegistryError(f"Server {env.name!r}: no prod service serves tool {tool['name']!r}; name it in one")
        tools.append(
            ToolEntry(
                name=tool["name"],
                schema_hash=schema_hash(tool),
                sim=SimBinding(summary=env.sim_summary),
                prod=tuple(prod),
            )
        )
    meta = OpenEnvMeta(
        format=FORMAT,
        server=env.name,
        modes=Modes(variable="MODE", default="sim", values=_MODES),
        port=_default_port(),
        endpoints=tuple(_endpoints(env)),
        tools=tuple(tools),
    )
    mode = {
        "name": "MODE",
        "description": "prod: the production services this entry lists; sim: the training backends (no credentials)",
        "default": "prod",
        "choices": list(_MODES),
        "isRequired": False,
        "isSecret": False,
    }
    environment_variables = [mode]
    for variable in variables:
        item: dict[str, Any] = {"name": variable.name, "description": variable.description}
        if variable.default is not None:
            item["default"] = variable.default
        item.update(isRequired=variable.required, isSecret=variable.secret)
        environment_variables.append(item)
    document = {
        "$schema": SCHEMA_URL,
        "name": f"{NAMESPACE}/{env.name}",
        "title": f"openenv-mcp {env.name}",
        "description": short_description(env),
        "version": env.version,
        "packages": [
            {
                "registryType": "pypi",
                "identifier": DISTRIBUTION,
                "version": _distribution_version(),
                "runtimeHint": "uvx",
                "transport": {"type": "stdio"},
                "packageArguments": [
                    {"type": "positional", "value": "serve"},
                    {"type": "positional", "value": env.name},
                    {"type": "named", "name": "--transport", "value": "stdio"},
                ],
                "environmentVariables": environment_variables,
            }
        ],
        "_meta": {PUBLISHER_KEY: {META_KEY: meta.model_dump(mode="json", by_alias=True, exclude_none=True)}},
    }
    validate_entry(document, source=f"the generated entry of {env.name!r}")
    return document


def dump_document(document: dict[str, Any]) -> str:
    """The file text of an entry: JSON indented by 2, keys in the order they were built, each object or
    array on one line when it fits in 100 columns, one final newline."""
    return _dump(document, 0, 0) + "\n"


def _dump(value: Any, indent: int, prefix: int) -> str:
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list) or not value or indent + prefix + len(flat) <= _WIDTH:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        lines = [f"{pad}{json.dumps(k)}: {_dump(v, indent + 2, len(json.dumps(k)) + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(lines) + "\n" + " " * indent + "}"
    lines = [pad + _dump(item, indent + 2, 0) for item in value]
    return "[\n" + ",\n".join(lines) + "\n" + " " * indent + "]"


def _service(env: Environment[Any, Any], service: ProdService) -> ServiceBinding:
    settings = tuple(
        SettingRef(name=v.name, is_secret=v.secret, is_required=v.required) for v in env.variables(service.settings)
    )
    return ServiceBinding(
        name=service.name,
        title=service.title,
        role=service.role,
        settings=settings,
        shipped=service.shipped,
        tested=service.tested,
        image=service.image,
        upstream=None
        if service.upstream is None
        else UpstreamRef(
            package=service.upstream.package,
            registry=service.upstream.registry,
            version=service.upstream.version,
            command=service.upstream.command,
            transport=service.upstream.transport,
            install=service.upstream.install,
        ),
    )


def _tool_list(env: Environment[Any, Any]) -> list[dict[str, Any]]:
    return env.tools.listing()  # the same list in both modes, which conformance checks


def _endpoints(env: Environment[Any, Any]) -> list[Endpoint]:
    from starlette.routing import Route, WebSocketRoute

    from openenv_mcp.doors.http import build_app
    from openenv_mcp.runtime import Runtime
    from openenv_mcp.settings import Settings

    found: dict[tuple[str, str], tuple[set[str], list[Mode]]] = {}

    def add(path: str, kind: str, methods: Sequence[str], mode: Mode) -> None:
        methods_seen, modes = found.setdefault((path, kind), (set(), []))
        methods_seen.update(methods)
        if mode not in modes:
            modes.append(mode)

    for mode in _MODES:
        app = build_app(Runtime(env, Settings(mode=mode), None))
        for path, operations in app.openapi()["paths"].items():
            for method, operation in operations.items():
                add(path, (operation.get("tags") or ["http"])[0], [method.upper()], mode)
        for route in app.routes:
            if isinstance(route, WebSocketRoute):
                add(route.path, "websocket", ["GET"], mode)
            elif isinstance(route, Route) and route.path == "/mcp":
                add(route.path, "mcp", _MCP_METHODS, mode)
    return [
        Endpoint(path=path, kind=kind, methods=tuple(sorted(methods)), modes=tuple(modes))
        for (path, kind), (methods, modes) in found.items()
    ]


def _default_port() -> int:
    from openenv_mcp.settings import Settings

    return int(Settings.model_fields["port"].default)


def _distribution_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        raise ConfigError(
            f"{DISTRIBUTION} is not installed; install it (pip install -e .) to generate entries"
        ) from None


@dataclass
class GenerateReport:
    """What :func:`generate` wrote, or (with ``check``) what differs between the code and the files."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.drift


def generate(directory: Path | str, *, names: Sequence[str] | None = None, check: bool = False) -> GenerateReport:
    """Write ``<server>.server.json`` for each server in ``names`` (default: every installed one).

    With ``check``, write nothing and report every difference between the code and the files
    (a missing, changed or stale entry). Without ``names``, a registered server whose package
    does not import is skipped (and named in the report), as :func:`openenv_mcp.deploy.stacks.shipped_servers`
    does, and entries of servers no longer registered are stale: removed, or reported under ``check``.

    Raises:
        RegistryError: a server cannot be loaded or described (nothing is written then).
    """
    from openenv_mcp.environment.catalog import load_environment, server_names

    where = Path(directory)
    installed = server_names()
    report = GenerateReport()
    documents: dict[str, dict[str, Any]] = {}
    failures = []
    for name in names or installed:
        try:
            env = load_environment(name)
        except (ImportError, AttributeError) as exc:  # registered, but its package is not (all) there yet
            if names:
                failures.append(f"Server {name!r} is registered but cannot be loaded: {exc}")
            else:
                report.skipped.append(f"{name} (registered but cannot be loaded: {exc})")
            continue
        except ConfigError as exc:
            failures.append(exc.message)
            continue
        if env.prod_sessions and not names:
            report.skipped.append(f"{name} (a world: its prod is the world itself, no prod services to map)")
            continue
        try:
            documents[name] = build_document(env)
        except RegistryError as exc:
            failures.append(exc.message)
    if failures:
        raise RegistryError("Cannot generate the registry: " + "; ".join(failures))
    stale = [] if names else sorted(p for p in where.glob(f"*{SUFFIX}") if p.name.removesuffix(SUFFIX) not in installed)
    for name, document in documents.items():
        path = where / f"{name}{SUFFIX}"
        text = dump_document(document)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            report.unchanged.append(str(path))
        elif check:
            report.drift += _drift(path, current, document)
        else:
            where.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            report.written.append(str(path))
    for path in stale:
        if check:
            report.drift.append(f"{path}: no installed server {path.name.removesuffix(SUFFIX)!r}; remove the file")
        else:
            path.unlink()
            report.removed.append(str(path))
    return report


def entry_drift(env: Environment[Any, Any], path: Path) -> list[str]:
    """How the entry at ``path`` differs from what the code of ``env`` describes (empty: in step)."""
    document = build_document(env)
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    return [] if current == dump_document(document) else _drift(path, current, document)


def _drift(path: Path, current: str | None, document: dict[str, Any]) -> list[str]:
    if current is None:
        return [f"{path}: missing"]
    try:
        old = json.loads(current)
    except json.JSONDecodeError as exc:
        return [f"{path}: not JSON ({exc})"]
    differences = _differences(old, document, "")
    return [f"{path}: {d}" for d in differences] or [f"{path}: same content, different layout (key order or indent)"]


def _differences(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, list) and isinstance(new, list) and _named(old) and _named(new):
        old, new = {item["name"]: item for item in old}, {item["name"]: item for item in new}
        return _differences_by_key(old, new, path, "[{}]")
    if isinstance(old, dict) and isinstance(new, dict):
        return _differences_by_key(old, new, path, ".{}" if path else "{}")
    if old == new:
        return []
    if path.endswith(".schemaHash"):
        return [f"{path}: the tool's input or output schema changed (registry {old}, code {new})"]
    return [f"{path}: registry has {_short(old)}, code has {_short(new)}"]


def _differences_by_key(old: dict[str, Any], new: dict[str, Any], path: str, step: str) -> list[str]:
    found = []
    for key in [*old, *(k for k in new if k not in old)]:
        here = path + step.format(key)
        if key not in new:
            found.append(f"{here}: in the registry, not in the code")
        elif key not in old:
            found.append(f"{here}: in the code, not in the registry")
        else:
            found += _differences(old[key], new[key], here)
    return found


def _named(items: list[Any]) -> bool:
    names = [item.get("name") for item in items if isinstance(item, dict)]
    return len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
