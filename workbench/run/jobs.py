"""Run a job in a child process and follow its JSON-lines events (parent side: no torch here).

The child is a plain command line, `python -m workbench.run.worker KIND ...`, the same one ncu and
nsys wrap. Whatever happens to it (an exception, a hang, a segfault, a CUDA fault) ends that job
with a Problem; the parent carries on. No process of a job outlives it: the child's session is
killed whole when the job ends, and the child kills it itself when this process dies (`lifeline`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from workbench.catalog.discovery import KernelEntry
from workbench.run import kinds, lifeline, machine, runlog, store
from workbench.run.faults import problem_from_exit, timeout_problem
from workbench.run.params import Params
from workbench.run.runlog import RunLog
from workbench.runtime.errors import Problem

OnEvent = Callable[[dict], None]
ROOT = str(Path(__file__).resolve().parents[2])
_LIVE: set[subprocess.Popen] = set()
"""The job children running now. Each has a session of its own (so that a timeout kills its
whole group), so neither Ctrl-C nor a signal to this process reaches them: `stop_all` does."""
_STOPPED = threading.Event()
_INTERRUPTED = ("cancelled", "the workbench was interrupted and stopped the job", "run it again")
PIPES_CLOSE_S = 5.0
"""How long the child's output may still come once its group is killed (a process that left the
group, by a session of its own, may hold the pipes open)."""
LOG_TAIL = 8000
"""Bytes of the log's tail kept in the Outcome (and read for a crash's cause)."""


@dataclass
class Job:
    kind: str
    """One of `kinds.JOBS`."""
    kernel: KernelEntry | None
    params: Params
    """The kind's own parameters type (`kinds.KINDS[kind].params`)."""
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


