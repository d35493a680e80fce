"""The package's layering, checked on its import graph: folders are layers and imports only run down.

Every import counts, whether at module level, inside a function (a lazy import) or under ``TYPE_CHECKING``: a
lazy import is a dependency all the same, and a type-only circle is still one concept split badly.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "openenv_mcp"

# Rooms (top-level modules and folders of openenv_mcp/) by layer, bottom first. A room may import rooms of lower
# layers only (and itself). The package's __init__ is the public facade over all of them; servers/ is the shipped
# environments, which use the toolkit as any third party does.
LAYERS: list[set[str]] = [
    {"errors", "models"},
    {"settings"},
    {"environment"},
    {"rewards", "backends", "worlds"},
    {"runtime"},
    {"trajectories"},
    {"doors", "client"},
    {"rollout", "deploy", "registry"},
    {"proxy"},  # the capture proxy reads calls with rollout's parsers
    {"harnesses"},  # the harness policy: agent CLIs as rollout policies, their model behind the proxy
    {"evaluation", "training", "authoring", "parity"},
    {"cli"},
]
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}


def _modules(root: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in ("servers", "template") or "template" in relative.parts:
            continue
        parts = [package, *relative.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """The modules of ``known`` that ``module`` imports (``from a.b import c`` counts ``a.b.c`` when it is one)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known] or [base]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name


def _graph(root: Path, package: str) -> dict[str, set[str]]:
    modules = _modules(root, package)
    return {module: set(_imports(module, path, set(modules))) for module, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_toolkit_has_no_import_circle() -> None:
    assert _circles(_graph(PACKAGE, "openenv_mcp")) == []


def test_the_memory_environment_has_no_import_circle() -> None:
    assert _circles(_graph(ROOT / "envs" / "memory" / "memory_env", "memory_env")) == []


def test_every_room_of_the_toolkit_has_a_layer() -> None:
    rooms = {_room(module) for module in _modules(PACKAGE, "openenv_mcp")} - {"__init__"}
    assert rooms == set(RANK), "a new top-level module or folder needs its place in LAYERS (and a reason)"


def test_imports_run_down_the_layers_only() -> None:
    upward = sorted(
        f"{module} imports {target} ({_room(module)} is layer {RANK[_room(module)]}, "
        f"{_room(target)} layer {RANK[_room(target)]})"
        for module, targets in _graph(PACKAGE, "openenv_mcp").items()
        if _room(module) != "__init__"
        for target in targets
        if _room(target) != _room(module) and RANK.get(_room(target), -1) >= RANK[_room(module)]
    )
    assert upward == []


def test_the_flat_floor_holds_the_vocabulary_only() -> None:
    flat = sorted(path.stem for path in PACKAGE.glob("*.py"))
    assert len(flat) <= 8, flat


# The size rules (STYLE.md 1, and the house's: no module over 500 lines, no function over 80) and the command
# line as a layer of its own (STYLE.md 17). servers/ and the template are environments, not the toolkit: they keep
# their own small `python -m` loaders.
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _toolkit_files() -> list[Path]:
    files = [path.relative_to(ROOT) for path in _modules(PACKAGE, "openenv_mcp").values()]
    return sorted(files)


def test_no_module_of_the_toolkit_is_over_500_lines() -> None:
    long = {
        str(path): lines
        for path in _toolkit_files()
        if (lines := len((ROOT / path).read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, "past about 400 lines, look for the seam (STYLE.md 1)"


def test_no_function_of_the_toolkit_is_over_80_lines() -> None:
    long = []
    for path in _toolkit_files():
        for node in ast.walk(ast.parse((ROOT / path).read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path}:{node.lineno} {node.name} ({lines} lines)")
    assert long == [], "cut it along its steps, each a named function"


def test_only_the_command_line_parses_arguments() -> None:
    parsers = []
    for module, path in _modules(PACKAGE, "openenv_mcp").items():
        if _room(module) == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if "argparse" in names:
                parsers.append(module)
    assert parsers == [], "a command goes in openenv_mcp/cli/ (one module per command) and calls the library"


def test_the_one_path_is_on_the_runtimes_first_screen() -> None:
    # Runtime.call and play_step come right after run (its _start and _stop); forks, snapshots and the rest beside it
    source = (PACKAGE / "runtime" / "runtime.py").read_text()
    assert len(source.splitlines()) <= 450
    methods = [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef) and node.name == "Runtime"
        for node in node.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    assert methods.index("call") == methods.index("_stop") + 2 and methods[methods.index("call") + 1] == "play_step"
    assert methods.index("_stop") == methods.index("run") + 2


# Environments declare, the toolkit consumes (STYLE.md 19): what an environment needs from parity, mining, containers
# or a cluster lives in its own package (Environment.declares), so no string in the toolkit is a shipped
# environment's name. Docstrings may name one (an example), code may not (a table keyed by it, a branch on it).
SHIPPED = frozenset({"sql", "search", "email", "coding", "desktop", "worker", "scienceworld", "textworld", "memory"})


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring nodes."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _named(path: Path) -> list[str]:
    """Where the module at ``path`` has a string equal to a shipped environment's name, outside docstrings."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    return [
        f"{path}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in SHIPPED and id(node) not in skip
    ]


def test_no_string_in_the_toolkit_names_a_shipped_environment() -> None:
    found = [where for path in _toolkit_files() for where in _named(ROOT / path)]
    assert found == [], "declare it in the environment's package (Environment.declares), read it from the spec"


def test_the_name_check_finds_a_table_keyed_by_a_name_and_spares_docstrings(tmp_path: Path) -> None:
    module = tmp_path / "tables.py"
    source = '"""Tables: sql."""\nLIMITS = {"memory": "1G"}\n\n\ndef f():\n    """desktop"""\n    return "coding"\n'
    module.write_text(source)
    assert [where.split(":", 1)[1] for where in _named(module)] == ["2 'memory'", "7 'coding'"]


def test_no_shipped_server_imports_another() -> None:
    # a server is an environment as a third party would write one: what two servers share is toolkit code
    # (the worlds' workers and pool are openenv_mcp.worlds), never one server used as another's library
    crossing = []
    servers = ROOT / "servers"
    for path in sorted(servers.rglob("*.py")):
        own = path.relative_to(servers).parts[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["openenv_mcp", "servers"] and len(parts) > 2 and parts[2] != own:
                    crossing.append(f"{path.relative_to(ROOT)} imports {name}")
    assert crossing == []
