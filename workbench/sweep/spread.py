"""Run a sweep from the parent (no torch here): one worker per GPU (one on a host without a GPU,
or without --gpus), each a "sweep-worker" job with its own CUDA_VISIBLE_DEVICES and a share of
the host's cores, all pulling from one work queue (`sweep.queue`) over their stdin. A worker that
dies is started again (RETRIES times per GPU) and what it held goes to whoever asks next. The
sweep keeps its own run folder: sweep.json as rows land (what --resume continues), sweep.png, and
one "sweep" run in the store; each worker's job is a "sweep-worker" run with its log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from workbench.catalog.discovery import KernelEntry
from workbench.run import jobs, machine, store
from workbench.run.params import SweepParams
from workbench.runtime.errors import Problem, WorkbenchError, fail
from workbench.sweep import plot
from workbench.sweep.analysis import RESULT_FILE
from workbench.sweep.queue import WorkQueue
from workbench.sweep.result import SweepResult

RETRIES = 5
"""Workers started again on one GPU after one died there, before that GPU is given up."""
SAVE_S = 1.0
"""How often sweep.json is written while rows land (each write holds every row so far)."""
Start = Callable[[str, threading.Event], jobs.Outcome]
"""Run one worker named so to its end (stopped early when the event is set)."""


def all_gpus() -> list[str]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise fail("no-gpus", "nvidia-smi is not on PATH", "name the GPUs: --gpus 0,1")
    out = subprocess.run(
        [smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True
    )
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def resume_file(kernel: str) -> str:
    """The newest sweep.json of `kernel` under reports/runs: what --resume continues. A file
    that does not read as a sweep (damaged, edited) is passed over, and named when no sweep of
    the kernel is left to resume."""
    found, unread = [], []
    for path in (store.reports_dir() / "runs").glob(f"*/{RESULT_FILE}"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            unread.append(path)
        elif data.get("kernel") == kernel:
            found.append(path)
    if found:
        return str(max(found, key=lambda p: p.stat().st_mtime))
    passed = f"; {len(unread)} sweep file(s) do not read as one, e.g. {unread[0]}" if unread else ""
    raise fail(
        "bad-resume",
        f"no earlier sweep of {kernel} to resume{passed}",
        "run it without --resume: a fresh sweep",
        source="usage",
    )


def run_sweep(
    entry: KernelEntry,
    params: SweepParams,
    gpus: list[str],
    on_event: Callable[[dict], None] | None = None,
    cancel: threading.Event | None = None,
    timeout: float = 3600.0,
) -> tuple[SweepResult | None, list[jobs.Outcome]]:
    """(the sweep's result or None, the outcomes of its workers and, last, its own)."""
    runner = Runner(entry, params, on_event, cancel, timeout)
    cores = os.cpu_count() or 1
    share = replace(params, jobs=params.jobs or max(1, cores // max(1, len(gpus))))

    def start(gpu: str | None) -> Start:
        def run(worker: str, stop: threading.Event) -> jobs.Outcome:
            feed = jobs.Feed()
            runner.link(worker, feed.send)
            wrap = ["env", f"CUDA_VISIBLE_DEVICES={gpu}"] if gpu is not None else []
            job = jobs.Job("sweep-worker", entry, share, timeout)
            return jobs.run_job(job, lambda e: runner.event(worker, e), stop, wrap, feed=feed)

        return run

    slots = {f"gpu{g}": start(g) for g in gpus} or {"local": start(None)}
    return runner.run(slots)


class Runner:
    """One sweep over workers, whoever starts them (processes here, or Ray actors): passes their
    events to the queue and its answers back, starts a worker again where one died, keeps
    sweep.json as rows land, and at the end plots and records the sweep."""

    def __init__(
        self,
        entry: KernelEntry,
        params: SweepParams,
        on_event: Callable[[dict], None] | None,
        cancel: threading.Event | None,
        timeout: float,
    ):
        self.entry, self.params, self.on_event, self.timeout = entry, params, on_event, timeout
        self.cancel = cancel or threading.Event()
        self.queue = WorkQueue(params.config_timeout)
        self.run_id = store.new_run_id()
        self.folder, self.store_problem = jobs.prepare_run_dir(self.run_id)
        self.links: dict[str, Callable[[dict], object]] = {}
        self.stops: list[threading.Event] = []
        self.outcomes: list[jobs.Outcome] = []
        self.lock = threading.Lock()
        self.unsaved = threading.Event()
        self.drawing: tuple[threading.Thread, dict] | None = None
        """The plot begun as the last row landed, with what it drew (`plot.key`) and its path."""

    def link(self, worker: str, send: Callable[[dict], object]) -> None:
        """How to reach `worker` (before it can speak)."""
        with self.lock:
            self.links[worker] = send

    def event(self, worker: str, event: dict) -> None:
        """One event of `worker`'s, in the thread that follows it."""
        self._send(self.queue.on_event(worker, event))
        kind = event.get("event")
        if kind in ("config", "triton", "searched"):
            self.unsaved.set()
            if self.params.time and self.queue.finished:
                self._draw()
        if self.on_event is None:
            return
        if kind == "config":
            self.on_event({"event": "config", "row": {**event["row"], "worker": worker}})
            self.on_event({**self.queue.progress(), "case": event["row"]["label"]})
        elif kind == "config-timeout":
            self.on_event(event)

    def run(self, slots: dict[str, Start]) -> tuple[SweepResult | None, list[jobs.Outcome]]:
        """Every slot (a GPU) runs workers until the queue is done; then the sweep's end."""
        threads = [threading.Thread(target=self._slot, args=item) for item in slots.items()]
        for thread in threads:  # all at once: each worker's imports overlap the others'
            thread.start()
        if self.params.time and machine.has_gpu():  # a timed sweep ends with its plot
            plot.prefetch()
        saved = time.monotonic()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
                if self.cancel.is_set():
                    for stop in list(self.stops):
                        stop.set()
                if self.unsaved.is_set() and time.monotonic() - saved >= SAVE_S:
                    self._save()
                    saved = time.monotonic()
        return self._end()

    def _slot(self, name: str, start: Start) -> None:
        for attempt in range(RETRIES + 1):
            if self.cancel.is_set() or (attempt and not self.queue.needs_worker()):
                return
            worker = name if attempt == 0 else f"{name}.{attempt}"
            stop = threading.Event()
            self.stops.append(stop)
            outcome = start(worker, stop)
            self.outcomes.append(outcome)
            self._send(self.queue.ended(worker, outcome.status, outcome.problem))
            if outcome.status in ("ok", "cancelled"):
                return

    def _send(self, messages: list[tuple[str, dict]]) -> None:
        for worker, message in messages:
            with self.lock:
                send = self.links.get(worker)
            if send is not None:
                send(message)

    def _save(self) -> None:
        """sweep.json as it stands (rows in plan order): a cancel or a kill keeps it, but for
        the last second's rows (a write per row would hold every row so far, each time)."""
        self.unsaved.clear()
        record = self.queue.record()
        if record is None:
            return
        text = json.dumps(record.record(), default=str)
        tmp = Path(self.folder) / f"{RESULT_FILE}.tmp"
        with self.lock:
            try:
                tmp.write_text(text)
                tmp.replace(Path(self.folder) / RESULT_FILE)
            except OSError as exc:  # the disk filled: the rows still arrive and are printed
                self.store_problem = self.store_problem or store.write_fault(tmp, exc).problem

    def _end(self) -> tuple[SweepResult | None, list[jobs.Outcome]]:
        failed = self.queue.failed
        if failed is not None and failed.source == "usage":  # mixed GPU models
            raise WorkbenchError(failed)
        result = self.queue.result()
        if result is not None and not result.rows and failed is not None:
            result = None
        status, problem = "ok", None
        if self.cancel.is_set():
            status, problem = "cancelled", Problem("cancelled", "the sweep was cancelled", "")
        elif result is None:
            status = "error"  # the workers' outcomes say why
        elif not result.complete and failed is None:
            left = self.queue.progress()
            problem = Problem(
                "workers-lost",
                f"{left['total'] - left['done']} config(s) not run: every worker ended before "
                "the queue did",
                "read the sweep-worker runs' logs (history), then run it again with --resume",
            )
        if result is not None:
            self._save()
            try:
                result.plot = self._plot(result)
            except OSError as exc:  # the disk filled during the sweep: the result is printed
                result.store_problem = store.write_fault(Path(self.folder), exc).problem.to_dict()
        job = jobs.Job("sweep", self.entry, self.params, self.timeout)
        outcome = jobs.Outcome(job, self.run_id, self.folder, status, problem=problem)
        outcome.result = result.to_dict() if result else None
        outcome.seconds = result.timings.get("total_s", 0.0) if result else 0.0
        self._record(outcome, result)
        return result, [*self.outcomes, outcome]

    def _draw(self) -> None:
        """Begin the plot once every row is in, while the workers end (0.3 s on a GPU host, the
        larger part of a short sweep's end)."""
        with self.lock:
            if self.drawing is not None:
                return
            result = self.queue.result()
            drawn: dict = {"key": result and plot.key(result)}
            self.drawing = (threading.Thread(target=self._png, args=(result, drawn)), drawn)
        self.drawing[0].start()

    def _png(self, result: SweepResult | None, drawn: dict) -> None:
        try:
            drawn["path"] = plot.png(result, Path(self.folder) / "sweep.png") if result else None
        except OSError:  # said by the plot drawn again at the end
            drawn["key"] = None

    def _plot(self, result: SweepResult) -> str | None:
        """The sweep's PNG: the one begun as the last row landed where the result draws the same
        (a FLOP count landing after it changes the losers' reasons), else drawn now."""
        if self.drawing is not None:
            thread, drawn = self.drawing
            thread.join()
            if "path" in drawn and drawn["key"] == plot.key(result):  # else it failed: again
                return drawn["path"]
        return plot.png(result, Path(self.folder) / "sweep.png")

    def _record(self, outcome: jobs.Outcome, result: SweepResult | None) -> None:
        workers = [o.run_id for o in self.outcomes]
        problem = self.store_problem or store.record_run(
            outcome.run_id,
            "sweep",
            self.entry.name,
            file=self.entry.file,
            params=replace(self.params, workers=workers).to_dict(),
            status="partial" if result and not result.complete else outcome.status,
            seconds=outcome.seconds,
            mode=result.mode if result else machine.mode(),
            summary=result.summary if result else None,
            result=outcome.result,
            problem=outcome.problem.to_dict() if outcome.problem else None,
            artifacts=self.folder,
        )
        if problem:  # sweep.json is in the run folder either way
            outcome.store_problem = problem
            if result is not None:
                result.store_problem = problem.to_dict()
                outcome.result = result.to_dict()
