"""A job's lifeline: the job child's processes end with the job, whatever ends it.

The runner starts each job child in a session of its own (so that a timeout kills its whole
process group) and hands it the read end of a pipe whose write end only the runner holds. The
child reads it to EOF: when the runner dies, even by SIGKILL, the kernel closes the write end and
the child kills its group. The child also kills its group at its own timeout (the runner may be
stopped or wedged) and on SIGTERM or SIGHUP.

A profiler between the runner and the child (launch -> ncu or nsys -> worker) passes the pipe on;
the variable names the pipe's inode beside its fd, so an fd number reused for another file is
not taken for it. Where a tool does not pass it on, the child still ends at its timeout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn

ENV = "WORKBENCH_LIFELINE"
"""FD:INODE of the lifeline's read end in the job child; set only by the runner."""
LATE_S = 5.0
"""The child's own timeout comes this long after the runner's: the runner's, which says why the
job ended, acts first; the child's is for a runner that cannot act."""


@contextlib.contextmanager
def held() -> Iterator[tuple[int, dict[str, str]]]:
    """The runner's side, open while the job runs: the fd to pass to the child (`pass_fds`) and
    the variable naming it. Both ends are non-inheritable, so no other child holds the write
    end: it closes when the job ends here, or when this process dies."""
    read_end, write_end = os.pipe()
    try:
        yield read_end, {ENV: f"{read_end}:{os.fstat(read_end).st_ino}"}
    finally:
        os.close(read_end)
        os.close(write_end)


def passed_on() -> tuple[int, ...]:
    """For a process between the runner and the job child (the profiler launcher): the
    lifeline's fd to pass on, if it holds it."""
    fd = _inherited(os.environ.get(ENV, ""))
    return () if fd is None else (fd,)


def hold(timeout: float | None) -> None:
    """In the job child: kill the job's process group when the runner goes, `timeout` seconds
    (plus LATE_S) from now, or on SIGTERM or SIGHUP. Nothing outside a job (no variable): the
    group is the job's only when the runner made it."""
    spec = os.environ.pop(ENV, None)  # the job's own children are not jobs
    if spec is None:
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: end_job())
    fd = _inherited(spec)
    if fd is not None:
        threading.Thread(target=_watch, args=(fd,), name="lifeline", daemon=True).start()
    else:
        print(
            "workbench: the runner's pipe did not reach this process (a tool between them "
            "closed it): if the runner goes, the job ends at its timeout",
            file=sys.stderr,
        )
    if timeout is not None:
        timer = threading.Timer(timeout + LATE_S, _expire, (timeout,))
        timer.daemon = True
        timer.start()


def end_job() -> NoReturn:
    """Kill every process of the job's group, this one included."""
    os.killpg(os.getpgrp(), signal.SIGKILL)
    raise SystemExit(137)  # not reached: SIGKILL ends this process with the rest


def _watch(fd: int) -> None:
    while os.read(fd, 1):  # nothing is ever written: this returns b"" once the runner is gone
        pass
    end_job()


def _expire(timeout: float) -> None:
    with contextlib.suppress(OSError):  # the log's reader may have gone with the runner
        print(
            f"workbench: the job ran past its {timeout:g} s timeout: its processes are killed",
            file=sys.stderr,
            flush=True,
        )
    end_job()


def _inherited(spec: str) -> int | None:
    """The fd `spec` names, if it is open here and is that pipe."""
    fd, _, inode = spec.partition(":")
    try:
        st = os.fstat(int(fd))
        return int(fd) if stat.S_ISFIFO(st.st_mode) and st.st_ino == int(inode) else None
    except (OSError, ValueError):
        return None
