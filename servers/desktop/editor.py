"""A small Notepad-like text editor in Tk: the application the sim desktop runs.

Run as a script with the standard library only (it must start fast and never import the server):

    python editor.py --documents DIR [--open NAME] [--text FILE] [--control SOCKET] [--max-chars N]

It draws its own title bar (``NAME - Editor``, with ``*`` while there are unsaved changes) and sets
the same title on its X window, so it reads the same with or without a window manager. Menus: File
(New, Open, Save, Save As), Edit (Undo, Redo, Cut, Copy, Paste, Delete, Select All, Find, Replace),
Format (Word Wrap, UPPERCASE, lowercase, Sort Lines) and Help. Documents are opened and saved in
the documents folder only, through its own Open and Save As dialogs, which list that folder and
nothing else: a name with a folder in it (``/root``, ``../x``, another episode's path) is refused
and the listing stays as it was.

Bounds: the document holds at most ``--max-chars`` characters (typing, pasting, replacing: an
insertion that would pass the limit is refused whole, the status bar says so, and the next ``sync``
answer counts it), and undo keeps the last 100 edits. The editor serves no Tk ``send``: the command
is deleted at start, which also takes the application out of the display's registry of
interpreters, so a ``send`` from another client finds no application to run a script in.

``--control`` names a Unix socket the server listens on. The editor connects to it when its window
is drawn (sending ``{"event": "ready", "pid": PID}``), answers JSON-line requests (``sync``: once
every input event sent before it is handled and drawn; ``state``: title, file, text), and exits when
the socket closes, so a crashed server never leaves an editor behind.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import socket
import time
import tkinter as tk
from collections.abc import Callable
from pathlib import Path
from tkinter import messagebox
from typing import Any

APP = "Editor"
MAX_CHARS = 1_000_000
MAX_UNDO = 100
MAX_LISTED = 200
UI_FONT = ("DejaVu Sans", 10)
TEXT_FONT = ("DejaVu Sans Mono", 12)
TITLE_BG = "#23497a"


class Editor:
    """The editor window: title bar, menu bar, text, status bar."""

    def __init__(self, root: tk.Tk, documents: Path, width: int, height: int, max_chars: int = MAX_CHARS) -> None:
        self.root = root
        self.documents = documents.resolve()
        self.path: Path | None = None
        self.find_dialog: FindDialog | None = None
        self.file_dialog: FileDialog | None = None
        self.max_chars = max_chars
        self.refused = 0  # insertions refused at the size limit since the server last asked
        self.pending_focus: tk.Misc | None = None  # given the focus, not yet holding it (see focus)
        root.geometry(f"{width}x{height}+0+0")
        root.option_add("*insertOffTime", 0)  # a caret that never blinks: the same pixels every time
        root.option_add("*Font", UI_FONT)
        root.option_add("*Dialog.msg.font", UI_FONT)

        self.title_bar = tk.Label(root, anchor="w", padx=8, pady=4, bg=TITLE_BG, fg="white", font=(*UI_FONT, "bold"))
        self.title_bar.pack(side="top", fill="x")
        self.menu_bar = tk.Frame(root, bd=1, relief="raised")
        self.menu_bar.pack(side="top", fill="x")
        self.status = tk.Label(root, anchor="w", padx=8, bd=1, relief="sunken")
        self.status.pack(side="bottom", fill="x")
        body = tk.Frame(root)
        body.pack(side="top", fill="both", expand=True)
        scroll = tk.Scrollbar(body, orient="vertical")
        scroll.pack(side="right", fill="y")
        self.text = tk.Text(
            body,
            undo=True,
            maxundo=MAX_UNDO,
            wrap="none",
            font=TEXT_FONT,
            insertofftime=0,
            yscrollcommand=scroll.set,
            padx=4,
            pady=4,
        )
        bound_size(self.text, max_chars, self.refuse)
        self.text.pack(side="left", fill="both", expand=True)
        scroll.configure(command=self.text.yview)
        self.wrap = tk.BooleanVar(value=False)
        self._build_menus()
        self._bind_keys()
        self.text.bind("<<Modified>>", lambda _e: self.refresh_title())
        for sequence in ("<KeyRelease>", "<ButtonRelease>"):
            self.text.bind(sequence, lambda _e: self.refresh_status(), add="+")
        self.refresh_title()
        self.refresh_status()

    # building ----------------------------------------------------------------------------------

    def _menu(self, label: str, underline: int, items: list[tuple[str, ...] | None]) -> tk.Menu:
        button = tk.Menubutton(self.menu_bar, text=label, underline=underline, padx=8, pady=2)
        button.pack(side="left")
        menu = tk.Menu(button, tearoff=False)
        for item in items:
            if item is None:
                menu.add_separator()
                continue
            text, under, accel, command = item
            menu.add_command(
                label=text, underline=int(under), accelerator=accel, command=getattr(self, command), compound="left"
            )
        button.configure(menu=menu)
        return menu

    def _build_menus(self) -> None:
        self._menu(
            "File",
            0,
            [
                ("New", "0", "Ctrl+N", "new"),
                ("Open...", "0", "Ctrl+O", "open"),
                ("Save", "0", "Ctrl+S", "save"),
                ("Save As...", "5", "Ctrl+Shift+S", "save_as"),
            ],
        )
        self._menu(
            "Edit",
            0,
            [
                ("Undo", "0", "Ctrl+Z", "undo"),
                ("Redo", "0", "Ctrl+Y", "redo"),
                None,
                ("Cut", "2", "Ctrl+X", "cut"),
                ("Copy", "0", "Ctrl+C", "copy"),
                ("Paste", "0", "Ctrl+V", "paste"),
                ("Delete", "2", "Del", "delete"),
                None,
                ("Select All", "7", "Ctrl+A", "select_all"),
                None,
                ("Find...", "0", "Ctrl+F", "find"),
                ("Find Next", "5", "F3", "find_next"),
                ("Replace...", "0", "Ctrl+H", "replace"),
            ],
        )
        fmt = self._menu(
            "Format",
            1,
            [None, ("UPPERCASE", "0", "", "upper"), ("lowercase", "0", "", "lower"), ("Sort Lines", "0", "", "sort")],
        )
        fmt.delete(0)
        fmt.insert_checkbutton(0, label="Word Wrap", underline=0, variable=self.wrap, command=self.toggle_wrap)
        self._menu("Help", 0, [("About Editor", "0", "", "about")])

    def _bind_keys(self) -> None:
        keys = {
            "<Control-n>": self.new,
            "<Control-o>": self.open,
            "<Control-s>": self.save,
            "<Control-S>": self.save_as,
            "<Control-z>": self.undo,
            "<Control-y>": self.redo,
            "<Control-a>": self.select_all,
            "<Control-f>": self.find,
            "<Control-h>": self.replace,
            "<F3>": self.find_next,
        }
        for sequence, command in keys.items():
            # On the text widget, before Tk's Emacs-style class bindings (Ctrl+A, Ctrl+H, Ctrl+O...).
            self.text.bind(sequence, then_break(command))

    # state ---------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "Untitled"

    @property
    def modified(self) -> bool:
        return bool(self.text.edit_modified())

    def focus(self, widget: tk.Misc) -> None:
        """Give ``widget`` the keyboard focus; until Tk has given it (a dialog's field: once it is visible,
        which comes back from the X server later) a ``sync`` waits, so that keys sent next reach it."""
        if str(widget) != self.root.tk.call("focus"):
            self.pending_focus = widget

            def arrived(_event: object) -> None:
                if self.pending_focus is widget:
                    self.pending_focus = None

            widget.bind("<FocusIn>", arrived, add="+")
        widget.focus_force()

    def focus_pending(self) -> bool:
        """Whether a widget was given the focus and Tk has not yet given it (and it still exists)."""
        widget = self.pending_focus
        if widget is not None and not widget.winfo_exists():
            self.pending_focus = widget = None
        return widget is not None

    def content(self) -> str:
        return self.text.get("1.0", "end-1c")

    def refresh_title(self) -> None:
        title = f"{'*' if self.modified else ''}{self.name} - {APP}"
        self.root.title(title)
        self.title_bar.configure(text=title)

    def refresh_status(self, message: str = "") -> None:
        line, column = self.text.index("insert").split(".")
        self.status.configure(text=f"Ln {line}, Col {int(column) + 1}" + (f"    {message}" if message else ""))

    def load(self, path: Path | None, text: str) -> None:
        self.path = path
        self.text.delete("1.0", "end")
        self.text.insert("1.0", text)
        self.text.mark_set("insert", "1.0")
        self.text.edit_reset()
        self.text.edit_modified(path is None and text != "")
        self.refresh_title()
        self.refresh_status()

    def refuse(self) -> None:
        """An insertion was refused at the size limit (called from the text widget's guard)."""
        self.refused += 1
        self.refresh_status(f"The document is at its limit of {self.max_chars:,} characters: insertion refused")

    def inside_documents(self, chosen: str) -> Path | None:
        path = Path(chosen).resolve()
        if path.parent != self.documents:
            messagebox.showerror(APP, f"Documents live in {self.documents}; choose a file there.", parent=self.root)
            return None
        return path

    # File ----------------------------------------------------------------------------------------

    def keep_changes(self) -> bool:
        """Ask to save unsaved changes; False when the user cancels."""
        if not self.modified:
            return True
        answer = messagebox.askyesnocancel(APP, f"Save changes to {self.name}?", parent=self.root)
        if answer is None:
            return False
        return self.save() if answer else True

    def new(self) -> None:
        if self.keep_changes():
            self.load(None, "")

    def open(self) -> None:
        if not self.keep_changes():
            return
        chosen = FileDialog(self, title="Open", initial="").result
        path = self.inside_documents(chosen) if chosen else None
        if path is None:
            return
        try:
            if path.stat().st_size > self.max_chars * 4:  # UTF-8: at most 4 bytes a character
                raise OSError(f"it is larger than the editor's limit of {self.max_chars:,} characters")
            text = path.read_text(encoding="utf-8")
            if len(text) > self.max_chars:
                raise OSError(f"it is larger than the editor's limit of {self.max_chars:,} characters")
        except (OSError, UnicodeDecodeError) as exc:
            messagebox.showerror(APP, f"Cannot open {path.name}: {exc}", parent=self.root)
            return
        self.load(path, text)

    def save(self) -> bool:
        if self.path is None:
            return self.save_as()
        return self.write(self.path)

    def save_as(self) -> bool:
        chosen = FileDialog(self, title="Save As", initial=self.name + ".txt" * (not self.path)).result
        path = self.inside_documents(chosen) if chosen else None
        return path is not None and self.write(path)

    def write(self, path: Path) -> bool:
        try:
            path.write_text(self.content(), encoding="utf-8")
        except OSError as exc:
            messagebox.showerror(APP, f"Cannot save {path.name}: {exc}", parent=self.root)
            return False
        self.path = path
        self.text.edit_modified(False)
        self.refresh_title()
        self.refresh_status(f"Saved {path.name}")
        return True

    # Edit ----------------------------------------------------------------------------------------

    def undo(self) -> None:
        with contextlib.suppress(tk.TclError):  # nothing to undo
            self.text.edit_undo()

    def redo(self) -> None:
        with contextlib.suppress(tk.TclError):  # nothing to redo
            self.text.edit_redo()

    def cut(self) -> None:
        self.text.event_generate("<<Cut>>")

    def copy(self) -> None:
        self.text.event_generate("<<Copy>>")

    def paste(self) -> None:
        self.text.event_generate("<<Paste>>")

    def delete(self) -> None:
        self.text.event_generate("<<Clear>>")

    def select_all(self) -> None:
        self.text.tag_add("sel", "1.0", "end-1c")
        self.text.mark_set("insert", "end-1c")

    def find(self) -> None:
        self.open_find(replace=False)

    def replace(self) -> None:
        self.open_find(replace=True)

    def find_next(self) -> None:
        if self.find_dialog is None or not self.find_dialog.what.get():
            self.open_find(replace=False)
        else:
            self.find_dialog.find_next()

    def open_find(self, *, replace: bool) -> None:
        if self.find_dialog is not None:
            self.find_dialog.close()
        self.find_dialog = FindDialog(self, replace=replace)

    # Format --------------------------------------------------------------------------------------

    def toggle_wrap(self) -> None:
        self.text.configure(wrap="word" if self.wrap.get() else "none")

    def transform(self, change: Any) -> None:
        """Apply ``change`` to the selection, or to the whole document when nothing is selected."""
        ranges = self.text.tag_ranges("sel")
        start, end = (str(ranges[0]), str(ranges[1])) if ranges else ("1.0", "end-1c")
        before = self.text.get(start, end)
        after = change(before)
        if after == before:
            return
        self.text.edit_separator()
        self.text.delete(start, end)
        self.text.insert(start, after)
        self.text.edit_separator()
        self.text.tag_add("sel", start, f"{start}+{len(after)}c")

    def upper(self) -> None:
        self.transform(str.upper)

    def lower(self) -> None:
        self.transform(str.lower)

    def sort(self) -> None:
        self.transform(sort_lines)

    def about(self) -> None:
        messagebox.showinfo(APP, "Editor: a small text editor for the openenv-mcp desktop environment.")


def then_break(command: Callable[[], object]) -> Callable[[tk.Event[Any]], str]:
    """An event handler that runs ``command`` and stops Tk's other bindings for the event."""

    def handler(_event: tk.Event[Any]) -> str:
        command()
        return "break"

    return handler


def sort_lines(text: str) -> str:
    """The lines in code-point order; a final newline stays last."""
    ending = "\n" if text.endswith("\n") else ""
    lines = text[: len(text) - len(ending)].split("\n")
    return "\n".join(sorted(lines)) + ending


def bound_size(text: tk.Text, limit: int, refused: Callable[[], None]) -> None:
    """Refuse any insertion that would take ``text`` past ``limit`` characters.

    The widget's Tcl command is renamed and replaced by a Tcl procedure that checks ``insert`` and
    ``replace`` (what typing, pasting, undo's inverse and the editor's own edits all go through),
    so Tk's class bindings are bounded too. It is Tcl, not a Python callback, so the widget's own
    errors (``index sel.first`` with no selection, which Tk's bindings ``catch``) stay Tcl errors.
    """
    inner = f"{text}.bounded"
    notify = text.register(refused)
    guard = r"""
        set op [lindex $args 0]
        if {$op eq "insert" || $op eq "replace"} {
            if {$op eq "insert"} {
                set pieces [lrange $args 2 end]
                set removed 0
            } else {
                set pieces [lrange $args 3 end]
                set removed [INNER count -chars [lindex $args 1] [lindex $args 2]]
            }
            set added 0
            foreach {chars tags} $pieces {incr added [string length $chars]}
            set size [INNER count -chars 1.0 end-1c]
            if {$size - $removed + $added > LIMIT} {
                NOTIFY
                return ""
            }
        }
        uplevel 1 [linsert $args 0 INNER]
    """
    body = guard.replace("INNER", inner).replace("LIMIT", str(limit)).replace("NOTIFY", notify)
    text.tk.call("rename", str(text), inner)
    text.tk.call("proc", str(text), "args", body)


class FileDialog:
    """Open and Save As: a modal dialog that lists the documents folder, and only that folder.

    The file name field takes a name, never a path: a name with a folder in it (``/root``,
    ``../secret``, another episode's ``/tmp/.../Documents``), or ``.``/``..``, is refused with a
    message and the listing is left as it was. ``result`` is the chosen path's text, or "".
    """

    def __init__(self, editor: Editor, *, title: str, initial: str) -> None:
        self.editor = editor
        self.title = title
        self.saving = title != "Open"
        self.result = ""
        top = self.top = tk.Toplevel(editor.root, bd=1, relief="raised")
        top.title(title)
        top.transient(editor.root)
        top.geometry(f"+{max(0, (editor.root.winfo_width() - 460) // 2)}+140")
        tk.Label(top, text=title, anchor="w", padx=8, pady=3, bg=TITLE_BG, fg="white", font=(*UI_FONT, "bold")).grid(
            row=0, column=0, columnspan=2, sticky="ew"
        )
        tk.Label(top, text="Documents", anchor="w", padx=8).grid(row=1, column=0, columnspan=2, sticky="ew", pady=4)
        self.listing = tk.Listbox(top, width=40, height=10, exportselection=False, activestyle="none")
        self.listing.grid(row=2, column=0, columnspan=2, sticky="ew", padx=8)
        tk.Label(top, text="File name:", underline=5).grid(row=3, column=0, sticky="w", padx=8, pady=6)
        self.name = tk.StringVar(value=initial)
        self.entry = tk.Entry(top, textvariable=self.name, width=30)
        self.entry.grid(row=3, column=1, sticky="ew", padx=(0, 8), pady=6)
        self.message = tk.Label(top, anchor="w", fg="#a00000", padx=8)
        self.message.grid(row=4, column=0, columnspan=2, sticky="ew")
        buttons = tk.Frame(top)
        buttons.grid(row=5, column=0, columnspan=2, sticky="e", padx=8, pady=6)
        tk.Button(buttons, text="Save" if self.saving else "Open", width=9, command=self.accept).pack(side="left")
        tk.Button(buttons, text="Cancel", width=9, command=self.close).pack(side="left", padx=(6, 0))
        self.files = self.list_documents()
        for name in self.files:
            self.listing.insert("end", name)
        self.listing.bind("<<ListboxSelect>>", lambda _e: self.picked())
        self.listing.bind("<Double-Button-1>", lambda _e: self.accept())
        for widget in (top, self.entry, self.listing):
            widget.bind("<Return>", then_break(self.accept))
            widget.bind("<Linefeed>", then_break(self.accept))  # what typing "\n" presses
            widget.bind("<Escape>", then_break(self.close))
        top.bind("<Alt-n>", then_break(self.entry.focus_set))
        top.protocol("WM_DELETE_WINDOW", self.close)
        editor.file_dialog = self
        self.entry.select_range(0, "end")
        self.entry.icursor("end")
        editor.focus(self.entry)
        top.wait_visibility()
        top.grab_set()
        top.wait_window()

    def list_documents(self) -> list[str]:
        """The regular files of the documents folder (the first 200, by name)."""
        try:
            paths = sorted(self.editor.documents.iterdir())
        except OSError:
            return []
        return [path.name for path in paths if path.is_file() and not path.is_symlink()][:MAX_LISTED]

    def picked(self) -> None:
        chosen = self.listing.index("active") if self.listing.selection_includes("active") else None
        if chosen is not None:
            self.name.set(self.listing.get(chosen))

    def accept(self) -> None:
        name = self.name.get().strip()
        if not name:
            self.message.configure(text="Type a file name, or pick one from the list.")
            return
        if "/" in name or "\\" in name or name in (".", "..") or name.startswith("~"):
            self.refuse("Only the Documents folder is available: type a file name, not a path.")
            return
        path = self.editor.documents / name
        if not self.saving and name not in self.files:
            self.refuse(f"There is no {name} in Documents.")
            return
        if self.saving and path.exists():
            replace = messagebox.askyesno(APP, f"{name} already exists.\nDo you want to replace it?", parent=self.top)
            if not replace:
                return
        self.result = str(path)
        self.close()

    def refuse(self, message: str) -> None:
        """Say why, and select the file name so that typing replaces it; the listing does not change."""
        self.message.configure(text=message)
        self.entry.select_range(0, "end")
        self.entry.icursor("end")

    def close(self) -> None:
        if self.editor.file_dialog is self:
            self.editor.file_dialog = None
        self.top.grab_release()
        self.top.destroy()
        self.editor.focus(self.editor.text)

    def describe(self) -> dict[str, Any]:
        """What the dialog shows: its title, folder listing, file name field and message."""
        return {
            "title": self.title,
            "listing": list(self.listing.get(0, "end")),
            "name": self.name.get(),
            "message": self.message.cget("text"),
        }


class FindDialog:
    """Find (Ctrl+F) and Find and Replace (Ctrl+H), like Notepad's: non-modal, one at a time."""

    def __init__(self, editor: Editor, *, replace: bool) -> None:
        self.editor = editor
        self.text = editor.text
        self.replacing = replace
        title = "Replace" if replace else "Find"
        top = self.top = tk.Toplevel(editor.root, bd=1, relief="raised")
        top.title(title)
        top.transient(editor.root)
        width = 440
        top.geometry(f"+{(editor.root.winfo_width() - width) // 2}+160")
        tk.Label(top, text=title, anchor="w", padx=8, pady=3, bg=TITLE_BG, fg="white", font=(*UI_FONT, "bold")).grid(
            row=0, column=0, columnspan=3, sticky="ew"
        )
        self.what = tk.StringVar()
        self.with_ = tk.StringVar()
        self.case = tk.BooleanVar(value=False)
        tk.Label(top, text="Find what:", underline=3).grid(row=1, column=0, sticky="w", padx=8, pady=6)
        self.what_entry = tk.Entry(top, textvariable=self.what, width=28)
        self.what_entry.grid(row=1, column=1, sticky="ew", pady=6)
        row = 2
        if replace:
            tk.Label(top, text="Replace with:", underline=2).grid(row=2, column=0, sticky="w", padx=8)
            self.with_entry = tk.Entry(top, textvariable=self.with_, width=28)
            self.with_entry.grid(row=2, column=1, sticky="ew")
            row = 3
        tk.Checkbutton(top, text="Match case", underline=6, variable=self.case).grid(
            row=row, column=0, columnspan=2, sticky="w", padx=4, pady=4
        )
        self.message = tk.Label(top, anchor="w", fg="#444444")
        self.message.grid(row=row + 1, column=0, columnspan=2, sticky="ew", padx=8, pady=(0, 6))
        buttons = tk.Frame(top)
        buttons.grid(row=1, column=2, rowspan=row + 1, sticky="n", padx=8, pady=6)
        actions = [("Find Next", 0, self.find_next)]
        if replace:
            actions += [("Replace", 0, self.replace_one), ("Replace All", 8, self.replace_all)]
        actions.append(("Cancel", -1, self.close))
        for label, under, command in actions:
            tk.Button(buttons, text=label, underline=under, width=11, command=command).pack(fill="x", pady=2)
        keys = {"<Alt-n>": self.find_next, "<Return>": self.find_next, "<Linefeed>": self.find_next}
        keys["<Escape>"] = self.close
        keys["<Alt-c>"] = lambda: self.case.set(not self.case.get())
        keys["<Alt-d>"] = self.what_entry.focus_set
        if replace:
            keys.update(
                {"<Alt-r>": self.replace_one, "<Alt-a>": self.replace_all, "<Alt-p>": self.with_entry.focus_set}
            )
        for sequence, command in keys.items():
            top.bind(sequence, then_break(command))
        selected = self.text.tag_ranges("sel")
        if selected:
            first = self.text.get(selected[0], selected[1])
            if "\n" not in first:
                self.what.set(first)
        self.what_entry.select_range(0, "end")
        editor.focus(self.what_entry)

    def _search(self, start: str, *, stop: str = "end") -> tuple[str, str] | None:
        pattern = self.what.get()
        if not pattern:
            return None
        count = tk.IntVar()
        found = self.text.search(pattern, start, stopindex=stop, nocase=not self.case.get(), count=count)
        return (found, f"{found}+{count.get()}c") if found else None

    def find_next(self) -> None:
        selected = self.text.tag_ranges("sel")
        start = str(selected[1]) if selected else self.text.index("insert")
        match = self._search(start) or self._search("1.0", stop=start)
        if match is None:
            self.message.configure(text=f'Cannot find "{self.what.get()}"')
            return
        self.text.tag_remove("sel", "1.0", "end")
        self.text.tag_add("sel", *match)
        self.text.mark_set("insert", match[1])
        self.text.see(match[0])
        self.message.configure(text="")
        self.editor.refresh_status()

    def _selection_matches(self) -> tuple[str, str] | None:
        selected = self.text.tag_ranges("sel")
        if not selected:
            return None
        found = self.text.get(selected[0], selected[1])
        wanted = self.what.get()
        same = found == wanted if self.case.get() else found.lower() == wanted.lower()
        return (str(selected[0]), str(selected[1])) if same and wanted else None

    def replace_one(self) -> None:
        match = self._selection_matches()
        if match is not None:
            self.text.edit_separator()
            self.text.delete(*match)
            self.text.insert(match[0], self.with_.get())
            self.text.mark_set("insert", f"{match[0]}+{len(self.with_.get())}c")
            self.text.tag_remove("sel", "1.0", "end")
        self.find_next()

    def replace_all(self) -> None:
        replacement = self.with_.get()
        count = 0
        self.text.edit_separator()
        start = "1.0"
        while (match := self._search(start)) is not None:
            self.text.delete(*match)
            self.text.insert(match[0], replacement)
            start = f"{match[0]}+{len(replacement)}c"
            count += 1
        self.text.edit_separator()
        self.message.configure(text=f"Replaced {count} occurrence{'s' * (count != 1)}")
        self.editor.refresh_status(f"Replaced {count}")

    def close(self) -> None:
        self.top.destroy()
        if self.editor.find_dialog is self:
            self.editor.find_dialog = None
        self.editor.focus(self.text)


class Control:
    """The editor's end of the server's control socket (JSON lines)."""

    def __init__(self, editor: Editor, path: str) -> None:
        self.editor = editor
        self.root = editor.root
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = b""
        self.root.tk.createfilehandler(self.sock, tk.READABLE, self._readable)
        # Windows appearing, moving, being exposed or taking the focus: what a sync waits to see end.
        self.changes = 0
        for sequence in ("<Map>", "<Unmap>", "<Visibility>", "<Configure>", "<Expose>", "<FocusIn>", "<FocusOut>"):
            self.root.bind_all(sequence, self._changed, add="+")

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            self.quit()

    def quit(self) -> None:
        self.root.tk.deletefilehandler(self.sock)
        self.root.destroy()

    def _readable(self, _sock: object, _mask: int) -> None:
        try:
            chunk = self.sock.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.quit()  # the server went away: so does the editor (and then its display)
            return
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            request = json.loads(line)
            if request["op"] == "sync":
                self.sync(functools.partial(self.answer_sync, request["id"]))
            elif request["op"] == "state":
                editor = self.editor
                dialog = editor.find_dialog.top.title() if editor.find_dialog is not None else None
                self.send(
                    {
                        "id": request["id"],
                        "title": self.root.title(),
                        "file": editor.path.name if editor.path else None,
                        "modified": editor.modified,
                        "text": editor.content(),
                        "find_dialog": dialog,
                        "file_dialog": editor.file_dialog.describe() if editor.file_dialog is not None else None,
                        "max_chars": editor.max_chars,
                        "focus": str(self.root.tk.call("focus")),
                    }
                )

    def answer_sync(self, request: int) -> None:
        refused, self.editor.refused = self.editor.refused, 0
        self.send({"id": request, "ok": True, "refused": refused})

    def _changed(self, _event: object) -> None:
        self.changes += 1

    def sync(self, answer: Callable[[], None]) -> None:
        """Answer once every input event the X server queued before now is handled and drawn.

        A round trip pulls queued input into Tk; an idle callback runs only once it is handled
        (inside a dialog's own event loop too). Each pass draws what is pending and makes a round
        trip (our requests, drawing and focus, reach the server; its answers come back as events).
        Passes go on until a round trip brought back no window mapped, configured, exposed or
        focused (at least two passes, at most eight), and no widget given the focus is still waiting
        for it (:meth:`Editor.focus`: a new dialog's field gets it only once it is visible, an
        event that can come milliseconds later; keys sent before would reach the document). While
        one waits, passes run a millisecond apart, at most 100 ms (the server's settle timeout too).
        """
        self.root.winfo_pointerxy()
        mark: list[int | None] = [None]
        passes = [0]
        started = time.monotonic()

        def drawn() -> None:
            quiet = mark[0] == self.changes  # the events the last round trip brought back are handled by now
            self.root.update_idletasks()
            self.root.winfo_pointerxy()
            passes[0] += 1
            if (passes[0] < 2 or not quiet) and passes[0] < 8:
                mark[0] = self.changes
                self.root.after_idle(drawn)
            elif self.editor.focus_pending() and time.monotonic() - started < 0.1:
                mark[0] = self.changes
                self.root.after(1, drawn)
            else:
                answer()

        self.root.after_idle(drawn)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--documents", required=True, type=Path, help="the folder documents are opened from and saved to"
    )
    parser.add_argument("--open", help="a document of that folder to open at start")
    parser.add_argument("--text", type=Path, help="a file whose text starts as an unsaved new document")
    parser.add_argument("--control", help="the server's control socket")
    parser.add_argument("--width", type=int, default=0)
    parser.add_argument("--height", type=int, default=0)
    parser.add_argument("--max-chars", type=int, default=MAX_CHARS, help="the most characters a document may hold")
    args = parser.parse_args(argv)

    root = tk.Tk(baseName="editor", className="Editor")
    # No Tk send: deleting the command also unregisters the application from the display, so
    # another client's `send editor {...}` finds nothing to run its script in.
    root.tk.call("rename", "send", "")
    width = args.width or root.winfo_screenwidth()
    height = args.height or root.winfo_screenheight()
    editor = Editor(root, args.documents, width, height, args.max_chars)
    if args.open:
        path = editor.documents / args.open
        editor.load(path, path.read_text(encoding="utf-8") if path.exists() else "")
    elif args.text:
        editor.load(None, args.text.read_text(encoding="utf-8"))
    editor.text.focus_force()
    if args.control:
        root.wait_visibility(root)
        control = Control(editor, args.control)
        control.sync(lambda: control.send({"event": "ready", "pid": os.getpid()}))
    root.mainloop()


if __name__ == "__main__":
    main()
