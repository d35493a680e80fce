"""The error answers in the app's OpenAPI document, written in when the document is first asked for.

Every route can answer the errors of :data:`Errors` (a status, the body's model, what it means), and ORS's routes
their own. Declared on the routes (FastAPI's ``responses=``), FastAPI builds a pydantic field per status per route
as the app is built: 320 of them, a tenth of a second of every server's start, for a document few ask for. Here
:func:`document_errors` adds the same responses to the document instead, as FastAPI would have written them: an
error a route declares itself (``/readyz``'s 503) stays as declared, and FastAPI's own 422 (its validation error,
which this server answers as a 400 ``malformed_request``) gives way to the server's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

__all__ = ["Errors", "document_errors"]

Errors = Mapping[int, tuple[type[BaseModel], str]]
_REF = "#/components/schemas/"
_FASTAPI_422 = ("HTTPValidationError", "ValidationError")


def document_errors(app: FastAPI, errors: Errors, *, by_tag: Mapping[str, Errors] | None = None) -> None:
    """Document ``errors`` on every operation of ``app`` (on those tagged ``t``, ``by_tag[t]`` over them)."""
    build: Callable[[], dict[str, Any]] = app.openapi
    tagged = dict(by_tag or {})

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _add(build(), errors, tagged)  # build() keeps the document in app.openapi_schema
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _add(document: dict[str, Any], errors: Errors, tagged: Mapping[str, Errors]) -> None:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for path in document.get("paths", {}).values():
        for operation in path.values():
            mine = dict(errors)
            for tag in operation.get("tags", ()):
                mine.update(tagged.get(tag, {}))
            responses = operation.setdefault("responses", {})
            if _refers(responses.get("422"), _FASTAPI_422[0]):
                del responses["422"]
            for status, (model, description) in sorted(mine.items()):
                if str(status) not in responses:
                    responses[str(status)] = {
                        "description": description,
                        "content": {"application/json": {"schema": {"$ref": _REF + _schema(model, schemas)}}},
                    }
    if not any(_refers(response, _FASTAPI_422[0]) for response in _responses(document)):
        for name in _FASTAPI_422:
            schemas.pop(name, None)


def _schema(model: type[BaseModel], schemas: dict[str, Any]) -> str:
    """Put ``model``'s schema (and those it refers to) into the document's; its name."""
    name = model.__name__
    if name not in schemas:
        schema = model.model_json_schema(ref_template=_REF + "{model}", mode="serialization")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    return name


def _refers(response: Any, name: str) -> bool:
    """Whether ``response`` is a JSON body of the schema ``name`` (how FastAPI writes its 422)."""
    schema = response.get("content", {}).get("application/json", {}).get("schema", {}) if response else {}
    return bool(schema.get("$ref") == _REF + name)


def _responses(document: dict[str, Any]) -> list[Any]:
    operations = [operation for path in document.get("paths", {}).values() for operation in path.values()]
    return [response for operation in operations for response in operation.get("responses", {}).values()]
