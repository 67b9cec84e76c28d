"""The CUDA driver started beside a job's imports.

A GPU job's first CUDA call comes after torch's import (seconds); the driver's own start
(`cuInit`: 0.10 s on an H100 host) need not wait for it. Called through ctypes, which lets go of
the GIL, it runs in a thread while torch imports, and torch's start later only makes the context
(0.30 -> 0.12 s there). No context is made here: a process that forks after `wait` (the sweep's
compile pool) forks as it did before, and a fork while the thread is still inside the driver's
start would leave the child with the driver's locks held, so every fork waits first.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

_started: threading.Thread | None = None


def _cuinit() -> None:
    try:
        ctypes.CDLL("libcuda.so.1").cuInit(0)
    except (OSError, AttributeError):  # no driver library here: torch's own start says so
        pass


def begin(start: Callable[[], object] = _cuinit) -> None:
    """Start the driver in a thread (once per process)."""
    global _started
    if _started is None:
        _started = threading.Thread(target=start, name="cuda-driver-start", daemon=True)
        _started.start()


def wait() -> None:
    """Return once the driver's start begun here (if any) has ended: call before forking."""
    if _started is not None:
        _started.join()
