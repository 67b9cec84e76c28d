"""Run a job in a child process and follow its JSON-lines events (parent side: no torch here).

The child is a plain command line, `python -m workbench.run.worker KIND ...`, the same one ncu and
nsys wrap. Whatever happens to it (an exception, a hang, a segfault, a CUDA fault) ends that job
with a Problem; the parent carries on.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from workbench.catalog.discovery import KernelEntry
from workbench.run import machine, store
from workbench.run.faults import problem_from_exit, timeout_problem
from workbench.runtime.errors import Problem, WorkbenchError

OnEvent = Callable[[dict], None]
ROOT = str(Path(__file__).resolve().parents[2])
_LIVE: set[subprocess.Popen] = set()
"""The job children running now. Each has a session of its own (so that a timeout kills its
whole group), so neither Ctrl-C nor a signal to this process reaches them: `stop_all` does."""
_STOPPED = threading.Event()
_INTERRUPTED = ("cancelled", "the workbench was interrupted and stopped the job", "run it again")


@dataclass
class Job:
    kind: str
    kernel: KernelEntry | None
    params: dict = field(default_factory=dict)
    timeout: float = 600.0


@dataclass
class Outcome:
    job: Job
    run_id: str
    run_dir: str
    status: str = "ok"
    """ok | error | timeout | crash | cancelled."""
    result: dict | None = None
    problem: Problem | None = None
    store_problem: Problem | None = None
    """Set when the result could not be saved; the result itself is still here."""
    seconds: float = 0.0
    log: str = ""

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "kind": self.job.kind,
            "kernel": self.job.kernel.name if self.job.kernel else None,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "result": self.result,
            "problem": self.problem.to_dict() if self.problem else None,
            "store_problem": self.store_problem.to_dict() if self.store_problem else None,
            "artifacts": self.run_dir,
        }


def child_command(job: Job, run_dir: str) -> list[str]:
    cmd = [sys.executable, "-m", "workbench.run.worker", job.kind, "--run-dir", run_dir]
    cmd += ["--params", json.dumps(job.params)]
    if job.kernel:
        cmd += ["--file", job.kernel.file, "--kernel", job.kernel.name]
    return cmd


def child_env(kernel: KernelEntry | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    if kernel:
        env["TRITON_CACHE_DIR"] = triton_cache_dir(kernel.file, env)
    return env


def triton_cache_dir(kernel_file: str, env: dict[str, str]) -> str:
    """A Triton cache of the kernel file's own, under the user's cache.

    Triton's cache key holds a kernel's source and first line but not its file's path, so a
    kernel compiled before from another copy of the same file (a clone, a moved project) comes
    back with that copy's path in every `loc`, and the line map finds nothing of this file.
    """
    home = env.get("TRITON_HOME") or str(Path.home())
    base = env.get("TRITON_CACHE_DIR") or os.path.join(home, ".triton", "cache")
    digest = hashlib.sha256(str(Path(kernel_file).resolve()).encode()).hexdigest()[:16]
    return os.path.join(base, "workbench", digest)


def prepare_run_dir(run_id: str) -> tuple[str, Problem | None]:
    """The run's folder under reports/, or a temporary one (and why) when reports/ is unwritable."""
    try:
        return str(store.run_folder(run_id)), None
    except WorkbenchError as exc:
        return tempfile.mkdtemp(prefix=f"workbench-{run_id}-"), exc.problem


def run_job(
    job: Job,
    on_event: OnEvent | None = None,
    cancel: threading.Event | None = None,
    wrap: list[str] | None = None,
    finish: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Run `job` in a child process (optionally under a wrapper such as ncu) and record it;
    `finish` reads what the wrapper wrote (compute-sanitizer's report) into the outcome before
    it is recorded."""
    if _STOPPED.is_set():  # the process is exiting (`stop_all`): a thread starts nothing more
        return Outcome(job, store.new_run_id(), "", "cancelled", problem=Problem(*_INTERRUPTED))
    run_id = store.new_run_id()
    run_dir, store_problem = prepare_run_dir(run_id)
    outcome = Outcome(job, run_id, run_dir, store_problem=store_problem)
    cmd = (wrap or []) + child_command(job, run_dir)
    log_path = Path(run_dir) / "log.txt"
    start = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            env=child_env(job.kernel),
            start_new_session=True,  # so a timeout or cancel kills the whole process group
            text=True,
        )
        _LIVE.add(proc)
        interrupted: BaseException | None = None
        try:
            _follow(proc, job, outcome, on_event, cancel, start, log)
        except BaseException as exc:  # Ctrl-C, or a signal made an exception: the job ends too
            _kill(proc)
            interrupted = exc
        finally:
            _LIVE.discard(proc)
    outcome.seconds = time.monotonic() - start
    outcome.log = log_path.read_text(errors="replace")[-8000:]
    if outcome.status == "ok" and outcome.result is None:
        if interrupted is not None or _STOPPED.is_set():
            outcome.status, outcome.problem = "cancelled", Problem(*_INTERRUPTED)
        else:
            outcome.status = "crash"
            outcome.problem = problem_from_exit(proc.returncode, outcome.log)
    if finish is not None and interrupted is None:
        finish(outcome)
    _record(outcome)  # an interrupted run is kept in the history too
    if interrupted is not None:
        raise interrupted
    return outcome


def stop_all() -> None:
    """Kill every job child still running (the process is exiting: Ctrl-C, SIGTERM). The jobs
    running in other threads then end as cancelled."""
    _STOPPED.set()
    for proc in list(_LIVE):
        _kill(proc)


def _follow(
    proc: subprocess.Popen,
    job: Job,
    outcome: Outcome,
    on_event: OnEvent | None,
    cancel: threading.Event | None,
    start: float,
    log: TextIO,
) -> None:
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    while True:
        if cancel is not None and cancel.is_set():
            _kill(proc)
            outcome.status = "cancelled"
            outcome.problem = Problem("cancelled", "the job was cancelled", "run it again")
            return
        if time.monotonic() - start > job.timeout:
            _kill(proc)
            outcome.status, outcome.problem = "timeout", timeout_problem(job.timeout)
            return
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            proc.wait()
            return
        event = _decode(line)
        if event is None:  # a wrapper's own output (ncu, nsys) shares the pipe: keep it
            log.write(line)
            log.flush()
            continue
        if event.get("event") == "result":
            outcome.result = event.get("result")
        elif event.get("event") == "error":
            outcome.status = "error"
            outcome.problem = Problem(**event["problem"])
        if on_event:
            on_event(event)


def _decode(line: str) -> dict | None:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _record(outcome: Outcome) -> None:
    if outcome.store_problem:
        return
    job = outcome.job
    result = outcome.result or {}
    outcome.store_problem = store.record_run(
        outcome.run_id,
        job.kind,
        job.kernel.name if job.kernel else "-",
        file=job.kernel.file if job.kernel else None,
        params=job.params,
        status=outcome.status,
        seconds=outcome.seconds,
        mode=result.get("mode") or machine.mode(),
        summary=result.get("summary"),
        result=outcome.result,
        problem=outcome.problem.to_dict() if outcome.problem else None,
        artifacts=outcome.run_dir,
    )
