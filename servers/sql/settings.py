"""Settings of the SQL server (``SQL_*`` variables)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["SqlSettings"]


class SqlSettings(BaseSettings):
    """``SQL_DATABASE_URL`` is required in prod; the rest have defaults in both modes."""

    model_config = SettingsConfigDict(env_prefix="SQL_", extra="ignore")

    database_url: SecretStr | None = Field(
        default=None,
        description="PostgreSQL URL for prod, e.g. postgresql://reader@db:5432/shop (use a role with SELECT only)",
    )
    db_schema: str = Field(default="public", description="The PostgreSQL schema the tools show")
    max_rows: int = Field(default=100, ge=1, le=10_000, description="Rows run_query returns at most")
    max_cell_chars: int = Field(
        default=10_000, ge=16, description="Characters of one value a result shows at most (longer ones are cut)"
    )
    max_result_chars: int = Field(
        default=1_000_000, ge=1_000, description="Characters of values one result holds at most (then rows stop)"
    )
    answer_rows: int = Field(default=5_000, ge=1, description="Rows submit_answer accepts at most")
    statement_timeout_ms: int = Field(default=5_000, ge=1, description="Per-query time limit")
    pool_size: int = Field(default=5, ge=1, description="PostgreSQL connections held open in prod")
