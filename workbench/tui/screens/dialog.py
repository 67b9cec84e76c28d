"""A modal dialog of one table: a line that says what it lists and which keys act on it, then
the table (a row cursor, focused), then whatever the dialog adds below it."""

from __future__ import annotations

from typing import TypeVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from workbench.tui.widgets.plain import PlainTable

R = TypeVar("R")


class TableDialog(ModalScreen[R]):
    DIALOG_ID = ""
    TABLE_ID = ""
    HEADERS: tuple[str, ...] = ()
    INTRO = ""

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
        self.fill()
        self.query_one(DataTable).focus()

    def fill(self) -> None:
        """Put the table's rows in."""
