"""`?`: every key of the keymap table, where it acts, and why a greyed one is greyed here."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

HEADERS = ("key", "does", "where", "here")


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "close"),
        Binding("q", "dismiss", "close", show=False),
        Binding("question_mark", "dismiss", "close", show=False),
    ]

    def __init__(self, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="help", classes="dialog"):
            yield Label("keys (ctrl+p: the command palette has every action too; esc closes)")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*HEADERS)
        table.add_rows(self.rows)
        table.focus()
