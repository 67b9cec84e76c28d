"""No process of a job outlives it, however the job or its command ends (real processes on CPU).

Each test marks the processes it starts with a variable of its own, which every descendant
inherits (a process killed or orphaned keeps it), and looks for them in /proc; it also looks for
the job's process group. Everything is polled up to a deadline, never slept for.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import FAULTY, FIXTURES, ROOT, cpu_env
from test_tui import opened, select, until

from workbench.catalog.discovery import discover
from workbench.run import jobs, lifeline, runlog
from workbench.run.params import CheckParams
from workbench.run.store import Store
from workbench.tui.screens.confirm import Confirm

PROCS = FIXTURES / "procs"
MARK = "WORKBENCH_TEST_MARK"


@pytest.fixture
def mark() -> Iterator[str]:
    """This test's mark; whatever carries it at the end is killed (a test that failed leaves
    nothing running)."""
    value = uuid.uuid4().hex
    yield value
    kill_marked(value)


def kill_marked(value: str) -> None:
    for pid in marked(value):
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signal.SIGKILL)


def _processes() -> Iterator[tuple[int, str, int, bytes]]:
    """(pid, state, process group, environment) of every process (Linux's /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:  # it ended meanwhile
            continue
        state, _ppid, pgid = stat.rsplit(")", 1)[1].split()[:3]
        if state != "Z":  # a zombie runs nothing: it waits to be reaped
            yield int(entry.name), state, int(pgid), environ


def marked(value: str) -> list[int]:
    """The live processes carrying `value` as their MARK, but this one."""
    tag = f"{MARK}={value}".encode()
    return [p for p, _, _, env in _processes() if tag in env.split(b"\0") and p != os.getpid()]


def group(pgid: int) -> list[int]:
    return [p for p, _, g, _ in _processes() if g == pgid]


def worker(value: str, deadline_s: float = 120) -> int:
    """The pid of the marked job child (`python -m workbench.run.worker`) once it runs."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for pid in marked(value):
            try:
                if b"workbench.run.worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError("the job's child never started")


def gone(found: Callable[[], list[int]], deadline_s: float) -> list[int]:
    """Poll `found` until it is empty or the deadline passes; what it found last."""
    end = time.monotonic() + deadline_s
    while (left := found()) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def start_cli(args: list[str], value: str, reports: Path, **env: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "workbench", *args]
    full = {**os.environ, **cpu_env(reports), MARK: value, **env}
    return subprocess.Popen(cmd, cwd=ROOT, env=full, stdout=subprocess.PIPE, text=True)


def start_hang(
    args: list[str], value: str, tmp_path: Path, **env: str
) -> tuple[subprocess.Popen, int]:
    """The CLI command `args` on procs_hang, once its job is inside the kernel (past the
    events a job child writes first: a child writing to a runner that has gone fails there),
    and the job child's pid."""
    running = tmp_path / "running"
    full_args = [args[0], "procs_hang", "--path", str(PROCS), *args[1:]]
    proc = start_cli(
        full_args, value, tmp_path / "reports", WORKBENCH_TEST_RUNNING=str(running), **env
    )
    end = time.monotonic() + 120
    while not running.exists():
        assert proc.poll() is None and time.monotonic() < end, "the job never ran its kernel"
        time.sleep(0.1)
    return proc, worker(value)


def test_kill_9_of_the_cli_ends_its_job(tmp_path, mark):
    """Nothing can run in a process killed by SIGKILL: the job's child sees its lifeline close
    and kills its group."""
    proc, child = start_hang(["check"], mark, tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert not gone(lambda: group(child) + marked(mark), 60)


def test_sighup_of_the_cli_stops_its_job_and_keeps_the_run(tmp_path, mark):
    """The terminal closed: as for SIGTERM, the CLI stops the job and records it."""
    proc, child = start_hang(["check"], mark, tmp_path)
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=60) == 128 + signal.SIGHUP
    assert not gone(lambda: group(child) + marked(mark), 30)
    [run] = Store(tmp_path / "reports").history()
    assert (run.kernel, run.status) == ("procs_hang", "cancelled")


def test_the_job_ends_at_its_timeout_while_the_cli_is_stopped(tmp_path, mark):
    """The job's child enforces the timeout too: a runner that is stopped (or wedged) cannot."""
    proc, child = start_hang(["check", "--timeout", "20", "--json"], mark, tmp_path)
    proc.send_signal(signal.SIGSTOP)
    try:
        left = gone(lambda: group(child) + [p for p in marked(mark) if p != proc.pid], 90)
    finally:
        proc.send_signal(signal.SIGCONT)
    out, _ = proc.communicate(timeout=60)
    assert not left, "the job outlived its timeout"
    run = json.loads(out)
    assert run["status"] == "timeout"  # the runner, woken, says why the job ended
    log = runlog.tail(Path(run["artifacts"]) / "log.txt", 4000)
    assert "20 s timeout: its processes are killed" in log


def test_a_helper_process_of_the_module_ends_with_its_job(tmp_path, mark):
    """The module started `sleep 1000` in the job's process group; the job ended normally."""
    proc = start_cli(["check", "procs_helper", "--path", str(PROCS)], mark, tmp_path / "reports")
    assert proc.wait(timeout=300) == 0
    assert not gone(lambda: marked(mark), 30)


_RUNS_ITS_TARGET = {
    "passes": 'exec "$@"',
    "closes": f'exec {sys.executable} -c "import subprocess as s, sys; s.call(sys.argv[1:])" "$@"',
}
"""How a stand-in profiler runs its target: as ncu does, keeping the fds it was given; or as a
tool that closes them (Python's subprocess does), which the lifeline cannot pass through."""


@pytest.mark.parametrize("fds", list(_RUNS_ITS_TARGET))
def test_a_job_under_a_profiler_ends_when_the_cli_is_killed(tmp_path, mark, fds):
    """launch -> a stand-in ncu (a shell) -> the job's child. The lifeline passed on through
    both, the grandchild sees the CLI go; through a tool that closes it, the job's child says so
    in the log and ends the job at its own timeout."""
    ncu = tmp_path / "ncu"
    ncu.write_text(
        "#!/bin/sh\n"
        "[ \"$1\" = --version ] && { echo 'Version 1'; exit 0; }\n"
        'while [ "$1" != -o ]; do shift; done; shift 2\n'
        "export WORKBENCH_DEVICE=cpu\n"  # the target runs in the interpreter here
        f"{_RUNS_ITS_TARGET[fds]}\n"
    )
    ncu.chmod(0o755)
    args = ["profile", "--tool", "ncu", "--case", "64:float32", "--timeout", "30"]
    proc, child = start_hang(args, mark, tmp_path, WORKBENCH_DEVICE="cuda", WORKBENCH_NCU=str(ncu))
    proc.kill()
    proc.wait(timeout=30)
    assert not gone(lambda: group(child) + marked(mark), 60 if fds == "passes" else 120)
    [log] = (tmp_path / "reports" / "runs").glob("*/log.txt")
    said = "the runner's pipe did not reach this process" in log.read_text()
    assert said == (fds == "closes")


async def test_quitting_the_tui_asks_then_stops_its_job_and_keeps_the_run(
    monkeypatch, mark, _reports
):
    monkeypatch.setenv(MARK, mark)  # the job's child inherits this process's environment
    async with opened([str(FAULTY / "faults.py")]) as (app, pilot):
        await select(app, pilot, "fault_hang")
        await pilot.press("c")
        await until(pilot, lambda: app.queue.running is not None and app.queue.running.total > 0)
        task = app.queue.running
        child = worker(mark)
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        assert app.screen.question == "1 job running: quit and cancel it?"
        await pilot.press("n")  # stays: the job goes on
        await until(pilot, lambda: not isinstance(app.screen, Confirm))
        assert app.queue.running is task and not app._exit
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: app._exit, timeout=60)
    # the app has waited for the job: its run is kept and nothing of it runs
    assert task.state == "cancelled" and task.finished.status == "cancelled"
    [run] = Store(_reports).history()
    assert (run.kernel, run.status) == ("fault_hang", "cancelled")
    assert not gone(lambda: group(child) + marked(mark), 30)


