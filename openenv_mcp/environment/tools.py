"""Tools, declared once: the typed signature and docstring are the MCP schema.

A server keeps one :class:`Toolbox`. Its ``@toolbox.tool()`` decorator turns a typed
``async def`` into a :class:`Tool`: the parameters after the first become the input schema,
the return annotation the output schema, the docstring the description (Google-style
``Args:`` lines describe the parameters). The first parameter receives the backend, injected
by the runtime; a tool never sees the mode.

    tools = Toolbox("sql")

    @tools.tool(read_only=True)
    async def run_query(db: SqlBackend, sql: str) -> QueryResult:
        \"\"\"Run one read-only SQL query.

        Args:
            sql: A single SELECT statement.
        \"\"\"
        return await db.query(sql)

A tool that returns a picture (a screenshot, a chart) declares ``-> Image[Meta]``: the result
renders as an MCP image block plus ``Meta`` as structured content, and ``Meta`` is the output schema.

Both doors (MCP and the HTTP control plane) call :meth:`Toolbox.bind` then
:meth:`BoundCall.run`: one validation, one dispatch.
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from openenv_mcp.environment.schemas import advertised
from openenv_mcp.errors import InvalidToolArguments, ToolFailed, ToolNotFound
from openenv_mcp.models import ContentBlock, ImageBlock, Observation, TextBlock, construct

__all__ = ["BoundCall", "Image", "Tool", "Toolbox"]

BackendT = TypeVar("BackendT")
MetadataT = TypeVar("MetadataT")
ToolFn = Callable[..., Awaitable[Any]]

_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")  # MCP's order
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_TEXT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # json.dumps with these options, built once


def _text_encoder() -> Callable[[Any], str]:
    """``_TEXT.encode``, the same bytes, without its per-call Python wrapper: CPython's C encoder built once."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _TEXT.encode
    try:  # markers=None: no cycle check (rendered values come out of pydantic, acyclic)
        encoder = make(None, _TEXT.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    except TypeError:  # another signature in another Python: keep the plain encoder
        return _TEXT.encode
    return lambda value: "".join(encoder(value, 0))


_to_text = _text_encoder()
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")


@dataclass(frozen=True, slots=True)
class Image(Generic[MetadataT]):
    """A tool result that is a picture: an MCP image block (base64 ``data``) plus ``metadata``.

    Declare the tool as ``-> Image[Meta]``: ``Meta`` (a model, or any JSON type) is the tool's
    output schema and becomes the result's structured content (and its JSON text block).
    """

    data: bytes
    mime_type: str
    metadata: MetadataT


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: its MCP description and how to validate, call and render it.

    ``input_schema`` is what ``tools/list`` advertises (:func:`~openenv_mcp.environment.schemas.advertised`: no
    keyword an agent framework's converter rejects); ``validation_schema`` is what the ``arguments`` model checks
    (extra arguments forbidden, exclusive bounds), the stricter of the two.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    validation_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: dict[str, bool]
    fn: ToolFn
    arguments: type[BaseModel]
    output: TypeAdapter[Any]
    wraps_output: bool
    image: bool = False
    takes_arguments: bool = True  # False: no parameters, so an empty call needs no validation
    title: str | None = None

    def listed(self) -> dict[str, Any]:
        """This tool as MCP ``tools/list`` sends it (see :meth:`Toolbox.listing`)."""
        entry: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            entry["title"] = self.title
        entry["description"] = self.description
        entry["inputSchema"] = self.input_schema
        entry["outputSchema"] = self.output_schema
        if self.annotations:
            entry["annotations"] = {key: self.annotations[key] for key in _HINTS if key in self.annotations}
        return entry

    def render(self, value: Any) -> Observation:
        """Turn the tool's return value into structured content plus its JSON text (after the image, if any).

        The text block is exactly the structured content's JSON (compact, UTF-8 kept); the trajectory recorder
        relies on it and sends the text alone for both (``openenv_mcp.trajectories.pipe``)."""
        content: list[ContentBlock] = []
        if self.image:
            if not isinstance(value, Image):
                raise TypeError(f"Tool {self.name!r} is declared to return an Image, got {type(value).__name__}")
            content.append(ImageBlock(data=base64.b64encode(value.data).decode("ascii"), mimeType=value.mime_type))
            value = value.metadata
        dumped = self.output.serializer.to_python(value, mode="json")  # dump_python, minus its wrapper
        structured = {"result": dumped} if self.wraps_output else dumped
        content.append(construct(TextBlock, type="text", text=_to_text(structured)))
        return construct(Observation, content=content, structured_content=structured, is_error=False)


@dataclass(frozen=True, slots=True)
class BoundCall:
    """A validated call, ready to run against a backend.

    ``kwargs`` are the validated values the tool receives; ``arguments`` what the caller sent.
    """

    tool: Tool
    kwargs: dict[str, Any]
    arguments: Mapping[str, Any]

    async def run(self, backend: Any) -> Observation:
        """Run the tool; a :class:`ToolFailed` raised by its body becomes an ``is_error`` result."""
        try:
            value = await self.tool.fn(backend, **self.kwargs)
        except ToolFailed as exc:
            return construct(
                Observation,
                content=[construct(TextBlock, type="text", text=exc.message)],
                structured_content=None,
                is_error=True,
            )
        return self.tool.render(value)


class Toolbox(Generic[BackendT]):
    """The tool table of one server: declared once, used by every door."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._tools: dict[str, Tool] = {}
        self._listing: list[dict[str, Any]] | None = None

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def listing(self) -> list[dict[str, Any]]:
        """The tools exactly as MCP ``tools/list`` sends them (camelCase JSON, absent fields left out).

        Every door and every tool that shows the table (the MCP door, OpenEnv's wire, ORS, the web page, the
        recorder, the registry) lists these; a test pins them to the SDK's own ``tools/list``. Built once.
        """
        if self._listing is None:
            self._listing = [tool.listed() for tool in self._tools.values()]
        return self._listing

    def get(self, name: str) -> Tool:
        """The tool called ``name``; :class:`ToolNotFound` names the available ones otherwise."""
        try:
            return self._tools[name]
        except KeyError:
            available = ", ".join(sorted(self._tools)) or "(none)"
            raise ToolNotFound(f"No tool {name!r} on server {self.server!r}; available: {available}") from None

    def bind(self, name: str, arguments: Mapping[str, Any] | None) -> BoundCall:
        """Validate ``arguments`` against the tool's input schema (the one validation)."""
        tool = self._tools.get(name) or self.get(name)
        if not tool.takes_arguments and (arguments is None or (type(arguments) is dict and not arguments)):
            return BoundCall(tool, {}, arguments or {})  # nothing to validate: an empty object always fits
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InvalidToolArguments(
                f"Arguments for tool {name!r} must be a JSON object, got {type(arguments).__name__}"
            )
        try:
            parsed = tool.arguments.model_validate(arguments or {})
        except ValidationError as exc:
            raise InvalidToolArguments(_describe_errors(name, exc)) from None
        return BoundCall(tool, dict(parsed.__dict__), arguments or {})  # the fields (extra arguments are forbidden)

    @overload
    def tool(self, fn: ToolFn, /) -> ToolFn: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> Callable[[ToolFn], ToolFn]: ...

    def tool(
        self,
        fn: ToolFn | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> ToolFn | Callable[[ToolFn], ToolFn]:
        """Declare a tool. Usable bare (``@tools.tool``) or with options (``@tools.tool(read_only=True)``).

        Args:
            fn: The tool function (when used bare).
            name: The tool's name; the function's name by default.
            title: A human-readable name for clients' menus (MCP ``title``).
            read_only: The MCP ``readOnlyHint``: the tool changes nothing.
            destructive: The MCP ``destructiveHint``: the tool may delete or overwrite.
            idempotent: The MCP ``idempotentHint``: calling twice with the same arguments does no more.
            open_world: The MCP ``openWorldHint``: the tool reaches beyond a closed world (the web, mail).
            input_schema: The input schema to advertise instead of the generated one, for a tool that must
                match another server's (an upstream MCP server's). Its properties and required names must be
                the function's parameters; arguments are still validated by the signature. It is advertised
                as :func:`~openenv_mcp.environment.schemas.advertised` makes it, like a generated one.
        """
        hints = {
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            "openWorldHint": open_world,
        }
        annotations = {key: value for key, value in hints.items() if value is not None}

        def register(func: ToolFn) -> ToolFn:
            built = _build_tool(func, name or str(getattr(func, "__name__", "")), annotations, title, input_schema)
            if built.name in self._tools:
                raise TypeError(
                    f"Tool {built.name!r} is declared twice on server {self.server!r}; "
                    "rename one of them or pass name=... to the decorator"
                )
            self._tools[built.name] = built
            self._listing = None
            return func

        if fn is not None:
            if not callable(fn):
                raise TypeError("@tool takes keyword options only, e.g. @tools.tool(read_only=True)")
            return register(fn)
        return register


def _build_tool(
    fn: ToolFn,
    name: str,
    annotations: dict[str, bool],
    title: str | None = None,
    declared_schema: Mapping[str, Any] | None = None,
) -> Tool:
    where = f"tool {name!r} ({getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', name)})"
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"{where} must be declared with 'async def'")
    if not _NAME.match(name):
        raise TypeError(f"{where}: tool names use letters, digits, '_', '-' or '.', at most 128 characters")
    doc = inspect.getdoc(fn)
    if not doc:
        raise TypeError(f"{where} needs a docstring: it is the description the agent reads")
    description, param_docs = _parse_docstring(doc)

    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        raise TypeError(f"{where} must take its backend as the first parameter, e.g. 'async def {name}(db, ...)'")
    try:
        hints = get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise TypeError(f"{where}: cannot resolve a type annotation ({exc}); import the type at module level") from None
    if "return" not in hints:
        raise TypeError(f"{where} needs a return annotation: it is the tool's output schema")

    fields = _argument_fields(where, params[1:], hints, param_docs)
    arguments = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields
    )
    validation_schema = arguments.model_json_schema()
    validation_schema.pop("title", None)
    declared = (
        validation_schema if declared_schema is None else _declared(where, dict(declared_schema), validation_schema)
    )
    input_schema = advertised(declared)

    returns = hints["return"]
    if returns is Image:
        raise TypeError(f"{where}: say what the image's metadata is, e.g. '-> Image[ScreenInfo]' or '-> Image[None]'")
    image = get_origin(returns) is Image
    output = TypeAdapter(get_args(returns)[0] if image else returns)
    output_schema = output.json_schema(mode="serialization")
    wraps = output_schema.get("type") != "object"
    if wraps:
        definitions = output_schema.pop("$defs", None)  # $refs point at the root: keep the definitions there
        output_schema = {"type": "object", "properties": {"result": output_schema}, "required": ["result"]}
        if definitions:
            output_schema["$defs"] = definitions
    output_schema.pop("title", None)

    return Tool(
        name=name,
        description=description,
        input_schema=input_schema,
        validation_schema=validation_schema,
        output_schema=output_schema,
        annotations=annotations,
        fn=fn,
        arguments=arguments,
        output=output,
        wraps_output=wraps,
        image=image,
        takes_arguments=bool(fields),
        title=title,
    )


def _argument_fields(
    where: str, params: list[inspect.Parameter], hints: dict[str, Any], docs: dict[str, str]
) -> dict[str, Any]:
    """The arguments model's fields: each parameter after the backend, typed, with its docstring line."""
    fields: dict[str, Any] = {}
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"{where}: parameter {param.name!r} must be a plain named parameter (no *args, **kwargs, or /)"
            )
        if param.name not in hints:
            raise TypeError(f"{where}: parameter {param.name!r} needs a type annotation, e.g. '{param.name}: str'")
        annotation = hints[param.name]
        if param.name in docs:
            annotation = Annotated[annotation, Field(description=docs[param.name])]
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    return fields


