"""The generated desktop tasks: one to three edits of a document, with or without opening it first, saved under its
own name or a new one.

    from openenv_mcp.servers.desktop.generator import VERSION, generate
    tasks = list(generate())      # deterministic: the same tasks, ids and prompts on every load

An edit is one of: add a line at the end, add a line at the top, delete the first line, replace a word
everywhere, sort the lines, capitals, small letters. A task's **composition** is its edits in order, whether it
opens the document first, and how it saves (``("open", "replace", "sort", "save-as")``). Its id is a function of
the generator's version and its parameters (``desktop-g1-3fa2c1``). The test split holds out a fifth of the
compositions of two or three edits (none of them is in train), and every test task draws its file names, typed
lines and word pairs from a vocabulary train never uses. The episode's seed draws the document's text, as for the
hand-written tasks.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.servers.desktop.backends import Scenario
from openenv_mcp.servers.desktop.tasks import FORMAT_ITEMS, FORMAT_MENU, HOW, NAMES, WORDS, DesktopTask, replace_all

__all__ = ["TEST_NAMES", "TEST_PAIRS", "TEST_WORDS", "TRAIN_PAIRS", "VERSION", "EditTask", "composition", "generate"]

VERSION = 1

# Vocabularies: train draws from WORDS and TRAIN_PAIRS, test only from TEST_WORDS and TEST_PAIRS.
TEST_WORDS = (
    "amber", "beacon", "cedar", "dune", "ember", "fjord", "grotto", "hazel", "ivory", "juniper", "kayak", "lagoon",
    "mosaic", "nectar", "orchid", "pebble", "quill", "raven", "saffron", "thistle", "umber", "vortex", "willow",
    "yonder",
)  # fmt: skip
TRAIN_PAIRS = (
    ("colour", "color"), ("centre", "center"), ("grey", "gray"), ("theatre", "theater"), ("favourite", "favorite"),
    ("organise", "organize"), ("catalogue", "catalog"), ("licence", "license"), ("tyre", "tire"),
    ("harbour", "harbor"), ("flavour", "flavor"), ("realise", "realize"), ("labour", "labor"), ("fibre", "fiber"),
)  # fmt: skip
TEST_PAIRS = (
    ("cheque", "check"), ("programme", "program"), ("neighbour", "neighbor"), ("analyse", "analyze"),
    ("metre", "meter"), ("defence", "defense"), ("honour", "honor"), ("jewellery", "jewelry"),
)  # fmt: skip
TEST_NAMES = ("Olga", "Pavel", "Rui", "Sana", "Timo", "Uma")

EDITS = ("append", "prepend", "delete-first", "replace", "sort", "upper", "lower")
_FORMAT: dict[str, tuple[int, int]] = {str(name): place for name, place in FORMAT_ITEMS.items()}
_CASE = ("upper", "lower")


@dataclass(frozen=True, slots=True)
class Edit:
    """One edit: its kind and what it needs (a line to type, a word and its replacement)."""

    kind: str
    line: str = ""
    find: str = ""
    replace_with: str = ""

    def describe(self) -> str:
        if self.kind == "append":
            return f'add this line at the end of the document, without the quotes: "{self.line}"'
        if self.kind == "prepend":
            return f'add this line at the top of the document, without the quotes: "{self.line}"'
        if self.kind == "delete-first":
            return "delete its first line (the whole line)"
        if self.kind == "replace":
            return f'replace every "{self.find}" with "{self.replace_with}" (Edit > Replace..., Replace All)'
        if self.kind == "sort":
            return "sort its lines alphabetically (Format > Sort Lines)"
        if self.kind == "upper":
            return "turn all of its text to capital letters (Format > UPPERCASE)"
        return "turn all of its text to small letters (Format > lowercase)"

    def apply(self, text: str) -> str:
        """What the edit does to the document's text (which always ends with a newline here)."""
        if self.kind == "append":
            return text + self.line + "\n"
        if self.kind == "prepend":
            return self.line + "\n" + text
        if self.kind == "delete-first":
            return text.split("\n", 1)[1]
        if self.kind == "replace":
            return text.replace(self.find, self.replace_with)
        if self.kind == "sort":  # as the editor's Format > Sort Lines: code-point order, the final newline stays
            lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
            return "\n".join(sorted(lines)) + ("\n" if text.endswith("\n") else "")
        return text.upper() if self.kind == "upper" else text.lower()

    def actions(self) -> list[tuple[str, dict[str, Any]]]:
        """The GUI actions that make the edit in the editor."""
        if self.kind in ("append", "prepend"):
            where = "ctrl+End" if self.kind == "append" else "ctrl+Home"
            return [("key", {"keys": where}), ("type_text", {"text": self.line + "\n"})]
        if self.kind == "delete-first":
            return [("key", {"keys": "ctrl+Home"}), ("key", {"keys": "shift+Down"}), ("key", {"keys": "Delete"})]
        if self.kind == "replace":
            return replace_all(self.find, self.replace_with)
        (menu_x, menu_y), (x, y) = FORMAT_MENU, _FORMAT[self.kind]
        return [("click", {"x": menu_x, "y": menu_y}), ("click", {"x": x, "y": y})]


