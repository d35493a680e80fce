"""What the SQL tools return."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["Answer", "Cell", "Column", "ForeignKey", "QueryResult", "TableSchema"]

Cell = str | int | float | bool | None


class Column(BaseModel):
    name: str
    type: str
    nullable: bool
    primary_key: bool


class ForeignKey(BaseModel):
    columns: list[str]
    references_table: str
    references_columns: list[str]


class TableSchema(BaseModel):
    table: str
    columns: list[Column]
    foreign_keys: list[ForeignKey]


class QueryResult(BaseModel):
    columns: list[str]
    rows: list[list[Cell]]
    row_count: int
    truncated: bool
    note: str | None = None  # what was cut (rows, long values, the answer's size) and how to see the rest


class Answer(BaseModel):
    """The submitted answer, as the environment understood it."""

    columns: list[str]
    rows: list[list[Cell]]
    row_count: int
