"""The compose stacks: the generator's contract, the committed files, and offline validation.

Offline here means: the compose-spec JSON schema, Debian's docker-compose v1 ``config`` (it
substitutes variables and enforces ``${VAR:?message}`` without an engine), and ``docker stack
config`` (the Swarm loader of the docker CLI). None of them needs a Docker engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_mcp.deploy.compose import COMPOSE_DIR, generated_files
from openenv_mcp.deploy.stacks import (
    CONTAINER_PORT,
    DEFAULT_IMAGE,
    SERVER_LABEL,
    build_stack,
    dump_stack,
    port_variable,
    published_port,
    shipped_servers,
)
from openenv_mcp.errors import ConfigError
from tests.support import require_service

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT.parent / "shared" / "schemas" / "compose-spec.json"
SIM = COMPOSE_DIR / "docker-compose.sim.yml"
PROD = COMPOSE_DIR / "docker-compose.prod.yml"
REQUIRED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?([^}]*)\}")


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def _required_variables(path: Path) -> dict[str, str]:
    return dict(REQUIRED.findall(path.read_text()))


def _all_set(path: Path) -> dict[str, str]:
    return {name: f"pw{index}x" for index, name in enumerate(_required_variables(path))}


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        require_service(f"{name} (validates compose files offline; scripts/system-packages installs it)", OSError(name))
    assert found is not None
    return found


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Only what the test sets: none of the file's variables from the calling shell.
    clean = {k: v for k, v in os.environ.items() if k not in _required_variables(PROD) and not k.startswith("OPENENV_")}
    return subprocess.run(argv, env={**clean, **env}, capture_output=True, text=True, timeout=60, check=False)


# the generator's contract ------------------------------------------------------------------


def test_committed_files_are_what_the_generator_writes() -> None:
    for path, text in generated_files().items():
        assert path.is_file(), f"{path} is missing: run 'openenv-mcp compose generate'"
        assert path.read_text() == text, f"{path} is out of date: run 'openenv-mcp compose generate'"


def test_the_committed_files_list_every_shipped_server() -> None:
    names = shipped_servers()
    assert "sql" in names
    for path in (SIM, PROD):
        services = _load(path)["services"]
        servers = [name for name, spec in services.items() if SERVER_LABEL in spec.get("labels", {})]
        assert servers == names


def test_a_sim_stack_has_no_credentials_and_no_other_services() -> None:
    doc = build_stack(["sql"], "sim")
    assert list(doc["services"]) == ["sql"]
    text = dump_stack(doc)
    assert ":?" not in text
    sql = doc["services"]["sql"]
    assert sql["environment"]["MODE"] == "sim"
    assert sql["command"] == ["serve", "sql"]
    assert sql["image"] == DEFAULT_IMAGE


def test_every_server_service_is_ready_checked_restarted_limited_and_replicable() -> None:
    for mode in ("sim", "prod"):
        services = build_stack(shipped_servers(), mode)["services"]
        for name in shipped_servers():
            spec = services[name]
            env = spec["environment"]
            assert env["MODE"] == mode
            assert env["OPENENV_HOST"] == "0.0.0.0"
            assert json.loads(env["OPENENV_ALLOWED_HOSTS"]) == [name, f"{name}:*"]
            assert any("/readyz" in part for part in spec["healthcheck"]["test"])
            assert spec["restart"] == "unless-stopped"
            assert spec["deploy"]["restart_policy"]["condition"] == "any"
            assert spec["deploy"]["resources"]["limits"]["memory"]
            assert spec["deploy"]["replicas"] == f"${{OPENENV_REPLICAS_{name.upper()}:-1}}"
            assert spec["ports"][0].endswith(f":{CONTAINER_PORT}")
            assert port_variable(name) in spec["ports"][0]


def test_a_server_publishes_the_same_port_in_every_stack() -> None:
    alone = build_stack(["sql"], "sim")["services"]["sql"]["ports"]
    assert build_stack(["search", "sql"], "sim")["services"]["sql"]["ports"] == alone
    assert alone == [f"${{OPENENV_BIND:-127.0.0.1}}:${{OPENENV_PORT_SQL-{published_port('sql')}}}:{CONTAINER_PORT}"]
    assert 8001 <= published_port("sql") <= 8998


def test_a_port_clash_within_a_stack_moves_to_the_next_free_port() -> None:
    port = published_port("sql")
    assert published_port("sql", [port]) == port + 1 if port < 8998 else 8001
    assert (
        published_port("sql", [port, port + 1]) == port + 2 if port < 8997 else published_port("sql", [port, port + 1])
    )
    ports = [published_port(n) for n in shipped_servers()]
    assert len(set(ports)) == len(ports), "the shipped servers' ports differ"


def test_prod_bundles_postgresql_with_a_loader_and_a_read_only_role() -> None:
    doc = build_stack(["sql"], "prod", image="registry.example/openenv-mcp:1")
    services = doc["services"]
    assert list(services) == ["sql", "postgres", "sql-load"]
    url = services["sql"]["environment"]["SQL_DATABASE_URL"]
    assert url.startswith("postgresql://sql_reader:${SQL_READER_PASSWORD:?set SQL_READER_PASSWORD")
    assert url.endswith("@postgres:5432/sql")
    assert services["sql"]["depends_on"] == ["sql-load"]
    loader = services["sql-load"]
    assert loader["image"] == services["sql"]["image"] == "registry.example/openenv-mcp:1"
    assert loader["entrypoint"] == ["python", "-m", "openenv_mcp.deploy.provision"]
    assert loader["command"] == [
        "postgres", "--database", "sql", "--reader", "sql_reader", "--", "python", "-m", "servers.sql.load", "{url}",
    ]  # fmt: skip
    assert loader["depends_on"] == ["postgres"]
    assert loader["restart"] == "on-failure"
    assert services["postgres"]["image"] == "postgres:16-alpine"
    assert "pg_isready" in services["postgres"]["healthcheck"]["test"][1]
    assert doc["volumes"] == {"postgres-data": {}}


def test_servers_sharing_postgresql_share_one_service_with_a_database_each() -> None:
    services = build_stack(["search", "sql"], "prod")["services"]
    assert [name for name in services if name not in ("search", "sql")] == ["postgres", "search-load", "sql-load"]
    assert services["search"]["environment"]["SEARCH_DATABASE_URL"].endswith("@postgres:5432/search")


def test_prod_without_bundling_reads_every_required_setting_from_the_environment() -> None:
    doc = build_stack(["sql"], "prod", bundle=False)
    assert list(doc["services"]) == ["sql"]
    env = doc["services"]["sql"]["environment"]
    assert env["SQL_DATABASE_URL"] == "${SQL_DATABASE_URL:?set SQL_DATABASE_URL (PostgreSQL URL for prod)}"
    assert env["SQL_MAX_ROWS"] is None  # passed through from the shell when set there


def test_unknown_or_repeated_servers_are_refused() -> None:
    with pytest.raises(ConfigError, match="No server 'nope'"):
        build_stack(["nope"], "sim")
    with pytest.raises(ValueError, match="listed twice"):
        build_stack(["sql", "sql"], "sim")
    with pytest.raises(ValueError, match="mode"):
        build_stack(["sql"], "staging")  # type: ignore[arg-type]


def test_the_header_documents_ports_and_variables() -> None:
    text = PROD.read_text()
    assert "#   sql" in text and "(override with OPENENV_PORT_SQL)" in text
    for variable in _required_variables(PROD):
        assert re.search(rf"^#   {variable}\s", text, re.M), variable


def test_required_messages_survive_the_docker_cli_interpolation() -> None:
    # docker stack takes a '-' inside ${VAR:?message} for a default separator: messages have none.
    for path in (SIM, PROD):
        for _, message in REQUIRED.findall(path.read_text()):
            assert not set(message) & set("-:$"), message


# the compose-spec schema --------------------------------------------------------------------


def _validator() -> Any:
    from jsonschema import Draft7Validator

    if not SCHEMA.is_file():
        require_service("the compose-spec JSON schema (../shared/schemas/compose-spec.json)", FileNotFoundError(SCHEMA))
    return Draft7Validator(json.loads(SCHEMA.read_text()))


@pytest.mark.parametrize("path", [SIM, PROD], ids=["sim", "prod"])
def test_committed_files_match_the_compose_spec_schema(path: Path) -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in _validator().iter_errors(_load(path))]
    assert errors == []


def test_the_schema_check_can_fail() -> None:
    doc = build_stack(["sql"], "sim")
    doc["services"]["sql"]["healthcheck"]["interval"] = {"every": 10}
    doc["services"]["sql"]["restart_policy"] = "always"
    assert len(list(_validator().iter_errors(doc))) == 2


def test_unbundled_and_single_server_stacks_match_the_schema() -> None:
    validator = _validator()
    for doc in (build_stack(["sql"], "prod", bundle=False), build_stack(["search"], "prod", build="..")):
        assert list(validator.iter_errors(doc)) == []


# docker-compose v1 (Debian) ---------------------------------------------------------------------


def test_docker_compose_accepts_the_sim_file_with_no_variables_set() -> None:
    done = _run([_tool("docker-compose"), "-f", str(SIM), "config"], {})
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    assert resolved["services"]["sql"]["ports"] == [f"127.0.0.1:{published_port('sql')}:8000/tcp"]
    assert resolved["services"]["sql"]["deploy"]["replicas"] == 1


def test_docker_compose_accepts_the_prod_file_once_every_credential_is_set() -> None:
    done = _run([_tool("docker-compose"), "-f", str(PROD), "config"], {**_all_set(PROD), "OPENENV_REPLICAS_SQL": "3"})
    assert done.returncode == 0, done.stderr
    sql = yaml.safe_load(done.stdout)["services"]["sql"]
    password = _all_set(PROD)["SQL_READER_PASSWORD"]
    assert sql["environment"]["SQL_DATABASE_URL"] == f"postgresql://sql_reader:{password}@postgres:5432/sql"
    assert sql["deploy"]["replicas"] == 3


def test_docker_compose_names_each_missing_prod_credential_with_its_message() -> None:
    required = _required_variables(PROD)
    assert {"POSTGRES_PASSWORD", "SQL_READER_PASSWORD"} <= set(required)
    for variable, message in required.items():
        env = {k: v for k, v in _all_set(PROD).items() if k != variable}
        done = _run([_tool("docker-compose"), "-f", str(PROD), "config", "-q"], env)
        assert done.returncode == 1, variable
        assert message in done.stderr, done.stderr


def test_an_empty_port_variable_publishes_on_a_free_port() -> None:
    done = _run([_tool("docker-compose"), "-f", str(SIM), "config"], {"OPENENV_PORT_SQL": ""})
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["services"]["sql"]["ports"] == ["127.0.0.1::8000/tcp"]


# docker stack (Swarm) -------------------------------------------------------------------------------


def test_docker_stack_accepts_the_prod_file_and_reports_a_missing_credential() -> None:
    docker = _tool("docker")
    done = _run([docker, "stack", "config", "-c", str(PROD)], {**_all_set(PROD), "OPENENV_REPLICAS_SQL": "4"})
    assert done.returncode == 0, done.stderr
    sql = yaml.safe_load(done.stdout)["services"]["sql"]
    assert sql["deploy"]["replicas"] == 4
    assert sql["deploy"]["resources"]["limits"]["memory"] in ("1G", 1073741824, "1073741824")
    env = {k: v for k, v in _all_set(PROD).items() if k != "POSTGRES_PASSWORD"}
    missing = _run([docker, "stack", "config", "-c", str(PROD)], env)
    assert missing.returncode == 1
    assert "set POSTGRES_PASSWORD (the superuser password of the bundled PostgreSQL" in missing.stderr


def test_docker_stack_accepts_the_sim_file() -> None:
    done = _run([_tool("docker"), "stack", "config", "-c", str(SIM)], {})
    assert done.returncode == 0, done.stderr


# the image --------------------------------------------------------------------------------------


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", dockerfile)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_the_dockerfile_builds_small_runs_non_root_and_checks_readiness() -> None:
    steps = _instructions((COMPOSE_DIR / "Dockerfile").read_text())
    stages = [i for i, (keyword, _) in enumerate(steps) if keyword == "FROM"]
    assert len(stages) == 2, "a wheel-building stage and a runtime stage"
    final = steps[stages[-1] :]
    args = dict(rest.split("=", 1) for keyword, rest in steps if keyword == "ARG" and "=" in rest)
    assert "slim" in args["PYTHON_IMAGE"]
    users = [rest for keyword, rest in final if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    [healthcheck] = [rest for keyword, rest in final if keyword == "HEALTHCHECK"]
    assert "/readyz" in healthcheck and "urllib" in healthcheck
    [entrypoint] = [json.loads(rest) for keyword, rest in final if keyword == "ENTRYPOINT"]
    assert entrypoint[-1] == "openenv-mcp"
    installs = " ".join(rest for keyword, rest in final if keyword == "RUN")
    assert "--no-index" in installs and "[dev]" not in installs
    assert "MODE=" not in " ".join(rest for keyword, rest in final if keyword == "ENV"), (
        "mode comes from MODE at run time"
    )
    assert ("EXPOSE", str(CONTAINER_PORT)) in final


def test_the_build_context_leaves_out_the_virtualenv_and_the_tests() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("**") :][:1] == ["**"]
    assert {"!pyproject.toml", "!README.md", "!openenv_mcp", "!servers"} <= set(ignore)
