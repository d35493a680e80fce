"""The problem families the coding generator draws tasks from (see ``generator.py`` and the README's table)."""

from __future__ import annotations

from openenv_mcp.servers.coding.families.arrays import Pairs, RangeQueries, Windows
from openenv_mcp.servers.coding.families.base import Family
from openenv_mcp.servers.coding.families.dynamic import Alignment, Coins, GridPaths
from openenv_mcp.servers.coding.families.graphs import Components, Dependencies, ShortestPaths
from openenv_mcp.servers.coding.families.grids import GridSearch
from openenv_mcp.servers.coding.families.integers import NumberFunctions
from openenv_mcp.servers.coding.families.lists import ListPipeline
from openenv_mcp.servers.coding.families.numbers import Digits, DivisorQueries, FilterAggregate, Recurrence
from openenv_mcp.servers.coding.families.records import Containers, Ledger, SortRecords
from openenv_mcp.servers.coding.families.shapes import IntervalFunctions, MatrixFunctions
from openenv_mcp.servers.coding.families.strings import Cipher, LinePipeline, WordRelations
from openenv_mcp.servers.coding.families.subarrays import Subarrays
from openenv_mcp.servers.coding.families.text import Brackets, LongestSubstring
from openenv_mcp.servers.coding.families.tokens import Expressions, TokenFrequency
from openenv_mcp.servers.coding.families.words import StringFunctions

__all__ = ["FAMILIES"]

FAMILIES: tuple[Family, ...] = (
    Digits(),
    FilterAggregate(),
    Recurrence(),
    DivisorQueries(),
    Windows(),
    RangeQueries(),
    Pairs(),
    Subarrays(),
    Cipher(),
    LinePipeline(),
    WordRelations(),
    LongestSubstring(),
    Brackets(),
    Expressions(),
    TokenFrequency(),
    ListPipeline(),
    SortRecords(),
    Ledger(),
    Containers(),
    GridSearch(),
    Components(),
    ShortestPaths(),
    Dependencies(),
    Coins(),
    GridPaths(),
    Alignment(),
    StringFunctions(),
    NumberFunctions(),
    IntervalFunctions(),
    MatrixFunctions(),
)
