"""The app's jobs: one runs at a time on a thread of its own while the others wait in order, so a
job outlives the tab and the kernel it was started from; each keeps its progress (steps done of
total, elapsed) and can be cancelled, running or queued. No Textual here: the app passes a
callback, which is called on the queue's thread (the app hops to its own with call_from_thread).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from workbench.app.actions import RUNNERS, Selection
from workbench.catalog.discovery import KernelEntry
from workbench.run.kinds import COMMANDS
from workbench.views.finished import Finished, crashed

QUEUED, RUNNING, DONE, CANCELLED = "queued", "running", "done", "cancelled"
CLOSE_WAIT_S = 30.0
"""How long quitting waits for a cancelled job to end: its child is killed at once, then the run
is written to the store."""


@dataclass
class Task:
    action: str
    kernel: KernelEntry
    selection: Selection
    extra: dict = field(default_factory=dict)
    """Keyword arguments of the action's runner beyond the selection (a profile's case and pin)."""
    id: int = 0
    state: str = QUEUED
    done: int = 0
    total: int = 0
    step: str = ""
    """What it is on now: the case or config of the last progress event, a profiler phase."""
    queued_at: float = field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    events: list[dict] = field(default_factory=list)
    finished: Finished | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def unit(self) -> str:
        return COMMANDS[self.action].unit

    def elapsed(self, now: float | None = None) -> float:
        if self.started_at is None:
            return 0.0
        return (self.ended_at or now or time.time()) - self.started_at

    def describe(self, now: float | None = None) -> str:
        """ "check vector_add: 3/12 cases, 4.2 s, float16 (4096,)" as the job bar shows it."""
        head = f"{self.action} {self.kernel.name}"
        if self.state == QUEUED:
            return f"{head}: queued"
        count = f"{self.done}/{self.total} {self.unit}" if self.total else "starting"
        text = f"{head}: {count}, {self.elapsed(now):.1f} s"
        if self.state != RUNNING:
            status = self.finished.outcome if self.finished else self.state
            return f"{head}: {status} after {self.elapsed(now):.1f} s"
        return text + (f", {self.step}" if self.step else "")

    def absorb(self, event: dict) -> None:
        """Progress from one of its job's events."""
        self.events.append(event)
        kind = event.get("event")
        if kind == "progress" and event.get("total"):
            self.done, self.total = event.get("done", self.done), event["total"]
            self.step = str(event.get("case") or "")
        elif kind == "phase":  # a profiled child: warmup, range, done; or waiting for the GPU
            phase = event["phase"]
            if phase in PHASES:
                self.done, self.total = PHASES.index(phase) + 1, len(PHASES)
            self.step = str(event.get("why") or phase)
        elif kind == "tool":
            self.step = str(event.get("line", ""))[:60]


PHASES = ("warmup", "range", "done")
"""The profiled child's phases, as steps."""

Listener = Callable[[Task, dict | None], None]
"""Called with a task and its new event, or None when its state changed."""


class JobQueue:
    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.tasks: list[Task] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> Task | None:
        return next((t for t in self.tasks if t.state == RUNNING), None)

    @property
    def queued(self) -> list[Task]:
        return [t for t in self.tasks if t.state == QUEUED]

    def find(self, action: str, kernel: str) -> Task | None:
        """The running or queued task of this action on this kernel, if any."""
        return next(
            (
                t
                for t in self.tasks
                if t.action == action and t.kernel.name == kernel and t.state in (QUEUED, RUNNING)
            ),
            None,
        )

    def submit(self, task: Task) -> Task:
        with self._lock:
            task.id = next(self._ids)
            self.tasks.append(task)
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="jobs", daemon=True)
                self._thread.start()
            self._wake.notify()
        self.listener(task, None)
        return task

    def cancel(self, task: Task) -> None:
        """A queued task is dropped; a running one has its child process killed."""
        with self._lock:
            task.cancel.set()
            if task.state == QUEUED:
                task.state, task.ended_at = CANCELLED, time.time()
        self.listener(task, None)

    def close(self, timeout: float = CLOSE_WAIT_S) -> bool:
        """Cancel everything and wait for the running job to end, its child's processes killed
        and its run kept as cancelled (the app is quitting). False if it has not in `timeout`."""
        with self._lock:
            self._closed = True
            self._wake.notify()
            for t in self.tasks:
                t.cancel.set()
                if t.state == QUEUED:
                    t.state, t.ended_at = CANCELLED, time.time()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing runs or waits (tests and scripts); False on timeout."""
        return self._idle.wait(timeout)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._closed and not self.queued:
                    self._idle.set()
                    self._wake.wait()
                if self._closed:
                    self._idle.set()
                    return
                task = self.queued[0]
                task.state, task.started_at = RUNNING, time.time()
            self.listener(task, None)
            task.finished = self._run(task)
            with self._lock:
                task.state = CANCELLED if task.cancel.is_set() else DONE
                task.ended_at = time.time()
            self.listener(task, None)

    def _run(self, task: Task) -> Finished:
        def on_event(event: dict) -> None:
            task.absorb(event)
            self.listener(task, event)

        try:
            return RUNNERS[task.action](
                task.kernel, task.selection, on_event, task.cancel, **task.extra
            )
        except Exception as exc:  # noqa: BLE001 - shown in the tab as the workbench's own fault
            return crashed(task.action, task.kernel, exc, task.started_at or time.time())
