"""The desktop tasks (type, save as, use a menu, find and replace) and their grading.

Each task names what to do with concrete text and file names (drawn once, deterministically,
when the tasks load; an episode's seed picks the task). The seed also draws the episode's
document (the paragraph to save, the lines to sort, the text to search) so two episodes of one
task differ, while the same task and seed always give the same episode.

Grading reads the application's observable state, never pixels: the documents saved in the
episode's folder and the editor's window title. A task's score is 1.0 when the expected document
holds the expected text and is the one open with nothing unsaved (its name in the title, no
``*``); otherwise partial credit for a saved document that moved toward the goal. Each step
earns the change in score, so an episode's total reward is its final score.

The grade is a rubric (``docs/rewards.md``) of three parts: ``progress`` (weight 0.5) how far the saved
document moved from its start toward the expected text (1 once it holds it), ``text`` (0.25) whether it holds
exactly the expected text, ``saved_open`` (0.25) whether it is then the document open with nothing unsaved.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from openenv_mcp import Task
from openenv_mcp.rewards.rubrics import Criterion, Rubric, Scoring
from openenv_mcp.servers.desktop.backends import AppState, DesktopBackend, Scenario

__all__ = ["HOW", "DesktopTask", "grade", "parts", "replace_all", "score", "solve", "written"]

Kind = Literal["type", "save", "menu", "replace", "edits"]
Operation = Literal["sort", "upper", "lower"]

WORDS = (
    "apple", "river", "stone", "garden", "window", "yellow", "morning", "silver", "forest", "candle",
    "harbor", "pencil", "winter", "meadow", "basket", "rocket", "violin", "orange", "bridge", "tiger",
    "planet", "butter", "marble", "ladder", "copper", "island", "rabbit", "summer", "lantern", "pepper",
    "valley", "wagon", "falcon", "button", "cobalt", "desert", "engine", "fabric", "glacier", "hammer",
    "jacket", "kettle", "lemon", "mirror", "napkin", "oyster", "parrot", "quartz", "ribbon", "saddle",
    "tunnel", "velvet", "walnut", "zipper", "anchor", "blanket", "cactus", "dolphin", "feather", "gravel",
)  # fmt: skip
NAMES = ("Ada", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Juno", "Kai", "Lena")
REPLACEMENTS = (
    ("colour", "color"), ("centre", "center"), ("grey", "gray"), ("theatre", "theater"),
    ("favourite", "favorite"), ("organise", "organize"), ("catalogue", "catalog"), ("licence", "license"),
    ("tyre", "tire"), ("cheque", "check"), ("programme", "program"), ("neighbour", "neighbor"),
)  # fmt: skip
OPERATIONS: dict[Operation, str] = {
    "sort": "sort its lines alphabetically (Format > Sort Lines)",
    "upper": "turn all of its text to capital letters (Format > UPPERCASE)",
    "lower": "turn all of its text to small letters (Format > lowercase)",
}
EASY = "easy"  # a hand-written task is one edit (see the README's tier rule)
# Where the editor draws its Format menu and that menu's items: its window starts at the screen's top left
# and its layout and fonts are fixed, so these hold at every screen size.
FORMAT_MENU = (118, 39)
FORMAT_ITEMS: dict[Operation, tuple[int, int]] = {"upper": (146, 84), "lower": (141, 106), "sort": (140, 128)}
TASKS_PER_KIND = 12
TEST_PER_KIND = 3
MAX_SAVED_FILES = 64
MAX_READ = 256 * 1024


@dataclass(frozen=True, slots=True)
class DesktopTask(Task):
    """One task: its kind and the concrete text and names its prompt gives."""

    kind: Kind = "type"
    file: str = ""
    text: str = ""
    find: str = ""
    replace_with: str = ""
    operation: Operation = "sort"
    distractors: tuple[str, ...] = field(default=())

    def scenario(self, seed: int) -> Scenario:
        """The episode's starting documents and its goal, drawn from the task and ``seed``."""
        rng = random.Random(f"{self.id}:{seed}")
        others = {name: _sentence(rng) + "\n" for name in self.distractors}
        if self.kind == "type":
            return Scenario(
                documents={**others, self.file: ""}, open=self.file, expect_file=self.file, expect_text=self.text
            )
        if self.kind == "save":
            paragraph = " ".join(_sentence(rng) for _ in range(rng.randint(2, 3)))
            return Scenario(documents=others, unsaved=paragraph, expect_file=self.file, expect_text=paragraph)
        if self.kind == "menu":
            if self.operation == "sort":
                lines = rng.sample(WORDS, rng.randint(6, 9))
                while lines == sorted(lines):
                    rng.shuffle(lines)
                before = "\n".join(lines) + "\n"
                after = "\n".join(sorted(lines)) + "\n"
            elif self.operation == "upper":
                before = "\n".join(_sentence(rng, names=True) for _ in range(3)) + "\n"
                after = before.upper()
            else:
                before = "\n".join(_sentence(rng, names=True).upper() for _ in range(3)) + "\n"
                after = before.lower()
            return Scenario(
                documents={**others, self.file: before}, open=self.file, expect_file=self.file, expect_text=after
            )
        sentences = [_sentence(rng) for _ in range(rng.randint(3, 5))]
        for index in rng.sample(range(len(sentences)), rng.randint(2, min(4, len(sentences)))):
            words = sentences[index][:-1].split(" ")
            words.insert(rng.randint(1, len(words)), self.find)
            sentences[index] = " ".join(words) + "."
        before = "\n".join(sentences) + "\n"
        return Scenario(
            documents={**others, self.file: before},
            open=self.file,
            expect_file=self.file,
            expect_text=before.replace(self.find, self.replace_with),
        )

    def actions(self) -> list[tuple[str, dict[str, Any]]]:
        """The GUI actions that do the task (its reference solution)."""
        if self.kind == "type":
            return [("type_text", {"text": self.text}), ("key", {"keys": "ctrl+s"})]
        if self.kind == "save":  # Save As opens with the file name selected: typing replaces it
            return [("key", {"keys": "ctrl+shift+s"}), ("type_text", {"text": self.file}), ("key", {"keys": "Return"})]
        if self.kind == "menu":
            (menu_x, menu_y), (x, y) = FORMAT_MENU, FORMAT_ITEMS[self.operation]
            return [("click", {"x": menu_x, "y": menu_y}), ("click", {"x": x, "y": y}), ("key", {"keys": "ctrl+s"})]
        return [*replace_all(self.find, self.replace_with), ("key", {"keys": "ctrl+s"})]


