"""The job bar: the running job's progress (steps done of total, elapsed, what it is on), how
many wait behind it, and how the last one ended. One line: what does not fit is cut at a word
boundary with an ellipsis (`j` shows every job in full)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.events import Resize
from textual.widgets import ProgressBar, Static

from workbench.tui.jobqueue import JobQueue
from workbench.tui.widgets.plain import PlainStatic, clipped


class JobBar(Horizontal):
    def compose(self) -> ComposeResult:
        yield ProgressBar(id="job-progress", total=1, show_eta=False, show_percentage=False)
        yield PlainStatic(id="job-text")

    def show(self, queue: JobQueue) -> None:
        self.queue = queue
        running, waiting = queue.running, queue.queued
        bar = self.query_one(ProgressBar)
        # the hints and the count first: a long case label is what the bar's width cuts
        text = Text("x cancels  " if running is not None else "", "dim")
        if waiting:
            text.append(f"{len(waiting)} queued (j)  ", "yellow")
        if running is not None:
            bar.update(total=running.total or None, progress=running.done)
            text.append(running.describe(), "bold")
        else:
            ended = [t for t in queue.tasks if t.ended_at is not None]
            last = max(ended, key=lambda t: t.ended_at or 0.0, default=None)
            bar.update(total=1, progress=1 if last else 0)
            text.append(f"last: {last.describe()}" if last else "no job yet", "dim")
        if waiting:
            names = ", ".join(f"{t.action} {t.kernel.name}" for t in waiting[:3])
            more = f" and {len(waiting) - 3} more" if len(waiting) > 3 else ""
            text.append(f"  · queued: {names}{more}")
        line = self.query_one("#job-text", Static)
        line.update(clipped(text, line.size.width))

    def on_resize(self, event: Resize) -> None:
        if getattr(self, "queue", None) is not None:
            self.call_after_refresh(self.show, self.queue)  # once the line has its new width
