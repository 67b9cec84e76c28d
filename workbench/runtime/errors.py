"""Errors that reach the user: each names its cause and the remedy to try."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SOURCES = ("user-code", "usage", "environment", "tool")
"""user-code: the kernel module (named by file:line); usage: an argument (named by its flag);
environment: a path, permission or missing package; tool: the workbench, Triton or a profiler."""


@dataclass(frozen=True)
class Problem:
    """A failure as data: what went wrong, why, and what to do about it."""

    kind: str
    """Short machine-readable tag, e.g. "import-error", "timeout", "crash"."""
    cause: str
    remedy: str
    file: str | None = None
    line: int | None = None
    detail: str = ""
    """Traceback or tool log tail, for whoever wants to dig."""
    source: str = ""
    """Where the fault lies, which decides the remedy: one of SOURCES ("" when not known)."""

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else ""
        where = where or (f"{self.file}: " if self.file else "")
        return f"{where}{self.cause}\n  remedy: {self.remedy}"


class WorkbenchError(Exception):
    """Raised with a Problem; the CLI prints it and exits non-zero, the TUI shows it."""

    def __init__(self, problem: Problem):
        super().__init__(str(problem))
        self.problem = problem


def fail(kind: str, cause: str, remedy: str, **where: Any) -> WorkbenchError:
    """`where`: the Problem's other fields (file, line, detail, source)."""
    return WorkbenchError(Problem(kind=kind, cause=cause, remedy=remedy, **where))