def _sentence(rng: random.Random, *, names: bool = False) -> str:
    words = rng.sample(WORDS, rng.randint(4, 7))
    if names:
        words.insert(rng.randint(0, len(words)), rng.choice(NAMES))
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


HOW = (
    "\n\nThe screen shows a text editor (title bar with the document's name, menus File, Edit, Format, "
    "Help). Act with the tools screenshot, key, type_text, click, move_mouse, drag and scroll; every action "
    "returns the screen after it."
)


def _task(kind: Kind, index: int) -> DesktopTask:
    rng = random.Random(f"desktop-{kind}-{index}")
    split = "test" if index >= TASKS_PER_KIND - TEST_PER_KIND else "train"
    task_id = f"{kind}-{index:02d}"
    distractors = tuple(f"{w}.txt" for w in rng.sample(WORDS, rng.randint(0, 2)))
    if kind == "type":
        file = rng.choice(("draft.txt", "note.txt", "memo.txt", "todo.txt"))
        lines = [_sentence(rng, names=True) for _ in range(1 + index % 2)]
        if index % 3 == 0:
            lines[0] = lines[0][:-1] + f" at {rng.randint(1, 12)} {rng.choice(('am', 'pm'))}."
        text = "\n".join(lines)
        shown = "\n".join(f'"{line}"' for line in lines)
        how_many = "this line" if len(lines) == 1 else f"these {len(lines)} lines (Enter between them)"
        prompt = (
            f"The document {file} is open and empty. Type {how_many} into it, without the quotes, "
            f"then save it (File > Save or Ctrl+S):\n{shown}"
        )
        return DesktopTask(
            task_id, split, prompt + HOW, kind=kind, file=file, text=text, distractors=distractors, difficulty=EASY
        )
    if kind == "save":
        file = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{rng.randint(1, 99)}.txt"
        prompt = (
            f"The editor holds a new document that was never saved. Save it in the Documents folder under "
            f'the name "{file}" (File > Save As...).'
        )
        return DesktopTask(task_id, split, prompt + HOW, kind=kind, file=file, distractors=distractors, difficulty=EASY)
    if kind == "menu":
        operation: Operation = ("sort", "upper", "lower")[index % 3]
        file = ("list.txt", "words.txt", "notes.txt", "inventory.txt")[index // 3]  # each (file, operation) once
        prompt = f"The document {file} is open. Use the Format menu to {OPERATIONS[operation]}, then save it."
        return DesktopTask(
            task_id,
            split,
            prompt + HOW,
            kind=kind,
            file=file,
            operation=operation,
            distractors=distractors,
            difficulty=EASY,
        )
    find, replace_with = REPLACEMENTS[index % len(REPLACEMENTS)]
    file = rng.choice(("letter.txt", "report.txt", "story.txt", "minutes.txt"))
    prompt = (
        f'The document {file} is open. Replace every "{find}" in it with "{replace_with}" '
        f"(Edit > Replace..., Ctrl+H), then save it."
    )
    return DesktopTask(
        task_id, split, prompt + HOW, kind="replace", file=file, find=find, replace_with=replace_with,
        distractors=distractors, difficulty=EASY,
    )  # fmt: skip


def written() -> list[DesktopTask]:
    """The hand-written tasks: twelve of each kind, nine in train and three in test; each one edit, so easy."""
    kinds: tuple[Kind, ...] = ("type", "save", "menu", "replace")
    return [_task(kind, index) for kind in kinds for index in range(TASKS_PER_KIND)]


def replace_all(find: str, replace_with: str) -> list[tuple[str, dict[str, Any]]]:
    """The editor's Find & Replace dialog, Replace All, closed: the calls that replace every ``find``."""
    return [
        ("key", {"keys": "ctrl+h"}),
        ("type_text", {"text": find}),
        ("key", {"keys": "Tab"}),
        ("type_text", {"text": replace_with}),
        ("key", {"keys": "alt+a"}),  # Replace All
        ("key", {"keys": "Escape"}),
    ]


def solve(task: DesktopTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution: the GUI actions a competent user takes, from the task's text and names.

    The same actions solve every episode of a task: the seed changes the document, never what to do.
    """
    return task.actions()


def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def parts(scenario: Scenario, state: AppState) -> dict[str, float]:
    """The score's parts: ``progress`` toward the expected text, ``text`` exact, ``saved_open`` with a clean title."""
    saved = state.documents.get(scenario.expect_file)
    if saved is None:
        return {"progress": 0.0, "text": 0.0, "saved_open": 0.0}
    want = scenario.expect_text.rstrip()
    if saved.rstrip() == want:
        title = state.title
        clean = scenario.expect_file in title and not title.startswith("*")
        return {"progress": 1.0, "text": 1.0, "saved_open": float(clean)}
    start = scenario.documents.get(scenario.expect_file, "").rstrip()
    baseline = _similar(start, want)
    gained = 0.0 if baseline >= 1.0 else (_similar(saved.rstrip(), want) - baseline) / (1.0 - baseline)
    return {"progress": max(0.0, gained), "text": 0.0, "saved_open": 0.0}


def score(scenario: Scenario, state: AppState) -> float:
    """How far the episode got: 1.0 done; 0.75 for the right text not yet the clean open document; up to 0.5
    for a saved document that moved toward the goal (the rubric's weighted total, 4 decimals)."""
    found = parts(scenario, state)
    return round(0.0 + 0.5 * found["progress"] + 0.25 * found["text"] + 0.25 * found["saved_open"], 4)


def _graded(s: Scoring) -> bool:
    return (
        s.backend.scenario is not None
        and not s.call.tool.annotations.get("readOnlyHint")
        and not s.observation.is_error
    )


async def _state(s: Scoring) -> dict[str, float]:
    desk: DesktopBackend = s.backend
    scenario = desk.scenario
    assert scenario is not None
    documents = await desk.documents()
    saved = documents.get(scenario.expect_file)
    # The title only matters once the text is right: only then is it read (an X round trip).
    title = await desk.title() if saved is not None and saved.rstrip() == scenario.expect_text.rstrip() else ""
    return parts(scenario, AppState(title, documents))


grade = Rubric(
    Criterion("progress", lambda s: s.data["progress"], weight=0.5),
    Criterion("text", lambda s: s.data["text"], weight=0.25),
    Criterion("saved_open", lambda s: s.data["saved_open"], weight=0.25),
    graded=_graded,
    prepare=_state,
    done=lambda s: s.data["text"] == 1.0 and s.data["saved_open"] == 1.0,
    progress="progress",
)
"""Each step earns the change in the episode's score; done once the score is 1.0."""
