"""The job's child process: `python -m workbench.run.worker KIND [--file F --kernel NAME] ...`.

Events go out as JSON lines on the original stdout; the kernel's own prints are sent to stderr
(the run's log) so they cannot corrupt the event stream. Without a GPU, TRITON_INTERPRET=1 is
set before triton or any kernel module is imported: Triton reads it when `@triton.jit` runs.
Started by the runner, it holds the job's lifeline first: its process group dies when the runner
does, at `--timeout`, or on SIGTERM or SIGHUP. A job that takes work as it goes (a sweep's
worker) reads its runner's messages, JSON lines on stdin, from `Context.inbox`, and leaves
without Python's finalization once its end is sent (`LEAVE_AT_END`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from workbench.run import kinds, lifeline, machine
from workbench.runtime import compat, driver_start
from workbench.runtime.errors import WorkbenchError

LEAVE_AT_END = ("sweep-worker",)
"""Kinds whose process leaves without Python's finalization once its result or error is sent:
the runner ends the sweep only when its worker has exited, and the teardown of a process holding
torch, a compile pool and a CUDA context took up to a second. Not a kind a profiler wraps: ncu
and nsys collect their data at a clean CUDA exit."""


@dataclass
class Context:
    device: str
    interpreter: bool
    run_dir: str
    emit: Callable[[dict], None]
    file: str | None = None
    """The kernel's module (--file), for jobs that import it again."""
    inbox: queue.Queue[dict | None] | None = None
    """The runner's messages, in order; None once it has no more to say (stdin closed)."""


def _event_stream() -> Callable[[dict], None]:
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # user prints now land in the log, not in the event stream
    lock = threading.Lock()  # a job's watchdog thread may speak beside it: whole lines only

    def emit(event: dict) -> None:
        line = json.dumps(event, default=str) + "\n"
        with lock:
            out.write(line)
            out.flush()

    return emit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.run.worker")
    parser.add_argument("kind", choices=sorted(kinds.JOBS))
    parser.add_argument("--file")
    parser.add_argument("--kernel")
    parser.add_argument("--run-dir", default=".")
    parser.add_argument("--params", default="{}")
    parser.add_argument("--timeout", type=float, help="seconds; the runner enforces it first")
    args = parser.parse_args(argv)
    lifeline.hold(args.timeout)
    emit = _event_stream()
    params = json.loads(args.params)
    code = execute(args.kind, args.file, args.kernel, args.run_dir, params, emit, _feed())
    if args.kind in LEAVE_AT_END:
        _leave(code)
    return code


def _leave(code: int) -> NoReturn:
    """End the process now, its last event sent: no Python finalization (its compile pool's
    joins, CUDA's teardown, every module's cleanup). The runner kills the job's group as this
    process exits, so the pool's workers go with it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def execute(
    kind: str,
    file: str | None,
    kernel: str | None,
    run_dir: str,
    params: Mapping[str, Any],
    emit: Callable[[dict], None],
    inbox: queue.Queue[dict | None] | None = None,
) -> int:
    """Run the job `kind` in this process, its events and its end (result or error) sent to
    `emit`: the child's whole life after its lifeline, and a Ray actor's (`sweep.cluster`).
    `params` is their JSON, read as the kind's parameters here (a wrong shape is an error)."""
    gpu = machine.has_gpu()
    if gpu:
        driver_start.begin()  # while the kernel's module imports torch
    try:
        if not gpu:
            os.environ["TRITON_INTERPRET"] = "1"
            compat.fix_interpreter()  # imports triton: after the switch above
        ctx = Context("cuda" if gpu else "cpu", not gpu, run_dir, emit, file, inbox)
        spec = _spec(file, kernel) if file and kernel else None
        typed = kinds.job_params(kind, params)
        job: Callable[[Any, Any, Context], dict] = kinds.resolve(kinds.KINDS[kind].entry or "")
        emit({"event": "started", "kind": kind, "device": ctx.device})
        result = job(spec, typed, ctx)
    except WorkbenchError as exc:
        emit({"event": "error", "problem": exc.problem.to_dict()})
        return 1
    except Exception as exc:  # noqa: BLE001 - reported as a structured error
        from workbench.run.faults import problem_from_exception

        emit({"event": "error", "problem": problem_from_exception(exc).to_dict()})
        return 1
    emit({"event": "result", "result": result})
    return 0


def _feed() -> queue.Queue[dict | None]:
    """The runner's messages on stdin, read as they come (a job that takes none has /dev/null
    there: its inbox is closed at once, and never read). They are read from a file of their
    own, stdin left on /dev/null: a process forked while this thread waits in sys.stdin's lock
    would hang closing it (multiprocessing closes stdin in every child it starts)."""
    inbox: queue.Queue[dict | None] = queue.Queue()
    pipe = os.fdopen(os.dup(0), "rb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)

    def read() -> None:
        for line in pipe:
            inbox.put(json.loads(line))
        inbox.put(None)

    threading.Thread(target=read, name="inbox", daemon=True).start()
    return inbox


def _spec(file: str, name: str) -> Any:
    from workbench.catalog.discovery import KernelEntry
    from workbench.catalog.loader import load_spec

    return load_spec(KernelEntry(name=name, file=file, line=0))


if __name__ == "__main__":
    sys.exit(main())