def _declared(where: str, declared: dict[str, Any], generated: dict[str, Any]) -> dict[str, Any]:
    """Check a declared input schema names the same parameters (and required ones) as the signature."""
    if declared.get("type") != "object":
        raise TypeError(f"{where}: input_schema must be a JSON Schema object ({{'type': 'object', ...}})")
    names = set(declared.get("properties", {}))
    expected = set(generated.get("properties", {}))
    if names != expected:
        raise TypeError(
            f"{where}: input_schema has properties {sorted(names)} but the function takes {sorted(expected)}; "
            "make the parameters match the schema"
        )
    if set(declared.get("required", [])) != set(generated.get("required", [])):
        raise TypeError(
            f"{where}: input_schema requires {sorted(declared.get('required', []))} but the function's parameters "
            f"without defaults are {sorted(generated.get('required', []))}"
        )
    return declared


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and its ``Args:`` entries."""
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        header = _SECTION.match(line.strip())
        if header and not line.startswith(" "):
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            entry = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if entry and len(line) - len(line.lstrip()) <= 8:
                current = entry.group(1)
                params[current] = entry.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}"
    return "\n".join(description).strip(), params


def _describe_errors(tool: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = _cut(".".join(str(part) for part in error["loc"]) or "(arguments)")
        if error["type"] == "extra_forbidden":
            problems.append(f"unexpected argument {where!r}")
        elif error["type"] == "missing":
            problems.append(f"missing required argument {where!r}")
        else:
            problems.append(f"{where}: {error['msg']} (got {_cut(repr(error.get('input')))})")
    if len(problems) > _MAX_PROBLEMS:
        problems[_MAX_PROBLEMS:] = [f"and {len(problems) - _MAX_PROBLEMS} more problems"]
    return f"Invalid arguments for tool {tool!r}: " + "; ".join(problems) + ". Check the tool's inputSchema."


# An error names the bad values; it does not send a megabyte of them back (to a model's context, say).
_MAX_PROBLEMS = 10


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
