"""``openenv-mcp new`` and ``openenv-mcp validate``: the author's commands."""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from importlib import import_module
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["add_commands", "load_target"]


def add_commands(commands: Any) -> None:
    """Add ``new`` and ``validate`` to the ``openenv-mcp`` parser."""
    new = commands.add_parser("new", help="write a complete, installable environment package to start from")
    new.set_defaults(handler=_new)
    new.add_argument("name", help="the server's name (lowercase, e.g. 'notes')")
    new.add_argument("--dir", default=".", help="where to create the NAME folder (default: here)")

    validate = commands.add_parser(
        "validate", help="the conformance check for an environment: installed NAME, project PATH, or live URL"
    )
    validate.set_defaults(handler=_validate)
    validate.add_argument("target", help="an installed server's NAME, a project PATH (with pyproject.toml), or a URL")
    validate.add_argument("--prod-url", help="with a URL: a prod server whose tools/list must equal the sim one's")
    validate.add_argument("--registry", help="the registry directory with NAME.server.json (default: ./registry)")
    validate.add_argument("--strict", action="store_true", help="fail on warnings too")


def _new(args: argparse.Namespace) -> int:
    from openenv_mcp.authoring.scaffold import scaffold

    made = scaffold(args.name, args.dir)
    print(f"created {made.root} ({len(made.files)} files; package {made.module})")
    print(f"next: cd {made.root} && pip install -e . && pytest && openenv-mcp serve {args.name}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from openenv_mcp.authoring.validate import validate_environment, validate_url

    started = time.perf_counter()
    if args.target.startswith(("http://", "https://")):
        report = validate_url(args.target, prod_url=args.prod_url)
    else:
        env, registry = load_target(args.target)
        report = validate_environment(env, registry=args.registry or registry)
    print(report.render())
    print(f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    failed = not report.ok or (args.strict and bool(report.findings))
    return 1 if failed else 0


def load_target(target: str) -> tuple[Any, Path | None]:
    """The environment named by an installed server's name or a project directory, and its registry folder.

    Raises:
        ConfigError: Neither an installed server nor a project with an ``openenv_mcp.servers`` entry point.
    """
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.environment.spec import Environment

    path = Path(target)
    if not path.is_dir():
        return load_environment(target), None
    pyproject = path / "pyproject.toml"
    if not pyproject.is_file():
        raise ConfigError(f"{path} has no pyproject.toml; give an installed server's name or a project folder")
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    points = project.get("entry-points", {}).get("openenv_mcp.servers", {})
    if not points:
        raise ConfigError(
            f'{pyproject} declares no [project.entry-points."openenv_mcp.servers"]; add NAME = "package:environment"'
        )
    value = str(next(iter(points.values())))
    module, _, attribute = value.partition(":")
    root = str(path.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    env = getattr(import_module(module), attribute or "environment")
    if not isinstance(env, Environment):
        raise ConfigError(f"{value} in {pyproject} is not an openenv_mcp.Environment")
    registry = path / "registry"
    return env, registry if registry.is_dir() else None
