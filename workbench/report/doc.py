"""A report page as data: headings, paragraphs, tables, images, preformatted text and notices.

Built once per kernel and rendered to Markdown or HTML (`render`), so both formats say the same
and escaping lives in one place: nothing here is markup, every string is plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Code:
    """Inline code: a command to run, a config label."""

    text: str


@dataclass(frozen=True)
class Link:
    text: str
    href: str
    """Relative to the page."""


Inline = str | Code | Link


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    parts: tuple[Inline, ...]


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[Inline, ...], ...]


@dataclass(frozen=True)
class Image:
    src: str
    """Relative to the page."""
    alt: str


@dataclass(frozen=True)
class Pre:
    """Preformatted text (a config snippet, a log line)."""

    text: str


@dataclass(frozen=True)
class Notice:
    """A part that is not there: "missing" (with the command that fills it) or "problem" (a
    stored result that cannot be read, with its cause and remedy)."""

    kind: str
    parts: tuple[Inline, ...]


Block = Heading | Paragraph | Table | Image | Pre | Notice


@dataclass
class Page:
    title: str
    blocks: list[Block] = field(default_factory=list)


def para(*parts: Inline) -> Paragraph:
    """A paragraph; `quoted` spans inside its strings (as other modules' texts write commands
    and names) become inline code."""
    out: list[Inline] = []
    for part in parts:
        if isinstance(part, str):
            pieces = re.split(r"`([^`]+)`", part)  # odd pieces were quoted
            out += [Code(x) if i % 2 else x for i, x in enumerate(pieces) if x]
        else:
            out.append(part)
    return Paragraph(tuple(out))


def table(headers: tuple[str, ...] | list[str], rows: list) -> Table:
    """A table of any cells: None becomes "", numbers their str()."""
    cells = tuple(
        tuple(c if isinstance(c, (str, Code, Link)) else "" if c is None else str(c) for c in r)
        for r in rows
    )
    return Table(tuple(headers), cells)