@dataclass(frozen=True, slots=True)
class EditTask(DesktopTask):
    """A generated task: open (maybe), one to three edits, then save (under the file's name or a new one)."""

    edits: tuple[Edit, ...] = field(default=())
    opened: str = ""  # the document open at the start, when the task opens ``file`` first
    save_as: str = ""  # the new name to save under ("" saves under ``file``)
    vocabulary: tuple[str, ...] = field(default=())  # every word it drew: for file names, lines, word pairs

    def scenario(self, seed: int) -> Scenario:
        rng = random.Random(f"{self.id}:{seed}")
        before = _document(rng, self.edits)
        after = before
        for edit in self.edits:
            after = edit.apply(after)
        documents = {name: " ".join(rng.sample(WORDS, 5)).capitalize() + ".\n" for name in self.distractors}
        documents[self.file] = before
        if self.opened:
            documents[self.opened] = " ".join(rng.sample(WORDS, 6)).capitalize() + ".\n"
        return Scenario(
            documents=documents,
            open=self.opened or self.file,
            expect_file=self.save_as or self.file,
            expect_text=after,
        )

    def actions(self) -> list[tuple[str, dict[str, Any]]]:
        steps: list[tuple[str, dict[str, Any]]] = []
        if self.opened:
            steps += [("key", {"keys": "ctrl+o"}), ("type_text", {"text": self.file}), ("key", {"keys": "Return"})]
        for edit in self.edits:
            steps += edit.actions()
        if self.save_as:  # the dialog opens with the name selected: typing replaces it
            return [*steps, ("key", {"keys": "ctrl+shift+s"}), ("type_text", {"text": self.save_as}),
                    ("key", {"keys": "Return"})]  # fmt: skip
        return [*steps, ("key", {"keys": "ctrl+s"})]


def _document(rng: random.Random, edits: tuple[Edit, ...]) -> str:
    """Four to six lines of sentences (names give capitals) that are not sorted, holding each word to replace two to
    four times."""
    lines = []
    for _ in range(rng.randint(4, 6)):
        words = rng.sample(WORDS, rng.randint(3, 6))
        words.insert(rng.randint(0, len(words)), rng.choice(NAMES))
        text = " ".join(words)
        lines.append(text[0].upper() + text[1:] + ".")
    for edit in edits:
        if edit.kind == "replace":
            for index in rng.sample(range(len(lines)), rng.randint(2, min(4, len(lines)))):
                words = lines[index][:-1].split(" ")
                words.insert(rng.randint(1, len(words)), edit.find)
                lines[index] = " ".join(words) + "."
    while lines == sorted(lines):
        rng.shuffle(lines)
    return "\n".join(lines) + "\n"


def composition(task: EditTask) -> tuple[str, ...]:
    """The task's composition: open or not, its edits' kinds in order, how it saves."""
    return (*(("open",) if task.opened else ()), *(e.kind for e in task.edits), "save-as" if task.save_as else "save")


def _sequences() -> Iterator[tuple[str, ...]]:
    for length in (1, 2, 3):
        for kinds in itertools.permutations(EDITS, length):
            if sum(kind in _CASE for kind in kinds) > 1:
                continue  # one case change: a second one overrides it
            if "replace" in kinds and any(
                kinds.index(case) < kinds.index("replace") for case in _CASE if case in kinds
            ):
                continue  # Replace All ignores case: after a case change it would reach more than the word asked
            if any(a == "prepend" and b == "delete-first" for a, b in itertools.pairwise(kinds)):
                continue  # deleting the line just added
            yield kinds


def _share(key: str, size: int) -> int:
    return zlib.crc32(key.encode()) % size


def _held_out(signature: tuple[str, ...]) -> bool:
    """A fifth of the compositions of two or three edits, chosen by a hash of the composition."""
    edits = [kind for kind in signature if kind not in ("open", "save", "save-as")]
    return len(edits) > 1 and _share("test/" + "/".join(signature), 5) == 0


