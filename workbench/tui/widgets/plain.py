"""Text from kernel modules, the store and the tools shown as it is: never read as markup, its
control characters escaped (`views.text.escape_controls`), so that a name holding `[/]` or an
escape sequence can neither style, break nor drive the UI."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text
from textual.visual import VisualType
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowKey

from workbench.views.text import escape_controls


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


class PlainStatic(Static):
    """A Static whose text shows as it is: a str is not read as markup, and the control
    characters of a str or a Text are escaped."""

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        if isinstance(content, str):
            content = Text(escape_controls(content, keep_lines=True))
        elif isinstance(content, Text):
            content = escaped(content)
        super().update(content, layout=layout)


class PlainTable(DataTable):
    """A DataTable whose cells show their text as it is: a DataTable reads a str cell as markup."""

    def add_row(self, *cells: Any, **kwargs: Any) -> RowKey:
        return super().add_row(*(_cell(c) for c in cells), **kwargs)


def _cell(cell: Any) -> Any:
    if isinstance(cell, str):  # kept a str, as get_row_at gives it back
        return escape(escape_controls(cell))
    return escaped(cell) if isinstance(cell, Text) else cell
