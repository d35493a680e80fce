"""Settings of the search server (``SEARCH_*`` variables)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["SearchSettings"]


class SearchSettings(BaseSettings):
    """``SEARCH_DATABASE_URL`` is required in prod; the rest have defaults in both modes."""

    model_config = SettingsConfigDict(env_prefix="SEARCH_", extra="ignore")

    database_url: SecretStr | None = Field(
        default=None,
        description="The prod search engine: a PostgreSQL URL, e.g. postgresql://reader@db:5432/search "
        "(load it with python -m openenv_mcp.servers.search.load URL), or a Sphinx searchd SphinxQL address, "
        "e.g. sphinx://searchd:9306",
    )
    table: str = Field(
        default="documents",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$",
        description="The PostgreSQL table (optionally schema-qualified) or Sphinx index holding the documents",
    )
    snippet_words: int = Field(default=24, ge=8, le=80, description="Words in each hit's snippet (both modes)")
    statement_timeout_ms: int = Field(default=5_000, ge=1, description="Per-query time limit in prod")
    pool_size: int = Field(default=5, ge=1, description="PostgreSQL connections held open in prod")
