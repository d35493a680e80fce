"""Every installed server passes the shared conformance check; a broken one is caught."""

from __future__ import annotations

import dataclasses

import pytest

from openenv_mcp.authoring.conformance import ConformanceError, check_environment
from openenv_mcp.environment.catalog import load_environment, server_names
from openenv_mcp.servers.sql import environment as sql


@pytest.mark.parametrize("name", [name for name in server_names() if not load_environment(name).prod_sessions])
def test_server_conforms(name: str) -> None:
    # the worlds have no prod service to be in parity with: tests/servers/test_worker.py and their own check them
    check_environment(load_environment(name))


def test_prod_services_must_name_real_tools_and_settings() -> None:
    service = dataclasses.replace(sql.prod_services[0], tools=("run_query", "drop_db"), settings=("no_such_setting",))
    with pytest.raises(ConformanceError) as caught:
        check_environment(dataclasses.replace(sql, prod_services=(service,)))
    assert "names unknown tools ['drop_db']" in caught.value.message
    assert "SqlSettings has no setting 'no_such_setting'" in caught.value.message


def test_a_nondeterministic_or_badly_declared_server_is_caught() -> None:
    broken = dataclasses.replace(sql, examples=(("no_such_tool", {}),))
    with pytest.raises(ConformanceError, match="example calls unknown tool 'no_such_tool'"):
        check_environment(broken)
