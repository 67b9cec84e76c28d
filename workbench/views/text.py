"""Plain-text rendering for the CLI: tables and problems (no rich import: `list` must be quick)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from workbench.runtime.errors import Problem

if TYPE_CHECKING:
    from workbench.run.jobs import Outcome


_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
"""C0, DEL and C1: what a terminal reads as a command (ESC starts a sequence, 0x9b is CSI)."""
_ESCAPES = {c: {9: "\\t", 10: "\\n", 13: "\\r"}.get(c, f"\\x{c:02x}") for c in _CONTROLS}
_ESCAPES_IN_LINES = {c: e for c, e in _ESCAPES.items() if chr(c) not in "\t\n"}


def escape_controls(text: str, keep_lines: bool = False) -> str:
    """`text` as a terminal should show it: its control characters written as Python writes
    them in a string literal (`\\x1b`), so a name, path or message from a kernel module cannot
    move the cursor, retitle the window or recolour what follows; newlines and tabs kept with
    `keep_lines`. Printable text, unicode included, is left as it is."""
    return text.translate(_ESCAPES_IN_LINES if keep_lines else _ESCAPES)


class _Escaping:
    """A text stream that writes `escape_controls(..., keep_lines=True)` of what it is given."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(escape_controls(text, keep_lines=True))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def escaped_output() -> Iterator[None]:
    """stdout and stderr with control characters escaped in all that is printed (tables, lines,
    problems), the one place every command's output goes through. JSON passes unchanged:
    json.dumps already writes them as \\u escapes."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaping(sys.stdout), _Escaping(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, each cell on one line (escaped before it is
    measured: an escape is wider than the character it stands for)."""
    cells = [[escape_controls(str(h)) for h in headers]]
    cells += [["" if c is None else escape_controls(str(c)) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


ELLIPSIS = "…"
WORD_ENDS = frozenset(" ,;·")
"""Where a line may be cut: after a space, a comma, a semicolon or a middle dot."""


def word_cut(text: str, width: int) -> int:
    """How much of `text` to show in `width` columns with an ellipsis after it: all of it when
    it fits; else up to the end of the last word that fits whole (its trailing spaces left
    out), and mid-word only where that would leave less than half the width."""
    if len(text) <= width:
        return len(text)
    room = max(width - len(ELLIPSIS), 0)
    ends = [i + 1 for i, c in enumerate(text[:room]) if c in WORD_ENDS]
    cut = ends[-1] if ends and ends[-1] >= room // 2 else room
    return len(text[:cut].rstrip(" "))


HANG = 2
"""How much further than its first line a wrapped line's continuations are indented."""


def line_spans(line: str, width: int) -> list[tuple[int, int]]:
    """Where to break `line` into lines of at most `width` columns, as (start, end) spans of
    it; each line after the first is to be shown indented by `hang_indent(line, width)`. Breaks
    go at a space (dropped), or after a comma or semicolon when a space would leave the line
    less than half full (a config's K=V,... list); a word longer than a whole line is broken
    after a slash, else where it must."""
    spans: list[tuple[int, int]] = []
    start, room = 0, width
    lead = len(line) - len(line.lstrip(" "))  # no break in the first line's own indent
    while width > 0 and len(line) - start > room:
        window = line[start : start + room + 1]  # a space just past the room is a break too
        space = window.rfind(" ", (lead if not spans else 0) + 1)
        comma = max(window.rfind(",", 0, room), window.rfind(";", 0, room)) + 1
        if space >= room // 2 or (space > 0 and space >= comma):
            end, after = start + space, start + space + 1
        elif comma > 0:
            end = after = start + comma
        else:
            slash = window.rfind("/", 0, room) + 1
            end = after = start + (slash if slash > 0 else room)
        spans.append((start, len(line[:end].rstrip(" "))))
        while after < len(line) and line[after] == " ":
            after += 1
        start, room = after, width - hang_indent(line, width)
    return spans + [(start, len(line))]


def hang_indent(line: str, width: int) -> int:
    """The indent of a wrapped line's continuations: its own, and `HANG` more (at most half the
    width)."""
    return min(len(line) - len(line.lstrip(" ")) + HANG, width // 2)


def short_label(values: dict | None, label: str, shared: dict) -> str:
    """`label` without the `shared` values."""
    if not shared or not values:
        return label
    return kv({k: v for k, v in values.items() if k not in shared}) or label


def kv(values: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in values.items())


def fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_problem(problem: Problem, prefix: str = "error") -> None:
    label = f"{prefix} ({problem.source})" if problem.source else prefix
    print(f"{label}: {problem}", file=sys.stderr)


def run_footer(run_id: str, seconds: float, where: str, extra: str = "") -> str:
    """The closing line of a command that ran a job: its run id, time and artifacts."""
    return f"run {run_id} ({seconds:.1f} s{extra}); artifacts in {where}"


def print_run_end(outcome: Outcome, where: str | None = None) -> None:
    """What every command that ran a job ends with, on stderr: the run's id, time and artifacts
    (a result the store could not keep is said by `cli.main`, for every command alike)."""
    print(run_footer(outcome.run_id, outcome.seconds, where or outcome.run_dir), file=sys.stderr)