def _draw(rng: random.Random, kinds: tuple[str, ...], test: bool) -> dict[str, Any]:
    words = TEST_WORDS if test else WORDS
    pairs = TEST_PAIRS if test else TRAIN_PAIRS
    names = TEST_NAMES if test else NAMES
    used: list[str] = []

    def word() -> str:
        used.append(rng.choice(words))
        return used[-1]

    def line() -> str:
        used.append(rng.choice(names))
        picked = rng.sample(words, rng.randint(2, 4))
        used.extend(picked)
        text = " ".join([*picked, used[-len(picked) - 1]])
        return text[0].upper() + text[1:] + rng.choice((".", "!", f" at {rng.randint(1, 12)} pm."))

    edits = []
    for kind in kinds:
        if kind in ("append", "prepend"):
            edits.append(Edit(kind, line=line()))
        elif kind == "replace":
            find, replace_with = rng.choice(pairs)
            used += [find, replace_with]
            edits.append(Edit(kind, find=find, replace_with=replace_with))
        else:
            edits.append(Edit(kind))
    file = f"{word()}.txt" if rng.random() < 0.5 else f"{word()}-{word()}.txt"
    return {"edits": tuple(edits), "file": file, "used": used}


def _task(kinds: tuple[str, ...], opens: bool, saves_as: bool, index: int) -> EditTask:
    signature = (*(("open",) if opens else ()), *kinds, "save-as" if saves_as else "save")
    test = _held_out(signature) or (len(kinds) == 1 and _share(f"{'/'.join(signature)}/{index}", 5) == 0)
    rng = random.Random(f"desktop-g{VERSION}:{'/'.join(signature)}:{index}")
    drawn = _draw(rng, kinds, test)
    file: str = drawn["file"]
    pool = TEST_WORDS if test else WORDS
    others = [w for w in pool if w not in file]
    opened_word = rng.choice(others)
    opened = f"{opened_word}.txt" if opens else ""
    save_as = f"{file[:-4]}-{rng.choice(('final', 'v2', 'copy', 'new', 'edited'))}.txt" if saves_as else ""
    taken = {file, opened, save_as}
    picked = rng.sample(others, rng.randint(0, 2))
    distractors = tuple(name for name in (f"{w}.txt" for w in picked) if name not in taken)
    params = {"signature": signature, "edits": [vars_of(e) for e in drawn["edits"]], "file": file,
              "opened": opened, "save_as": save_as, "distractors": distractors}  # fmt: skip
    digest = hashlib.sha256(json.dumps([VERSION, params], sort_keys=True).encode()).hexdigest()[:6]
    edits: tuple[Edit, ...] = drawn["edits"]
    prompt = _prompt(file, edits, opened, save_as)
    steps = len(kinds) + bool(opens) + bool(saves_as)
    return EditTask(
        f"desktop-g{VERSION}-{digest}",
        "test" if test else "train",
        prompt + HOW,
        kind="edits",
        file=file,
        distractors=distractors,
        edits=edits,
        opened=opened,
        save_as=save_as,
        vocabulary=(*drawn["used"], *([opened_word] if opens else []), *picked),
        difficulty="easy" if steps <= 1 else "medium" if steps == 2 else "hard",
    )


def vars_of(edit: Edit) -> dict[str, str]:
    return {"kind": edit.kind, "line": edit.line, "find": edit.find, "replace_with": edit.replace_with}


def _prompt(file: str, edits: tuple[Edit, ...], opened: str, save_as: str) -> str:
    save = (
        f'save it in the Documents folder under the new name "{save_as}" (File > Save As...)'
        if save_as
        else "save it (File > Save or Ctrl+S)"
    )
    steps = [edit.describe() for edit in edits] + [save]
    if opened:
        start = f"The editor shows the document {opened}."
        steps.insert(0, f"open the document {file} (File > Open...)")
    else:
        start = f"The document {file} is open."
    if len(steps) == 2:
        return f"{start} {steps[0][0].upper()}{steps[0][1:]}, then {steps[1]}."
    numbered = "".join(f"\n{n}. {step[0].upper()}{step[1:]}." for n, step in enumerate(steps, start=1))
    return f"{start} Do these steps, in this order:{numbered}"


# How many tasks a composition gets: one of a single edit many times (fewer the more it asks besides: opening,
# saving under a new name; test ones from the test vocabulary), one of two edits three times, a seeded quarter of
# those of three edits once.
_SINGLE_COPIES = (40, 24, 12)
_PAIR_COPIES = 3
_TRIPLE_SHARE = 4


def generate() -> Iterator[EditTask]:
    """Every generated task (train and test), composition by composition."""
    seen: set[str] = set()
    for kinds in _sequences():
        for opens in (False, True):
            for saves_as in (False, True):
                signature = "/".join((*(("open",) if opens else ()), *kinds, "save-as" if saves_as else "save"))
                if len(kinds) == 3 and _share(signature, _TRIPLE_SHARE):
                    continue
                copies = _SINGLE_COPIES[opens + saves_as] if len(kinds) == 1 else _PAIR_COPIES if len(kinds) == 2 else 1
                for index in range(copies):
                    task = _task(kinds, opens, saves_as, index)
                    if task.id in seen or task.prompt in seen:
                        continue
                    seen.update((task.id, task.prompt))
                    yield task
