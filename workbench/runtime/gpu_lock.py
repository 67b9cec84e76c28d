"""One run's kernels at a time per GPU, across processes.

Two workbench runs on one GPU (a TUI and a CLI, or `diagnose` of several kernels side by side)
would otherwise time each other's kernels. A job's child holds an advisory lock (flock) on a
file named after its device around what it times or profiles (a profile's warm-ups too, whose
first call autotunes) and around each check case (whose kernels would skew a timing beside
them); process start-up and cross-compiles still overlap.
The lock goes with the process, so a killed child never leaves it held.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

LOCKS_ENV = "WORKBENCH_LOCKS"
"""Where the lock files live (default: a folder per user under the temporary directory; one per
user because a file another user created cannot be opened for locking)."""


def lock_path(device_key: str) -> Path:
    folder = os.environ.get(LOCKS_ENV) or os.path.join(
        tempfile.gettempdir(), f"workbench-locks-{os.getuid()}"
    )
    return Path(folder) / f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', device_key)}.lock"


def device_key(device: str = "cuda") -> str:
    """The GPU's UUID (the same card whatever CUDA_VISIBLE_DEVICES numbers it), else its
    visible index (with no CUDA in this torch, the index alone: the kernel's own launch says
    what is wrong, not the lock)."""
    import torch

    index = torch.device(device).index
    if not torch.cuda.is_available():
        return f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'all')}-{index or 0}"
    index = torch.cuda.current_device() if index is None else index
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid:
        return str(uuid)
    return f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'all')}-{index}"


@contextlib.contextmanager
def exclusive(device_key: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the device's lock for the block; `on_wait(path)` is called first when another
    process holds it."""
    path = lock_path(device_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(str(path))
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def alone(device: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """`exclusive` for a CUDA device; nothing to hold on the CPU (the interpreter times nothing)."""
    if not device.startswith("cuda"):
        yield
        return
    with exclusive(device_key(device), on_wait):
        yield
