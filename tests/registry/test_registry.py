"""The tool registry: shipped entries are valid and match the code and running servers; look-ups work."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from jsonschema import Draft7Validator

import openenv_mcp.environment.catalog
from openenv_mcp import Environment, RegistryError, Toolbox
from openenv_mcp.cli import main
from openenv_mcp.deploy.stacks import SERVER_LABEL, build_stack, dump_stack, shipped_servers
from openenv_mcp.registry import (
    META_KEY,
    NAMESPACE,
    Registry,
    build_document,
    generate,
    live_drift,
    schema_hash,
    validate_entry,
)
from openenv_mcp.registry.entry import PUBLISHER_KEY
from openenv_mcp.registry.generator import dump_document, short_description
from openenv_mcp.registry.live import fetch_advertised
from openenv_mcp.servers.sql import environment as sql
from openenv_mcp.servers.sql.backends import SqlBackend
from openenv_mcp.servers.sql.models import QueryResult
from openenv_mcp.settings import Mode
from tests.support import LiveServer, all_set, compose_config, free_port, live_server

REGISTRY = Path(__file__).resolve().parents[2] / "registry"
CLI = [sys.executable, "-m", "openenv_mcp.cli"]

# A server whose code drifted from the registry: run_query grew a parameter the entry does not know.
drifted_tools: Toolbox[SqlBackend] = Toolbox("sql")
for _declared in sql.tools:
    if _declared.name != "run_query":
        drifted_tools.tool(name=_declared.name)(_declared.fn)


@drifted_tools.tool(read_only=True)
async def run_query(db: SqlBackend, sql: str, limit: int = 10) -> QueryResult:
    """Run one read-only SQL query.

    Args:
        sql: One SELECT statement.
        limit: Rows to return at most.
    """
    return await db.query(sql)


drifted_sql: Environment[Any, Any] = dataclasses.replace(sql, tools=drifted_tools)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=dict(os.environ), check=False)


def sql_document() -> dict[str, Any]:
    return copy.deepcopy(json.loads((REGISTRY / "sql.server.json").read_text()))


def our_meta(document: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = document["_meta"][PUBLISHER_KEY][META_KEY]
    return meta


# the shipped entries -------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(REGISTRY.glob("*.server.json")), ids=lambda p: p.name)
def test_every_shipped_entry_is_valid_against_the_registry_schema(path: Path) -> None:
    document = json.loads(path.read_text())
    schema = json.loads(Path(openenv_mcp.registry.__file__).with_name("server.schema.json").read_text())
    assert schema["$id"].endswith("/2025-12-11/server.schema.json")
    Draft7Validator.check_schema(schema)
    assert not list(Draft7Validator(schema).iter_errors(document))
    entry = validate_entry(document, source=str(path))
    assert entry.name == f"{NAMESPACE}/{path.name.removesuffix('.server.json')}"
    assert len(entry.description) <= 100


def test_every_shipped_server_has_an_entry_with_every_tool() -> None:
    registry = Registry.load(REGISTRY)
    assert [entry.server for entry in registry] == sorted(shipped_servers())
    for entry in registry:
        env = openenv_mcp.environment.catalog.load_environment(entry.server)
        assert [tool.name for tool in entry.meta.tools] == env.tools.names
        for tool in entry.meta.tools:
            assert tool.sim.summary == env.sim_summary
            assert tool.prod, f"{entry.server}/{tool.name} has no prod service"


def test_the_registry_matches_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["registry", "generate", "--check"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "ok: the registry matches the code" in captured.out


def test_an_entry_carries_the_package_variables_and_the_schema_hash_of_each_tool() -> None:
    document = build_document(sql)
    [package] = document["packages"]
    assert package["transport"] == {"type": "stdio"} and package["runtimeHint"] == "uvx"
    variables = {v["name"]: v for v in package["environmentVariables"]}
    assert variables["SQL_DATABASE_URL"]["isSecret"] is True and variables["SQL_DATABASE_URL"]["isRequired"] is True
    assert variables["SQL_MAX_ROWS"]["default"] == "100" and variables["SQL_MAX_ROWS"]["isSecret"] is False
    assert variables["MODE"]["choices"] == ["sim", "prod"]
    from openenv_mcp.doors.mcp import McpDoor
    from openenv_mcp.runtime import Runtime
    from openenv_mcp.settings import Settings

    advertised = {t["name"]: t for t in McpDoor(Runtime(sql, Settings(mode="prod"), None)).tool_list()}
    meta = our_meta(document)
    for tool in meta["tools"]:
        assert tool["schemaHash"] == schema_hash(advertised[tool["name"]])
        [postgres] = tool["prod"]
        assert postgres["title"] == "PostgreSQL" and postgres["shipped"] is True
    paths = {(e["path"], tuple(e["modes"])) for e in meta["endpoints"]}
    assert (
        ("/mcp", ("sim", "prod")) in paths and ("/reset", ("sim",)) in paths and ("/healthz", ("sim", "prod")) in paths
    )


# broken entries ------------------------------------------------------------------------------


def _too_long(d: dict[str, Any]) -> None:
    d["description"] = "x" * 150


def _no_version(d: dict[str, Any]) -> None:
    del d["version"]


def _bad_name(d: dict[str, Any]) -> None:
    d["name"] = "sql"


def _bad_hash(d: dict[str, Any]) -> None:
    our_meta(d)["tools"][0]["schemaHash"] = "md5:abc"


def _no_prod(d: dict[str, Any]) -> None:
    our_meta(d)["tools"][1]["prod"] = []


def _no_meta(d: dict[str, Any]) -> None:
    del d["_meta"]


def _unknown_variable(d: dict[str, Any]) -> None:
    our_meta(d)["tools"][0]["prod"][0]["settings"].append({"name": "SQL_NOPE", "isSecret": False, "isRequired": False})


def _unknown_field(d: dict[str, Any]) -> None:
    our_meta(d)["tools"][0]["prodd"] = []


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (_too_long, "description: 150 characters, at most 100 allowed"),
        (_no_version, "(document): 'version' is a required property"),
        (_bad_name, "name: 'sql' does not match"),
        (_bad_hash, "openenv-mcp.tools.0.schemaHash: String should match pattern"),
        (_no_prod, "openenv-mcp.tools.1.prod: Tuple should have at least 1 item"),
        (_no_meta, "openenv-mcp: missing (the sim -> prod map of the tools)"),
        (_unknown_variable, "service 'postgresql' reads SQL_NOPE, which no package lists in environmentVariables"),
        (_unknown_field, "openenv-mcp.tools.0.prodd: Extra inputs are not permitted"),
    ],
    ids=lambda value: getattr(value, "__name__", "")[1:] or None,
)
def test_a_broken_entry_is_rejected_with_what_is_wrong(breakage: Any, message: str) -> None:
    document = sql_document()
    breakage(document)
    with pytest.raises(RegistryError) as caught:
        validate_entry(document, source="sql.server.json")
    assert message in caught.value.message
    assert caught.value.message.startswith("sql.server.json is not a valid registry entry: ")


def test_validate_rejects_a_broken_entry_on_disk(tmp_path: Path) -> None:
    document = sql_document()
    _too_long(document)
    (tmp_path / "sql.server.json").write_text(json.dumps(document))
    done = run("registry", "validate", "--dir", str(tmp_path))
    assert done.returncode == 2
    assert "description: 150 characters, at most 100 allowed" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_entry_in_a_file_named_for_another_server_is_rejected(tmp_path: Path) -> None:
    shutil.copy(REGISTRY / "sql.server.json", tmp_path / "search.server.json")
    with pytest.raises(RegistryError, match=r"describes server 'sql'; name it sql.server.json"):
        Registry.load(tmp_path)


# generation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("Short enough.", "Short enough."),
        ("A first sentence. " + "Then a long one. " * 10, "A first sentence."),
        ("Answer questions with SQL: " + "list_tables, " * 10 + "then submit.", "Answer questions with SQL"),
        ("Answer questions (" + "with many asides, " * 6 + ") with SQL: " + "x " * 40, "Answer questions with SQL"),
    ],
)
def test_the_description_is_derived_from_the_declaration(description: str, expected: str) -> None:
    assert short_description(dataclasses.replace(sql, description=description)) == expected


def test_a_description_that_cannot_be_shortened_fails_generation() -> None:
    env = dataclasses.replace(sql, description="word " * 40)
    with pytest.raises(RegistryError, match=r"first sentence is 199 characters and the registry allows 100"):
        build_document(env)


def test_a_declaration_without_its_sim_summary_or_prod_services_fails_generation() -> None:
    with pytest.raises(RegistryError, match=r"'sql' declares no sim_summary .*; declares no prod_services"):
        build_document(dataclasses.replace(sql, sim_summary="", prod_services=()))
    only_some = dataclasses.replace(sql.prod_services[0], tools=("run_query",))
    with pytest.raises(RegistryError, match=r"no prod service serves tool 'list_tables'"):
        build_document(dataclasses.replace(sql, prod_services=(only_some,)))


def test_generate_writes_the_entries_then_leaves_them_unchanged_and_removes_stale_ones(tmp_path: Path) -> None:
    (tmp_path / "gone.server.json").write_text("{}")
    first = generate(tmp_path, check=False)
    assert sorted(Path(p).name for p in first.written) == sorted(f"{n}.server.json" for n in shipped_servers())
    assert [Path(p).name for p in first.removed] == ["gone.server.json"]
    assert (tmp_path / "sql.server.json").read_text() == (REGISTRY / "sql.server.json").read_text()
    again = generate(tmp_path, check=False)
    assert again.written == [] and len(again.unchanged) == len(first.written)
    assert (
        dump_document(json.loads((tmp_path / "sql.server.json").read_text()))
        == (tmp_path / "sql.server.json").read_text()
    )


# drift ---------------------------------------------------------------------------------------


def test_a_tool_schema_changed_in_code_is_caught_by_generate_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = openenv_mcp.environment.catalog.load_environment
    monkeypatch.setattr(
        openenv_mcp.environment.catalog, "load_environment", lambda n: drifted_sql if n == "sql" else real(n)
    )
    report = generate(REGISTRY, names=["sql"], check=True)
    [problem] = report.drift
    assert "sql.server.json: _meta." in problem
    assert "openenv-mcp.tools[run_query].schemaHash: the tool's input or output schema changed" in problem
    assert main(["registry", "generate", "--check"]) == 1
    err = capsys.readouterr().err
    assert "tools[run_query].schemaHash" in err and "run 'openenv-mcp registry generate'" in err


def test_an_edited_or_missing_or_stale_entry_is_caught_by_generate_check(tmp_path: Path) -> None:
    shutil.copytree(REGISTRY, tmp_path, dirs_exist_ok=True)
    document = sql_document()
    document["version"] = "9.9.9"
    (tmp_path / "sql.server.json").write_text(dump_document(document))
    (tmp_path / "search.server.json").unlink()
    (tmp_path / "gone.server.json").write_text("{}")
    drift = generate(tmp_path, check=True).drift
    assert f'{tmp_path / "sql.server.json"}: version: registry has "9.9.9", code has "0.1.0"' in drift
    assert f"{tmp_path / 'search.server.json'}: missing" in drift
    assert any("gone.server.json: no installed server 'gone'" in d for d in drift)
    assert (tmp_path / "gone.server.json").exists(), "check writes nothing"


# running servers -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sql_sim() -> Iterator[LiveServer]:
    with live_server(sql, mode="sim") as server:
        yield server


@pytest.mark.parametrize("protocol", ["2026-07-28", "legacy"])
def test_validate_against_a_sim_server(sql_sim: LiveServer, protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["registry", "validate", "--against", sql_sim.url, "--protocol", protocol]) == 0
    out = capsys.readouterr().out
    assert f"ok: sql at {sql_sim.mcp_url}" in out and "matches the registry" in out


@pytest.mark.prod
def test_validate_against_a_prod_server(prod_server: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert prod_server.runtime.mode == "prod"
    assert main(["registry", "validate", "--against", prod_server.mcp_url]) == 0
    assert f"ok: sql at {prod_server.mcp_url} (2026-07-28) matches the registry" in capsys.readouterr().out
    assert main(["registry", "validate", "--against", prod_server.url, "--protocol", "legacy"]) == 0


def test_validate_against_a_server_whose_code_drifted(capsys: pytest.CaptureFixture[str]) -> None:
    with live_server(drifted_sql, mode="sim") as server:
        assert main(["registry", "validate", "--against", server.url]) == 1
    err = capsys.readouterr().err
    assert "drift: sql at" in err and "tool 'run_query' advertises an input or output schema that differs" in err
    assert "list_tables" not in err


def test_validate_against_a_server_catches_an_entry_edited_by_hand(sql_sim: LiveServer, tmp_path: Path) -> None:
    document = sql_document()
    tools = our_meta(document)["tools"]
    tools[0]["schemaHash"] = "sha256:" + "0" * 64
    tools.append({**tools[1], "name": "drop_everything"})
    (tmp_path / "sql.server.json").write_text(dump_document(document))
    drift = live_drift(Registry.load(tmp_path), fetch_advertised(sql_sim.url))
    assert any("tool 'list_tables' advertises an input or output schema that differs" in d for d in drift)
    assert any("does not advertise tool 'drop_everything', which the registry lists" in d for d in drift)
    with pytest.raises(RegistryError, match=r"No server 'sqll' in the registry; did you mean sql\?"):
        live_drift(Registry.load(REGISTRY), fetch_advertised(sql_sim.url), server="sqll")


def test_an_answer_sent_as_server_sent_events_is_read_like_json() -> None:
    from openenv_mcp.registry.live import _result

    body = 'event: message\ndata: {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}\n\n'
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)
    assert _result(response, 1) == {"tools": []}


def test_validate_against_nothing_listening_is_a_clear_error() -> None:
    with pytest.raises(RegistryError, match=r"Cannot fetch the tools of http://127.0.0.1:\d+/mcp"):
        fetch_advertised(f"http://127.0.0.1:{free_port()}", timeout=2)


# look-ups ------------------------------------------------------------------------------------


def test_lookup_a_tool_shows_its_bindings_and_the_variables_to_set() -> None:
    done = run("registry", "lookup", "run_query")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sql/run_query  (io.github.openenv-mcp/sql ")
    assert "sim:  SQLite in memory" in done.stdout
    assert "prod: PostgreSQL (the database the queries run on" in done.stdout
    assert "MODE=prod openenv-mcp serve sql" in done.stdout
    [url_line] = [line for line in done.stdout.splitlines() if "SQL_DATABASE_URL" in line]
    assert "secret, required" in url_line


def test_lookup_by_server_and_tool_as_json() -> None:
    done = run("registry", "lookup", "search/search", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["tool"] == "search/search"
    assert [service["name"] for service in found["prod"]] == ["postgresql", "sphinx"]
    secrets = [v["name"] for v in found["variables"] if v["isSecret"]]
    assert secrets == ["SEARCH_DATABASE_URL"]


def test_lookup_miss_names_the_closest_tools() -> None:
    done = run("registry", "lookup", "run_qeury")
    assert done.returncode == 2
    assert "No tool 'run_qeury' in the registry; did you mean run_query, sql/run_query" in done.stderr


def test_lookup_of_a_tool_on_several_servers_lists_them() -> None:
    done = run("registry", "lookup", "submit_answer")
    assert done.returncode == 2
    assert "Tool 'submit_answer' is on several servers: search/submit_answer, sql/submit_answer" in done.stderr
    assert "name one as SERVER/TOOL" in done.stderr


def test_list_shows_every_server_with_its_tools_and_backends(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["registry", "list"]) == 0
    out = capsys.readouterr().out
    for name in shipped_servers():
        assert f"{name}  ({NAMESPACE}/{name} " in out
    assert "  list_tables, describe_table, run_query, submit_answer\n    sim:  SQLite" in out


# compose from tools -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sim", "prod"])
def test_compose_writes_a_valid_stack_of_the_servers_that_provide_the_tools(mode: Mode, tmp_path: Path) -> None:
    output = tmp_path / "docker-compose.yml"
    done = run("registry", "compose", "run_query", "search/fetch", "describe_table", "--mode", mode, "-o", str(output))
    assert done.returncode == 0, done.stderr
    assert f"wrote {output}: sql, search in {mode} mode" in done.stderr
    text = output.read_text()
    assert text == dump_stack(build_stack(["sql", "search"], mode))  # the one compose generator
    doc = yaml.safe_load(text)
    servers = [name for name, spec in doc["services"].items() if SERVER_LABEL in spec.get("labels", {})]
    assert servers == ["sql", "search"]
    assert all(doc["services"][name]["environment"]["MODE"] == mode for name in servers)
    assert ("postgres" in doc["services"]) == (mode == "prod")
    checked = compose_config(output, all_set(output), "-q")  # the real Compose v2
    assert checked.returncode == 0, checked.stderr


def test_compose_of_an_unknown_tool_names_the_closest_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "docker-compose.yml"
    done = run("registry", "compose", "serch", "--mode", "sim", "-o", str(output))
    assert done.returncode == 2
    assert "No tool 'serch' in the registry; did you mean search" in done.stderr
    assert not output.exists()
