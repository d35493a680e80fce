"""A policy of your own for 'openenv-mcp rollout': an async function that drives one episode.

    openenv-mcp rollout sql --policy examples.sql_policy:policy --episodes 32 --concurrency 8

It is a heuristic, not a model: it lists the tables, looks at the first table the question names,
and answers "How many ..." questions with a row count (other questions with that table's rows).
A trainer's policy samples from a model instead; the shape is the same.
"""

from __future__ import annotations

import json

from openenv_mcp.rollout import RolloutEpisode


async def policy(episode: RolloutEpisode) -> None:
    tables = json.loads((await episode.step("list_tables")).observation.text)["result"]
    question = episode.prompt.lower()
    named = [t for t in tables if t in question or t.rstrip("s") in question]
    table = min(named, key=question.find) if named else tables[0]
    await episode.step("describe_table", {"table": table})
    if question.startswith("how many"):
        await episode.step("submit_answer", {"sql": f"SELECT COUNT(*) FROM {table}"})
    else:
        await episode.step("submit_answer", {"sql": f"SELECT * FROM {table}"})
