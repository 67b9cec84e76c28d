"""A modal dialog of one table: a line that says what it lists and which keys act on it, then
the table (a row cursor, focused), then whatever the dialog adds below it. Columns of prose
share the width the others leave, their cells wrapped at words (rows as tall as they need), so
that no text is cut at the dialog's edge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from workbench.tui.widgets.plain import PlainTable, wrapped

R = TypeVar("R")


class TableDialog(ModalScreen[R]):
    DIALOG_ID = ""
    TABLE_ID = ""
    HEADERS: tuple[str, ...] = ()
    INTRO = ""
    WRAPPED: dict[int, float] = {}
    """Column index -> its share of the width the other columns leave; its cells wrap."""

    def compose(self) -> ComposeResult:
        with Vertical(id=self.DIALOG_ID, classes="dialog"):
            yield Label(self.INTRO)
            table = PlainTable(id=self.TABLE_ID, cursor_type="row", zebra_stripes=True)
            table.add_columns(*self.HEADERS)
            yield table
            yield from self.below()

    def below(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.call_after_refresh(self.fill)  # once the table has its width
        self.query_one(DataTable).focus()

    def fill(self) -> None:
        """Put the table's rows in (`put_rows`)."""

    def put_rows(self, rows: Sequence[Sequence[str]]) -> None:
        """The table's rows anew, each column as wide as its widest cell where the table's width
        allows; else the wrapped columns share what the others leave (a wrapped column never
        wider than its widest cell, the other taking the rest), less room for a scrollbar."""
        table = self.query_one(DataTable)
        pad = 2 * table.cell_padding
        widths = {i: max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(self.HEADERS)}
        fixed = sum(w + pad for i, w in widths.items() if i not in self.WRAPPED)
        left = table.size.width - table.styles.scrollbar_size_vertical - fixed
        left -= pad * len(self.WRAPPED)
        if sum(widths[i] for i in self.WRAPPED) > left:
            natural = {i: widths[i] for i in self.WRAPPED}
            for i, share in self.WRAPPED.items():
                widths[i] = min(natural[i], max(int(left * share), 8))
            spare = left - sum(widths[i] for i in self.WRAPPED)
            for i in self.WRAPPED:
                grow = max(min(spare, natural[i] - widths[i]), 0)
                widths[i], spare = widths[i] + grow, spare - grow
        table.clear(columns=True)
        for i, head in enumerate(self.HEADERS):
            table.add_column(head, width=widths[i])
        for r in rows:  # wrapped here, at words: a cell Rich wraps folds a long word anywhere
            cells = [
                wrapped(Text(c), widths[i]) if i in self.WRAPPED and len(c) > widths[i] else c
                for i, c in enumerate(r)
            ]
            table.add_row(*cells, height=None if self.WRAPPED else 1)