class Feed:
    """Messages to a job child, one JSON line each on its stdin, for a job that takes work as it
    goes (a sweep's worker: `Context.inbox` on its side). Sending to a child that is gone, or
    not started yet, is a no-op that says False."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pipe: IO[bytes] | None = None

    def send(self, message: dict) -> bool:
        with self.lock:
            if self.pipe is None:
                return False
            try:
                self.pipe.write(json.dumps(message).encode() + b"\n")
                self.pipe.flush()
                return True
            except (BrokenPipeError, ValueError):  # the child died, or its pipe is closed
                return False

    def attach(self, pipe: IO[bytes] | None) -> None:
        with self.lock:
            self.pipe = pipe

    def close(self) -> None:
        with self.lock:
            pipe, self.pipe = self.pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def child_command(job: Job, run_dir: str) -> list[str]:
    cmd = [sys.executable, "-m", "workbench.run.worker", job.kind, "--run-dir", run_dir]
    cmd += ["--timeout", f"{job.timeout:g}"]
    cmd += ["--params", json.dumps(job.params.to_dict())]
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
    """The run's folder under reports/, or a temporary one (and why) when reports/ can't take
    a file (read-only, full); NotSaved when neither can."""
    try:
        return str(store.run_folder(run_id)), None
    except store.NotSaved as exc:
        return str(store.temporary_folder(run_id)), exc.problem


def run_job(
    job: Job,
    on_event: OnEvent | None = None,
    cancel: threading.Event | None = None,
    wrap: list[str] | None = None,
    finish: Callable[[Outcome], None] | None = None,
    feed: Feed | None = None,
) -> Outcome:
    """Run `job` in a child process (optionally under a wrapper such as ncu) and record it;
    `finish` reads what the wrapper wrote (compute-sanitizer's report) into the outcome before
    it is recorded; `feed` sends the child messages while it runs."""
    if _STOPPED.is_set():  # the process is exiting (`stop_all`): a thread starts nothing more
        return Outcome(job, store.new_run_id(), "", "cancelled", problem=Problem(*_INTERRUPTED))
    run_id = store.new_run_id()
    run_dir, store_problem = prepare_run_dir(run_id)
    outcome = Outcome(job, run_id, run_dir, store_problem=store_problem)
    cmd = (wrap or []) + child_command(job, run_dir)
    log = RunLog(Path(run_dir) / "log.txt")
    log.write(("$ " + " ".join(cmd) + "\n").encode())
    if log.fault:  # the folder took a probe, but the disk may have filled since
        log.close()
        raise store.write_fault(log.path, log.fault)
    start = time.monotonic()
    interrupted: BaseException | None = None
    try:
        with lifeline.held() as (fd, lifeline_env):
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
                env={**child_env(job.kernel), **lifeline_env},
                pass_fds=(fd,),
                start_new_session=True,  # so a timeout or cancel kills the whole process group
            )
            _LIVE.add(proc)
            if feed:
                feed.attach(proc.stdin)
            events: queue.Queue[bytes] = queue.Queue()
            pumps: list[threading.Thread] = []
            try:  # from here on, a Ctrl-C or signal (a thread's start waits: it may come there)
                pumps += [
                    _pump(proc.stdout, events.put, True),
                    _pump(proc.stderr, log.write, False),
                ]
                _follow(proc, job, outcome, events, on_event, cancel, start, log)
            except BaseException as exc:  # Ctrl-C, or a signal made an exception: the job ends
                interrupted = exc
            finally:
                if feed:
                    feed.close()
                _end(proc)  # the job's whole group, however it ended: helpers its code started
                _LIVE.discard(proc)
            for pump in pumps:  # a process that left the group may hold the pipes: not forever
                pump.join(PIPES_CLOSE_S)
            if outcome.status == "ok" and interrupted is None:  # written just before its exit
                while (line := _next(events)) is not None:
                    _take(line, outcome, on_event, log)
    finally:
        log.close()
        if log.fault:  # the disk filled during the job: its result may still be stored
            store.write_fault(log.path, log.fault)
    outcome.seconds = time.monotonic() - start
    outcome.log = runlog.tail(log.path, LOG_TAIL)
    if outcome.result is not None:
        _check_result(outcome)
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


def _check_result(outcome: Outcome) -> None:
    """A result that does not read as its kind's type ends the job as an error (`wrong-result`,
    the JSON in its detail), rather than as a KeyError in whatever reads it next."""
    try:
        kinds.read_result(outcome.job.kind, outcome.result)
    except store.RESULT_ERRORS as exc:
        outcome.problem = kinds.wrong_result(outcome.job.kind, outcome.result, exc)
        outcome.status, outcome.result = "error", None


def stop_all() -> None:
    """Kill every job child still running (the process is exiting: Ctrl-C, SIGTERM, SIGHUP).
    The jobs running in other threads then end as cancelled."""
    _STOPPED.set()
    live = list(_LIVE)
    for proc in live:
        _kill(proc)
    for proc in live:  # until each has died; its own thread reaps it (waitid takes no lock,
        with contextlib.suppress(ChildProcessError):  # so this signal handler cannot block one)
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)


def _follow(
    proc: subprocess.Popen,
    job: Job,
    outcome: Outcome,
    events: queue.Queue[bytes],
    on_event: OnEvent | None,
    cancel: threading.Event | None,
    start: float,
    log: RunLog,
) -> None:
    """Pass the child's events on until it exits, is cancelled or runs past its timeout. Its
    exit, not the end of its output, ends the job: a helper process may hold the pipe open. The
    timeout is looked at first: a child that ended itself at it (this process was stopped) has
    timed out, not crashed."""
    while True:
        if cancel is not None and cancel.is_set():
            outcome.status = "cancelled"
            outcome.problem = Problem("cancelled", "the job was cancelled", "run it again")
            return
        if time.monotonic() - start > job.timeout:
            outcome.status, outcome.problem = "timeout", timeout_problem(job.timeout)
            return
        if _exited(proc):
            return
        with contextlib.suppress(queue.Empty):
            _take(events.get(timeout=0.1), outcome, on_event, log)


def _take(line: bytes, outcome: Outcome, on_event: OnEvent | None, log: RunLog) -> None:
    event = _decode(line)
    if event is None:  # a wrapper's own output (ncu, nsys) shares the pipe: keep it
        log.write(line)
        return
    if event.get("event") == "result":
        outcome.result = event.get("result")
    elif event.get("event") == "error":
        outcome.status = "error"
        outcome.problem = Problem(**event["problem"])
    if on_event:
        on_event(event)


def _pump(pipe: IO[bytes] | None, sink: Callable[[bytes], None], lines: bool) -> threading.Thread:
    """A thread passing what the child writes to `pipe` on to `sink`: whole lines (events), or
    pieces as they come (the log, which a module may fill with one endless line)."""

    def run() -> None:
        assert pipe is not None
        with pipe:
            read = pipe.readline if lines else functools.partial(os.read, pipe.fileno(), 1 << 16)
            for chunk in iter(read, b""):
                sink(chunk)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _next(events: queue.Queue[bytes]) -> bytes | None:
    try:
        return events.get_nowait()
    except queue.Empty:
        return None


def _decode(line: bytes) -> dict | None:
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return event if isinstance(event, dict) else None


def _exited(proc: subprocess.Popen) -> bool:
    """Whether the child has exited, leaving it unreaped: until it is reaped its pid, which is
    its group's id, cannot be given to another process, so `_end` kills only this job's."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped by `stop_all`, from another thread
        return True


def _kill(proc: subprocess.Popen) -> None:
    """Kill the job's whole process group (its child is a session leader: the group's id is
    the child's pid, which stays its own until the child is reaped)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _end(proc: subprocess.Popen) -> None:
    """Kill the job's whole process group, then reap its child."""
    _kill(proc)
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
        params=job.params.to_dict(),
        status=outcome.status,
        seconds=outcome.seconds,
        mode=result.get("mode") or machine.mode(),
        summary=result.get("summary"),
        result=outcome.result,
        problem=outcome.problem.to_dict() if outcome.problem else None,
        artifacts=outcome.run_dir,
    )
