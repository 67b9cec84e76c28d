"""`j`: the job queue, newest first: what runs (steps done of total, elapsed), what waits, what
ended and how. `x` cancels the highlighted job, `enter` shows its kernel and tab."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Label

from workbench.tui.jobqueue import QUEUED, RUNNING, JobQueue, Task
from workbench.tui.screens.dialog import TableDialog


class JobsScreen(TableDialog[Task | None]):
    BINDINGS = [
        Binding("escape", "dismiss(None)", "close"),
        Binding("x", "cancel_job", "cancel job"),
    ]
    DIALOG_ID, TABLE_ID = "jobs", "jobs-table"
    HEADERS = ("#", "job", "kernel", "state", "progress")
    INTRO = "jobs, newest first (x cancels the highlighted one, enter shows it)"
    WRAPPED = {4: 1.0}

    def __init__(self, queue: JobQueue) -> None:
        super().__init__()
        self.queue = queue

    def below(self) -> ComposeResult:
        yield Label("no job yet: c, s, i, t, k start one on the selected kernel", id="jobs-none")

    def on_mount(self) -> None:
        """Refreshed twice a second (TableDialog's own on_mount fills it first)."""
        self.set_interval(0.5, self.fill)

    def tasks(self) -> list[Task]:
        return sorted(self.queue.tasks, key=lambda t: -t.id)

    def fill(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        rows = []
        for t in self.tasks():
            state = (
                t.finished.status if t.finished and t.state not in (QUEUED, RUNNING) else t.state
            )
            rows.append((str(t.id), t.action, t.kernel.name, state, t.describe().split(": ", 1)[1]))
        self.put_rows(rows)
        if table.row_count:
            table.move_cursor(row=min(max(row, 0), table.row_count - 1))
        self.query_one("#jobs-none").display = not table.row_count

    def highlighted(self) -> Task | None:
        tasks, row = self.tasks(), self.query_one(DataTable).cursor_row
        return tasks[row] if 0 <= row < len(tasks) else None

    def action_cancel_job(self) -> None:
        task = self.highlighted()
        if task is not None and task.state in (QUEUED, RUNNING):
            self.queue.cancel(task)
            self.fill()

    def on_data_table_row_selected(self) -> None:
        """enter: close, showing the job's kernel and tab."""
        self.dismiss(self.highlighted())
