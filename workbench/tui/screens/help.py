"""`?`: every key of the keymap table, where it acts, and why a greyed one is greyed here."""

from __future__ import annotations

from textual.binding import Binding

from workbench.tui.screens.dialog import TableDialog


class HelpScreen(TableDialog[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "close"),
        Binding("q", "dismiss", "close", show=False),
        Binding("question_mark", "dismiss", "close", show=False),
    ]
    DIALOG_ID, TABLE_ID = "help", "help-keys"
    HEADERS = ("key", "does", "where", "here")
    INTRO = "keys (ctrl+p: the command palette has every action too; esc closes)"
    WRAPPED = {1: 0.6, 3: 0.4}

    def __init__(self, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def fill(self) -> None:
        self.put_rows(self.rows)
