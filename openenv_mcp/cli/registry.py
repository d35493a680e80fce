"""``openenv-mcp registry list|lookup|validate|generate|compose``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``registry`` and its subcommands to the ``openenv-mcp`` parser."""
    group = commands.add_parser("registry", help="the tool registry: which backends run each tool, in sim and prod")
    actions = group.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every server in the registry, its tools and their backends")
    listing.set_defaults(handler=_list)
    _common(listing)

    lookup = actions.add_parser("lookup", help="a tool's sim and prod bindings and the variables to set")
    lookup.set_defaults(handler=_lookup)
    lookup.add_argument("tool", help="SERVER/TOOL, or a tool name only one server has")
    _common(lookup)

    validate = actions.add_parser("validate", help="check the entries (schema, our _meta) and running servers")
    validate.set_defaults(handler=_validate)
    validate.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="URL",
        help="a running server (http://host:port or its /mcp URL) whose tools must match its entry; repeatable",
    )
    validate.add_argument("--server", help="the entry to compare with (default: the name the server reports)")
    validate.add_argument(
        "--protocol", choices=["auto", "2026-07-28", "legacy"], default="auto", help="MCP era to speak (default: auto)"
    )
    validate.add_argument("--dir", help="the registry directory (default: the project's registry/)")

    compose = actions.add_parser("compose", help="a compose file running the servers that provide these tools")
    compose.set_defaults(handler=_compose)
    compose.add_argument("tools", nargs="+", metavar="TOOL", help="SERVER/TOOL, or a tool name only one server has")
    compose.add_argument("--mode", choices=["sim", "prod"], required=True, help="the mode every server runs in")
    compose.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")
    compose.add_argument("--image", help="the image the servers run (default: $OPENENV_IMAGE, else openenv-mcp:latest)")
    compose.add_argument(
        "--no-bundle",
        action="store_true",
        help="prod: run no services in the stack; read every setting from the environment",
    )
    compose.add_argument("--dir", help="the registry directory (default: the project's registry/)")

    generate = actions.add_parser("generate", help="write the entries from the servers' code (--check: compare only)")
    generate.set_defaults(handler=_generate)
    generate.add_argument("names", nargs="*", help="servers to generate (default: every installed server)")
    generate.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every difference")
    generate.add_argument("--dir", help="the registry directory (default: the project's registry/)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--dir", help="the registry directory (default: the project's registry/)")


def _list(args: argparse.Namespace) -> int:
    from openenv_mcp.registry.lookup import Registry

    registry = Registry.load(args.dir)
    if args.json:
        print(json.dumps([binding.as_dict() for binding in registry.bindings()], indent=2))
        return 0
    for entry in registry:
        print(f"{entry.server}  ({entry.name} {entry.version}): {entry.description}")
        groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for tool in entry.meta.tools:
            titles = tuple(service.title for service in tool.prod)
            groups.setdefault((tool.sim.summary, titles), []).append(tool.name)
        for (sim, titles), tools in groups.items():
            print(f"  {', '.join(tools)}")
            print(f"    sim:  {sim}")
            print(f"    prod: {'; '.join(titles)}")
    return 0


def _lookup(args: argparse.Namespace) -> int:
    from openenv_mcp.registry.lookup import Registry

    binding = Registry.load(args.dir).lookup(args.tool)
    if args.json:
        print(json.dumps(binding.as_dict(), indent=2))
        return 0
    entry, tool = binding.entry, binding.tool
    print(f"{binding.qualified}  ({entry.name} {entry.version})")
    print(f"sim:  {tool.sim.summary}")
    for service in tool.prod:
        print(f"prod: {service.title} ({service.role})")
        shipped = "shipped by openenv-mcp" if service.shipped else "not shipped: bring your own backend"
        print(f"      {shipped}; tested: {service.tested or 'no'}")
        if service.image:
            print(f"      image: {service.image}")
    mode = entry.meta.modes.variable
    print(f"to serve it in prod: {mode}=prod openenv-mcp serve {entry.server}, with")
    rows = []
    for variable in binding.variables():
        traits = ["secret" if variable["isSecret"] else "", "required" if variable["isRequired"] else ""]
        if variable["default"] is not None:
            traits.append(f"default {variable['default']}")
        if len(variable["services"]) < len(tool.prod):
            traits.append("for " + ", ".join(variable["services"]))
        rows.append((variable["name"], ", ".join(t for t in traits if t), variable["description"]))
    widths = [max((len(row[column]) for row in rows), default=0) for column in (0, 1)]
    for name, described, description in rows:
        print(f"  {name:<{widths[0]}}  {described:<{widths[1]}}  {description}")
    print(f"schema: {tool.schema_hash}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from openenv_mcp.registry.live import fetch_advertised, live_drift
    from openenv_mcp.registry.lookup import Registry, default_directory

    registry = Registry.load(args.dir)
    where = args.dir or default_directory()
    print(f"ok: {len(registry.entries)} entries in {where} are valid ({', '.join(e.server for e in registry)})")
    failed = False
    for url in args.against:
        advertised = fetch_advertised(url, protocol=args.protocol)
        problems = live_drift(registry, advertised, server=args.server)
        if problems:
            failed = True
            for problem in problems:
                print(f"drift: {problem}", file=sys.stderr)
        else:
            name = args.server or advertised.server
            print(f"ok: {name} at {advertised.url} ({advertised.protocol}) matches the registry")
    return 1 if failed else 0


def _compose(args: argparse.Namespace) -> int:
    from openenv_mcp.deploy.stacks import DEFAULT_IMAGE, build_stack, dump_stack
    from openenv_mcp.registry.lookup import Registry

    names = Registry.load(args.dir).servers_for(args.tools)
    text = dump_stack(build_stack(names, args.mode, image=args.image or DEFAULT_IMAGE, bundle=not args.no_bundle))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as output:
            output.write(text)
        print(f"wrote {args.output}: {', '.join(names)} in {args.mode} mode", file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from openenv_mcp.registry.generator import generate
    from openenv_mcp.registry.lookup import default_directory

    report = generate(args.dir or default_directory(), names=args.names, check=args.check)
    for skipped in report.skipped:
        print(f"skipped {skipped}", file=sys.stderr)
    if args.check:
        if report.drift:
            for problem in report.drift:
                print(f"drift: {problem}", file=sys.stderr)
            print("the registry is out of date with the code: run 'openenv-mcp registry generate'", file=sys.stderr)
            return 1
        print(f"ok: the registry matches the code ({len(report.unchanged)} entries)")
        return 0
    for path in report.written:
        print(f"wrote {path}")
    for path in report.removed:
        print(f"removed {path} (no such server installed)")
    if report.unchanged:
        print(f"unchanged: {len(report.unchanged)} entries")
    return 0
