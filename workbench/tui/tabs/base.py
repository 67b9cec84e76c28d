"""What every tab is: a `Pane` shows one kernel's result of one kind, under a head that says
whose result it is, from which run, how old, whether the kernel's file changed since, and every
problem its job met (cause, file:line, remedy, worded as the CLI prints them). A pane renders;
it never starts work (the screen does, through the app's job queue).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CursorType

from workbench.catalog.discovery import KernelEntry
from workbench.catalog.freshness import changed_since
from workbench.run.store import RESULT_ERRORS, UNREADABLE
from workbench.runtime.errors import Problem
from workbench.tui.jobqueue import QUEUED, RUNNING, Task
from workbench.tui.widgets.plain import PlainStatic, PlainTable
from workbench.views.cache import age
from workbench.views.finished import Finished, problem_text


@dataclass
class View:
    """What a tab is asked to show for the selected kernel."""

    entry: KernelEntry
    finished: Finished | None = None
    """The newest result of this kernel for the tab: this session's, else the store's."""
    task: Task | None = None
    """A job of this kernel for the tab, running or queued."""
    loading: bool = False
    """The store is being read for it."""
    gpu: bool = True
    key: str = ""
    """The key that runs the tab's action."""
    action: str | None = None


class StartAction(Message):
    """A pane asks for an action on its kernel (the screen queues it like a key would)."""

    def __init__(self, action: str, extra: dict) -> None:
        super().__init__()
        self.action = action
        self.extra = extra


class Pane(Vertical):
    """A tab's content: a head (`.head`) and the body the subclass composes."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="head-box", can_focus=False):  # a long head scrolls
            yield PlainStatic(classes="head")
        yield from self.body()

    def body(self) -> ComposeResult:
        yield from ()

    def clear(self) -> None:
        """Empty the body (no result for this kernel): its tables and texts, not the head."""
        for table in self.query(DataTable):
            table.clear()
        for text in self.query(Static).exclude(".head"):
            text.update("")

    def render_result(self, result: Any, finished: Finished) -> None:
        """Fill the body with a finished (or stored) result."""

    def add_event(self, event: dict) -> None:
        """A live event of this pane's running job (rows as they land)."""

    def empty_text(self, view: View) -> str:
        """The head when the kernel has no result for this tab."""
        return nothing_yet(view)

    def show(self, view: View) -> None:
        self.view = view
        self.refresh_head()
        running = view.task is not None and view.task.state in (RUNNING, QUEUED)
        self.clear()
        if running and view.task is not None:
            for event in list(view.task.events):
                self.add_event(event)
        elif view.finished is not None and view.finished.result is not None:
            try:
                self.render_result(view.finished.result, view.finished)
            except RESULT_ERRORS as exc:
                if not view.finished.stored:
                    raise  # a result made in this session: a fault of the workbench, shown as one
                self.show_unreadable(view, exc)

    def show_unreadable(self, view: View, exc: BaseException) -> None:
        """A stored result that read back typed but not as this tab renders it (edited, or of
        another version): the tab says so instead of half a table."""
        assert view.finished is not None
        done = view.finished
        self.clear()
        problem = Problem(
            "corrupt-result",
            f"the stored result of run {done.run_id} cannot be shown ({type(exc).__name__}: {exc})",
            f"run it again ({view.key}) for a fresh one",
            source="environment",
        )
        view.finished = replace(done, status=UNREADABLE, problems=[(UNREADABLE, problem)])
        self.refresh_head()

    def refresh_head(self) -> None:
        """Ages and the source-changed mark move with the clock."""
        view = getattr(self, "view", None)
        if view is not None:
            self.query_one(".head", Static).update(head_text(view, self.empty_text(view)))


def rows_table(table_id: str, headers: Sequence[str], cursor: CursorType = "row") -> DataTable:
    """A body's table, zebra-striped, its columns in place before it mounts."""
    table = PlainTable(id=table_id, zebra_stripes=True, cursor_type=cursor)
    table.add_columns(*headers)
    return table


STATUS_STYLE = {"ok": "green", "cancelled": "yellow"}
clock = time.time
"""Where ages are measured from (a snapshot test holds it still)."""


def head_text(view: View, empty: str) -> Text:
    now = clock()
    entry, done, task = view.entry, view.finished, view.task
    what = view.action or "result"
    text = Text()
    if task is not None and task.state == RUNNING:
        text.append(f"{what} of {entry.name}: running, {task.describe(now).split(': ', 1)[1]}")
        text.append("  (x cancels)", "dim")
        return text
    if task is not None and task.state == QUEUED:
        text.append(f"{what} of {entry.name}: queued", "yellow")
        text.append("  (j shows the queue, where it can be cancelled)", "dim")
        return text
    if done is None:
        if view.loading:
            return Text(f"reading the store for {entry.name} ...", "dim")
        return Text(empty, "dim")
    text.append(f"{done.action} of {done.kernel}", "bold")
    if done.run_id:
        text.append(f", {'stored run' if done.stored else 'run'} {done.run_id}")
    text.append(f", {age(now - done.started)} ago")
    if done.status != "ok":
        text.append(f"  [{done.status}]", STATUS_STYLE.get(done.status, "bold red"))
    if done.file and done.file != entry.file:
        text.append(f"\nfrom {done.file}, another kernel of this name", "yellow")
    if changed_since(entry.file, done.started):
        text.append(
            f"\n{entry.file.rsplit('/', 1)[-1]} changed since this result: "
            f"run it again ({view.key})",
            "bold yellow",
        )
    for line in done.lines:
        text.append("\n" + line)
    for prefix, problem in done.problems:
        text.append("\n" + problem_text(prefix, problem), "red")
    return text


def nothing_yet(view: View) -> str:
    name = view.entry.name
    if view.action is None:
        return f"nothing stored for {name} yet"
    if not view.gpu and view.action in ("bench", "profile"):
        return (
            f"no {view.action} of {name} stored; {view.action} needs a CUDA GPU and this machine "
            f"has none: run it on a GPU host (the store travels with reports/)"
        )
    return f"no {view.action} of {name} yet: {view.key} runs it"