_CRASHING_UI = """
import sys
from workbench.tui.app import run_app
from workbench.tui.screens.main import MainScreen

def tick(self):
    raise RuntimeError("the kernel list exploded")

MainScreen.tick = tick  # runs a second after the first paint
sys.exit(run_app([sys.argv[1]]))
"""


def test_a_crashed_tui_exits_non_zero(tmp_path):
    """The UI in a terminal of its own (a pseudo-terminal), crashing in a handler."""
    main, tty = pty.openpty()
    fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, **cpu_env(tmp_path / "reports"), "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_UI, str(FAULTY / "faults.py")],
        cwd=ROOT,
        env=env,
        stdin=tty,
        stdout=tty,
        stderr=tty,
        start_new_session=True,
    )
    os.close(tty)
    shown = bytearray()
    try:
        while True:  # read the terminal to its end, as a terminal would (a full one blocks)
            try:
                chunk = os.read(main, 1 << 16)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        assert proc.wait(timeout=60) == 1
    finally:
        proc.kill()
        os.close(main)
    assert b"the kernel list exploded" in shown


def test_a_log_keeps_its_head_and_tail_only():
    """A module printing ~10 MB (5 MB per call): the log holds its first and last MiB, says how
    much was cut, and is read back by its tail."""
    entry = discover([str(PROCS)]).find("procs_loud")
    out = jobs.run_job(jobs.Job("check", entry, CheckParams(), timeout=300))
    assert out.status == "ok", out.problem
    log = Path(out.run_dir) / "log.txt"
    size = log.stat().st_size
    assert runlog.HEAD + runlog.TAIL < size < runlog.HEAD + runlog.TAIL + 200
    with open(log, "rb") as f:
        head = f.read(runlog.HEAD)
        rest = f.read()
    assert b"LOUD-FIRST-LINE" in head
    marker, _, tail = rest.partition(b"...]\n")
    cut = int(marker.split(b"[... ")[1].split()[0])
    assert len(tail) == runlog.TAIL and cut > 3 * 1024 * 1024  # 5 MiB or more printed
    assert b"LOUD-LAST-LINE" in tail
    assert len(out.log) <= jobs.LOG_TAIL and out.log.endswith(tail.decode()[-100:])


def test_a_lifeline_is_taken_only_for_the_runners_pipe(tmp_path, monkeypatch):
    """A tool that closed the pipe may reuse its fd number for a file of its own: the pipe's
    inode is checked, so that file's end is not taken for the runner's death."""
    with lifeline.held() as (fd, env):
        monkeypatch.setenv(lifeline.ENV, env[lifeline.ENV])
        assert lifeline.passed_on() == (fd,)
        monkeypatch.setenv(lifeline.ENV, f"{fd}:1")  # the fd, but another inode
        assert lifeline.passed_on() == ()
        with open(tmp_path / "other", "w") as other:
            monkeypatch.setenv(lifeline.ENV, f"{other.fileno()}:{os.fstat(other.fileno()).st_ino}")
            assert lifeline.passed_on() == ()  # not a pipe
