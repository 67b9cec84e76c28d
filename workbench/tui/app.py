"""The terminal UI: the app owns what outlives a tab or a kernel switch (the catalog, the job
queue, the results of this session, each kernel's options) and opens the main screen. Layout is
in `screens/` and `widgets/`, styles in `app.tcss`, one pane per tab in `tabs/`, keys in
`keymap`; the work is `app.actions`, the same calls the CLI makes, in child processes.
Nothing here imports torch or triton, and the tabs load after the kernel list has painted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from textual import work
from textual.app import App
from textual.command import Provider
from textual.message import Message

from workbench.app.actions import Selection
from workbench.run import machine
from workbench.tui.catalog import find_kernels
from workbench.tui.jobqueue import QUEUED, JobQueue, Task
from workbench.tui.screens.main import MainScreen
from workbench.views.finished import Finished


def _palette() -> type[Provider]:
    from workbench.tui.commands import WorkbenchCommands

    return WorkbenchCommands


class TaskChanged(Message):
    """A job's event, or its new state (event None), from the job queue's thread."""

    def __init__(self, task: Task, event: dict | None) -> None:
        super().__init__()
        self.task = task
        self.event = event


class WorkbenchApp(App[None]):
    TITLE = "triton-workbench"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {_palette}

    def __init__(self, paths: Sequence[str] = ()) -> None:
        super().__init__()
        self.paths = list(paths)
        self.catalog = find_kernels(self.paths)
        self.gpu = machine.has_gpu()
        self.results: dict[tuple[str, str], Finished] = {}
        """(kernel, tab) -> the newest result there: this session's, or read from the store."""
        self.selections: dict[str, Selection] = {}
        self.queue = JobQueue(self._from_queue)

    def get_default_screen(self) -> MainScreen:
        return MainScreen()

    def on_mount(self) -> None:
        self.sub_title = f"{machine.mode()} mode"

    def on_app_focus(self) -> None:
        """Back in the terminal after editing a kernel: mark what it made stale at once."""
        if isinstance(self.screen, MainScreen) and self.screen.ready:
            self.screen.tick()

    async def action_quit(self) -> None:
        """q: with a job running, ask first; then cancel the jobs, wait for their children and
        exit (the runs are kept as cancelled, as the CLI keeps them on Ctrl-C)."""
        if self.queue.running is None:
            self.exit()
            return
        from workbench.tui.screens.confirm import Confirm

        queued = sum(t.state == QUEUED for t in self.queue.tasks)
        jobs = "1 job running" + (f", {queued} queued" if queued else "")
        question = f"{jobs}: quit and cancel {'them' if queued else 'it'}?"
        self.push_screen(Confirm(question), self._quit_answered)

    def _quit_answered(self, yes: bool | None) -> None:
        if yes:
            self.stop_jobs_and_exit()

    @work(exclusive=True, group="quit")
    async def stop_jobs_and_exit(self) -> None:
        self.notify("cancelling the jobs ...")
        await asyncio.to_thread(self.queue.close)
        self.exit()

    def on_unmount(self) -> None:
        self.queue.close()  # however the app ends, no child process outlives it

    def _from_queue(self, task: Task, event: dict | None) -> None:
        """The queue's news, from any thread: queued in order, handled on the app's own, where a
        fault of the UI shows as any handler's would (the queue's thread never waits on it)."""
        self.post_message(TaskChanged(task, event))

    def on_task_changed(self, message: TaskChanged) -> None:
        screen = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        if screen is not None and screen.is_mounted:
            screen.task_changed(message.task, message.event)


def run_app(paths: Sequence[str] = ()) -> int:
    """Run the UI; its exit status: 1 when it crashed (Textual has shown the traceback)."""
    app = WorkbenchApp(paths)
    app.run()
    return app.return_code or 0
