"""Text from kernel modules, the store and the tools shown as it is: never read as markup, its
control characters escaped (`views.text.escape_controls`), so that a name holding `[/]` or an
escape sequence can neither style, break nor drive the UI; and laid out to the width it has,
each line wrapped at words with its continuations indented under it (`views.text.line_spans`),
never cut mid-word where a break can be found."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text
from textual.events import Resize
from textual.visual import VisualType
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowKey

from workbench.views.text import ELLIPSIS, escape_controls, hang_indent, line_spans, word_cut


def escaped(text: Text) -> Text:
    """`text` with its control characters escaped, each piece keeping its styles (Rich's Text
    has already dropped BEL, BS, VT, FF and CR; ESC and the rest it keeps)."""
    if escape_controls(text.plain, keep_lines=True) == text.plain:
        return text
    cuts = sorted({i for span in text.spans for i in (span.start, span.end)})
    out = Text(style=text.style, end=text.end)
    for piece in text.divide(cuts):  # cut at every span's edges: a span covers a piece whole
        part = Text(escape_controls(piece.plain, keep_lines=True))
        for span in piece.spans:
            part.stylize(span.style)
        out.append_text(part)
    return out


def clipped(text: Text, width: int) -> Text:
    """`text` cut at a word boundary to fit one line of `width` columns, with an ellipsis where
    it was cut (`views.text.word_cut`); as it is when it fits, or when no width is known yet."""
    cut = word_cut(text.plain, width) if width > 0 else len(text.plain)
    if cut == len(text.plain):
        return text
    return text[:cut] + Text(ELLIPSIS, "dim")


def wrapped(text: Text, width: int) -> Text:
    """`text` with each line broken to `width` columns at words, its continuations indented
    under it, every piece keeping its styles; as it is when no width is known yet."""
    if width <= 0 or all(len(line) <= width for line in text.plain.split("\n")):
        return text
    out = Text(style=text.style, end=text.end)
    for n, line in enumerate(text.split("\n", allow_blank=True)):
        if n:
            out.append("\n")
        indent = " " * hang_indent(line.plain, width)
        for i, (start, end) in enumerate(line_spans(line.plain, width)):
            if i:
                out.append("\n" + indent)
            out.append_text(line[start:end])
    return out


class PlainStatic(Static):
    """A Static whose text shows as it is: a str is not read as markup, and the control
    characters of a str or a Text are escaped. A Text is wrapped to the widget's width
    (`wrapped`), again whenever that width changes."""

    source: VisualType = ""

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        if isinstance(content, str):
            content = Text(escape_controls(content, keep_lines=True))
        elif isinstance(content, Text):
            content = escaped(content)
        self.source, self.laid_to = content, self.size.width
        shown = wrapped(content, self.laid_to) if isinstance(content, Text) else content
        super().update(shown, layout=layout)

    def on_resize(self, event: Resize) -> None:
        if isinstance(self.source, Text) and self.size.width != getattr(self, "laid_to", 0):
            self.update(self.source)


class PlainTable(DataTable):
    """A DataTable whose cells show their text as it is: a DataTable reads a str cell as markup."""

    def add_row(self, *cells: Any, **kwargs: Any) -> RowKey:
        return super().add_row(*(_cell(c) for c in cells), **kwargs)


def _cell(cell: Any) -> Any:
    if isinstance(cell, str):  # kept a str, as get_row_at gives it back
        return escape(escape_controls(cell))
    return escaped(cell) if isinstance(cell, Text) else cell
