import openenv_mcp


def test_public_api_is_pinned() -> None:
    assert openenv_mcp.__all__ == sorted(openenv_mcp.__all__)
    assert openenv_mcp.__all__ == [
        "Action",
        "AsyncEnvClient",
        "Backend",
        "BackendUnavailable",
        "BoundCall",
        "CapacityExceeded",
        "ConfigError",
        "EnvClient",
        "Environment",
        "EnvironmentCrashed",
        "EpisodeError",
        "EpisodeFinished",
        "EpisodeNotFound",
        "EpisodeState",
        "Grade",
        "InvalidToolArguments",
        "ModeError",
        "Observation",
        "OpenEnvError",
        "ProdService",
        "RegistryError",
        "ResetNeeded",
        "Settings",
        "StepResult",
        "Task",
        "TaskInfo",
        "TaskSet",
        "Tool",
        "ToolError",
        "ToolFailed",
        "ToolNotFound",
        "Toolbox",
        "Upstream",
    ]
    for name in openenv_mcp.__all__:
        assert getattr(openenv_mcp, name) is not None


def test_only_the_two_adapters_import_the_mcp_sdk() -> None:
    # doors/mcp.py is the server side (our MCP door), backends/upstream.py the client side (prod from an upstream)
    import ast
    from pathlib import Path

    def imports_the_sdk(path: Path) -> bool:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(name.split(".")[0] in ("mcp", "mcp_types") for name in names):
                return True
        return False

    package = Path(openenv_mcp.__file__).parent
    importers = sorted(
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if "servers" not in p.relative_to(package).parts and imports_the_sdk(p)
    )
    assert importers == ["backends/upstream.py", "doors/mcp.py"]


def test_the_capture_proxys_api_is_pinned() -> None:
    import openenv_mcp.proxy

    assert openenv_mcp.proxy.__all__ == ["CaptureProxy", "EngineOptions"]
