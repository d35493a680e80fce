"""The desktop task set: the hand-written kinds and generated compositions of one to three edits, each task with a
reference made of GUI actions.

Counts, tiers, hygiene, the held-out split and stable ids need nothing but the package. Playing references needs
Xvfb and xdotool: a small seeded sample here that covers every edit, opening and saving under a new name (an
episode costs a display and an editor); the whole set with ``check_task_set(environment)`` (the README gives its
time).
"""

from __future__ import annotations

import random
import re
import shutil
from collections import Counter

import pytest

from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.servers.desktop import environment
from openenv_mcp.servers.desktop.generator import (
    EDITS,
    TEST_NAMES,
    TEST_PAIRS,
    TEST_WORDS,
    TRAIN_PAIRS,
    VERSION,
    EditTask,
    composition,
    generate,
)
from openenv_mcp.servers.desktop.tasks import NAMES, WORDS, DesktopTask
from tests.support import require_service

TASKS: list[DesktopTask] = list(environment.tasks())
GENERATED = [task for task in TASKS if isinstance(task, EditTask)]
TEST_VOCABULARY = {*TEST_WORDS, *TEST_NAMES, *(word for pair in TEST_PAIRS for word in pair)}
TRAIN_VOCABULARY = {*WORDS, *NAMES, *(word for pair in TRAIN_PAIRS for word in pair)}
SEED = 20261126


def test_there_are_a_thousand_train_and_two_hundred_test_tasks_in_three_tiers() -> None:
    splits = Counter(task.split for task in TASKS)
    assert splits["train"] >= 1000 and splits["test"] >= 200 and set(splits) == {"train", "test"}
    tiers = Counter((task.split, task.difficulty) for task in TASKS)
    assert all(tiers[split, tier] >= 40 for split in ("train", "test") for tier in ("easy", "medium", "hard")), tiers
    assert len(TASKS) - len(GENERATED) == 48  # the hand-written tasks stay, with their ids
    sizes = Counter(len(task.edits) for task in GENERATED)
    assert sizes[1] >= 300 and sizes[2] >= 300 and sizes[3] >= 100, sizes


def test_no_prompt_appears_twice_and_every_task_has_a_difficulty() -> None:
    assert hygiene(TASKS) == []


def test_test_tasks_hold_out_compositions_and_words_that_train_never_sees() -> None:
    train = {composition(task) for task in GENERATED if task.split == "train"}
    for task in GENERATED:
        allowed = TEST_VOCABULARY if task.split == "test" else TRAIN_VOCABULARY
        assert set(task.vocabulary) <= allowed, task.id
        if task.split == "test" and len(task.edits) > 1:
            assert composition(task) not in train, task.id
    held = {composition(task) for task in GENERATED if task.split == "test" and len(task.edits) > 1}
    assert len(held) >= 20
    words = re.compile(r"\b(" + "|".join(sorted(TEST_VOCABULARY)) + r")\b")
    seen = [task.id for task in TASKS if task.split == "train" and words.search(task.prompt)]
    assert seen == [], "test words in train prompts"


def test_ids_are_a_function_of_the_generator_version_and_the_parameters() -> None:
    again = [(task.id, task.prompt, task.split) for task in generate()]
    assert again == [(task.id, task.prompt, task.split) for task in GENERATED]
    assert all(task.id.startswith(f"desktop-g{VERSION}-") for task in GENERATED)
    pinned = {task.id: task for task in GENERATED}["desktop-g1-39ebaa"]  # bump VERSION to change what an id means
    assert (pinned.file, composition(pinned), pinned.split) == ("tunnel-quartz.txt", ("append", "save"), "train")


def test_every_episode_of_a_task_starts_from_its_document_and_expects_the_edits_applied() -> None:
    task = next(t for t in GENERATED if composition(t) == ("open", "replace", "sort", "save-as"))
    first, again, other = task.scenario(1), task.scenario(1), task.scenario(2)
    assert first == again and first.documents[task.file] != other.documents[task.file]
    assert first.open == task.opened and first.expect_file == task.save_as
    replaced = task.edits[0]
    assert replaced.find in first.documents[task.file] and replaced.find not in first.expect_text
    lines = first.expect_text.splitlines()
    assert lines == sorted(lines)


def sample(seed: int) -> list[EditTask]:
    """A few tasks that between them make every edit, open a document, save under a new name, in both splits."""
    rng = random.Random(seed)
    pool = GENERATED[:]
    rng.shuffle(pool)
    needed = {*EDITS, "open", "save-as", "save", "train", "test"}
    chosen: list[EditTask] = []
    for task in pool:
        covers = {*composition(task), task.split}
        if covers & needed:
            chosen.append(task)
            needed -= covers
        if not needed:
            return chosen
    raise AssertionError(f"no sample covers {needed}")


def test_a_seeded_sample_of_references_earns_full_reward() -> None:
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:
        require_service("The X tools " + ", ".join(missing), FileNotFoundError("apt-get install xvfb xdotool"))
    chosen = sample(SEED)
    assert len(chosen) <= 8
    report = check_task_set(environment, tasks=chosen, seed=SEED, concurrency=2)
    assert report.failures == [] and report.played == len(chosen)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sample_covers_every_edit_in_both_splits(seed: int) -> None:
    chosen = sample(seed)
    assert {kind for task in chosen for kind in composition(task)} >= {*EDITS, "open", "save-as", "save"}
    assert {task.split for task in chosen} == {"train", "test"}
