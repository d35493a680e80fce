"""Settings: MODE from the environment, missing prod settings named by their variable."""

from __future__ import annotations

import pytest

from openenv_mcp import ConfigError, Settings
from openenv_mcp.servers.sql.settings import SqlSettings
from openenv_mcp.settings import load_settings


def test_mode_defaults_to_sim_and_reads_MODE(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODE", raising=False)
    assert Settings().mode == "sim"
    monkeypatch.setenv("MODE", "prod")
    assert Settings().mode == "prod"
    assert Settings(mode="sim").mode == "sim"


def test_bad_mode_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODE", "staging")
    with pytest.raises(ConfigError, match="MODE is invalid"):
        load_settings(Settings)


def test_required_prod_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SQL_DATABASE_URL", raising=False)
    with pytest.raises(ConfigError, match="set SQL_DATABASE_URL \\(PostgreSQL URL"):
        load_settings(SqlSettings, required=("database_url",))
    monkeypatch.setenv("SQL_DATABASE_URL", "postgresql://u@h/db")
    loaded = load_settings(SqlSettings, required=("database_url",))
    assert loaded.database_url is not None and "postgresql://u@h/db" not in repr(loaded)


def test_an_empty_required_setting_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", "  ")
    with pytest.raises(ConfigError, match="set SQL_DATABASE_URL"):
        load_settings(SqlSettings, required=("database_url",))
