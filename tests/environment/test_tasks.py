"""Tasks: picked by id, or by split and seed, deterministically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_mcp import EpisodeError, Task, TaskSet

TASKS = TaskSet([Task(id=f"t{i}", split="train" if i < 8 else "test", prompt=str(i)) for i in range(10)])


def test_same_seed_same_task_and_seeds_spread() -> None:
    picks = [TASKS.pick(task_id=None, split=None, seed=s).id for s in range(40)]
    assert picks == [TASKS.pick(task_id=None, split=None, seed=s).id for s in range(40)]
    assert len(set(picks)) > 4
    assert all(TASKS.get(p).split == "train" for p in picks)


def test_split_and_id_are_honoured_and_checked() -> None:
    assert TASKS.pick(task_id=None, split="test", seed=3).split == "test"
    assert TASKS.pick(task_id="t9", split=None, seed=0).id == "t9"
    with pytest.raises(EpisodeError, match="is in split 'test', not 'train'"):
        TASKS.pick(task_id="t9", split="train", seed=0)
    with pytest.raises(EpisodeError, match="splits: train, test"):
        TASKS.pick(task_id=None, split="dev", seed=0)


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        TaskSet([Task(id="a", split="train", prompt=""), Task(id="a", split="train", prompt="")])


def test_extra_tasks_join_the_set_and_a_bad_line_names_itself(tmp_path: Path) -> None:
    from openenv_mcp.environment.tasks import task_record, with_extra_tasks
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.servers.sql import environment

    shipped = environment.tasks()
    first = next(iter(shipped))
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"task": {**task_record(first), "id": "mined-1", "prompt": "Count them."}}) + "\n")
    joined = with_extra_tasks(shipped, extra)
    assert len(joined) == len(shipped) + 1 and type(joined.get("mined-1")) is type(first)
    assert joined.get("mined-1").prompt == "Count them." and joined.default_split == shipped.default_split
    extra.write_text("\n" + json.dumps({"task": {"id": "x", "split": "train", "prompt": "p", "colour": 1}}) + "\n")
    with pytest.raises(ConfigError, match=r"extra.jsonl:2 is not a SqlTask"):
        with_extra_tasks(shipped, extra)
    extra.write_text(json.dumps({"task": task_record(first)}) + "\n")
    with pytest.raises(ConfigError, match="appears twice"):
        with_extra_tasks(shipped, extra)
