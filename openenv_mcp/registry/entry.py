"""One registry entry: an MCP registry ``server.json`` with the sim -> prod map of its tools under ``_meta``.

The document is the MCP registry's format (schema 2025-12-11, shipped as ``server.schema.json``
beside this module). Ours is the block at ``_meta["io.modelcontextprotocol.registry/publisher-provided"]
["openenv-mcp"]``, described by :class:`OpenEnvMeta`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from openenv_mcp.errors import RegistryError
from openenv_mcp.settings import Mode

__all__ = [
    "FORMAT",
    "META_KEY",
    "NAMESPACE",
    "PUBLISHER_KEY",
    "SCHEMA_URL",
    "Endpoint",
    "Modes",
    "OpenEnvMeta",
    "RegistryEntry",
    "ServiceBinding",
    "SettingRef",
    "SimBinding",
    "ToolEntry",
    "UpstreamRef",
    "load_entry",
    "schema_hash",
    "validate_entry",
]

NAMESPACE = "io.github.openenv-mcp"
"""Every entry is named ``NAMESPACE/<server>`` (the registry's reverse-DNS ``namespace/name``)."""
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
PUBLISHER_KEY = "io.modelcontextprotocol.registry/publisher-provided"
META_KEY = "openenv-mcp"
"""Our key under ``_meta[PUBLISHER_KEY]``."""
FORMAT: Literal[1] = 1
"""The version of our ``_meta`` block; bump it when its shape changes incompatibly."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class SettingRef(_Model):
    """An environment variable a prod service reads (its description and default are in the package's list)."""

    name: str = Field(min_length=1)
    is_secret: bool
    is_required: bool


class UpstreamRef(_Model):
    """The existing MCP server a prod service forwards to: its package, version and command."""

    package: str = Field(min_length=1)
    registry: str = Field(min_length=1)
    version: str = Field(min_length=1)
    command: tuple[str, ...] = ()
    transport: str = "stdio"
    install: str = ""


class ServiceBinding(_Model):
    """A production service behind a tool."""

    name: str = Field(min_length=1)
    title: str = Field(min_length=1)
    role: str = Field(min_length=1)
    settings: tuple[SettingRef, ...]
    shipped: bool
    tested: str
    image: str | None = None
    upstream: UpstreamRef | None = None


class SimBinding(_Model):
    """The sim backend behind a tool."""

    summary: str = Field(min_length=1)


class ToolEntry(_Model):
    """One tool: its schema hash and its backends in each mode."""

    name: str = Field(min_length=1)
    schema_hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    sim: SimBinding
    prod: tuple[ServiceBinding, ...] = Field(min_length=1)


class Modes(_Model):
    """The modes a server runs in and how to pick one."""

    variable: str
    default: Mode
    values: tuple[Mode, ...] = Field(min_length=1)


class Endpoint(_Model):
    """An HTTP endpoint of the served app (``openenv-mcp serve NAME``) and the modes that serve it."""

    path: str = Field(pattern=r"^/")
    methods: tuple[str, ...] = Field(min_length=1)
    modes: tuple[Mode, ...] = Field(min_length=1)
    kind: str


class OpenEnvMeta(_Model):
    """Our block in a ``server.json``: how the server's tools bind to sim and prod backends."""

    format: Literal[1]
    server: str = Field(min_length=1)
    modes: Modes
    port: int = Field(ge=1, le=65535)
    endpoints: tuple[Endpoint, ...]
    tools: tuple[ToolEntry, ...] = Field(min_length=1)

    def tool(self, name: str) -> ToolEntry | None:
        return next((tool for tool in self.tools if tool.name == name), None)


@dataclass(frozen=True)
class RegistryEntry:
    """A validated ``server.json``: the document as written and our parsed ``_meta`` block."""

    document: dict[str, Any]
    meta: OpenEnvMeta
    source: str

    @property
    def server(self) -> str:
        return self.meta.server

    @property
    def name(self) -> str:
        return str(self.document["name"])

    @property
    def version(self) -> str:
        return str(self.document["version"])

    @property
    def description(self) -> str:
        return str(self.document["description"])

    @property
    def variables(self) -> dict[str, dict[str, Any]]:
        """The package's environment variables by name (description, default, isSecret, isRequired)."""
        found: dict[str, dict[str, Any]] = {}
        for package in self.document.get("packages", []):
            for variable in package.get("environmentVariables", []):
                found.setdefault(variable["name"], variable)
        return found


def schema_hash(tool: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` over the canonical JSON of a tool's input and output schemas, as tools/list sends them."""
    both = {"inputSchema": tool.get("inputSchema"), "outputSchema": tool.get("outputSchema")}
    canonical = json.dumps(both, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@cache
def _schema() -> dict[str, Any]:
    text = files("openenv_mcp.registry").joinpath("server.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def validate_entry(document: Any, *, source: str = "<entry>") -> RegistryEntry:
    """Check a ``server.json`` against the registry schema, our ``_meta`` shape and itself.

    Raises:
        RegistryError: naming every problem found, each with where it is.
    """
    from jsonschema import Draft7Validator

    if not isinstance(document, dict):
        raise RegistryError(f"{source}: a server.json must be a JSON object, got {type(document).__name__}")
    problems = [_describe(error) for error in Draft7Validator(_schema()).iter_errors(document)]
    meta: OpenEnvMeta | None = None
    where = f"_meta.{PUBLISHER_KEY}.{META_KEY}"
    raw = _our_block(document)
    if raw is None:
        problems.append(f"{where}: missing (the sim -> prod map of the tools)")
    else:
        try:
            meta = OpenEnvMeta.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors():
                path = ".".join(str(part) for part in error["loc"])
                problems.append(f"{where}.{path}: {error['msg']}")
    if meta is not None:
        problems += _consistency(document, meta)
    if problems:
        raise RegistryError(
            f"{source} is not a valid registry entry: "
            + "; ".join(sorted(problems))
            + " (fix the server's declaration, then run 'openenv-mcp registry generate')"
        )
    assert meta is not None
    return RegistryEntry(document=document, meta=meta, source=source)


def _our_block(document: dict[str, Any]) -> Any:
    block: Any = document
    for key in ("_meta", PUBLISHER_KEY, META_KEY):
        if not isinstance(block, dict):
            return None
        block = block.get(key)
    return block


def _describe(error: Any) -> str:
    path = ".".join(str(part) for part in error.absolute_path) or "(document)"
    if error.validator == "maxLength" and isinstance(error.instance, str):
        return f"{path}: {len(error.instance)} characters, at most {error.validator_value} allowed"
    if error.validator == "pattern":
        return f"{path}: {error.instance!r} does not match {error.validator_value!r}"
    return f"{path}: {error.message}"


def _consistency(document: dict[str, Any], meta: OpenEnvMeta) -> list[str]:
    problems = []
    expected = f"{NAMESPACE}/{meta.server}"
    if document.get("name") != expected:
        problems.append(f"name: {document.get('name')!r} should be {expected!r} (namespace/server)")
    names = [tool.name for tool in meta.tools]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"tools listed twice: {', '.join(duplicates)}")
    declared = {
        variable.get("name")
        for package in document.get("packages", [])
        if isinstance(package, dict)
        for variable in package.get("environmentVariables", [])
        if isinstance(variable, dict)
    }
    for tool in meta.tools:
        for service in tool.prod:
            missing = sorted(ref.name for ref in service.settings if ref.name not in declared)
            if missing:
                problems.append(
                    f"tool {tool.name!r}: service {service.name!r} reads {', '.join(missing)}, "
                    "which no package lists in environmentVariables"
                )
    return problems


def load_entry(path: Path) -> RegistryEntry:
    """Read and validate one ``server.json`` file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RegistryError(f"Cannot read registry entry {path}: {exc}") from None
    return validate_entry(document, source=str(path))
