"""A job's log (log.txt): what its child printed, bounded on disk and in memory.

A kernel module may print without end. The log keeps the first HEAD bytes as they come (so a
runner that dies still leaves them) and the last TAIL bytes, written when the job ends, with a
line between them saying how many bytes were cut; it is read back by its tail.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

HEAD = TAIL = 1 << 20


class RunLog:
    def __init__(self, path: Path, head: int = HEAD, tail: int = TAIL) -> None:
        self.path = path
        self.fault: OSError | None = None
        """The first write that failed (a full disk): the log stops there, the job goes on."""
        try:
            self._file = open(path, "wb")  # noqa: SIM115 - open until close(), when the job ends
        except OSError as exc:
            self.fault, self._file = exc, open(os.devnull, "wb")  # noqa: SIM115
        self._head, self._head_left, self._tail_size = head, head, tail
        self._tail = bytearray()
        self._cut = 0
        self._lock = threading.Lock()
        """Two threads write: the child's stderr and the runner's own lines."""

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._file.closed:  # a straggler of a child that outlived its job
                return
            if self._head_left:
                part = data[: self._head_left]
                self._guarded(lambda: (self._file.write(part), self._file.flush()))
                self._head_left -= len(part)
                data = data[len(part) :]
            self._tail += data
            if len(self._tail) > 2 * self._tail_size:  # trimmed now and then, not on every write
                self._trim()

    def close(self) -> None:
        with self._lock:
            self._trim()
            cut = (
                f"\n[... {self._cut} bytes cut: the log keeps the first {self._head} and the "
                f"last {self._tail_size} bytes ...]\n".encode()
                if self._cut
                else b""
            )
            self._guarded(lambda: self._file.write(cut + self._tail))
            try:
                self._file.close()
            except OSError as exc:  # the last flush, on a disk that filled
                self.fault = self.fault or exc

    def _guarded(self, write: Callable[[], object]) -> None:
        """A write that fails is kept as the fault, and no later write is tried."""
        if self.fault is None:
            try:
                write()
            except OSError as exc:
                self.fault = exc

    def _trim(self) -> None:
        excess = len(self._tail) - self._tail_size
        if excess > 0:
            del self._tail[:excess]
            self._cut += excess


def tail(path: Path, size: int) -> str:
    """The last `size` bytes of a log, as text, without reading the rest."""
    with open(path, "rb") as f:
        end = f.seek(0, 2)
        f.seek(max(0, end - size))
        return f.read().decode(errors="replace")
